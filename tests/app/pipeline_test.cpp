// The streaming pipeline on its own: the scheduler's ordering, bounds and failure handling, and a
// whole grid job (CPU; GPU routes when a GPU is present) against the whole-cloud reference.

#include "pipeline/grid_job.hpp"
#include "pipeline/scheduler.hpp"
#include "pipeline/sinks.hpp"

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/result_compare.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <set>

namespace heightgrid::app {
namespace {

/// Points for a fake source: a random walk (spatially coherent, as LAS files are), z on a 1 mm grid.
struct cloud {
  std::vector<double> x, y, z;
  [[nodiscard]] std::size_t size() const { return x.size(); }
};

cloud walk(std::size_t n, double x0, double y0, double extent, std::uint64_t seed)
{
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> step(0.0, 0.5);
  std::uniform_int_distribution<int> zi(-20000, 20000);
  cloud c;
  double x = x0 + extent / 2, y = y0 + extent / 2;
  for (std::size_t i = 0; i < n; ++i) {
    x = std::clamp(x + step(rng), x0, x0 + extent);
    y = std::clamp(y + step(rng), y0, y0 + extent);
    // LAS-like: coordinates on a 1 mm grid, so the scaled-integer and double paths agree.
    c.x.push_back(std::round(x * 1000.0) / 1000.0);
    c.y.push_back(std::round(y * 1000.0) / 1000.0);
    c.z.push_back(zi(rng) * 0.001);
  }
  return c;
}

/// A part_source over a cloud: concurrent (known part count) or sequential; float64 or LAS-like
/// scaled integers (scale 0.001, offset 0); optional declared bounds; a part that throws.
class fake_source final : public part_source {
 public:
  fake_source(cloud c, std::size_t part_points, bool concurrent, bool integers, std::string name)
    : c_(std::move(c)), part_(part_points), concurrent_(concurrent), integers_(integers)
  {
    info_.path = std::move(name);
    info_.point_count = c_.size();
  }

  std::optional<bounds> declared;
  std::optional<std::uint64_t> fail_at;
  std::atomic<int> releases{0};
  std::atomic<int> reads{0};

  [[nodiscard]] source_info const& info() const override { return info_; }
  [[nodiscard]] std::optional<bounds> declared_bounds() const override { return declared; }
  [[nodiscard]] std::optional<std::uint64_t> part_count() const override
  {
    if (!concurrent_) { return std::nullopt; }
    return (c_.size() + part_ - 1) / part_;
  }
  [[nodiscard]] bool concurrent_parts() const override { return concurrent_; }
  [[nodiscard]] std::size_t max_part_points() const override { return part_; }
  void release() override { ++releases; }
  /// As a text file: the point count is not known before reading.
  void forget_count() { info_.point_count.reset(); }

  part_result read_part(std::uint64_t k, filter_rules const& rules, point_batch& out) override
  {
    ++reads;
    if (fail_at && *fail_at == k) { throw error(error_kind::input, info_.path + ": part " + std::to_string(k) + " is corrupt"); }
    if (!concurrent_) {
      if (k == 0) { next_ = 0; }
      EXPECT_EQ(k, next_) << "sequential parts out of order";
      next_ = k + 1;
    }
    part_result r;
    std::size_t const first = static_cast<std::size_t>(k) * part_;
    std::size_t const end = std::min(c_.size(), first + part_);
    r.last = end >= c_.size();
    out.encoding = integers_ ? coord_encoding::scaled_int32 : coord_encoding::float64;
    out.transform = scaled_coords{};
    out.transform.scale[0] = out.transform.scale[1] = out.transform.scale[2] = 0.001;
    std::size_t n = 0;
    for (std::size_t i = first; i < end; ++i) {
      ++r.filtered.points_in;
      auto const v = rules.judge(c_.x[i], c_.y[i], c_.z[i], false, 0, false, 0, false, 0, 0);
      if (v != filter_verdict::keep) {
        filter_rules::count(v, r.filtered);
        continue;
      }
      if (integers_) {
        out.xi()[n] = static_cast<std::int32_t>(std::llround(c_.x[i] * 1000.0));
        out.yi()[n] = static_cast<std::int32_t>(std::llround(c_.y[i] * 1000.0));
        out.zi()[n] = static_cast<std::int32_t>(std::llround(c_.z[i] * 1000.0));
      } else {
        out.x()[n] = c_.x[i];
        out.y()[n] = c_.y[i];
        out.z()[n] = c_.z[i];
      }
      r.extent.extend(out.x_at(n), out.y_at(n));
      r.z_min = std::min(r.z_min, out.z_at(n));
      r.z_max = std::max(r.z_max, out.z_at(n));
      ++n;
    }
    out.size = n;
    return r;
  }

