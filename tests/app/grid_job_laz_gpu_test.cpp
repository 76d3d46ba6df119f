// Layered LAZ chunks decoded on the GPU (laz_gpu_stage) in a whole grid job, against the same job
// decoding on the CPU: equal bands always; on a machine without a GPU the stage fails to start and
// every chunk goes back to the readers (checked here too), on the GPU machine every chunk must come
// from the GPU.

#include "pipeline_fixtures.hpp"

#include "pipeline/grid_job.hpp"
#include "pipeline/laz_gpu_stage.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace heightgrid::app {
namespace {

using pipeline_fixtures::expect_bands;
using pipeline_fixtures::extremes;
using pipeline_fixtures::job_options;
using pipeline_fixtures::memory_output;

std::vector<std::unique_ptr<part_source>> open_all(std::vector<std::string> const& paths, std::size_t part)
{
  std::vector<std::unique_ptr<part_source>> sources;
  for (auto const& p : paths) { sources.push_back(io::open_las_parts(p, part)); }
  return sources;
}

std::vector<std::string> layered_files()
{
  std::vector<std::string> files = {(test::data_dir() / "layered_dims_pdrf8.laz").string(),
                                    (test::data_dir() / "lazrs_variable_chunks_pf6.laz").string()};
  if (!test::real_data_dir().empty()) { files.push_back((test::real_data_dir() / "lasR/las14_pdrf6.laz").string()); }
  return files;
}

/// Pointwise LAZ (compressor 2, items v2) of formats 1 and 3.
std::vector<std::string> pointwise_files()
{
  std::vector<std::string> files = {(test::data_dir() / "lazrs_variable_chunks_pf1.laz").string()};
  if (!test::real_data_dir().empty()) {
    for (char const* f : {"lidR/Topography.laz", "pdal/laz_autzen_trim.laz", "laspy/simple.laz"}) {
      files.push_back((test::real_data_dir() / f).string());
    }
  }
  return files;
}

/// One job per layered file and per small pointwise file, every layered file in one job (their
/// chunks share waves), every pointwise file in one (the large real ones only there: the CPU
/// reference of each variant costs seconds), and a layered and a pointwise file in one (waves of
/// one format each).
std::vector<std::vector<std::string>> gpu_laz_jobs()
{
  std::vector<std::vector<std::string>> jobs;
  for (auto const& f : layered_files()) { jobs.push_back({f}); }
  jobs.push_back({pointwise_files().front()});
  jobs.push_back(layered_files());
  jobs.push_back(pointwise_files());
  jobs.push_back({layered_files().front(), pointwise_files().front(), layered_files()[1]});
  return jobs;
}

TEST(GridJob, LazChunksDecodedOnTheGpuGridAsOnTheCpu)
{
  metric_request r = extremes();
  r.count = true;
  std::vector<std::vector<std::string>> const jobs = gpu_laz_jobs();
  // The product's sizes, and small ones: waves of 3 chunks, slots of one chunk's records, two slots
  // (many waves, groups and ring turns; chunks beyond the ring's reach go back to the readers).
  laz_gpu_limits small;
  small.wave_chunks = 3;
  small.ring_slots = 2;
  small.slot_bytes = 3000;
  for (auto const& paths : jobs) {
   for (auto const& limits : {laz_gpu_limits{}, small}) {
    for (std::size_t part : {std::size_t{3}, std::size_t{1} << 18}) {
      SCOPED_TRACE(paths.front() + " (" + std::to_string(paths.size()) + " files), part " + std::to_string(part) +
                   (limits.wave_chunks != 0 ? ", small waves and ring" : ""));
      auto o = job_options(r, paths.size() > 1 ? 1000.0 : 0.5, device_choice::cpu, 4);
      auto const cpu_sources = open_all(paths, part);
      memory_output cpu;
      auto const want = run_grid_job(cpu_sources, o, cpu);
      EXPECT_FALSE(want.laz_gpu);

      o.laz_decoder = laz_decoder_choice::gpu;
      o.laz_gpu_sizes = limits;
      auto const gpu_sources = open_all(paths, part);
      memory_output gpu;
      auto const got = run_grid_job(gpu_sources, o, gpu);
      ASSERT_TRUE(got.laz_gpu);
      expect_bands(gpu.bands, cpu.bands, r);
      EXPECT_EQ(got.binned, want.binned);
      EXPECT_EQ(got.read.filtered.points_in, want.read.filtered.points_in);
      auto const& l = got.laz_gpu_stats;
      EXPECT_GT(l.chunks, 0U);
      if (gpu_available()) {
        EXPECT_TRUE(l.failure.empty()) << l.failure;
        if (limits.wave_chunks == 0) {
          EXPECT_EQ(l.gpu_chunks + l.skipped, l.chunks);
        } else {
          // Chunks over 166 points (3000 bytes of records) stay with the readers, and so may chunks
          // the four readers ask for beyond the ring's reach; the others come from the GPU.
          EXPECT_LE(l.gpu_chunks + l.skipped, l.chunks);
          if (l.chunks > l.skipped + 3) {
            EXPECT_GT(l.gpu_chunks, 0U);
            EXPECT_GT(l.waves, 1U);
          }
        }
      } else {
        EXPECT_EQ(l.gpu_chunks, 0U);
        EXPECT_FALSE(l.failure.empty());
      }
    }
   }
  }
}

void expect_same_read(grid_job_report const& got, grid_job_report const& want)
{
  auto const& g = got.read;
  auto const& w = want.read;
  EXPECT_EQ(g.filtered.points_in, w.filtered.points_in);
  EXPECT_EQ(g.filtered.by_class, w.filtered.by_class);
  EXPECT_EQ(g.filtered.withheld, w.filtered.withheld);
  EXPECT_EQ(g.filtered.by_return, w.filtered.by_return);
  EXPECT_EQ(g.filtered.by_z, w.filtered.by_z);
  EXPECT_EQ(g.filtered.non_finite, w.filtered.non_finite);
  EXPECT_EQ(g.extent.xmin, w.extent.xmin);
  EXPECT_EQ(g.extent.xmax, w.extent.xmax);
  EXPECT_EQ(g.extent.ymin, w.extent.ymin);
  EXPECT_EQ(g.extent.ymax, w.extent.ymax);
  EXPECT_EQ(g.z_min, w.z_min);
  EXPECT_EQ(g.z_max, w.z_max);
  ASSERT_EQ(got.source_extents.size(), want.source_extents.size());
  for (std::size_t i = 0; i < got.source_extents.size(); ++i) {
    EXPECT_EQ(got.source_extents[i].xmin, want.source_extents[i].xmin) << "source " << i;
    EXPECT_EQ(got.source_extents[i].ymax, want.source_extents[i].ymax) << "source " << i;
  }
  EXPECT_EQ(got.binned, want.binned);
  EXPECT_EQ(got.outside, want.outside);
}

TEST(GridJob, ADecoderKeptBetweenJobsGridsAsAFreshOne)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the kept LAZ decoder is checked on the GPU machine"; }
  // The tiles of one device share a laz_gpu_cache: each job's stage takes the decoder and ring the
  // last one left. Jobs of layered and pointwise files in turn, binned on the device (auto) and sent
  // down (--device cpu with the GPU decoder): each equals the CPU's grid, and the decoder is kept.
  metric_request r = extremes();
  r.count = true;
  auto const cache = std::make_shared<laz_gpu_cache>();
  std::vector<std::vector<std::string>> const jobs = {layered_files(), pointwise_files(), {layered_files().front()},
                                                      pointwise_files()};
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    for (auto const device : {device_choice::automatic, device_choice::cpu}) {
      SCOPED_TRACE("job " + std::to_string(j) + (device == device_choice::cpu ? ", records sent down" : ", binned on the device"));
      auto o = job_options(r, 1000.0, device_choice::cpu, 4);
      memory_output cpu;
      (void)run_grid_job(open_all(jobs[j], 4096), o, cpu);
      o.device = device;
      o.laz_decoder = laz_decoder_choice::gpu;
      o.laz_cache = cache;
      memory_output gpu;
      auto const got = run_grid_job(open_all(jobs[j], 4096), o, gpu);
      ASSERT_TRUE(got.laz_gpu);
      EXPECT_TRUE(got.laz_gpu_stats.failure.empty()) << got.laz_gpu_stats.failure;
      EXPECT_GT(got.laz_gpu_stats.gpu_chunks + got.laz_gpu_stats.folded_chunks, 0U);
      expect_bands(gpu.bands, cpu.bands, r);
      std::lock_guard<std::mutex> lock(cache->mutex);
      EXPECT_NE(cache->held, nullptr) << "the decoder was not kept";
    }
  }
}

