// The streaming pipeline on its own: the scheduler's ordering, bounds and failure handling, and a
// whole grid job on the CPU against the whole-cloud reference (header bounds and bounds passes,
// fixed extents, memory bands, no points), plus a GPU job that no point reaches (when a GPU is
// present). Percentiles: grid_job_percentile_test.cpp; the GPU routes: grid_job_gpu_test.cpp.

#include "pipeline_fixtures.hpp"

#include "pipeline/gpu_stage.hpp"
#include "pipeline/grid_job.hpp"
#include "pipeline/grid_plan.hpp"
#include "pipeline/scheduler.hpp"
#include "pipeline/sinks.hpp"

#include "heightgrid/core/cell_accumulator.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/result_compare.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

namespace heightgrid::app {
namespace {

using pipeline_fixtures::cloud;
using pipeline_fixtures::expect_bands;
using pipeline_fixtures::extremes;
using pipeline_fixtures::fake_source;
using pipeline_fixtures::held_start;
using pipeline_fixtures::job_case;
using pipeline_fixtures::job_options;
using pipeline_fixtures::memory_output;
using pipeline_fixtures::reference;
using pipeline_fixtures::sources_of;
using pipeline_fixtures::three_clouds;
using pipeline_fixtures::walk;

/// A sink that records the order of deliveries, with a bounded pool of batch memory.
class recording_sink final : public part_sink {
 public:
  recording_sink(std::size_t slots, std::size_t batch_points) : memory_(slots, std::vector<double>(3 * batch_points))
  {
    for (std::size_t i = 0; i < slots; ++i) { free_.push_back(i); }
    points_ = batch_points;
  }

  point_batch acquire(unsigned, std::atomic<bool> const& stopping) override
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return !free_.empty() || stopping.load() || stopped_; });
    if (free_.empty()) { return point_batch{memory_[0].data(), points_, 0, coord_encoding::float64, {}}; }
    std::size_t const i = free_.back();
    free_.pop_back();
    in_use_ = std::max(in_use_, memory_.size() - free_.size());
    return point_batch{memory_[i].data(), points_, 0, coord_encoding::float64, {}};
  }
  void deliver(unsigned, part_ticket const& t, point_batch& b) override
  {
    std::lock_guard<std::mutex> lock(mutex_);
    order.emplace_back(t.source, t.part);
    points += b.size;
    give(b);
  }
  void give_back(unsigned, point_batch& b) override
  {
    std::lock_guard<std::mutex> lock(mutex_);
    give(b);
  }
  void stop() override
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    cv_.notify_all();
  }

  std::vector<std::pair<std::size_t, std::uint64_t>> order;
  std::uint64_t points{0};

 private:
  void give(point_batch const& b)
  {
    for (std::size_t i = 0; i < memory_.size(); ++i) {
      if (memory_[i].data() == b.data && std::find(free_.begin(), free_.end(), i) == free_.end()) { free_.push_back(i); }
    }
    cv_.notify_one();
  }
  std::vector<std::vector<double>> memory_;
  std::vector<std::size_t> free_;
  std::size_t points_{0};
  std::size_t in_use_{0};
  bool stopped_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
};

std::vector<std::unique_ptr<part_source>> mixed_sources(std::vector<fake_source*>& raw, std::size_t part)
{
  std::vector<std::unique_ptr<part_source>> s;
  auto add = [&](cloud c, bool concurrent, bool integers, std::string name) {
    auto p = std::make_unique<fake_source>(std::move(c), part, concurrent, integers, std::move(name));
    raw.push_back(p.get());
    s.push_back(std::move(p));
  };
  add(walk(1000, 0, 0, 30, 1), true, true, "a.las");
  add(cloud{}, true, false, "empty.las");
  add(walk(777, 10, 10, 20, 2), false, false, "b.xyz");
  add(walk(1, 5, 5, 1, 3), true, false, "one.las");
  add(walk(2500, 0, 20, 25, 4), false, true, "c.xyz");
  return s;
}

