// reduce_mode::hybrid beyond the parameterized mode tests of reduce_test.cpp: cells exactly at each
// threshold and one point either side, for several sets of thresholds (tiny ones force every path
// of the kernels on small data: lane, warp, split into many chunks, staged and not staged), a single
// cell of 10^7 points, heavy skew, empty grids, and repeatability. The reference is
// reduce_cells_cpu: min/max/range/count bit for bit, mean/stddev within one float ulp.

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/grid_gpu.hpp"
#include "heightgrid/kernels/hybrid_tuning.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"
#include "kernels_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace heightgrid {
namespace {

using test::all_metrics;
using test::make_csr;
using test::same_results;

constexpr std::uint64_t unbounded = std::numeric_limits<std::uint64_t>::max();

struct named_thresholds {
  char const* name;
  hybrid_thresholds t;  ///< lane_max_points == 0 && split_chunk_points == 0: the defaults
};

/// The defaults, and sets that put every path within reach of a few hundred points.
std::vector<named_thresholds> threshold_sets()
{
  return {
    {"defaults", {}},
    {"all_split_chunks_of_1", {0, 0, 1, 0}},           // every non-empty cell split, one point per chunk
    {"lane1_warp40_chunk16", {1, 40, 16, 0}},          // no staging: lane, warp and split from global memory
    {"lane3_warp64_chunk7_stage2", {3, 64, 7, 2}},     // odd chunk size: every chunk alignment
    {"lane8_warp100_chunk33_stage1", {8, 100, 33, 1}},
    {"lane_only_stage64", {unbounded, unbounded, 8192, 64}},  // one lane per cell, whatever its size
    {"warp_only", {0, unbounded, 8192, 16}},           // the warp reduces every non-empty cell
    // Requests without sums: lanes fold runs of 2, 4 or 8 cells; tiles with a cell above lane_max
    // fall back to tiles of 32 cells (lane, warp, queue).
    {"cells2_lane3_warp64_chunk7", {3, 64, 7, 0, 2, 0}},
    {"cells4_lane8_warp100_chunk33", {8, 100, 33, 0, 4, 0}},
    {"cells8_lane32_warp2048_chunk256", {32, 2048, 256, 0, 8, 0}},
    {"cells8_lane_only", {unbounded, unbounded, 8192, 0, 8, 0}},
    // Requests without sums: every grid of the tests whose biggest cell is small enough runs the
    // warp-per-cell kernel.
    {"warp_grid", {32, 2048, 2048, 0, 0, unbounded}},
    // Requests with sums: every grid of the tests runs the thread-per-cell kernel.
    {"sums_thread", {128, 1024, 2048, 0, 0, 0, unbounded}},
  };
}

hybrid_thresholds resolve(hybrid_thresholds const& t)
{
  return t.lane_max_points == 0 && t.split_chunk_points == 0 ? default_hybrid_thresholds() : t;
}

class HybridThresholds : public ::testing::TestWithParam<named_thresholds> {
 protected:
  void SetUp() override { HG_SKIP_WITHOUT_GPU(); }

  static hybrid_thresholds thresholds() { return resolve(GetParam().t); }

