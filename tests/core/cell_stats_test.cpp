#include "heightgrid/core/cell_stats.hpp"

#include <gtest/gtest.h>

namespace heightgrid {
namespace {

std::vector<point_offset> offsets_of(std::vector<std::uint64_t> const& counts)
{
  std::vector<point_offset> o{0};
  for (auto c : counts) { o.push_back(o.back() + c); }
  return o;
}

TEST(CellStats, HandCheckedHistogramAndMoments)
{
  // counts 0, 1, 2, 3, 4, 10: bins {0}:1, {1}:1, {2-3}:2, {4-7}:1, {8-15}:1
  auto const s = describe_cell_counts(offsets_of({0, 1, 2, 3, 4, 10}));
  EXPECT_EQ(s.cells, 6U);
  EXPECT_EQ(s.non_empty_cells, 5U);
  EXPECT_EQ(s.points, 20U);
  EXPECT_EQ(s.max_count, 10U);
  EXPECT_EQ(s.histogram, (std::vector<std::uint64_t>{1, 1, 2, 1, 1}));
  EXPECT_DOUBLE_EQ(s.mean, 20.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.mean_non_empty, 4.0);
  EXPECT_EQ(s.p50, 2U);
  EXPECT_EQ(s.p99, 10U);
  EXPECT_EQ(histogram_bin_low(3), 4U);
  EXPECT_EQ(histogram_bin_high(3), 7U);
}

TEST(CellStats, GiniOfEvenAndConcentratedLoads)
{
  EXPECT_DOUBLE_EQ(describe_cell_counts(offsets_of({5, 5, 5, 5})).gini, 0.0);
  // one cell of four has everything: G = (n - 1) / n = 0.75
  EXPECT_DOUBLE_EQ(describe_cell_counts(offsets_of({0, 0, 0, 8})).gini, 0.75);
  // hand computed: sorted 1,3 -> (-1*1 + 1*3) / (2 * 4) = 0.25
  EXPECT_DOUBLE_EQ(describe_cell_counts(offsets_of({3, 1})).gini, 0.25);
}

TEST(CellStats, ThreadLaneEfficiency)
{
  // even load: every lane busy every iteration
  EXPECT_DOUBLE_EQ(describe_cell_counts(offsets_of(std::vector<std::uint64_t>(64, 7))).thread_lane_efficiency, 1.0);
  // one warp of 32 cells, one cell with 32 points and the rest with 1: (31 + 32) / (32 * 32)
  std::vector<std::uint64_t> counts(32, 1);
  counts[5] = 32;
  EXPECT_DOUBLE_EQ(describe_cell_counts(offsets_of(counts)).thread_lane_efficiency, 63.0 / 1024.0);
  // a partial last warp is charged its own width: 33 cells -> warp 2 has 1 cell of 4 points
  std::vector<std::uint64_t> c33(33, 2);
  c33[32] = 4;
  EXPECT_DOUBLE_EQ(describe_cell_counts(offsets_of(c33)).thread_lane_efficiency, (64.0 + 4.0) / (64.0 + 4.0));
}

TEST(CellStats, EmptyGrid)
{
  auto const s = describe_cell_counts({0});
  EXPECT_EQ(s.cells, 0U);
  EXPECT_EQ(describe_cell_counts(offsets_of({0, 0})).gini, 0.0);
}

}  // namespace
}  // namespace heightgrid