TEST(LazGpuStageReport, TwoPassesAddUp)
{
  // A job that reads its points again (the grid guessed from the headers failed) reports both
  // passes' stages: counts and times summed, the most chunks at once, the first failure.
  laz_gpu_stage_report a, b;
  a.chunks = 3;
  a.points = 110;
  a.folded_chunks = 1;
  a.waves = 1;
  a.chunks_at_once = 3;
  a.kernel_s = 0.5;
  a.readers_wait_s = 1.0;
  a.cpu_chunks = 2;
  a.cpu_points = 40;
  a.cpu_chunks_planned = 1;
  a.memory_notes = {"first"};
  b.chunks = 3;
  b.points = 110;
  b.folded_chunks = 1;
  b.skipped = 1;
  b.waves = 2;
  b.chunks_at_once = 2;
  b.kernel_s = 0.25;
  b.readers_wait_s = 0.5;
  b.cpu_chunks = 1;
  b.cpu_points = 30;
  b.failure = "later";
  b.memory_notes = {"second"};
  a.add(b);
  EXPECT_EQ(a.chunks, 6U);
  EXPECT_EQ(a.points, 220U);
  EXPECT_EQ(a.folded_chunks + a.skipped + a.cpu_chunks, a.chunks);
  EXPECT_EQ(a.waves, 3U);
  EXPECT_EQ(a.chunks_at_once, 3U);
  EXPECT_DOUBLE_EQ(a.kernel_s, 0.75);
  EXPECT_DOUBLE_EQ(a.readers_wait_s, 1.5);
  EXPECT_EQ(a.cpu_chunks, 3U);  // the readers' share of both passes
  EXPECT_EQ(a.cpu_points, 70U);
  EXPECT_EQ(a.cpu_chunks_planned, 1U);
  EXPECT_EQ(a.failure, "later");
  EXPECT_EQ(a.memory_notes, (std::vector<std::string>{"first", "second"}));
  laz_gpu_stage_report c;
  c.failure = "first";
  c.add(b);
  EXPECT_EQ(c.failure, "first");
}