TEST(Scheduler, OrderedDeliveryFollowsSourcesAndPartsWhateverTheThreads)
{
  for (unsigned threads : {1u, 3u, 8u}) {
    for (std::size_t slots : {std::size_t{1}, std::size_t{2}, std::size_t{16}}) {
      std::vector<fake_source*> raw;
      auto const sources = mixed_sources(raw, 97);
      recording_sink sink(slots, 97);
      filter_rules const rules{filter_options::keep_all()};
      auto const r = read_parts(source_pointers(sources), rules, {threads, true}, sink);
      // Expected: every part of every source, in order; sequential sources end with their last part.
      std::vector<std::pair<std::size_t, std::uint64_t>> want;
      for (std::size_t s = 0; s < sources.size(); ++s) {
        std::uint64_t const n = std::max<std::uint64_t>(1, (raw[s]->info().point_count.value() + 96) / 97);
        std::uint64_t const parts = sources[s]->concurrent_parts() ? (raw[s]->info().point_count.value() + 96) / 97 : n;
        for (std::uint64_t k = 0; k < parts; ++k) { want.emplace_back(s, k); }
      }
      EXPECT_EQ(sink.order, want) << threads << " threads, " << slots << " slots";
      EXPECT_EQ(sink.points, 1000U + 777 + 1 + 2500);
      EXPECT_EQ(r.total.filtered.points_in, 1000U + 777 + 1 + 2500);
      for (auto* s : raw) { EXPECT_EQ(s->releases.load(), 1) << s->info().path; }
    }
  }
}

TEST(Scheduler, UnorderedDeliveryDeliversEveryPartOnce)
{
  std::vector<fake_source*> raw;
  auto const sources = mixed_sources(raw, 10);
  recording_sink sink(4, 10);
  filter_rules const rules{filter_options::keep_all()};
  (void)read_parts(source_pointers(sources), rules, {6, false}, sink);
  std::set<std::pair<std::size_t, std::uint64_t>> const seen(sink.order.begin(), sink.order.end());
  EXPECT_EQ(seen.size(), sink.order.size());
  EXPECT_EQ(sink.points, 1000U + 777 + 1 + 2500);
}

TEST(Scheduler, AFailingPartStopsEveryWorkerAndIsRethrown)
{
  for (bool ordered : {false, true}) {
    std::vector<fake_source*> raw;
    auto const sources = mixed_sources(raw, 50);
    raw[4]->fail_at = 3;  // a sequential source, mid-way
    recording_sink sink(2, 50);
    filter_rules const rules{filter_options::keep_all()};
    try {
      (void)read_parts(source_pointers(sources), rules, {5, ordered}, sink);
      FAIL() << "no exception";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      EXPECT_NE(std::string(e.what()).find("c.xyz: part 3"), std::string::npos) << e.what();
    }
    for (auto* s : raw) { EXPECT_EQ(s->releases.load(), 1) << s->info().path; }
  }
}

TEST(Scheduler, ASecondPassReadsSequentialSourcesFromTheStart)
{
  std::vector<fake_source*> raw;
  auto const sources = mixed_sources(raw, 64);
  filter_rules const rules{filter_options::keep_all()};
  for (int pass = 0; pass < 2; ++pass) {
    recording_sink sink(3, 64);
    auto const r = read_parts(source_pointers(sources), rules, {4, true}, sink);
    EXPECT_EQ(sink.points, 1000U + 777 + 1 + 2500) << pass;
  }
}

// ---- the grid job -------------------------------------------------------------------------------

