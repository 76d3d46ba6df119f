// plan_hybrid: which kernels reduce_mode::hybrid runs, decided on the host from the grid's shape,
// the request and the thresholds. No GPU needed: the plan is a pure function (hybrid_test.cpp runs
// the kernels each route leads to).

#include "heightgrid/core/metrics.hpp"
#include "heightgrid/kernels/hybrid_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace heightgrid {
namespace {

constexpr std::uint64_t unknown = hybrid_grid_shape::unknown;
constexpr std::uint64_t unbounded = std::numeric_limits<std::uint64_t>::max();

metric_request range_only()
{
  metric_request r;
  r.range = true;
  return r;
}

metric_request with_mean()
{
  metric_request r;
  r.range = true;
  r.mean = true;
  return r;
}

hybrid_plan plan(std::uint64_t cells, std::uint64_t points, std::uint64_t max_cell, metric_request const& request)
{
  return plan_hybrid({cells, points, max_cell}, request, hybrid_default_thresholds_for(request, 132));
}

TEST(HybridPlan, DefaultThresholdsDependOnSums)
{
  auto const plain = hybrid_default_thresholds_for(range_only(), 132);
  EXPECT_EQ(plain.lane_max_points, 32U);
  EXPECT_EQ(plain.warp_max_points, 2048U);
  EXPECT_EQ(plain.queued_warp_max_points, 512U);
  EXPECT_EQ(plain.warp_grid_max_cells, 132U * 64U);  // 64 cells per SM
  EXPECT_EQ(hybrid_default_thresholds_for(range_only(), 16).warp_grid_max_cells, 16U * 64U);
  EXPECT_EQ(hybrid_default_thresholds_for(range_only(), 0).warp_grid_max_cells, 64U);  // never 0: a GPU has an SM
  EXPECT_EQ(plain.sums_thread_max_cell_points, 0U);
  auto const sums = hybrid_default_thresholds_for(with_mean(), 132);
  EXPECT_EQ(sums.lane_max_points, 128U);
  EXPECT_EQ(sums.warp_max_points, 1024U);
  EXPECT_EQ(sums.sums_thread_max_cell_points, 128U);
  EXPECT_EQ(sums.warp_grid_max_cells, 0U);
}

TEST(HybridPlan, NoCellLaunchesNothing)
{
  EXPECT_EQ(plan(0, 0, 0, range_only()).route, hybrid_route::nothing);
  EXPECT_EQ(plan(0, 0, 0, with_mean()).route, hybrid_route::nothing);
}

TEST(HybridPlan, OnePointCellsRunThreadPerCell)
{
  EXPECT_EQ(plan(22826, 22826, 1, range_only()).route, hybrid_route::thread_per_cell);
  // ...unless the biggest cell is unknown
  EXPECT_NE(plan(22826, 22826, unknown, range_only()).route, hybrid_route::thread_per_cell);
}

TEST(HybridPlan, SmallGridsRunWarpPerCell)
{
  // 64 cells per SM: 8448 on the 132 SMs plan() assumes
  EXPECT_EQ(plan(8448, 100000, 8192, range_only()).route, hybrid_route::warp_per_cell);
  EXPECT_EQ(plan(8449, 100000, 100, range_only()).route, hybrid_route::tiles);
  EXPECT_EQ(plan(100, 100000, 8193, range_only()).route, hybrid_route::tiles);
}

TEST(HybridPlan, SparseGridsWithoutBigCellsRunThreadPerCell)
{
  // 10^7 cells, 3 x 10^6 points (0.3 per cell), biggest 64 -> thread; 65 -> runs of 2 cells per lane
  EXPECT_EQ(plan(10000000, 3000000, 64, range_only()).route, hybrid_route::thread_per_cell);
  auto const p = plan(10000000, 3000000, 65, range_only());
  EXPECT_EQ(p.route, hybrid_route::tiles);
  EXPECT_EQ(p.cells_per_lane, 2U);
  EXPECT_TRUE(p.thin);
  EXPECT_EQ(p.tile_warps_per_block, hybrid_plan_policy::thin_tile_warps_per_block);
}

TEST(HybridPlan, EvenGridsTakeTheLanePathAlone)
{
  // uniform-like: 10^7 cells, 10^8 points, biggest cell 31 <= lane_max 32: no queue
  auto const p = plan(10000000, 100000000, 31, range_only());
  EXPECT_EQ(p.route, hybrid_route::tiles);
  EXPECT_EQ(p.cells_per_lane, 1U);
  EXPECT_TRUE(p.all_small);
  EXPECT_FALSE(p.thin);
  EXPECT_EQ(p.tile_warps_per_block, hybrid_plan_policy::tile_warps_per_block);
  EXPECT_EQ(p.max_queued_tiles, 0U);
  EXPECT_EQ(p.max_chunks, 0U);
  EXPECT_EQ(p.warp_max, unbounded);
}

TEST(HybridPlan, CellsUpToAWarpBudgetNeedNoQueue)
{
  // lidar-like: biggest cell 64 = 2048 / 32: a tile can never exceed warp_max
  auto const p = plan(10000000, 100000000, 64, range_only());
  EXPECT_FALSE(p.all_small);
  EXPECT_EQ(p.max_queued_tiles, 0U);
  EXPECT_EQ(p.warp_max, unbounded);
  EXPECT_EQ(p.lane_max, 32U);
}

TEST(HybridPlan, BigCellsQueueFromQueuedWarpMax)
{
  // clustered-like: 10 points per cell, biggest 8378 > warp_max: queue from 512 points
  auto const p = plan(10000000, 100000000, 8378, range_only());
  EXPECT_EQ(p.warp_max, 512U);
  EXPECT_EQ(p.max_queued_tiles, 100000000U / 513U);
  EXPECT_EQ(p.chunk_points, 2048U);
  EXPECT_EQ(p.max_chunks, 100000000U / 2048U + p.max_queued_tiles);
  EXPECT_EQ(p.chunk_lane_max, 0U);
}

TEST(HybridPlan, ThinGridsKeepWarpMaxAndShortChunks)
{
  // skewed-like: 2 points per cell, biggest 26,367: thin, warp_max stays 2048, chunks of 256
  auto const p = plan(50000000, 100000000, 26367, range_only());
  EXPECT_TRUE(p.thin);
  EXPECT_EQ(p.warp_max, 2048U);
  EXPECT_EQ(p.chunk_points, hybrid_plan_policy::thin_chunk_points);
  EXPECT_EQ(p.chunk_lane_max, 32U);
  // a huge cell: the thresholds' chunks
  EXPECT_EQ(plan(50000000, 100000000, 1000000, range_only()).chunk_points, 2048U);
}

TEST(HybridPlan, SmallGridsCutShortChunks)
{
  auto const p = plan(10000, 1000000, 1000000, range_only());  // a whole small file in one cell
  EXPECT_EQ(p.route, hybrid_route::tiles);
  EXPECT_EQ(p.chunk_points, hybrid_plan_policy::small_grid_chunk_points);
}

TEST(HybridPlan, ExplicitCellsPerLaneIsKept)
{
  auto t = hybrid_default_thresholds_for(range_only(), 132);
  t.cells_per_lane = 4;
  auto const p = plan_hybrid({10000000, 10000000, 1}, range_only(), t);
  EXPECT_EQ(p.route, hybrid_route::tiles);  // not thread_per_cell: the rules for auto do not apply
  EXPECT_EQ(p.cells_per_lane, 4U);
}

TEST(HybridPlan, SumsRunThreadPerCellWithoutBigCells)
{
  EXPECT_EQ(plan(10000000, 100000000, 77, with_mean()).route, hybrid_route::thread_per_cell);
  EXPECT_EQ(plan(10000000, 100000000, 128, with_mean()).route, hybrid_route::thread_per_cell);
  auto const p = plan(10000000, 100000000, 129, with_mean());
  EXPECT_EQ(p.route, hybrid_route::sums_tiles);
  EXPECT_EQ(p.lane_max, 128U);
  EXPECT_EQ(p.warp_max, 1024U);
  EXPECT_EQ(p.max_split_cells, std::min<std::uint64_t>(100000000U / 129U, 32U * (100000000U / 1025U)));
  EXPECT_EQ(p.max_split_chunks, 100000000U / 2048U + p.max_split_cells);
  EXPECT_EQ(plan(10000000, 100000000, unknown, with_mean()).route, hybrid_route::sums_tiles);
}

TEST(HybridPlan, UnboundedThresholdsSplitNothing)
{
  hybrid_thresholds t{unbounded, unbounded, 8192, 64};
  auto const p = plan_hybrid({1000, 100000, unknown}, with_mean(), t);
  EXPECT_EQ(p.route, hybrid_route::sums_tiles);
  EXPECT_EQ(p.max_split_cells, 0U);
}

TEST(HybridPlan, DescribeNamesTheRouteAndItsNumbers)
{
  auto const text = describe(plan(10000000, 100000000, 8378, range_only()));
  EXPECT_NE(text.find("tiles"), std::string::npos) << text;
  EXPECT_NE(text.find("warp_max 512"), std::string::npos) << text;
  EXPECT_NE(text.find("chunks of 2048 points"), std::string::npos) << text;
  EXPECT_NE(describe(plan(1, 1, 1, range_only())).find("thread_per_cell"), std::string::npos);
}

}  // namespace
}  // namespace heightgrid