/// The job `o` again on `device` with the GPU LAZ decoder and `limits` (parts of 1000 points): the
/// CPU run's bands and read counts (`cpu`, `want`) expected. Returns its report.
grid_job_report rerun_with_the_gpu_decoder(std::vector<std::string> const& paths, grid_job_options o,
                                           device_choice device, laz_gpu_limits const& limits,
                                           memory_output const& cpu, grid_job_report const& want)
{
  o.device = device;
  o.laz_decoder = laz_decoder_choice::gpu;
  o.laz_gpu_sizes = limits;
  auto const sources = open_all(paths, 1000);
  memory_output gpu;
  auto got = run_grid_job(sources, o, gpu);
  EXPECT_TRUE(got.laz_gpu);
  expect_bands(gpu.bands, cpu.bands, o.request);
  expect_same_read(got, want);
  return got;
}

TEST(GridJob, LazRecordsBinnedOnTheDeviceGridAsOnTheCpu)
{
  // The GPU route with range/min/max/count: the decoder's records are binned where they are
  // (never downloaded); the grid reports what the filters removed and the points' bounds, source by
  // source. Without a GPU every chunk goes back to the readers and the CPU bins (auto).
  metric_request r = extremes();
  r.count = true;
  r.range = true;
  // Each starts from keep_all(): GCC 12 warns (maybe-uninitialized, a false positive) about
  // filter_options' default constructor inlined several times into one function.
  filter_options defaults = filter_options::keep_all();  // what filter_options{} drops
  defaults.drop_classes = {7, 18};
  defaults.drop_withheld = true;
  filter_options first = defaults;
  first.returns = return_filter::first;
  filter_options classes = filter_options::keep_all();
  classes.classes = {1, 2};
  std::vector<std::vector<std::string>> const jobs = gpu_laz_jobs();
  // Waves of 3 chunks (several folds, each of a few runs), two slots of 3000 bytes (groups of a
  // chunk or two that wait for their slot; chunks over 166 points stay with the readers).
  laz_gpu_limits small;
  small.wave_chunks = 3;
  small.ring_slots = 2;
  small.slot_bytes = 3000;
  for (auto const& paths : jobs) {
    for (auto const& filter : {defaults, first, classes}) {
      for (auto const& limits : {laz_gpu_limits{}, small}) {
        for (device_choice device : {device_choice::automatic, device_choice::gpu}) {
          if (device == device_choice::gpu && !gpu_available()) { continue; }
          SCOPED_TRACE(paths.front() + " (" + std::to_string(paths.size()) + " files)" +
                       (limits.wave_chunks != 0 ? ", small waves" : "") +
                       (device == device_choice::gpu ? ", --device gpu" : ", auto"));
          auto o = job_options(r, paths.size() > 1 ? 1000.0 : 0.5, device_choice::cpu, 4);
          o.filter = filter;
          auto const cpu_sources = open_all(paths, 1000);
          memory_output cpu;
          grid_job_report want;
          try {
            want = run_grid_job(cpu_sources, o, cpu);
          } catch (error const& e) {
            // Every point filtered out: the device route must say the same.
            o.device = device;
            o.laz_decoder = laz_decoder_choice::gpu;
            auto const gpu_sources = open_all(paths, 1000);
            memory_output gpu;
            try {
              (void)run_grid_job(gpu_sources, o, gpu);
              ADD_FAILURE() << "no error; the CPU said: " << e.what();
            } catch (error const& g) {
              EXPECT_STREQ(g.what(), e.what());
            }
            continue;
          }
          auto const got = rerun_with_the_gpu_decoder(paths, o, device, limits, cpu, want);
          auto const& l = got.laz_gpu_stats;
          if (gpu_available()) {
            EXPECT_TRUE(l.failure.empty()) << l.failure;
            EXPECT_EQ(got.laz_binned_on_gpu, l.chunks > l.skipped) << "unless every chunk is over a small slot";
            EXPECT_EQ(l.folded_chunks + l.skipped, l.chunks);
            EXPECT_EQ(l.gpu_chunks, 0U) << "no records came down";
            // A part whose chunks were all binned on the device hands the grid an empty batch:
            // it goes back to the ring, not through the device's streams. (Chunks the stage
            // skipped come as batches from the readers, through a ring left pageable.) A filter
            // that moves the grid's first cell reads the points again: through a new GPU stage,
            // binned on the device too.
            if (l.skipped == 0) { EXPECT_EQ(got.gpu_batches, 0U) << got.passes << " passes"; }
            // The readers' waits for the device are counted (the report takes them out of the
            // readers' own reading).
            if (l.folded_chunks > 0) { EXPECT_GT(l.readers_wait_s, 0.0); }
            if (limits.wave_chunks != 0 && l.chunks > l.skipped + 3) { EXPECT_GT(l.waves, 1U); }
          } else {
            EXPECT_FALSE(got.laz_binned_on_gpu);
            EXPECT_EQ(l.folded_chunks, 0U);
          }
        }
      }
    }
  }
}

