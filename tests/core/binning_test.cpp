#include "heightgrid/core/binning.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <random>
#include <vector>

namespace heightgrid {
namespace {

point_chunk random_points(std::size_t n, double extent, std::uint64_t seed)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> xy(0.0, extent);
  std::normal_distribution<double> z(100.0, 20.0);
  point_chunk p;
  for (std::size_t i = 0; i < n; ++i) {
    p.x.push_back(xy(rng));
    p.y.push_back(xy(rng));
    p.z.push_back(z(rng));
  }
  return p;
}

// Reference: per-cell lists of z in input order, built with nothing but push_back.
std::vector<std::vector<double>> reference_cells(grid_spec const& g, point_chunk const& p)
{
  std::vector<std::vector<double>> cells(g.num_cells());
  for (std::size_t i = 0; i < p.size(); ++i) {
    auto const c = g.cell_of(p.x[i], p.y[i]);
    if (c != no_cell) { cells[c].push_back(p.z[i]); }
  }
  return cells;
}

void expect_csr_matches(csr_grid const& csr, std::vector<std::vector<double>> const& ref)
{
  ASSERT_EQ(csr.offsets.size(), ref.size() + 1);
  ASSERT_EQ(csr.offsets.front(), 0U);
  for (std::size_t c = 0; c < ref.size(); ++c) {
    std::vector<double> got(csr.z.begin() + static_cast<std::ptrdiff_t>(csr.offsets[c]),
                            csr.z.begin() + static_cast<std::ptrdiff_t>(csr.offsets[c + 1]));
    ASSERT_EQ(got, ref[c]) << "cell " << c;  // stable: same order as the input
  }
  ASSERT_EQ(csr.offsets.back(), csr.z.size());
}

TEST(Binning, MatchesReferenceAndIsStable)
{
  auto const p = random_points(200000, 100.0, 7);
  bounds b;
  for (std::size_t i = 0; i < p.size(); ++i) { b.extend(p.x[i], p.y[i]); }
  auto const g = grid_from_bounds(b, 3.0, 3.0);
  binning_stats stats;
  auto const csr = bin_points_cpu(g, p, stats);
  expect_csr_matches(csr, reference_cells(g, p));
  EXPECT_EQ(stats.points_in, p.size());
  EXPECT_EQ(stats.points_binned, p.size());
  EXPECT_EQ(stats.points_outside, 0U);
}

TEST(Binning, SameCsrWhateverTheThreadCount)
{
  auto const p = random_points(100000, 50.0, 11);
  auto const g = grid_from_extent(0.0, 0.0, 50.0, 50.0, 2.0, 2.0);
  int const saved = omp_get_max_threads();
  std::vector<csr_grid> results;
  for (int t : {1, 2, 3, 7}) {
    omp_set_num_threads(t);
    binning_stats stats;
    results.push_back(bin_points_cpu(g, p, stats));
  }
  omp_set_num_threads(saved);
  for (auto const& r : results) {
    EXPECT_EQ(r.offsets, results.front().offsets);
    EXPECT_EQ(r.z, results.front().z);
  }
}

TEST(Binning, SparseGridUsesTheSingleThreadPathCorrectly)
{
  // Far more cells than points: the per-thread histograms would outweigh the input.
  auto const p = random_points(1000, 1000.0, 3);
  auto const g = grid_from_extent(0.0, 0.0, 1000.0, 1000.0, 1.0, 1.0);
  binning_stats stats;
  auto const csr = bin_points_cpu(g, p, stats);
  expect_csr_matches(csr, reference_cells(g, p));
}

TEST(Binning, PointsOutsideAnExplicitExtentAreDroppedAndCounted)
{
  point_chunk p;
  p.x = {0.5, 1.5, 5.0, -0.1, 1.0};
  p.y = {0.5, 0.5, 0.5, 0.5, 2.0};
  p.z = {1.0, 2.0, 3.0, 4.0, 5.0};
  auto const g = grid_from_extent(0.0, 0.0, 2.0, 2.0, 1.0, 1.0);
  binning_stats stats;
  auto const csr = bin_points_cpu(g, p, stats);
  EXPECT_EQ(stats.points_binned, 3U);  // (1,2) lies on the top edge: row 0, kept
  EXPECT_EQ(stats.points_outside, 2U);
  EXPECT_EQ(csr.offsets, (std::vector<point_offset>{0, 0, 1, 2, 3}));
  EXPECT_EQ(csr.z, (std::vector<double>{5.0, 1.0, 2.0}));
}

TEST(Binning, EmptyInput)
{
  point_chunk p;
  auto const g = grid_from_extent(0.0, 0.0, 2.0, 2.0, 1.0, 1.0);
  binning_stats stats;
  auto const csr = bin_points_cpu(g, p, stats);
  EXPECT_EQ(csr.offsets, (std::vector<point_offset>(5, 0)));
  EXPECT_TRUE(csr.z.empty());
}

}  // namespace
}  // namespace heightgrid
