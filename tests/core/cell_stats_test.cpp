#include "heightgrid/core/cell_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

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

/// The definitions, computed the plain way (sort everything), to check the O(cells) version.
cell_count_stats reference_stats(std::vector<std::uint64_t> counts)
{
  cell_count_stats s;
  std::size_t const n = counts.size();
  double lane_work = 0.0;
  for (std::size_t w = 0; w < n; w += 32) {
    std::uint64_t widest = 0;
    for (std::size_t c = w; c < std::min(n, w + 32); ++c) { widest = std::max(widest, counts[c]); }
    lane_work += static_cast<double>(widest * (std::min(n, w + 32) - w));
  }
  std::sort(counts.begin(), counts.end());
  double sum = 0.0, acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += static_cast<double>(counts[i]);
    acc += (2.0 * static_cast<double>(i + 1) - static_cast<double>(n) - 1.0) * static_cast<double>(counts[i]);
  }
  s.gini = acc / (static_cast<double>(n) * sum);
  s.thread_lane_efficiency = sum / lane_work;
  auto const pct = [&](double q) { return counts[static_cast<std::size_t>(std::ceil(q * static_cast<double>(n))) - 1]; };
  s.p50 = pct(0.5);
  s.p90 = pct(0.9);
  s.p99 = pct(0.99);
  s.p999 = pct(0.999);
  s.max_count = counts.back();
  return s;
}

TEST(CellStats, LargeHeavyTailedGridMatchesTheSortingDefinitions)
{
  // Counts beyond the 2^16 table included, zeros, and a size that is not a multiple of 32.
  std::mt19937_64 rng(5);
  std::vector<std::uint64_t> counts(100003);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (auto& c : counts) { c = std::min(60000.0, std::floor(std::pow(u(rng), -1.6))) - 1; }
  counts[77] = 250000;
  counts[78] = 250000;
  counts[99999] = 70000;
  auto const want = reference_stats(counts);
  auto const got = describe_cell_counts(offsets_of(counts));
  EXPECT_EQ(got.p50, want.p50);
  EXPECT_EQ(got.p90, want.p90);
  EXPECT_EQ(got.p99, want.p99);
  EXPECT_EQ(got.p999, want.p999);
  EXPECT_EQ(got.max_count, 250000U);
  EXPECT_NEAR(got.gini, want.gini, 1e-12);
  EXPECT_NEAR(got.thread_lane_efficiency, want.thread_lane_efficiency, 1e-12);
  std::uint64_t binned = 0;
  for (std::size_t k = 0; k < got.histogram.size(); ++k) {
    auto const in_bin = std::count_if(counts.begin(), counts.end(), [&](std::uint64_t c) {
      return c >= histogram_bin_low(k) && c <= histogram_bin_high(k);
    });
    EXPECT_EQ(got.histogram[k], static_cast<std::uint64_t>(in_bin)) << "bin " << k;
    binned += got.histogram[k];
  }
  EXPECT_EQ(binned, counts.size());
  EXPECT_EQ(got.histogram.size(), 19U);  // 250000 < 2^18
}

TEST(CellStats, EmptyGrid)
{
  auto const s = describe_cell_counts({0});
  EXPECT_EQ(s.cells, 0U);
  EXPECT_EQ(describe_cell_counts(offsets_of({0, 0})).gini, 0.0);
}

}  // namespace
}  // namespace heightgrid