TEST(GridJob, LazChunksSharedWithTheReadersGridAsOnTheCpu)
{
  // Both decoders on one job: the readers decode chunks themselves while CUDA starts, or a share
  // left to them when the waves are planned (here the first two chunks, or the estimate), and the
  // device bins the rest where the GPU decoded them. The bands and the read counts are the CPU's.
  metric_request r = extremes();
  r.count = true;
  r.range = true;
  laz_gpu_limits two;
  two.share_min_points = 0;
  two.share_before_plan = false;
  two.share_chunks = 2;
  laz_gpu_limits estimate;
  estimate.share_min_points = 0;
  for (auto const& paths : gpu_laz_jobs()) {
    for (auto const& limits : {two, estimate}) {
      for (device_choice device : {device_choice::automatic, device_choice::gpu}) {
        if (device == device_choice::gpu && !gpu_available()) { continue; }
        bool const planned_two = limits.share_chunks.has_value();
        SCOPED_TRACE(paths.front() + " (" + std::to_string(paths.size()) + " files)" +
                     (planned_two ? ", two chunks left to the readers" : ", the estimate and CUDA's start") +
                     (device == device_choice::gpu ? ", --device gpu" : ", auto"));
        auto o = job_options(r, paths.size() > 1 ? 1000.0 : 0.5, device_choice::cpu, 4);
        auto const cpu_sources = open_all(paths, 1000);
        memory_output cpu;
        auto const want = run_grid_job(cpu_sources, o, cpu);
        auto const got = rerun_with_the_gpu_decoder(paths, o, device, limits, cpu, want);
        auto const& l = got.laz_gpu_stats;
        if (gpu_available()) {
          EXPECT_TRUE(l.failure.empty()) << l.failure;
          EXPECT_EQ(l.folded_chunks + l.skipped + l.cpu_chunks, l.chunks);
          EXPECT_EQ(l.gpu_chunks, 0U) << "no records came down";
          EXPECT_LE(l.cpu_points, l.points);
          if (planned_two) {
            EXPECT_EQ(l.cpu_chunks, l.cpu_chunks_planned) << "none taken while CUDA started";
            // Two of the chunks that were the GPU's (the skipped ones never are), a pass (a grid
            // guessed from the headers may be read again, through a stage of its own).
            EXPECT_EQ(l.cpu_chunks, std::min<std::uint64_t>(2 * got.passes, l.chunks - l.skipped));
            if (l.chunks > l.skipped + 2) { EXPECT_GT(l.folded_chunks, 0U); }
          }
        } else {
          // Without a GPU the readers decode every chunk: some counted as theirs when they came
          // before CUDA's start had failed (all of them, and the pass over, before the stage
          // noticed: then it names no failure).
          EXPECT_TRUE(!l.failure.empty() || l.cpu_chunks > 0);
          EXPECT_EQ(l.folded_chunks, 0U);
        }
      }
    }
  }
}

