// reduce_mode::atomic beyond the pipeline tests of grid_gpu_test.cpp (which run it like every other
// mode): point orders that make the warp aggregation do all the work or none of it, a hot cell,
// negative heights and the sign of zero, and the bands it cannot produce. The reference is the
// CPU pipeline (bin_points_cpu + reduce_cells_cpu): range/min/max/count bit for bit.

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/kernels/grid_gpu.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"
#include "kernels_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace heightgrid {
namespace {

using test::same_results;

metric_request range_min_max_count()
{
  return metric_request::from({metric::range, metric::min, metric::max, metric::count});
}

class AtomicMode : public ::testing::Test {
 protected:
  void SetUp() override { HG_SKIP_WITHOUT_GPU(); }

  static void check(grid_spec const& grid, point_chunk const& points, metric_request const& request,
                    float nodata = default_nodata)
  {
    binning_stats cpu_stats;
    auto const csr = bin_points_cpu(grid, points, cpu_stats);
    auto const want = reduce_cells_cpu(csr, request, nodata);
    auto const got = grid_points_gpu(grid, points, request, nodata, reduce_mode::atomic, nullptr);
    EXPECT_EQ(got.stats.points_in, cpu_stats.points_in);
    EXPECT_EQ(got.stats.points_binned, cpu_stats.points_binned);
    EXPECT_EQ(got.stats.points_outside, cpu_stats.points_outside);
    EXPECT_EQ(got.csr_method, "none");
    EXPECT_EQ(got.times.cell_ids_ms, 0.0);
    EXPECT_EQ(got.times.csr_ms, 0.0);
    EXPECT_TRUE(same_results(got.results, want, request, grid.num_cells()))
      << grid.cols << "x" << grid.rows << " cells, " << points.size() << " points";
  }
};

grid_spec square_grid(std::uint32_t side)
{
  grid_spec g;
  g.x0 = 0.0;
  g.y0 = static_cast<double>(side);
  g.cols = side;
  g.rows = side;
  return g;
}

/// `n` points, z uniform in [lo, hi); with `sorted` they come cell by cell (every warp shares one
/// or two cells), otherwise in random order (almost every lane alone).
point_chunk random_points(grid_spec const& grid, std::size_t n, std::uint64_t seed, bool sorted, double lo = 100.0,
                          double hi = 400.0)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> x(grid.x0, grid.x0 + grid.cols * grid.xres);
  std::uniform_real_distribution<double> y(grid.y0 - grid.rows * grid.yres, grid.y0);
  std::uniform_real_distribution<double> z(lo, hi);
  point_chunk p;
  for (std::size_t i = 0; i < n; ++i) {
    p.x.push_back(x(rng));
    p.y.push_back(y(rng));
    p.z.push_back(z(rng));
  }
  if (sorted) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    auto const cell = [&](std::size_t i) { return grid.cell_of(p.x[i], p.y[i]); };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cell(a) < cell(b); });
    point_chunk s;
    for (auto const i : order) {
      s.x.push_back(p.x[i]);
      s.y.push_back(p.y[i]);
      s.z.push_back(p.z[i]);
    }
    return s;
  }
  return p;
}

TEST_F(AtomicMode, RandomOrderAndCellOrder)
{
  auto const grid = square_grid(200);
  for (bool const sorted : {false, true}) {
    SCOPED_TRACE(sorted ? "cell order" : "random order");
    auto const points = random_points(grid, 400000, 21, sorted);
    check(grid, points, range_min_max_count());
    check(grid, points, metric_request::from({metric::range}), -9999.0F);
    check(grid, points, metric_request::from({metric::min, metric::max}));
    check(grid, points, metric_request::from({metric::count}));
  }
}

// One cell holding a million points (a long run of one key: whole warps aggregate), among cells
// with a few; and negative heights around zero.
TEST_F(AtomicMode, HotCellAndNegativeHeights)
{
  auto const grid = square_grid(64);
  auto points = random_points(grid, 100000, 22, false, -50.0, 50.0);
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> z(-1e6, 1e6);
  for (int i = 0; i < 1000000; ++i) {
    points.x.push_back(10.25);
    points.y.push_back(20.75);
    points.z.push_back(z(rng));
  }
  check(grid, points, range_min_max_count());
}

// A cell whose points are all equal has range 0; a lone point, too; a cell of only -0.0 and one of
// only +0.0 keep their sign (within one cell both signs may report either, as in every mode).
TEST_F(AtomicMode, EqualHeightsAndSignedZeros)
{
  auto const grid = square_grid(4);
  point_chunk p;
  auto const add = [&](double x, double y, double z) {
    p.x.push_back(x);
    p.y.push_back(y);
    p.z.push_back(z);
  };
  for (int i = 0; i < 100; ++i) { add(0.5, 3.5, 7.25); }
  add(1.5, 3.5, -3.0);
  for (int i = 0; i < 40; ++i) { add(2.5, 3.5, -0.0); }
  for (int i = 0; i < 40; ++i) { add(3.5, 3.5, 0.0); }
  check(grid, p, range_min_max_count());
  auto const r = grid_points_gpu(grid, p, range_min_max_count(), default_nodata, reduce_mode::atomic, nullptr);
  EXPECT_EQ(r.results.range[0], 0.0F);
  EXPECT_EQ(r.results.range[1], 0.0F);
  EXPECT_TRUE(std::signbit(r.results.min[2]));
  EXPECT_FALSE(std::signbit(r.results.max[3]));
}

TEST_F(AtomicMode, PointsOutsideAndEmptyGrids)
{
  auto const grid = grid_from_extent(10.0, 10.0, 20.0, 15.0, 0.5, 0.5);
  auto const points = random_points(square_grid(30), 50000, 24, false);  // over 0..30 x 0..30
  check(grid, points, range_min_max_count());
  check(grid, point_chunk{}, range_min_max_count());  // no points: every cell nodata, count 0
  check(grid_spec{}, points, range_min_max_count());  // no cells: every point outside
  check(grid, points, metric_request{});              // no band: the stats still count
}

// Points exactly on every horizontal and vertical cell edge, under both edge rules: the atomic
// path bins with grid.cell_of, rule included, so it agrees with the CPU cell for cell.
TEST_F(AtomicMode, PointsOnCellEdgesUnderBothEdgeRules)
{
  auto grid = square_grid(64);
  point_chunk points;
  for (std::uint32_t r = 0; r <= grid.rows; ++r) {
    for (std::uint32_t c = 0; c <= grid.cols; ++c) {
      points.x.push_back(static_cast<double>(c));
      points.y.push_back(static_cast<double>(r));
      points.z.push_back(static_cast<double>(r * 131 + c));
    }
  }
  for (auto const rule : {edge_rule::gdal, edge_rule::pdal}) {
    grid.edge = rule;
    check(grid, points, range_min_max_count());
  }
}

TEST_F(AtomicMode, MeanAndStddevAreUsageErrors)
{
  auto const grid = square_grid(4);
  auto const points = random_points(grid, 100, 25, false);
  for (auto const m : {metric::mean, metric::stddev}) {
    try {
      (void)grid_points_gpu(grid, points, metric_request::from({metric::range, m}), default_nodata,
                            reduce_mode::atomic, nullptr);
      ADD_FAILURE() << metric_name(m) << " accepted";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
      EXPECT_NE(std::string(e.what()).find("atomic mode supports range,min,max,count"), std::string::npos)
        << e.what();
    }
  }
}

}  // namespace
}  // namespace heightgrid
