// Percentiles from a whole grid job against the whole-cloud reference: whatever the parts and
// threads, when the kept points outgrow the memory budget (bands split, or a resource error), and
// on the GPU against the CPU (when a GPU is present), a cell of ten million points included; the
// shape metrics (skewness ... entropy) and density the same way.

#include "pipeline_fixtures.hpp"

#include "pipeline/gpu_stage.hpp"
#include "pipeline/grid_job.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>

namespace heightgrid::app {
namespace {

using pipeline_fixtures::cloud;
using pipeline_fixtures::expect_bands;
using pipeline_fixtures::job_case;
using pipeline_fixtures::job_options;
using pipeline_fixtures::memory_output;
using pipeline_fixtures::reference;
using pipeline_fixtures::sources_of;
using pipeline_fixtures::three_clouds;
using pipeline_fixtures::walk;

metric_request percentiles()
{
  return metric_request::from(parse_metric_list("p5,median,p95,p2.5,prange,count,range"));
}

TEST(GridJob, PercentilesEqualTheWholeCloudWhateverThePartsAndThreads)
{
  for (std::size_t part : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    for (bool integers : {false, true}) {
      for (unsigned threads : {1u, 4u}) {
        auto const c = three_clouds(part, integers);
        auto const sources = sources_of(c);
        auto o = job_options(percentiles(), 1.5, device_choice::cpu, threads);
        memory_output out;
        auto const report = run_grid_job(sources, o, out);
        grid_spec g;
        auto const want = reference(c, o.request, 1.5, g);
        ASSERT_TRUE(out.committed);
        EXPECT_EQ(out.bands.percentile.size(), 4U);
        expect_bands(out.bands, want, o.request);
        EXPECT_EQ(report.bands, 1);
      }
    }
  }
}

TEST(GridJob, PercentilesThatOutgrowTheBudgetSplitTheBandWithTheSameResult)
{
  auto const c = three_clouds(900, true);
  auto const sources = sources_of(c);
  auto o = job_options(percentiles(), 0.5, device_choice::cpu);
  // The accumulators fit; 40,000 kept points (800 KB) do not: planned as 2+ bands, and split further
  // where the points crowd.
  o.host_memory = 300 * 1024;
  memory_output out;
  auto const report = run_grid_job(sources, o, out);
  grid_spec g;
  auto const want = reference(c, o.request, 0.5, g);
  EXPECT_GT(report.bands, 2);
  expect_bands(out.bands, want, o.request);
  EXPECT_EQ(report.binned, 40000U);

  // A single row whose points cannot fit: a resource error that says what to do.
  o.host_memory = 20 * 1024;
  memory_output none;
  try {
    (void)run_grid_job(sources, o, none);
    FAIL() << "no error";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::resource);
    EXPECT_NE(std::string(e.what()).find("percentiles"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(none.committed);
}

/// `request` on the GPU (both reductions; whole bands, and bands split by a 300 KB budget; one
/// finalized window, or many of whole blocks of 3 rows) gives the CPU's bands bit for bit, for
/// clouds read in parts of each of `parts` points.
void expect_gpu_equals_cpu(metric_request const& request, std::initializer_list<std::size_t> parts)
{
  struct variant {
    batch_reduction reduction;
    std::size_t part;
    std::uint64_t memory;
    bool small_windows;
  };
  std::vector<variant> variants;
  for (auto reduction : {batch_reduction::atomic, batch_reduction::sorted}) {
    for (std::size_t part : parts) {
      for (std::uint64_t memory : {std::uint64_t{0}, std::uint64_t{300 * 1024}}) {
        for (bool small_windows : {false, true}) { variants.push_back({reduction, part, memory, small_windows}); }
      }
    }
  }
  for (auto const& v : variants) {
    auto const c = three_clouds(v.part, true);
    auto const sources = sources_of(c);
    grid_job_options o;
    o.xres = o.yres = 0.5;
    o.request = request;
    o.threads = 4;
    o.host_memory = o.device_memory = v.memory;
    o.device = device_choice::cpu;
    memory_output cpu;
    (void)run_grid_job(sources, o, cpu);
    o.device = device_choice::gpu;
    o.reduction = v.reduction;
    memory_output gpu;
    if (v.small_windows) {
      o.device_window_cells = 40;
      gpu.blocks = 3;
    }
    auto const report = run_grid_job(sources, o, gpu);
    EXPECT_EQ(report.route, "GPU");
    if (v.memory > 0) { EXPECT_GT(report.bands, 2); }
    SCOPED_TRACE(std::string(batch_reduction_name(v.reduction)) + ", part " + std::to_string(v.part) + ", memory " +
                 std::to_string(v.memory) + (v.small_windows ? ", windows of 3 rows" : ""));
    expect_bands(gpu.bands, cpu.bands, o.request, 0);
    EXPECT_EQ(gpu.bands.prange.size(), cpu.bands.prange.size());
    EXPECT_EQ(gpu.bands.shape.size(), request.shapes.size());
    if (v.small_windows && v.memory == 0) {
      // One band: every window starts on a block and holds whole blocks but the last.
      std::uint32_t const rows_per = window_rows(40, report.grid.cols, 3);
      EXPECT_EQ(rows_per % 3, 0U);
      EXPECT_GT(gpu.windows.size(), 2U);
      for (auto const row0 : gpu.windows) { EXPECT_EQ(row0 % rows_per, 0U) << "a window from row " << row0; }
    }
  }
}

TEST(GridJob, GpuPercentilesEqualTheCpu)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: GPU percentiles are checked on the GPU machine"; }
  expect_gpu_equals_cpu(percentiles(), {1, 999});
}

metric_request shapes()
{
  auto r = metric_request::from(parse_metric_list(
    "skewness,kurtosis,cover,above:-3.5,zbin:-20,0,5,20,entropy,density,count,p50"));
  return r;
}

TEST(GridJob, ShapeMetricsEqualTheWholeCloudWhateverThePartsAndThreads)
{
  for (std::size_t part : {std::size_t{1}, std::size_t{1000}}) {
    for (unsigned threads : {1u, 4u}) {
      auto const c = three_clouds(part, true);
      auto const sources = sources_of(c);
      auto o = job_options(shapes(), 1.5, device_choice::cpu, threads);
      memory_output out;
      (void)run_grid_job(sources, o, out);
      grid_spec g;
      auto const want = reference(c, o.request, 1.5, g);
      ASSERT_TRUE(out.committed);
      ASSERT_EQ(out.bands.shape.size(), 8U);
      metric_request without_density = o.request;
      without_density.density = false;  // the whole-cloud reference has no grid area
      expect_bands(out.bands, want, without_density);
      // density = count / 2.25 where there are points.
      ASSERT_EQ(out.bands.density.size(), out.bands.count.size());
      for (std::size_t i = 0; i < out.bands.count.size(); ++i) {
        if (out.bands.count[i] == 0) { continue; }
        ASSERT_EQ(out.bands.density[i], static_cast<float>(out.bands.count[i] / 2.25)) << i;
      }
    }
  }
}

TEST(GridJob, GpuShapeMetricsEqualTheCpu)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: GPU shape metrics are checked on the GPU machine"; }
  expect_gpu_equals_cpu(shapes(), {999});
}

/// Sixteen clusters of points in the bottom 16 of 1,024 rows, each cluster alone within the memory
/// budget's kept points and no two together: the planned bands hold every cluster in one, and it is
/// split until each cluster has its own band (at least 15 splits). On the GPU each split is thrown
/// by the kept points' reservation before a batch, with a ring slot taken: more splits than the
/// ring's slots (6 for one worker) end only if every such slot is given back.
job_case crowded_rows()
{
  job_case c;
  c.part = 500;
  c.integers = true;
  std::mt19937_64 rng(23);
  std::uniform_int_distribution<int> mm(1, 999);
  std::uniform_int_distribution<int> zi(-20000, 20000);
  cloud cl;
  for (int cluster = 0; cluster < 16; ++cluster) {
    for (int i = 0; i < 5400; ++i) {
      cl.x.push_back(mm(rng) * 0.001);
      cl.y.push_back(cluster + mm(rng) * 0.001);
      cl.z.push_back(zi(rng) * 0.001);
    }
  }
  cl.x.push_back(0.5);  // the top of the grid: 1,024 rows
  cl.y.push_back(1023.5);
  cl.z.push_back(0.0);
  c.clouds = {cl};
  return c;
}

TEST(GridJob, BandsSplitMoreTimesThanTheRingHasSlotsEndWithTheCpusResult)
{
  auto const c = crowded_rows();
  auto const sources = sources_of(c);
  auto o = job_options(percentiles(), 1.0, device_choice::cpu, 1);
  // 200 KB: one cluster's kept points (5,400 x 20 or 28 bytes) fit beside a band's accumulators,
  // two never do.
  o.host_memory = o.device_memory = 200 * 1024;
  memory_output cpu;
  auto const on_cpu = run_grid_job(sources, o, cpu);
  grid_spec g;
  auto const want = reference(c, o.request, 1.0, g);
  ASSERT_EQ(g.rows, 1024U);
  // Planned as 9+ bands of 1/9 of the rows or less; the bottom one split at least 15 times.
  int const splits_past_the_ring = 16 + static_cast<int>(gpu_ring_slots(1));
  EXPECT_GE(on_cpu.bands, splits_past_the_ring);
  expect_bands(cpu.bands, want, o.request);
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the device's band splits are checked on the GPU machine"; }
  o.device = device_choice::gpu;
  memory_output gpu;
  auto const on_gpu = run_grid_job(sources, o, gpu);
  EXPECT_EQ(on_gpu.route, "GPU");
  EXPECT_GE(on_gpu.bands, splits_past_the_ring);
  EXPECT_EQ(on_gpu.binned, c.clouds.front().size());
  expect_bands(gpu.bands, cpu.bands, o.request, 0);
}

TEST(GridJob, GpuPercentilesOfACellOfTenMillionPointsEqualTheCpu)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: GPU percentiles are checked on the GPU machine"; }
  job_case c;
  c.clouds = {walk(20000, 0, 0, 30, 5), cloud{}};
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> zi(-2000000, 2000000);
  auto& big = c.clouds.back();
  for (int i = 0; i < 10'000'000; ++i) {
    big.x.push_back(12.25);
    big.y.push_back(12.75);
    big.z.push_back(zi(rng) * 0.001);
  }
  c.part = 262144;
  c.integers = true;
  auto const sources = sources_of(c);
  auto o = job_options(percentiles(), 1.0, device_choice::cpu, 4);
  memory_output cpu;
  (void)run_grid_job(sources, o, cpu);
  o.device = device_choice::gpu;
  memory_output gpu;
  auto const report = run_grid_job(sources, o, gpu);
  EXPECT_EQ(report.route, "GPU");
  EXPECT_GE(report.max_count, 10'000'000U);
  expect_bands(gpu.bands, cpu.bands, o.request, 0);
}

}  // namespace
}  // namespace heightgrid::app