TEST(AutoDevice, DeviceGpuAsksTheDriverFromAHelperOnlyWhereTheCpuIsExpectedToFinishFirst)
{
  // The CPU route's pass by auto's model: points / (threads x las_cpu_points_per_thread_s), tagged
  // bands adding their share. 10^8 points on 16 threads: 0.30 s, below gpu_context_s (the helper
  // asks the driver); 3 x 10^8: 0.89 s (the job's own thread starts CUDA, a context likely made).
  metric_request range;
  range.range = true;
  double const rate = auto_device_policy::las_cpu_points_per_thread_s;
  EXPECT_DOUBLE_EQ(las_cpu_pass_s(100'000'000, range, 16), 1e8 / (16 * rate));
  EXPECT_DOUBLE_EQ(las_cpu_pass_s(100'000'000, range, 0), 1e8 / rate);  // 0 threads: one
  EXPECT_TRUE(cpu_bins_before_a_context_pays(100'000'000, range, 16));
  EXPECT_FALSE(cpu_bins_before_a_context_pays(300'000'000, range, 16));
  EXPECT_FALSE(cpu_bins_before_a_context_pays(100'000'000, range, 2));  // 2.4 s on 2 threads
  EXPECT_FALSE(cpu_bins_before_a_context_pays(0, range, 16));            // unknown: in-process
  // The boundary: a pass of gpu_context_s (235,200,000 points on 16 threads).
  auto const at = static_cast<std::uint64_t>(auto_device_policy::gpu_context_s * 16 * rate);
  EXPECT_FALSE(cpu_bins_before_a_context_pays(at + 1'000, range, 16));
  EXPECT_TRUE(cpu_bins_before_a_context_pays(at - 1'000, range, 16));
  // Tagged bands make the CPU's pass longer: 2 x 10^8 points with four of them, 0.6 x 2 = 1.2 s.
  metric_request tagged = range;
  tagged.tags.resize(4);
  EXPECT_TRUE(cpu_bins_before_a_context_pays(200'000'000, range, 16));
  EXPECT_FALSE(cpu_bins_before_a_context_pays(200'000'000, tagged, 16));
}

TEST(AutoDevice, AGpuWhoseDriverIsUpMakesItsContextOnlyWhereTheCpuWillStillBeReading)
{
  // The CPU's rate so far says how long its pass has left; the GPU pays only where that is at least
  // gpu_context_s. 6 * 10^7 of 10^8 records in 0.12 s: 0.08 s left, no context; 10^7 of 10^8 in
  // 0.1 s: 0.9 s left, a context. Unknown (no count, nothing read yet, no time): a context.
  double const ready_s = auto_device_policy::gpu_context_s;
  EXPECT_FALSE(gpu_context_worth_making(0.12, 60'000'000, 100'000'000));
  EXPECT_TRUE(gpu_context_worth_making(0.1, 10'000'000, 100'000'000));
  EXPECT_FALSE(gpu_context_worth_making(0.3, 100'000'000, 100'000'000));  // done
  EXPECT_FALSE(gpu_context_worth_making(0.3, 120'000'000, 100'000'000));  // more than the headers said
  // The boundary: half of the records read in gpu_context_s leaves as long again.
  EXPECT_TRUE(gpu_context_worth_making(ready_s, 50, 100));
  EXPECT_FALSE(gpu_context_worth_making(ready_s * 0.99, 50, 100 - 1));
  EXPECT_TRUE(gpu_context_worth_making(0.0, 10, 100));
  EXPECT_TRUE(gpu_context_worth_making(0.2, 0, 100));
  EXPECT_TRUE(gpu_context_worth_making(0.2, 10, 0));
}

TEST(AutoDevice, EachKindOfJobStartsTheGpuWhereItWasMeasuredToWin)
{
  // The measured crossovers (docs/benchmarks.md, H200 hosts): extremes move to the GPU between
  // 3 * 10^8 and 4 * 10^8 points on 16 cores and stay on the CPU at 10^9 on 32; mean between 10^8 and
  // 2 * 10^8, percentiles between 10^7 and 3 * 10^7 (16 cores); a job of unknown size starts the GPU.
  metric_request range;
  range.range = true;
  metric_request mean;
  mean.mean = true;
  metric_request pct;
  pct.percentiles = {50.0};
  EXPECT_FALSE(auto_wants_gpu(300'000'000, range, 16));
  EXPECT_TRUE(auto_wants_gpu(400'000'000, range, 16));
  EXPECT_TRUE(auto_wants_gpu(2'000'000'000, range, 16));
  EXPECT_FALSE(auto_wants_gpu(100'000'000, mean, 16));
  EXPECT_TRUE(auto_wants_gpu(200'000'000, mean, 16));
  EXPECT_FALSE(auto_wants_gpu(10'000'000, pct, 16));
  EXPECT_TRUE(auto_wants_gpu(30'000'000, pct, 16));
  EXPECT_TRUE(auto_wants_gpu(0, range, 16));
  EXPECT_FALSE(auto_wants_gpu(1'000'000'000, range, 32));
  EXPECT_TRUE(auto_wants_gpu(1'000'000'000, range, 16));
  EXPECT_FALSE(auto_wants_gpu(10'000'000, range, 2));
  EXPECT_TRUE(auto_wants_gpu(100'000'000, range, 2));  // 2 cores: the CPU route takes seconds
  // Four tagged count bands: the CPU route's binning twice as long (docs/benchmarks.md, "Tagged
  // counts": CPU 0.79 s, GPU 0.92 s at 10^8 on 16 cores).
  metric_request tagged = range;
  tagged.tags = parse_metric_list("count:2,count:3,4,5,first,last");
  EXPECT_FALSE(auto_wants_gpu(100'000'000, tagged, 16));
  EXPECT_TRUE(auto_wants_gpu(300'000'000, tagged, 16));
}

TEST(GridPlan, FinalizedWindowsAreWholeRowsAndWholeBlocksOfTheFile)
{
  // 2^21 cells of 3,163 columns: 663 rows, 512 in whole blocks of 256; of 10,000 columns: 209 rows,
  // one block at least.
  EXPECT_EQ(window_rows(std::uint64_t{1} << 21, 3163, 256), 512U);
  EXPECT_EQ(window_rows(std::uint64_t{1} << 21, 10000, 256), 256U);
  EXPECT_EQ(window_rows(std::uint64_t{1} << 21, 10000, 0), 209U);
  // Rows wider than the window: one row; no columns: the cells as rows; a block taller than the grid.
  EXPECT_EQ(window_rows(100, 1000, 0), 1U);
  EXPECT_EQ(window_rows(100, 0, 0), 100U);
  EXPECT_EQ(window_rows(40, 7, 3), 3U);
  EXPECT_EQ(window_rows(40, 2, 3), 18U);
  EXPECT_EQ(window_rows(std::uint64_t{1} << 40, 1, 0), std::numeric_limits<std::uint32_t>::max());
}

TEST(GridPlan, BandsFollowTheBudgetAndTooManyAreRefusedWithTheNumbers)
{
  band_plan_facts f;
  f.grid = grid_spec{0.0, 1000.0, 1.0, 1.0, 1000, 1000};
  f.bytes_per_cell = 20;
  f.budget = 20'000'000;  // exactly the accumulators
  EXPECT_EQ(plan_bands(f), 1);
  f.budget = 19'999'999;
  EXPECT_EQ(plan_bands(f), 2);
  f.points = 1'000'000;
  f.bytes_per_point = 28;
  f.budget = 16'000'000;  // 48 MB / 16 MB
  EXPECT_EQ(plan_bands(f), 3);
  f.budget = 100'000;  // 480 passes
  f.budget_from_option = true;
  try {
    (void)plan_bands(f);
    ADD_FAILURE() << "no error";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::resource);
    EXPECT_NE(std::string(e.what()).find("1000 x 1000 = 1000000 cells needs"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(--memory): 480 passes"), std::string::npos) << e.what();
  }
  auto const stack = band_stack(f.grid, 3);
  ASSERT_EQ(stack.size(), 3U);
  EXPECT_EQ(stack.back().first_row, 0U);  // the first band last
  EXPECT_EQ(stack.back().rows, 334U);
  EXPECT_EQ(stack.front().first_row, 668U);
  EXPECT_EQ(stack.front().rows, 332U);
  EXPECT_EQ(order_capacity(1000, 400, 28), 21U);
  EXPECT_EQ(order_capacity(100, 400, 28), 1U);
  EXPECT_EQ(order_capacity(100, 4, 0), 0U);
  metric_request tagged = metric_request::from(parse_metric_list("range,count:2,first"));
  EXPECT_EQ(accumulator_bytes_per_cell(tagged), 20U + 8U);
}

TEST(AutoDevice, LazChunksGoToTheGpuDecoderWhereItsEstimateWins)
{
  // docs/benchmarks.md, "LAZ on the device" (16 cores): layered chunks of 50,000 points binned where
  // they are decoded move to the GPU from ~5 * 10^7 points; never below laz_gpu_min_points.
  laz_offload_facts f;
  f.largest_chunk = 50'000;
  f.threads = 16;
  f.fold = true;
  f.points = 1'000'000'000;
  f.chunks = 27'273;
  auto const big = estimate_laz_offload(f);
  EXPECT_TRUE(big.use_gpu) << big.cpu_s << " vs " << big.gpu_s;
  f.points = 10'000'000;
  f.chunks = 200;
  EXPECT_FALSE(estimate_laz_offload(f).use_gpu);
  EXPECT_NE(estimate_laz_offload(f).note(f).find("not used: 10000000 LAZ points decode in ~"), std::string::npos);
  // Pointwise chunks (a serial chain a chunk): 2.4 * 10^8 points of 36,000-point chunks on 32 cores.
  f = laz_offload_facts{};
  f.points = f.pointwise_points = 240'000'000;
  f.largest_pointwise_chunk = 36'702;
  f.chunks = 6'540;
  f.threads = 32;
  f.fold = true;
  auto const pw = estimate_laz_offload(f);
  EXPECT_GT(pw.cpu_s, 0.0);
  EXPECT_GT(pw.gpu_s, 0.0);
}

TEST(AutoDevice, TheReadersTakeTheLazChunksThatFinishWithTheGpu)
{
  // Four chunks of 1 s on the readers and 0.5 s on the GPU: one to the readers (1 s against 1.5 s);
  // a second would leave the readers 2 s.
  std::vector<double> const cpu(4, 1.0);
  std::vector<double> const gpu(4, 0.5);
  EXPECT_EQ(laz_cpu_share_chunks(cpu, gpu, 0.0, 0.0), 1U);
  // A wave's fixed cost makes the GPU's side longer: two (2 s against 1 s + 1.2 s).
  EXPECT_EQ(laz_cpu_share_chunks(cpu, gpu, 0.0, 1.2), 2U);
  // Chunks the readers hold already count: none more.
  EXPECT_EQ(laz_cpu_share_chunks(cpu, gpu, 1.0, 0.0), 0U);
  // A GPU eight times the readers': 111 chunks (111 s against 111.125 s; one more: 112 s).
  std::vector<double> const slow(1000, 1.0);
  std::vector<double> const fast(1000, 0.125);
  EXPECT_EQ(laz_cpu_share_chunks(slow, fast, 0.0, 0.0), 111U);
  EXPECT_EQ(laz_cpu_share_chunks({}, {}, 0.0, 1.0), 0U);
  // The 10^9-point job of docs/benchmarks.md ("Both decoders"): 20,000 chunks of 50,000 points, 16
  // readers at 3.1 M points/s each, 4,224 chunks at once at 10^5 points/s each, 0.15 s besides.
  using policy = auto_device_policy;
  std::vector<double> const readers(20'000, 50'000 / (16 * policy::laz_share_cpu_points_per_thread_s));
  std::vector<double> const device(20'000, 50'000 / (4'224 * policy::laz_gpu_points_per_slot_s));
  std::size_t const k = laz_cpu_share_chunks(readers, device, 0.0, policy::laz_share_wave_fixed_s);
  EXPECT_GT(k, 2'100U);  // ~11 % of the points: both ~2.25 s
  EXPECT_LT(k, 2'400U);
}

TEST(GridJob, CpuEqualsTheWholeCloudForPartsThatCutCells)
{
  for (std::size_t part : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    for (bool integers : {false, true}) {
      for (unsigned threads : {1u, 4u}) {
        auto const c = three_clouds(part, integers);
        auto const sources = sources_of(c);
        auto o = job_options(extremes(), 1.5, device_choice::cpu, threads);
        memory_output out;
        auto const report = run_grid_job(sources, o, out);
        grid_spec g;
        auto const want = reference(c, o.request, 1.5, g);
        ASSERT_TRUE(out.committed);
        EXPECT_EQ(out.grid.x0, g.x0);
        EXPECT_EQ(out.grid.y0, g.y0);
        EXPECT_EQ(out.grid.cols, g.cols);
        EXPECT_EQ(out.grid.rows, g.rows);
        expect_bands(out.bands, want, o.request);
        EXPECT_EQ(report.passes, 1) << "exact header bounds: one pass";
        EXPECT_EQ(report.binned, 40000U);
        EXPECT_EQ(report.route, "CPU");
      }
    }
  }
}

TEST(GridJob, MeanAndStddevDoNotDependOnTheThreadCount)
{
  auto const c = three_clouds(333, true);
  auto const sources = sources_of(c);
  metric_request r = extremes();
  r.mean = r.stddev = true;
  grid_spec g;
  auto const want = reference(c, r, 2.0, g);
  std::optional<cell_results> first;
  for (unsigned threads : {1u, 2u, 7u}) {
    auto o = job_options(r, 2.0, device_choice::cpu, threads);
    memory_output out;
    (void)run_grid_job(sources, o, out);
    expect_bands(out.bands, want, extremes());
    for (std::size_t i = 0; i < want.mean.size(); ++i) {
      if (want.count[i] == 0) { continue; }
      ASSERT_LE(ulp_distance(out.bands.mean[i], want.mean[i]), 1U) << "cell " << i;
      ASSERT_NEAR(out.bands.stddev[i], want.stddev[i], 1e-5F * std::max(1.0F, want.stddev[i])) << "cell " << i;
    }
    if (!first) {
      first = out.bands;
    } else {
      expect_bands(out.bands, *first, r, 0);  // bit for bit, mean and stddev included
    }
  }
}

TEST(GridJob, MeanMergesEveryBatchInOrderWhenManyBatchesShareTheirCells)
{
  // Every batch reaches most of 2,000 cells (several lanes), and z values far apart in magnitude
  // make a sum depend on the order of its terms: two batches merged out of order, or at once, into
  // a cell change its mean's bits. Every thread count must give the one-thread bits.
  cloud c;
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> where(0.0, 50.0);
  double const magnitudes[] = {1e15, 3.25, -1e15, 1e-3, 7e12, -2.5, 1e9};
  for (std::size_t i = 0; i < 120000; ++i) {
    c.x.push_back(std::round(where(rng) * 1000.0) / 1000.0);
    c.y.push_back(std::round(where(rng) * 800.0) / 1000.0);
    c.z.push_back(magnitudes[rng() % 7] * (1.0 + static_cast<double>(i % 11) * 0.1));
  }
  job_case jc;
  jc.clouds = {c};
  jc.part = 4000;
  auto const sources = sources_of(jc);
  metric_request r;
  r.mean = r.stddev = r.count = true;
  std::optional<cell_results> first;
  for (unsigned threads : {1u, 3u, 8u, 16u, 16u}) {
    auto o = job_options(r, 1.0, device_choice::cpu, threads);
    memory_output out;
    (void)run_grid_job(sources, o, out);
    ASSERT_FALSE(out.bands.mean.empty());
    if (!first) {
      first = out.bands;
    } else {
      expect_bands(out.bands, *first, r, 0);  // bit for bit
    }
  }
}

TEST(GridJob, AHeaderWiderThanThePointsAtTheOriginIsCroppedInOnePass)
{
  // Wider west and north: the points' grid starts 7 columns and some rows into the one guessed
  // from the headers, and is cropped from its accumulators (the host's, the device's, both merged).
  std::vector<device_choice> devices = {device_choice::cpu};
  if (gpu_available()) {
    devices.push_back(device_choice::gpu);
    devices.push_back(device_choice::automatic);
  }
  metric_request sums = extremes();
  sums.mean = true;
  sums.count = true;
  for (device_choice const device : devices) {
    for (metric_request const& request : {extremes(), sums}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(device)) + (request.mean ? ", with mean" : ", extremes"));
      auto const c = three_clouds(500, false);
      std::vector<fake_source*> raw;
      auto const sources = sources_of(c, &raw);
      raw[1]->declared->extend(-7.0, 200.0);
      auto o = job_options(request, 1.0, device, 3);
      memory_output out;
      auto const report = run_grid_job(sources, o, out);
      grid_spec g;
      auto const want = reference(c, o.request, 1.0, g);
      EXPECT_EQ(report.passes, 1);
      EXPECT_EQ(report.grid_crop.first, 7U);
      EXPECT_GT(report.grid_crop.second, 0U);
      EXPECT_EQ(out.grid.x0, g.x0);
      EXPECT_EQ(out.grid.y0, g.y0);
      EXPECT_EQ(out.grid.cols, g.cols);
      EXPECT_EQ(out.grid.rows, g.rows);
      expect_bands(out.bands, want, o.request);
    }
  }
}

TEST(GridJob, AHeaderWiderOnlyEastAndSouthIsCroppedInOnePass)
{
  auto const c = three_clouds(500, false);
  std::vector<fake_source*> raw;
  auto const sources = sources_of(c, &raw);
  raw[0]->declared->extend(95.0, -30.0);  // wider east and south: the same origin
  auto o = job_options(extremes(), 1.0, device_choice::cpu);
  memory_output out;
  auto const report = run_grid_job(sources, o, out);
  grid_spec g;
  auto const want = reference(c, o.request, 1.0, g);
  EXPECT_EQ(report.passes, 1);
  EXPECT_EQ(out.grid.cols, g.cols);
  EXPECT_EQ(out.grid.rows, g.rows);
  expect_bands(out.bands, want, o.request);
}

TEST(GridJob, PointsOutsideTheirHeaderAreNeverDropped)
{
  auto const c = three_clouds(500, true);
  std::vector<fake_source*> raw;
  auto const sources = sources_of(c, &raw);
  bounds lying;
  lying.extend(45.0, 35.0);
  lying.extend(50.0, 40.0);
  raw[1]->declared = lying;  // a header that lies: most of its points are outside
  auto o = job_options(extremes(), 1.0, device_choice::cpu);
  memory_output out;
  auto const report = run_grid_job(sources, o, out);
  grid_spec g;
  auto const want = reference(c, o.request, 1.0, g);
  expect_bands(out.bands, want, o.request);
  EXPECT_EQ(report.binned, 40000U);
  bool named = false;
  for (auto const& w : report.warnings) { named = named || w.find("cloud1.las") != std::string::npos; }
  EXPECT_TRUE(named) << "the lying file is named in a warning";
}

TEST(GridJob, SourcesWithoutDeclaredBoundsGetABoundsPass)
{
  auto const c = three_clouds(700, false);
  auto const sources = sources_of(c, nullptr, false);
  auto o = job_options(extremes(), 3.0, device_choice::cpu);
  memory_output out;
  auto const report = run_grid_job(sources, o, out);
  grid_spec g;
  auto const want = reference(c, o.request, 3.0, g);
  EXPECT_EQ(report.bounds_passes, 1);
  EXPECT_EQ(report.passes, 1);
  expect_bands(out.bands, want, o.request);
}

TEST(GridJob, AFixedExtentCountsThePointsOutside)
{
  auto const c = three_clouds(1000, false);
  auto const sources = sources_of(c);
  grid_job_options o;
  o.xres = o.yres = 2.0;
  o.fixed_grid = grid_from_extent(10.0, 10.0, 40.0, 50.0, 2.0, 2.0);
  o.request = extremes();
  o.device = device_choice::cpu;
  memory_output out;
  auto const report = run_grid_job(sources, o, out);
  grid_spec g;
  auto const want = reference(c, o.request, 2.0, g, o.fixed_grid);
  expect_bands(out.bands, want, o.request);
  std::uint64_t inside = 0;
  for (auto n : want.count) { inside += n; }
  EXPECT_EQ(report.binned, inside);
  EXPECT_EQ(report.outside, 40000U - inside);
}

TEST(GridJob, AGpuJobThatNoPointReachesWritesEmptyCellsAndServesTheNextJob)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the GPU route is checked on the GPU machine"; }
  auto const c = three_clouds(1000, false);
  auto const sources = sources_of(c);
  auto o = job_options(extremes(), 2.0, device_choice::gpu);
  // A tile far from every point (the GPU route once finalized from a host grid it never made),
  // then one over the points on the same stage, as a tiled job's worker does.
  auto stage = std::make_shared<gpu_stage>(1000, 16);
  o.fixed_grid = grid_from_extent(1e6, 1e6, 1e6 + 40.0, 1e6 + 40.0, 2.0, 2.0);
  memory_output empty;
  auto const far = run_grid_job(sources, o, empty, stage);
  EXPECT_EQ(far.binned, 0U);
  EXPECT_EQ(far.non_empty, 0U);
  ASSERT_TRUE(empty.committed);
  for (auto const n : empty.bands.count) { EXPECT_EQ(n, 0U); }
  o.fixed_grid = grid_from_extent(10.0, 10.0, 40.0, 50.0, 2.0, 2.0);
  memory_output near;
  auto const report = run_grid_job(sources, o, near, stage);
  grid_spec g;
  auto const want = reference(c, o.request, 2.0, g, o.fixed_grid);
  expect_bands(near.bands, want, o.request);
  EXPECT_EQ(report.gpu_batches > 0, true);
}

TEST(GridJob, BatchesReadAheadOfAGpuThatFailsToStartEndInAnErrorNotAHang)
{
  // Runs with or without a GPU: the stage's start is held while the readers read every part ahead
  // (parked in ring slots and plain buffers), then fails. --device gpu: a device error naming the
  // reason; every parked buffer freed (the sanitizer build checks for leaks), no worker left waiting.
  auto const c = three_clouds(999, true);
  auto const sources = sources_of(c);
  auto o = job_options(extremes(), 1.0, device_choice::gpu, 4);
  o.cpu_while_gpu_starts = false;  // every batch for the GPU: read ahead and parked
  held_start held(false);
  auto stage = std::make_shared<gpu_stage>(1000, 4, -1, held.hook());
  held.release_after(200);
  memory_output out;
  try {
    (void)run_grid_job(sources, o, out, stage);
    ADD_FAILURE() << "a GPU job whose GPU failed to start succeeded";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::device);
    EXPECT_NE(std::string(e.what()).find("the start was refused"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(out.committed);
  EXPECT_GT(stage->parked_total(), 4U) << "the readers did not read past the 4 ring slots while the GPU started";
  EXPECT_FALSE(stage->has_parked());
}

TEST(GridJob, ATightMemoryBudgetBinsInBandsWithTheSameResult)
{
  auto const c = three_clouds(900, true);
  auto const sources = sources_of(c);
  metric_request r = extremes();
  r.mean = true;
  auto o = job_options(r, 0.5, device_choice::cpu);
  o.host_memory = 64 * 1024;  // a few thousand cells of accumulators
  memory_output out;
  auto const report = run_grid_job(sources, o, out);
  grid_spec g;
  auto const want = reference(c, r, 0.5, g);
  EXPECT_GT(report.bands, 1);
  EXPECT_EQ(out.grid.cols, g.cols);
  EXPECT_EQ(out.grid.rows, g.rows);
  expect_bands(out.bands, want, extremes());
  EXPECT_EQ(report.binned, 40000U);
}

TEST(GridJob, ExtremesWithoutACountBandEqualTheWholeCloudInBandsAndParts)
{
  // range/min/max alone: the CPU grid keeps no counts (host_grid), yet finds the same cells and the
  // same non-empty count, whatever the parts, threads and bands.
  metric_request r;
  r.min = r.max = r.range = true;
  for (std::uint64_t memory : {std::uint64_t{0}, std::uint64_t{48 * 1024}}) {
    for (unsigned threads : {1u, 4u}) {
      auto const c = three_clouds(7, true);
      auto const sources = sources_of(c);
      auto o = job_options(r, 0.5, device_choice::cpu, threads);
      o.host_memory = memory;
      memory_output out;
      auto const report = run_grid_job(sources, o, out);
      grid_spec g;
      metric_request with_count = r;
      with_count.count = true;
      auto const want = reference(c, with_count, 0.5, g);
      ASSERT_TRUE(out.committed);
      EXPECT_EQ(report.bands > 1, memory != 0);
      EXPECT_TRUE(out.bands.count.empty());
      expect_bands(out.bands, want, r);
      std::uint64_t non_empty = 0;
      for (auto n : want.count) { non_empty += n != 0; }
      EXPECT_EQ(report.non_empty, non_empty);
      EXPECT_EQ(report.binned, 40000U);
    }
  }
}

TEST(GridJob, NoPointsIsAnInputError)
{
  job_case c;
  c.clouds = {cloud{}};
  auto const sources = sources_of(c, nullptr, false);
  grid_job_options o;
  o.request = extremes();
  o.device = device_choice::cpu;
  memory_output out;
  try {
    (void)run_grid_job(sources, o, out);
    FAIL() << "no error";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::input);
  }
  EXPECT_FALSE(out.committed);
}

}  // namespace
}  // namespace heightgrid::app
