// Uncompressed LAS on the GPU route as raw records (issue #36: the readers copy records, the GPU
// decodes, filters and bins them): a grid job's bands and read report (filter counts, bounds) equal
// the CPU route's for legacy and extended formats, with filters, several files and part sizes that
// do not divide the file; and a batch of records that must be binned on the CPU after all (the GPU
// failed to start) is decoded there with the same rules. The GPU tests skip without a device.

#include "pipeline_fixtures.hpp"

#include "pipeline/gpu_stage.hpp"
#include "pipeline/grid_job.hpp"
#include "pipeline/sinks.hpp"

#include "heightgrid/core/host_grid.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "heightgrid/io/las_writer.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace heightgrid::app {
namespace {

using pipeline_fixtures::expect_bands;
using pipeline_fixtures::job_options;
using pipeline_fixtures::memory_output;

namespace fs = std::filesystem;

fs::path scratch()
{
  fs::path const dir = fs::temp_directory_path() / ("hg_las_records_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

/// A LAS file of `n` points over a 60 x 40 m area with classes (noise too), withheld flags and
/// returns, in `format` (1 or 6).
std::string write_file(std::string const& name, int format, std::size_t n, std::uint32_t seed, double x0 = 0.0)
{
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> x(x0, x0 + 60.0), y(0.0, 40.0), z(-3.0, 45.0);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<io::las_point> points(n);
  for (auto& p : points) {
    p.x = x(rng);
    p.y = y(rng);
    p.z = z(rng);
    p.classification = static_cast<std::uint8_t>(byte(rng) % 20);
    p.number_of_returns = static_cast<std::uint8_t>(1 + byte(rng) % 4);
    p.return_number = static_cast<std::uint8_t>(1 + byte(rng) % p.number_of_returns);
    p.flags = static_cast<std::uint8_t>(byte(rng) % 13 == 0 ? point_flag::withheld : 0);
  }
  io::las_write_options o;
  o.point_format = format;
  o.version_minor = format >= 6 ? 4 : 2;
  o.scale = {0.001, 0.001, 0.001};
  o.offset = {0.5, -0.25, 0.0};
  auto const path = (scratch() / name).string();
  io::write_las(path, points, o);
  return path;
}

std::vector<std::unique_ptr<part_source>> open_all(std::vector<std::string> const& paths, std::size_t part_points)
{
  std::vector<std::unique_ptr<part_source>> out;
  for (auto const& p : paths) { out.push_back(io::open_las_parts(p, part_points)); }
  return out;
}

void expect_same_read(grid_job_report const& got, grid_job_report const& want)
{
  EXPECT_EQ(got.read.filtered.points_in, want.read.filtered.points_in);
  EXPECT_EQ(got.read.filtered.by_class, want.read.filtered.by_class);
  EXPECT_EQ(got.read.filtered.withheld, want.read.filtered.withheld);
  EXPECT_EQ(got.read.filtered.by_return, want.read.filtered.by_return);
  EXPECT_EQ(got.read.filtered.by_z, want.read.filtered.by_z);
  EXPECT_EQ(got.read.extent.xmin, want.read.extent.xmin);
  EXPECT_EQ(got.read.extent.xmax, want.read.extent.xmax);
  EXPECT_EQ(got.read.extent.ymin, want.read.extent.ymin);
  EXPECT_EQ(got.read.extent.ymax, want.read.extent.ymax);
  EXPECT_EQ(got.read.z_min, want.read.z_min);
  EXPECT_EQ(got.read.z_max, want.read.z_max);
  ASSERT_EQ(got.source_extents.size(), want.source_extents.size());
  for (std::size_t s = 0; s < got.source_extents.size(); ++s) {
    EXPECT_EQ(got.source_extents[s].xmin, want.source_extents[s].xmin) << s;
    EXPECT_EQ(got.source_extents[s].xmax, want.source_extents[s].xmax) << s;
  }
  EXPECT_EQ(got.binned, want.binned);
  EXPECT_EQ(got.outside, want.outside);
}

TEST(LasRecords, GpuRouteDecodingRecordsEqualsTheCpuRoute)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: LAS records on the GPU are checked on the GPU machine"; }
  // Two files side by side (the second's source index is 1) and a third of another format.
  std::vector<std::string> const paths{write_file("a6.las", 6, 30011, 1), write_file("b6.las", 6, 7, 2, 60.0),
                                       write_file("c1.las", 1, 12345, 3, 20.0)};
  metric_request r;
  r.range = r.min = r.max = r.count = true;
  // Every filter starts from keep_all() (GCC 12's maybe-uninitialized false positive on several
  // inlined default constructors).
  filter_options defaults = filter_options::keep_all();
  defaults.drop_classes = {7, 18};
  defaults.drop_withheld = true;
  filter_options classes = defaults;
  classes.classes = {2, 3, 4, 5};
  filter_options first = defaults;
  first.returns = return_filter::first;
  first.z_min = 0.0;
  for (auto const& filter : {defaults, classes, first, filter_options::keep_all()}) {
    for (std::size_t part : {std::size_t{1000}, std::size_t{4099}}) {
      SCOPED_TRACE("part " + std::to_string(part));
      auto o = job_options(r, 0.5, device_choice::cpu, 4);
      o.filter = filter;
      memory_output cpu;
      auto const cpu_report = run_grid_job(open_all(paths, part), o, cpu);
      EXPECT_FALSE(cpu_report.las_records_on_gpu);
      o.device = device_choice::gpu;
      o.cpu_while_gpu_starts = false;
      memory_output gpu;
      auto const gpu_report = run_grid_job(open_all(paths, part), o, gpu);
      EXPECT_EQ(gpu_report.route, "GPU");
      EXPECT_TRUE(gpu_report.las_records_on_gpu);
      expect_bands(gpu.bands, cpu.bands, r, 0);
      expect_same_read(gpu_report, cpu_report);
      // The readers decoding (for comparison): the same again, 12-byte integers uploaded.
      o.las_decoder = las_decoder_choice::cpu;
      memory_output decoded;
      auto const decoded_report = run_grid_job(open_all(paths, part), o, decoded);
      EXPECT_FALSE(decoded_report.las_records_on_gpu);
      expect_bands(decoded.bands, cpu.bands, r, 0);
      expect_same_read(decoded_report, cpu_report);
    }
  }
}

TEST(LasRecords, TheCpuDecodesRecordsWhileTheGpuStartsAndTheGridsMerge)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the cooperative route is checked on the GPU machine"; }
  // The default GPU route of range/min/max(/count): the readers' first parts are decoded (by the
  // readers, as the CPU route's) and binned on the CPU while the GPU starts and configures, the
  // later ones travel as raw records and are decoded on the device
  // (2,000 parts of 1,000 records: the device's binner is up long before the last), the two grids
  // merged: the CPU route's cells and read statistics, counts asked for or not.
  std::vector<std::string> const paths{write_file("big6.las", 6, 2'000'000, 9), write_file("c1b.las", 1, 12345, 3, 20.0)};
  filter_options filter = filter_options::keep_all();
  filter.drop_classes = {7, 18};
  filter.drop_withheld = true;
  // CUDA started in this process first, so that the held stage below is up within milliseconds of
  // its release; and one reader, so that the CPU cannot bin all 2,000 parts in that time (with
  // four on a fast host it did: the GPU then took nothing).
  {
    gpu_stage warm(1000, 2, -1, nullptr);
    ASSERT_TRUE(warm.wait_started().has_value()) << warm.failure();
  }
  std::uint64_t cpu_batches = 0, gpu_batches = 0;
  for (bool count : {true, false}) {
    SCOPED_TRACE(count ? "with counts" : "extremes alone");
    metric_request r;
    r.range = r.min = r.max = true;
    r.count = count;
    auto o = job_options(r, 0.5, device_choice::cpu, 1);
    o.filter = filter;
    memory_output cpu;
    auto const cpu_report = run_grid_job(open_all(paths, 1000), o, cpu);
    o.device = device_choice::gpu;
    memory_output shared;
    pipeline_fixtures::held_start held;
    auto stage = std::make_shared<gpu_stage>(1000, 8, -1, held.hook());
    held.release_after(20);  // the first parts are the CPU's
    auto const report = run_grid_job(open_all(paths, 1000), o, shared, stage);
    EXPECT_TRUE(report.route == "CPU + GPU" || report.route == "CPU") << report.route;
    cpu_batches += report.cpu_batches;
    gpu_batches += report.gpu_batches;
    expect_bands(shared.bands, cpu.bands, r, 0);
    expect_same_read(report, cpu_report);
  }
  EXPECT_GT(cpu_batches, 0U) << "the CPU never took records while the GPU started";
  EXPECT_GT(gpu_batches, 0U) << "the GPU never took records";
}

TEST(LasRecords, MeanAndPercentilesKeepDecodingOnTheReaders)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the GPU route is checked on the GPU machine"; }
  std::vector<std::string> const paths{write_file("m6.las", 6, 5000, 4)};
  metric_request r;
  r.mean = r.count = true;
  auto o = job_options(r, 1.0, device_choice::gpu, 2);
  memory_output out;
  auto const report = run_grid_job(open_all(paths, 1000), o, out);
  EXPECT_EQ(report.route, "GPU");
  EXPECT_FALSE(report.las_records_on_gpu) << "sums are merged in the readers' batch order";
}