TEST(GridJob, ALazChunkTheGpuRejectsIsNamedByTheCpuDecoder)
{
  // Layer sizes of the second chunk overwritten: the GPU decoder rejects the chunk, the CPU decoder
  // reports it, as a job on the CPU alone does.
  auto const source = test::data_dir() / "lazrs_variable_chunks_pf6.laz";
  auto const dir = std::filesystem::temp_directory_path() / ("hg_laz_gpu_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto const bad = dir / "bad.laz";
  std::filesystem::copy_file(source, bad, std::filesystem::copy_options::overwrite_existing);
  {
    auto probe = io::open_las_parts(bad.string(), 1);
    ASSERT_GE(probe->part_count().value_or(0), 2U);
  }
  {
    // The first chunk starts after the 8-byte chunk table offset at offset_to_point_data; its
    // header (first point, count, layer sizes) is ~70 bytes: bytes 100-160 fall in its layers.
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(96);
    std::uint32_t offset_to_points = 0;
    f.read(reinterpret_cast<char*>(&offset_to_points), 4);
    f.seekp(offset_to_points + 8 + 30 + 4);
    std::string const junk(36, '\xFF');  // every point14 layer size 0xFFFFFFFF: past the chunk
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto const message = [&](laz_decoder_choice choice, device_choice device = device_choice::cpu) {
    auto o = job_options(extremes(), 0.5, device, 2);
    o.laz_decoder = choice;
    auto const sources = open_all({bad.string()}, 5);
    memory_output out;
    try {
      (void)run_grid_job(sources, o, out);
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      return std::string(e.what());
    }
    ADD_FAILURE() << "no error";
    return std::string();
  };
  std::string const cpu = message(laz_decoder_choice::cpu);
  EXPECT_NE(cpu.find("bad.laz: chunk 0"), std::string::npos) << cpu;
  EXPECT_EQ(message(laz_decoder_choice::gpu), cpu);
  EXPECT_EQ(message(laz_decoder_choice::gpu, device_choice::automatic), cpu) << "records binned on the device";
  if (gpu_available()) { EXPECT_EQ(message(laz_decoder_choice::gpu, device_choice::gpu), cpu); }
  std::filesystem::remove_all(dir);
}

/// What a job made of `path`: the error message, or "" and its bands in `out`.
std::string job_outcome(std::string const& path, laz_decoder_choice decoder, device_choice device, memory_output& out)
{
  metric_request r = extremes();
  r.count = true;
  auto o = job_options(r, 0.5, device, 2);
  o.laz_decoder = decoder;
  try {
    auto const sources = open_all({path}, 5);
    (void)run_grid_job(sources, o, out);
  } catch (error const& e) {
    return std::string(e.what());
  }
  return {};
}

TEST(GridJob, DamagedLazFilesEndTheSameOnBothDecoders)
{
  // Each damage either fails the same way on the CPU decoder, on the GPU decoder with records sent
  // down, and on the GPU decoder binning where it decodes, or grids the same cells on all three:
  // a chunk table pointing past the end, a file cut in its last chunk, bytes of a chunk's layers
  // overwritten (garbage in, what comes out decided by the decoder), a header counting fewer or
  // more points than the chunks hold.
  auto const dir = std::filesystem::temp_directory_path() / ("hg_laz_damage_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct damage {
    std::string name;
    std::string source;
    std::function<void(std::string&)> apply;
  };
  auto const u32_at = [](std::string const& b, std::size_t at) {
    std::uint32_t v = 0;
    std::memcpy(&v, b.data() + at, 4);
    return v;
  };
  auto const put_u64 = [](std::string& b, std::size_t at, std::uint64_t v) { std::memcpy(&b[at], &v, 8); };
  std::string const variable = (test::data_dir() / "lazrs_variable_chunks_pf6.laz").string();
  std::string const single = (test::data_dir() / "layered_dims_pdrf8.laz").string();
  std::string const pointwise = (test::data_dir() / "lazrs_variable_chunks_pf1.laz").string();
  std::vector<damage> const damages = {
    {"table past the end", variable,
     [&](std::string& b) { put_u64(b, u32_at(b, 96), b.size() + 1000); }},
    {"cut in the last chunk", variable, [](std::string& b) { b.resize(b.size() - 40); }},
    {"layer bytes overwritten", single,
     [&](std::string& b) {
       std::size_t const at = u32_at(b, 96) + 8 + 120;
       for (std::size_t i = 0; i < 64 && at + i < b.size(); ++i) { b[at + i] = static_cast<char>(0x5A ^ (i * 37)); }
     }},
    {"header counts fewer points", variable, [&](std::string& b) { put_u64(b, 247, 20); }},
    {"header counts more points", variable, [&](std::string& b) { put_u64(b, 247, 30); }},
    // Pointwise (format 1, compressor 2): the same damages where the layout allows.
    {"pointwise: table past the end", pointwise,
     [&](std::string& b) { put_u64(b, u32_at(b, 96), b.size() + 1000); }},
    {"pointwise: cut in the last chunk", pointwise, [](std::string& b) { b.resize(b.size() - 20); }},
    {"pointwise: chunk bytes overwritten", pointwise,
     [&](std::string& b) {
       // After the chunk table's offset and the raw first point (the header's record length).
       std::size_t const at = u32_at(b, 96) + 8 + (u32_at(b, 105) & 0xFFFFu) + 6;
       for (std::size_t i = 0; i < 64 && at + i < b.size(); ++i) { b[at + i] = static_cast<char>(0x3C ^ (i * 53)); }
     }},
  };
  for (auto const& d : damages) {
    SCOPED_TRACE(d.name);
    std::ifstream in(d.source, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    d.apply(bytes);
    auto const path = (dir / "damaged.laz").string();
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    memory_output cpu, down, folded;
    std::string const want = job_outcome(path, laz_decoder_choice::cpu, device_choice::cpu, cpu);
    EXPECT_EQ(job_outcome(path, laz_decoder_choice::gpu, device_choice::cpu, down), want) << "records sent down";
    EXPECT_EQ(job_outcome(path, laz_decoder_choice::gpu, device_choice::automatic, folded), want)
      << "records binned where they are decoded";
    if (want.empty()) {
      metric_request r = extremes();
      r.count = true;
      expect_bands(down.bands, cpu.bands, r);
      expect_bands(folded.bands, cpu.bands, r);
    } else {
      EXPECT_NE(want.find("damaged.laz"), std::string::npos) << want;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace heightgrid::app