 private:
  cloud c_;
  std::size_t part_;
  bool concurrent_;
  bool integers_;
  source_info info_;
  std::uint64_t next_{0};
};

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

/// Collects the output grid whole.
class memory_output final : public grid_output {
 public:
  void begin(grid_spec const& g, std::uint64_t max_count) override
  {
    grid = g;
    this->max_count = max_count;
    begun = true;
  }
  void write_rows(std::uint32_t row0, std::uint32_t rows, cell_results const& w) override
  {
    EXPECT_EQ(row0, next_row);
    next_row = row0 + rows;
    auto const append = [](auto& all, auto const& part) { all.insert(all.end(), part.begin(), part.end()); };
    append(bands.min, w.min);
    append(bands.max, w.max);
    append(bands.range, w.range);
    append(bands.count, w.count);
    append(bands.mean, w.mean);
    append(bands.stddev, w.stddev);
    bands.percentile.resize(w.percentile.size());
    bands.percentile_of = w.percentile_of;
    for (std::size_t k = 0; k < w.percentile.size(); ++k) { append(bands.percentile[k], w.percentile[k]); }
    append(bands.prange, w.prange);
  }
  void commit(std::uint64_t) override { committed = true; }

  grid_spec grid{};
  cell_results bands;
  std::uint64_t max_count{0};
  std::uint32_t next_row{0};
  bool begun{false};
  bool committed{false};
};

struct job_case {
  std::vector<cloud> clouds;
  std::size_t part{1000};
  bool integers{false};
};

std::vector<std::unique_ptr<part_source>> sources_of(job_case const& c, std::vector<fake_source*>* raw = nullptr,
                                                     bool declare = true)
{
  std::vector<std::unique_ptr<part_source>> s;
  int i = 0;
  for (auto const& cl : c.clouds) {
    auto p = std::make_unique<fake_source>(cl, c.part, i % 2 == 0, c.integers, "cloud" + std::to_string(i) + ".las");
    if (declare) {
      bounds b;
      for (std::size_t k = 0; k < cl.size(); ++k) { b.extend(cl.x[k], cl.y[k]); }
      p->declared = b;
    }
    if (raw != nullptr) { raw->push_back(p.get()); }
    s.push_back(std::move(p));
    ++i;
  }
  return s;
}

/// The whole-cloud reference: every point in input order, the grid of their bounds (or `fixed`).
cell_results reference(job_case const& c, metric_request const& r, double res, grid_spec& grid,
                       std::optional<grid_spec> fixed = std::nullopt)
{
  point_chunk all;
  bounds b;
  for (auto const& cl : c.clouds) {
    all.x.insert(all.x.end(), cl.x.begin(), cl.x.end());
    all.y.insert(all.y.end(), cl.y.begin(), cl.y.end());
    all.z.insert(all.z.end(), cl.z.begin(), cl.z.end());
    for (std::size_t k = 0; k < cl.size(); ++k) { b.extend(cl.x[k], cl.y[k]); }
  }
  grid = fixed ? *fixed : grid_from_bounds(b, res, res);
  binning_stats stats;
  return reduce_cells_cpu(bin_points_cpu(grid, all, stats), r, default_nodata);
}

metric_request extremes()
{
  metric_request r;
  r.min = r.max = r.range = r.count = true;
  return r;
}

void expect_bands(cell_results const& got, cell_results const& want, metric_request const& r, std::uint64_t mean_ulps = 0)
{
  auto const d = first_difference(got, want, r, mean_ulps);
  EXPECT_FALSE(d.has_value()) << d->describe();
}

job_case three_clouds(std::size_t part, bool integers)
{
  job_case c;
  c.clouds = {walk(20000, 0, 0, 60, 1), walk(15000, 40, 30, 50, 2), walk(5000, 10, 50, 20, 3)};
  c.part = part;
  c.integers = integers;
  return c;
}

TEST(GridJob, CpuEqualsTheWholeCloudForPartsThatCutCells)
{
  for (std::size_t part : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    for (bool integers : {false, true}) {
      for (unsigned threads : {1u, 4u}) {
        auto const c = three_clouds(part, integers);
        auto const sources = sources_of(c);
        grid_job_options o;
        o.xres = o.yres = 1.5;
        o.request = extremes();
        o.device = device_choice::cpu;
        o.threads = threads;
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
    grid_job_options o;
    o.xres = o.yres = 2.0;
    o.request = r;
    o.device = device_choice::cpu;
    o.threads = threads;
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

TEST(GridJob, AHeaderWiderThanThePointsAtTheOriginCostsASecondPass)
{
  auto const c = three_clouds(500, false);
  std::vector<fake_source*> raw;
  auto const sources = sources_of(c, &raw);
  raw[1]->declared->extend(-7.0, 200.0);  // wider west and north: another origin
  grid_job_options o;
  o.xres = o.yres = 1.0;
  o.request = extremes();
  o.device = device_choice::cpu;
  o.threads = 3;
  memory_output out;
  auto const report = run_grid_job(sources, o, out);
  grid_spec g;
  auto const want = reference(c, o.request, 1.0, g);
  EXPECT_EQ(report.passes, 2);
  EXPECT_EQ(out.grid.x0, g.x0);
  EXPECT_EQ(out.grid.cols, g.cols);
  expect_bands(out.bands, want, o.request);
}

TEST(GridJob, AHeaderWiderOnlyEastAndSouthIsCroppedInOnePass)
{
  auto const c = three_clouds(500, false);
  std::vector<fake_source*> raw;
  auto const sources = sources_of(c, &raw);
  raw[0]->declared->extend(95.0, -30.0);  // wider east and south: the same origin
  grid_job_options o;
  o.xres = o.yres = 1.0;
  o.request = extremes();
  o.device = device_choice::cpu;
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
  grid_job_options o;
  o.xres = o.yres = 1.0;
  o.request = extremes();
  o.device = device_choice::cpu;
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
  grid_job_options o;
  o.xres = o.yres = 3.0;
  o.request = extremes();
  o.device = device_choice::cpu;
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
  grid_job_options o;
  o.xres = o.yres = 2.0;
  o.request = extremes();
  o.device = device_choice::gpu;
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

TEST(GridJob, ATightMemoryBudgetBinsInBandsWithTheSameResult)
{
  auto const c = three_clouds(900, true);
  auto const sources = sources_of(c);
  metric_request r = extremes();
  r.mean = true;
  grid_job_options o;
  o.xres = o.yres = 0.5;
  o.request = r;
  o.device = device_choice::cpu;
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
        grid_job_options o;
        o.xres = o.yres = 1.5;
        o.request = percentiles();
        o.device = device_choice::cpu;
        o.threads = threads;
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
  grid_job_options o;
  o.xres = o.yres = 0.5;
  o.request = percentiles();
  o.device = device_choice::cpu;
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

TEST(GridJob, GpuPercentilesEqualTheCpu)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: GPU percentiles are checked on the GPU machine"; }
  for (auto reduction : {batch_reduction::atomic, batch_reduction::sorted}) {
    for (std::size_t part : {std::size_t{1}, std::size_t{999}}) {
      for (std::uint64_t memory : {std::uint64_t{0}, std::uint64_t{300 * 1024}}) {
        auto const c = three_clouds(part, true);
        auto const sources = sources_of(c);
        grid_job_options o;
        o.xres = o.yres = 0.5;
        o.request = percentiles();
        o.threads = 4;
        o.host_memory = o.device_memory = memory;
        o.device = device_choice::cpu;
        memory_output cpu;
        (void)run_grid_job(sources, o, cpu);
        o.device = device_choice::gpu;
        o.reduction = reduction;
        memory_output gpu;
        auto const report = run_grid_job(sources, o, gpu);
        EXPECT_EQ(report.route, "GPU");
        if (memory > 0) { EXPECT_GT(report.bands, 2); }
        SCOPED_TRACE(std::string(batch_reduction_name(reduction)) + ", part " + std::to_string(part) + ", memory " +
                     std::to_string(memory));
        expect_bands(gpu.bands, cpu.bands, o.request, 0);
        EXPECT_EQ(gpu.bands.prange.size(), cpu.bands.prange.size());
      }
    }
  }
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
  grid_job_options o;
  o.xres = o.yres = 1.0;
  o.request = percentiles();
  o.threads = 4;
  o.device = device_choice::cpu;
  memory_output cpu;
  (void)run_grid_job(sources, o, cpu);
  o.device = device_choice::gpu;
  memory_output gpu;
  auto const report = run_grid_job(sources, o, gpu);
  EXPECT_EQ(report.route, "GPU");
  EXPECT_GE(report.max_count, 10'000'000U);
  expect_bands(gpu.bands, cpu.bands, o.request, 0);
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

TEST(GridJob, GpuRoutesEqualTheCpu)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the GPU routes are checked on the GPU machine"; }
  metric_request sums = extremes();
  sums.mean = sums.stddev = true;
  std::uint64_t shared_gpu_batches = 0;
  for (auto const& r : {extremes(), sums}) {
    for (auto device : {device_choice::gpu, device_choice::automatic}) {
      for (std::size_t part : {std::size_t{1}, std::size_t{999}}) {
        auto const c = three_clouds(part, true);
        std::vector<fake_source*> raw;
        auto const sources = sources_of(c, &raw);
        // Counts unknown (as for text inputs): auto shares the batches between the CPU and the GPU.
        if (device == device_choice::automatic) {
          for (auto* f : raw) { f->forget_count(); }
        }
        grid_job_options o;
        o.xres = o.yres = 1.0;
        o.request = r;
        o.threads = 4;
        o.device = device_choice::cpu;
        memory_output cpu;
        (void)run_grid_job(sources, o, cpu);
        o.device = device;
        memory_output gpu;
        // A stage started before the job, so that CUDA is up and the cooperative route (auto) really
        // splits the batches between the CPU and the GPU.
        auto stage = std::make_unique<gpu_stage>(1000, 16);
        ASSERT_TRUE(stage->wait_started().has_value()) << stage->failure();
        auto const report = run_grid_job(sources, o, gpu, std::move(stage));
        if (device == device_choice::gpu || r.mean) {
          EXPECT_EQ(report.route, "GPU");
          EXPECT_GT(report.gpu_batches, 0U);
        } else {
          // Shared: the GPU takes batches once its accumulators and ring are set up, which the CPU
          // may outrun on a small job; with 1-point parts (40,000 batches) it must get some.
          EXPECT_TRUE(report.route == "CPU + GPU" || report.route == "CPU") << report.route;
          shared_gpu_batches += report.gpu_batches;
        }
        expect_bands(gpu.bands, cpu.bands, r, 0);
      }
    }
  }
  EXPECT_GT(shared_gpu_batches, 0U) << "the shared route never used the GPU";
}

}  // namespace
}  // namespace heightgrid::app

namespace heightgrid::app {
namespace {

TEST(GridJob, EveryGpuBatchReductionAndModeEqualsTheCpu)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the GPU reductions are checked on the GPU machine"; }
  metric_request sums = extremes();
  sums.mean = sums.stddev = true;
  auto const c = three_clouds(777, true);
  auto const sources = sources_of(c);
  for (auto const& r : {extremes(), sums}) {
    grid_job_options o;
    o.xres = o.yres = 1.0;
    o.request = r;
    o.threads = 4;
    o.device = device_choice::cpu;
    memory_output cpu;
    (void)run_grid_job(sources, o, cpu);
    o.device = device_choice::gpu;
    for (auto reduction : {batch_reduction::atomic, batch_reduction::sorted}) {
      if (reduction == batch_reduction::atomic && r.mean) { continue; }  // atomics keep no sums
      for (auto mode : all_modes()) {
        if (reduction == batch_reduction::atomic && mode != reduce_mode::thread) { continue; }
        if (reduction == batch_reduction::sorted && !mode_reduces_csr(mode)) { continue; }
        for (std::uint64_t device_memory : {std::uint64_t{0}, std::uint64_t{64} << 10}) {
          o.reduction = reduction;
          o.mode = mode;
          o.device_memory = device_memory;  // 64 KiB: the grid is binned in bands of rows on the device
          memory_output gpu;
          auto const report = run_grid_job(sources, o, gpu);
          std::string const what = std::string(mode_name(mode)) + (reduction == batch_reduction::atomic ? " atomic" : " sorted") +
                                   ", " + std::to_string(report.bands) + " bands";
          EXPECT_EQ(report.route, "GPU") << what;
          if (device_memory > 0) { EXPECT_GT(report.bands, 1) << what; }
          // Mean and stddev: only the thread mode sums a cell's points in the CPU's order; the other
          // modes sum big cells in another order (a few ulps).
          expect_bands(gpu.bands, cpu.bands, r, mode == reduce_mode::thread ? 0 : 64);
        }
      }
    }
  }
}

}  // namespace
}  // namespace heightgrid::app