TEST(LasRecords, RecordsBinnedOnTheCpuWhenTheGpuFailsToStartAreDecodedWithTheSameRules)
{
  // Runs everywhere: the stage's start is refused, so the batch of records goes to the CPU.
  auto const path = write_file("fallback.las", 6, 3000, 5);
  filter_options options = filter_options::keep_all();
  options.drop_classes = {7, 18};
  options.drop_withheld = true;
  options.returns = return_filter::last;
  filter_rules const rules(options);
  auto source = io::open_las_parts(path, 4000);
  ASSERT_TRUE(source->deliver_records(true));
  std::size_t const capacity = 4000;
  grid_spec g;
  g.x0 = 0.0;
  g.y0 = 40.0;
  g.cols = 60;
  g.rows = 40;
  grid_band const band = grid_band::whole(g);
  metric_request r;
  r.min = r.max = r.count = true;
  std::unique_ptr<host_grid> fallback;
  gpu_stage stage(capacity, 2, -1, [] { return false; });
  grid_sink sink(bin_route::gpu, 1, capacity, nullptr, &stage, [&]() -> host_grid* {
    fallback = std::make_unique<host_grid>(band, r);
    return fallback.get();
  });
  sink.decode_records_with(&rules);
  std::atomic<bool> const stopping{false};
  point_batch batch = sink.acquire(0, stopping);
  batch.source = 0;
  part_result const read = source->read_part(0, rules, batch);
  ASSERT_EQ(batch.encoding, coord_encoding::las_records);
  ASSERT_EQ(batch.size, 3000U);
  sink.process(0, batch);
  sink.deliver(0, part_ticket{0, 0}, batch);
  ASSERT_NE(fallback, nullptr) << "the batch was binned on the CPU";
  EXPECT_EQ(sink.cpu_batches(), 1U);
  // What the readers' own decoding gives for the same part.
  ASSERT_TRUE(source->deliver_records(false));
  std::vector<double> memory(batch_bytes(capacity) / sizeof(double));
  point_batch decoded;
  decoded.data = memory.data();
  decoded.capacity = capacity;
  part_result const want = source->read_part(0, rules, decoded);
  host_grid reference(band, r);
  auto const binned = reference.add_batch(decoded);
  EXPECT_EQ(sink.cpu_binning().binned, binned.binned);
  EXPECT_EQ(sink.cpu_binning().outside, binned.outside);
  auto const a = fallback->finalize_rows(0, g.rows, g.cols, r, default_nodata);
  auto const b = reference.finalize_rows(0, g.rows, g.cols, r, default_nodata);
  expect_bands(a, b, r, 0);
  std::vector<las_record_stats> const stats = sink.cpu_record_stats();
  ASSERT_EQ(stats.size(), 1U);
  part_result got = source->result_of_records(stats[0]);
  got.filtered.points_in = read.filtered.points_in;
  EXPECT_EQ(got.filtered.by_return, want.filtered.by_return);
  EXPECT_EQ(got.filtered.by_class, want.filtered.by_class);
  EXPECT_EQ(got.filtered.withheld, want.filtered.withheld);
  EXPECT_GT(got.filtered.by_return, 0U);
  EXPECT_EQ(got.extent.xmin, want.extent.xmin);
  EXPECT_EQ(got.extent.ymax, want.extent.ymax);
  EXPECT_EQ(got.z_min, want.z_min);
  EXPECT_EQ(got.z_max, want.z_max);
}

}  // namespace
}  // namespace heightgrid::app