  /// Hybrid with these thresholds against reduce_cells_cpu; returns the GPU result.
  static cell_results check(csr_grid const& csr, metric_request const& request = all_metrics(),
                            float nodata = default_nodata)
  {
    auto const device = device_csr::from_host(csr, nullptr);
    auto const got = reduce_hybrid(device, request, nodata, thresholds(), nullptr).to_host(nullptr);
    EXPECT_TRUE(same_results(got, reduce_cells_cpu(csr, request, nodata), request, csr.num_cells()))
      << GetParam().name << ", " << csr.num_cells() << " cells, " << csr.z.size() << " points";
    if (request.needs_sums()) {
      // Without sums hybrid runs other kernels (detail/hybrid/hybrid_tiles.cuh): check those too.
      auto const no_sums = metric_request::from({metric::min, metric::max, metric::range, metric::count});
      auto const got_no_sums = reduce_hybrid(device, no_sums, nodata, thresholds(), nullptr).to_host(nullptr);
      EXPECT_TRUE(same_results(got_no_sums, reduce_cells_cpu(csr, no_sums, nodata), no_sums, csr.num_cells()))
        << GetParam().name << " (min/max/range/count), " << csr.num_cells() << " cells, " << csr.z.size()
        << " points";
    }
    if (request.min || request.max || request.count || !request.range) {
      // The range band alone has its own instantiation of kernel 1 (band_set::range).
      auto const range = metric_request::from({metric::range});
      auto const got_range = reduce_hybrid(device, range, nodata, thresholds(), nullptr).to_host(nullptr);
      EXPECT_TRUE(same_results(got_range, reduce_cells_cpu(csr, range, nodata), range, csr.num_cells()))
        << GetParam().name << " (range), " << csr.num_cells() << " cells, " << csr.z.size() << " points";
    }
    return got;
  }
};

/// t - 1, t and t + 1 for each threshold t, leaving out those below 0 or above `limit`.
std::vector<std::uint64_t> around(std::vector<std::uint64_t> const& thresholds, std::uint64_t limit)
{
  std::vector<std::uint64_t> sizes;
  for (auto const t : thresholds) {
    if (t > limit) { continue; }
    if (t > 0) { sizes.push_back(t - 1); }
    sizes.push_back(t);
    if (t < limit) { sizes.push_back(t + 1); }
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// One cell exactly at each threshold and one point either side, alone, between other cells, and
// after a one-point cell (so that it starts at an odd index: the 16-byte loads' peeled head).
TEST_P(HybridThresholds, CellsAtEachThresholdAndOneEitherSide)
{
  auto const t = thresholds();
  auto const sizes = around({t.lane_max_points, t.warp_max_points, t.split_chunk_points, 2 * t.split_chunk_points,
                             32ULL * t.stage_points_per_lane, 31, 32, 33},
                            200000);
  std::uint64_t seed = 100;
  for (auto const s : sizes) {
    SCOPED_TRACE("cell of " + std::to_string(s) + " points");
    check(make_csr({s}, seed++));
    check(make_csr({1, s}, seed++));
    check(make_csr({0, s, 3, s, 1, 0, s + 1}, seed++));
  }
  auto mixed = sizes;
  std::shuffle(mixed.begin(), mixed.end(), std::mt19937_64(3));
  check(make_csr(mixed, seed++));
}

// Tiles whose bigger cells total exactly warp_max (all taken by the warp), one more point (the last
// one split), and a tile exactly the size of the stage and one point more.
TEST_P(HybridThresholds, TileTotalsAtTheWarpBudgetAndTheStage)
{
  auto const t = thresholds();
  std::uint64_t seed = 200;
  if (t.lane_max_points < 100000 && t.warp_max_points < 100000) {
    std::uint64_t const big = t.lane_max_points + 1;
    std::uint64_t const fit = std::max<std::uint64_t>(1, t.warp_max_points / big);  // cells that fit the budget
    for (std::uint64_t const extra : {0ULL, 1ULL}) {
      std::vector<std::uint64_t> counts(32, 0);
      std::uint64_t total = 0;
      for (std::uint64_t k = 0; k < std::min<std::uint64_t>(fit, 31); ++k) {
        counts[k] = big;
        total += big;
      }
      // The last cell takes what is left of the budget (at least `big`), plus `extra`.
      counts[31] = std::max(big, t.warp_max_points > total ? t.warp_max_points - total : 0) + extra;
      SCOPED_TRACE("tile total " + std::to_string(total + counts[31]));
      check(make_csr(counts, seed++));
      auto twice = counts;
      twice.insert(twice.end(), counts.begin(), counts.end());
      check(make_csr(twice, seed++));
    }
  }
  std::uint64_t const stage = 32ULL * t.stage_points_per_lane;
  for (std::uint64_t const total : {stage, stage + 1}) {
    if (total == 0) { continue; }
    std::vector<std::uint64_t> counts(32, total / 32);
    counts[0] += total % 32;
    SCOPED_TRACE("tile of " + std::to_string(total) + " points");
    check(make_csr(counts, seed++));
  }
}

TEST_P(HybridThresholds, RandomMixAndEveryBandCombination)
{
  std::mt19937_64 rng(7);
  std::poisson_distribution<std::uint64_t> small(6.0);
  std::uniform_int_distribution<std::uint64_t> large(0, 3000);
  std::vector<std::uint64_t> counts(5003);
  for (auto& c : counts) { c = rng() % 50 == 0 ? large(rng) : small(rng); }
  auto const csr = make_csr(counts, 8, -500.0, 500.0);
  check(csr);
  for (auto const m : {metric::range, metric::min, metric::max, metric::count, metric::mean, metric::stddev}) {
    SCOPED_TRACE(std::string(metric_name(m)));
    check(csr, metric_request::from({m}));
  }
  check(csr, metric_request::from({metric::mean, metric::count}), -9999.0F);
  check(csr, metric_request{});
}

// The split kernel merges its chunks in chunk order, whichever warp finishes last: two runs are the
// same bit for bit, mean and stddev included.
TEST_P(HybridThresholds, RunsAreRepeatable)
{
  auto const csr = make_csr({5000, 1, 0, 777, 33, 20000, 2, 4096, 4097, 8193}, 9);
  auto const device = device_csr::from_host(csr, nullptr);
  auto const a = reduce_hybrid(device, all_metrics(), default_nodata, thresholds(), nullptr).to_host(nullptr);
  auto const b = reduce_hybrid(device, all_metrics(), default_nodata, thresholds(), nullptr).to_host(nullptr);
  EXPECT_TRUE(same_results(a, b, all_metrics(), csr.num_cells(), -1)) << "two runs differ";
  EXPECT_TRUE(same_results(a, reduce_cells_cpu(csr, all_metrics()), all_metrics(), csr.num_cells()));
}

TEST_P(HybridThresholds, EmptyGrids)
{
  check(csr_grid{});  // no cells at all
  csr_grid zero;
  zero.offsets = {0};
  check(zero);
  check(make_csr(std::vector<std::uint64_t>(100, 0), 10), all_metrics(), -1.0F);
}

INSTANTIATE_TEST_SUITE_P(Sets, HybridThresholds, ::testing::ValuesIn(threshold_sets()),
                         [](::testing::TestParamInfo<named_thresholds> const& info) {
                           return std::string(info.param.name);
                         });

class Hybrid : public ::testing::Test {
 protected:
  void SetUp() override { HG_SKIP_WITHOUT_GPU(); }
};

TEST_F(Hybrid, SingleCellOfTenMillionPoints)
{
  auto const csr = make_csr({10000000}, 11, -100.0, 3000.0);
  auto const got = reduce_csr_gpu(csr, all_metrics(), default_nodata, reduce_mode::hybrid, nullptr);
  EXPECT_TRUE(same_results(got, reduce_cells_cpu(csr, all_metrics()), all_metrics(), 1));
  EXPECT_EQ(got.count, column<std::uint32_t>{10000000});
  auto const range_only = metric_request::from({metric::min, metric::max, metric::range, metric::count});
  auto const fast = reduce_csr_gpu(csr, range_only, default_nodata, reduce_mode::hybrid, nullptr);
  EXPECT_TRUE(same_results(fast, reduce_cells_cpu(csr, range_only), range_only, 1));
}

TEST_F(Hybrid, MaxCellPointsOfAnUploadedCsr)
{
  EXPECT_EQ(device_csr::from_host(make_csr({3, 0, 40, 5000, 1}, 17), nullptr).max_cell_points(), 5000U);
  EXPECT_EQ(device_csr::from_host(make_csr({0, 0}, 18), nullptr).max_cell_points(), 0U);
  EXPECT_EQ(device_csr::from_host(csr_grid{}, nullptr).max_cell_points(), 0U);
}

// A few cells of 10^5 to 10^6 points among 300 000 cells of 0-8 points, hot cells at the start, in
// the middle, next to each other and last.
TEST_F(Hybrid, HeavySkew)
{
  std::mt19937_64 rng(12);
  std::poisson_distribution<std::uint64_t> tiny(2.0);
  std::vector<std::uint64_t> counts(300000);
  for (auto& c : counts) { c = std::min<std::uint64_t>(tiny(rng), 8); }
  counts[0] = 1000000;
  counts[150000] = 300000;
  counts[150001] = 100000;
  counts[150031] = 250000;
  counts.back() = 500000;
  auto const csr = make_csr(counts, 13);
  auto const request = all_metrics();
  auto const got = reduce_csr_gpu(csr, request, default_nodata, reduce_mode::hybrid, nullptr);
  EXPECT_TRUE(same_results(got, reduce_cells_cpu(csr, request), request, csr.num_cells()));
  auto const range_only = metric_request::from({metric::range, metric::count});
  auto const fast = reduce_csr_gpu(csr, range_only, default_nodata, reduce_mode::hybrid, nullptr);
  EXPECT_TRUE(same_results(fast, reduce_cells_cpu(csr, range_only), range_only, csr.num_cells()));
  auto const thread = reduce_csr_gpu(csr, range_only, default_nodata, reduce_mode::thread, nullptr);
  EXPECT_TRUE(same_results(fast, thread, range_only, csr.num_cells(), -1)) << "hybrid vs thread";
}

// Sparse and skewed grids of every size around the tile sizes (32 x 1, 2, 4, 8 cells), for every
// cells_per_lane: runs that start and end in empty cells, partial last tiles, a big cell in some
// tiles only (the fall-back to tiles of 32), and grids whose biggest cell is within lane_max (the
// kernel then skips its size checks) as well as beyond it.
TEST_F(Hybrid, CellsPerLaneOnSparseAndSkewedGrids)
{
  auto const request = metric_request::from({metric::min, metric::max, metric::range, metric::count});
  std::mt19937_64 rng(21);
  std::geometric_distribution<std::uint64_t> sparse(0.7);  // mostly 0, sometimes 1-5
  std::uniform_int_distribution<std::uint64_t> big(33, 5000);
  for (std::uint64_t const cells : {1ULL, 31ULL, 32ULL, 33ULL, 63ULL, 64ULL, 65ULL, 127ULL, 128ULL, 129ULL, 255ULL,
                                    256ULL, 257ULL, 1000ULL, 4099ULL, 70001ULL}) {
    for (bool const with_big : {false, true}) {
      std::vector<std::uint64_t> counts(cells);
      for (auto& c : counts) { c = with_big && rng() % 97 == 0 ? big(rng) : sparse(rng); }
      auto const csr = make_csr(counts, cells + (with_big ? 1 : 0));
      auto const want = reduce_cells_cpu(csr, request);
      auto const device = device_csr::from_host(csr, nullptr);
      for (std::uint32_t const k : {0U, 1U, 2U, 4U, 8U}) {
        for (std::uint64_t const lane_max : {1ULL, 4ULL, 32ULL}) {
          auto t = default_hybrid_thresholds();
          t.cells_per_lane = k;
          t.lane_max_points = lane_max;
          t.warp_grid_max_cells = 0;
          auto const got = reduce_hybrid(device, request, default_nodata, t, nullptr).to_host(nullptr);
          EXPECT_TRUE(same_results(got, want, request, csr.num_cells()))
            << cells << " cells" << (with_big ? " with big ones" : "") << ", cells_per_lane " << k << ", lane_max "
            << lane_max;
        }
      }
    }
  }
}

// Grids whose cells hold 0 or 1 point: the defaults run the thread kernel (thread_max_cell_points),
// an explicit cells_per_lane the warp kernel on grids of at most warp_grid_max_cells cells and the
// tile kernel otherwise (or always, with warp_grid_max_cells 0); all equal the CPU's bands.
TEST_F(Hybrid, GridsOfAtMostOnePointPerCell)
{
  auto const request = metric_request::from({metric::min, metric::max, metric::range, metric::count});
  std::mt19937_64 rng(5);
  auto const warp_grid_edge = default_hybrid_thresholds().warp_grid_max_cells;  // 64 cells per SM
  for (std::uint64_t const cells : std::vector<std::uint64_t>{1, 31, 32, 33, warp_grid_edge, warp_grid_edge + 1, 70001}) {
    for (int const percent_full : {0, 30, 100}) {
      std::vector<std::uint64_t> counts(cells);
      for (auto& c : counts) { c = static_cast<int>(rng() % 100) < percent_full ? 1 : 0; }
      auto const csr = make_csr(counts, cells + static_cast<std::uint64_t>(percent_full));
      auto const want = reduce_cells_cpu(csr, request);
      auto const device = device_csr::from_host(csr, nullptr);
      auto explicit_lane = default_hybrid_thresholds();
      explicit_lane.cells_per_lane = 1;
      auto tile = explicit_lane;
      tile.warp_grid_max_cells = 0;
      for (auto const& t : {default_hybrid_thresholds(), explicit_lane, tile}) {
        auto const got = reduce_hybrid(device, request, default_nodata, t, nullptr).to_host(nullptr);
        EXPECT_TRUE(same_results(got, want, request, csr.num_cells()))
          << cells << " cells, " << percent_full << " % holding a point, cells_per_lane " << t.cells_per_lane
          << ", warp_grid_max_cells " << t.warp_grid_max_cells;
      }
    }
  }
}

// Sparse grids (under 0.5 points per cell) whose biggest cell sits around the bound up to which
// the defaults run one thread per cell (balanced_policy::sparse_thread_max_cell_points, 64) and
// around lane_max: the thread kernel, the tile kernels and their queue must agree with the CPU.
// lane_max_points far beyond 32 bits is capped, not truncated.
TEST_F(Hybrid, SparseGridsAroundTheThreadBound)
{
  auto const request = metric_request::from({metric::min, metric::max, metric::range, metric::count});
  std::mt19937_64 rng(64);
  for (std::uint64_t const cells : {33ULL, 4099ULL, 70001ULL}) {
    for (std::uint64_t const biggest : {31ULL, 32ULL, 33ULL, 63ULL, 64ULL, 65ULL, 3000ULL}) {
      std::vector<std::uint64_t> counts(cells);
      for (auto& c : counts) { c = rng() % 16 == 0 ? 1 + rng() % 3 : 0; }  // mean ~0.125
      counts[rng() % cells] = biggest;
      auto const csr = make_csr(counts, cells + biggest);
      ASSERT_LT(csr.z.size() - biggest, cells / 2) << "the grid around the big cell is not sparse";
      auto const want = reduce_cells_cpu(csr, request);
      auto const device = device_csr::from_host(csr, nullptr);
      auto no_warp_grid = default_hybrid_thresholds();
      no_warp_grid.warp_grid_max_cells = 0;
      auto huge_lane = no_warp_grid;
      huge_lane.lane_max_points = ~std::uint64_t{0};
      for (auto const& t : {default_hybrid_thresholds(), no_warp_grid, huge_lane}) {
        auto const got = reduce_hybrid(device, request, default_nodata, t, nullptr).to_host(nullptr);
        EXPECT_TRUE(same_results(got, want, request, csr.num_cells()))
          << cells << " cells, biggest " << biggest << ", warp_grid_max_cells " << t.warp_grid_max_cells
          << ", lane_max " << t.lane_max_points;
      }
    }
  }
}

// The one-warp-per-tile kernel in several launches (hybrid_thresholds::tiles_per_launch): every
// tile reduced exactly once, whether the last launch is full or partial, with and without queued
// tiles and on grids that end in a partial tile.
TEST_F(Hybrid, TileKernelInSeveralLaunches)
{
  auto const request = metric_request::from({metric::min, metric::max, metric::range, metric::count});
  std::mt19937_64 rng(7);
  std::geometric_distribution<std::uint64_t> small(0.3);
  for (std::uint64_t const cells : {1ULL, 32ULL, 33ULL, 95ULL, 96ULL, 97ULL, 1000ULL, 70001ULL}) {
    for (bool const with_big : {false, true}) {
      std::vector<std::uint64_t> counts(cells);
      for (auto& c : counts) { c = small(rng); }
      if (with_big) { counts[cells / 2] = 20000; }
      auto const csr = make_csr(counts, cells * 3 + (with_big ? 1 : 0));
      auto const want = reduce_cells_cpu(csr, request);
      auto const device = device_csr::from_host(csr, nullptr);
      for (std::uint64_t const per_launch : {1ULL, 2ULL, 3ULL, 7ULL, 1000ULL}) {
        auto t = default_hybrid_thresholds();
        t.cells_per_lane = 1;
        t.warp_grid_max_cells = 0;
        t.tiles_per_launch = per_launch;
        auto const got = reduce_hybrid(device, request, default_nodata, t, nullptr).to_host(nullptr);
        EXPECT_TRUE(same_results(got, want, request, csr.num_cells()))
          << cells << " cells" << (with_big ? " with a big one" : "") << ", " << per_launch << " tiles per launch";
      }
    }
  }
}

// Grids with a cell above warp_max queue tiles from queued_warp_max_points on (512 by default):
// tiles of 300-1,500 points holding 33-100-point cells, next to one cell of 5,000 points, reduced
// with the default rule, with it off (0), below and above the tiles' sizes, and on a grid without
// the big cell (where the rule does not apply); every result equal to the CPU's.
TEST_F(Hybrid, QueuesSmallerTilesWhenACellExceedsWarpMax)
{
  auto const request = metric_request::from({metric::min, metric::max, metric::range, metric::count});
  std::mt19937_64 rng(512);
  std::uniform_int_distribution<std::uint64_t> mid(33, 100);
  std::uniform_int_distribution<std::uint64_t> few(0, 12);
  for (bool const with_big : {true, false}) {
    std::vector<std::uint64_t> counts(20000);
    for (auto& c : counts) { c = rng() % 8 == 0 ? mid(rng) : few(rng); }
    if (with_big) { counts[9999] = 5000; }
    auto const csr = make_csr(counts, with_big ? 41 : 42);
    auto const want = reduce_cells_cpu(csr, request);
    auto const device = device_csr::from_host(csr, nullptr);
    for (std::uint64_t const queued : {512ULL, 0ULL, 100ULL, 1000ULL, 4000ULL}) {
      auto t = default_hybrid_thresholds();
      t.warp_grid_max_cells = 0;
      t.queued_warp_max_points = queued;
      auto const got = reduce_hybrid(device, request, default_nodata, t, nullptr).to_host(nullptr);
      EXPECT_TRUE(same_results(got, want, request, csr.num_cells()))
        << (with_big ? "with" : "without") << " the 5,000-point cell, queued_warp_max_points " << queued;
    }
  }
}

// Thin grids (under 4 points per cell) whose queued tiles mix one cell of 3,000 points with cells of
// 1-40 points: kernel 2's lanes fold their own cells of at most lane_max points, clipped to each
// chunk (chunks of 7, 33, 100 and 256 points cut through them), and the warp the bigger ones.
TEST_F(Hybrid, ThinGridsFoldTheSmallCellsOfQueuedTilesByLane)
{
  std::mt19937_64 rng(4);
  std::uniform_int_distribution<std::uint64_t> small(1, 40);
  std::vector<std::uint64_t> counts(40000);
  for (std::size_t c = 0; c < counts.size(); ++c) {
    bool const hot_tile = (c / 32) % 50 == 7;
    counts[c] = hot_tile ? (c % 32 == 5 ? 3000 : small(rng)) : rng() % 3 == 0;
  }
  auto const csr = make_csr(counts, 44);
  ASSERT_LT(csr.z.size(), 4 * csr.num_cells()) << "the grid must be thin for kernel 2's lane path";
  auto const device = device_csr::from_host(csr, nullptr);
  for (auto const& request : {metric_request::from({metric::min, metric::max, metric::range, metric::count}),
                              metric_request::from({metric::range})}) {
    auto const want = reduce_cells_cpu(csr, request);
    for (std::uint64_t const chunk : {7ULL, 33ULL, 100ULL, 256ULL}) {
      for (std::uint64_t const lane_max : {1ULL, 4ULL, 32ULL}) {
        auto t = default_hybrid_thresholds();
        t.warp_grid_max_cells = 0;
        t.split_chunk_points = chunk;
        t.lane_max_points = lane_max;
        auto const got = reduce_hybrid(device, request, default_nodata, t, nullptr).to_host(nullptr);
        EXPECT_TRUE(same_results(got, want, request, csr.num_cells()))
          << "chunks of " << chunk << ", lane_max " << lane_max << (request.count ? "" : ", range alone");
      }
    }
  }
}

// Thin grids above the small-grid rule (over 2^22 points, under 4 per cell) with the defaults: queued
// tiles (big cells alone, next to each other and last) cut into chunks of
// balanced_policy::thin_chunk_points when the biggest cell holds at most thin_chunk_max_cell_points
// (60,000), of split_chunk_points when it holds more (300,000); both equal the CPU's bands.
TEST_F(Hybrid, ThinGridsAboveTheSmallGridRuleWithTheDefaults)
{
  for (std::uint64_t const biggest : {60000ULL, 300000ULL}) {
    std::mt19937_64 rng(256);
    std::poisson_distribution<std::uint64_t> tiny(2.0);
    std::vector<std::uint64_t> counts(2100000);
    for (auto& c : counts) { c = std::min<std::uint64_t>(tiny(rng), 9); }
    counts[12345] = biggest;
    counts[1050000] = 50000;
    counts[1050001] = 5000;
    counts[1050033] = 40000;
    counts.back() = 30000;
    auto const csr = make_csr(counts, 45);
    ASSERT_GT(csr.z.size(), std::uint64_t{1} << 22) << "the grid must be above the small-grid rule";
    ASSERT_LT(csr.z.size(), 4 * csr.num_cells()) << "the grid must be thin";
    for (auto const& request : {metric_request::from({metric::min, metric::max, metric::range, metric::count}),
                                metric_request::from({metric::range})}) {
      auto const got = reduce_csr_gpu(csr, request, default_nodata, reduce_mode::hybrid, nullptr);
      EXPECT_TRUE(same_results(got, reduce_cells_cpu(csr, request), request, csr.num_cells()))
        << "biggest cell " << biggest << ", " << (request.count ? "min/max/range/count" : "range alone");
    }
  }
}

TEST_F(Hybrid, InvalidThresholdsAreUsageErrors)
{
  auto const device = device_csr::from_host(make_csr({3, 0, 5}, 14), nullptr);
  auto const expect_usage = [&](hybrid_thresholds const& t, char const* what) {
    try {
      (void)reduce_hybrid(device, all_metrics(), default_nodata, t, nullptr);
      ADD_FAILURE() << what << " accepted";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << what << ": " << e.what();
    }
  };
  auto t = default_hybrid_thresholds();
  t.split_chunk_points = 0;
  expect_usage(t, "split_chunk_points 0");
  t = default_hybrid_thresholds();
  t.stage_points_per_lane = hybrid_max_stage_points_per_lane + 1;
  expect_usage(t, "stage_points_per_lane above the maximum");
  for (std::uint32_t const k : {3U, 16U}) {
    t = default_hybrid_thresholds();
    t.cells_per_lane = k;
    expect_usage(t, "cells_per_lane not a power of two up to 8");
  }
}

TEST_F(Hybrid, DefaultsAreThoseOfTheMode)
{
  auto const t = default_hybrid_thresholds();
  EXPECT_GT(t.split_chunk_points, 0U);
  EXPECT_LE(t.lane_max_points, t.warp_max_points);
  EXPECT_LE(t.stage_points_per_lane, hybrid_max_stage_points_per_lane);
  auto const csr = make_csr({3, 0, 40, 5000, 100000, 1}, 15);
  auto const device = device_csr::from_host(csr, nullptr);
  auto const a = reduce(device, all_metrics(), default_nodata, reduce_mode::hybrid, nullptr).to_host(nullptr);
  auto const b = reduce_hybrid(device, all_metrics(), default_nodata, t, nullptr).to_host(nullptr);
  EXPECT_TRUE(same_results(a, b, all_metrics(), csr.num_cells(), -1));
}

// The atomic mode works on points: reduce() on a CSR turns it away with a usage error.
TEST(AtomicOnCsr, IsAUsageError)
{
  HG_SKIP_WITHOUT_GPU();
  auto const device = device_csr::from_host(make_csr({3, 0, 5}, 16), nullptr);
  try {
    (void)reduce(device, test::all_metrics_of(reduce_mode::atomic), default_nodata, reduce_mode::atomic, nullptr);
    ADD_FAILURE() << "reduce() accepted the atomic mode";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
    EXPECT_NE(std::string(e.what()).find("grid_points_gpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace heightgrid
