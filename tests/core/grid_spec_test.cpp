#include "heightgrid/core/error.hpp"
#include "heightgrid/core/grid_spec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace heightgrid {
namespace {

TEST(GridSpec, CellRuleOnEdgesIsHalfOpen)
{
  grid_spec g{10.0, 20.0, 1.0, 1.0, 4, 3};  // x in [10, 14), y in (17, 20]
  EXPECT_EQ(g.cell_of(10.0, 20.0), 0U);     // the top-left corner belongs to cell 0
  EXPECT_EQ(g.cell_of(11.0, 20.0), 1U);     // a left edge belongs to the cell on its right
  EXPECT_EQ(g.cell_of(10.999, 19.5), 0U);
  EXPECT_EQ(g.cell_of(10.0, 19.0), 4U);     // a top edge belongs to the cell below it
  EXPECT_EQ(g.cell_of(13.999, 17.001), 11U);
  EXPECT_EQ(g.cell_of(14.0, 19.5), no_cell);   // right edge of the grid is outside
  EXPECT_EQ(g.cell_of(12.0, 17.0), no_cell);   // bottom edge of the grid is outside
  EXPECT_EQ(g.cell_of(9.999, 19.5), no_cell);
  EXPECT_EQ(g.cell_of(12.0, 20.001), no_cell);
}

TEST(GridSpec, PdalEdgeRulePutsHorizontalEdgesInTheCellAbove)
{
  grid_spec g{10.0, 20.0, 1.0, 1.0, 4, 3};  // x in [10, 14), y in [17, 20) under the pdal rule
  g.edge = edge_rule::pdal;
  EXPECT_EQ(g.cell_of(10.0, 20.0), no_cell);   // the top edge of the grid is outside
  EXPECT_EQ(g.cell_of(10.0, 19.0), 0U);        // a horizontal edge belongs to the cell above it
  EXPECT_EQ(g.cell_of(11.0, 19.0), 1U);        // vertical edges as under the gdal rule
  EXPECT_EQ(g.cell_of(10.5, 19.5), 0U);        // inside a cell: the same cell as under the gdal rule
  EXPECT_EQ(g.cell_of(12.0, 17.0), 8U + 2U);   // the bottom edge of the grid is inside
  EXPECT_EQ(g.cell_of(14.0, 19.5), no_cell);
  // A tile of the grid keeps the whole grid's rows.
  grid_spec tile = g;
  tile.row0 = 1;
  tile.rows = 2;
  EXPECT_EQ(tile.cell_of(10.0, 18.0), 0U);
  EXPECT_EQ(tile.cell_of(10.0, 17.0), 4U);
}

TEST(GridSpec, PdalEdgeRuleGridFromBoundsHoldsEveryPoint)
{
  bounds b;
  b.extend(0.5, 2.0);  // both y on whole cells
  b.extend(3.5, 5.0);
  auto const gdal = grid_from_bounds(b, 1.0, 1.0);
  EXPECT_EQ(gdal.y0, 5.0);
  EXPECT_EQ(gdal.rows, 4U);  // 5 ≥ y > 1: the point at y = 2 is on row 3's top edge
  auto const pdal = grid_from_bounds(b, 1.0, 1.0, false, edge_rule::pdal);
  EXPECT_EQ(pdal.edge, edge_rule::pdal);
  EXPECT_EQ(pdal.y0, 6.0);   // y = 5 lies on the bottom edge of the row 6..5
  EXPECT_EQ(pdal.rows, 4U);  // 6 > y >= 2
  EXPECT_EQ(pdal.cell_of(0.5, 5.0), 0U);
  EXPECT_EQ(pdal.cell_of(3.5, 2.0), 3U * pdal.cols + 3U);
  auto const fixed = grid_from_extent(0.0, 0.0, 4.0, 3.0, 1.0, 1.0, false, edge_rule::pdal);
  EXPECT_EQ(fixed.edge, edge_rule::pdal);
}

TEST(GridSpec, NonFiniteCoordinatesHaveNoCell)
{
  grid_spec g{0.0, 10.0, 1.0, 1.0, 10, 10};
  double const nan = std::numeric_limits<double>::quiet_NaN();
  double const inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(g.cell_of(nan, 5.0), no_cell);
  EXPECT_EQ(g.cell_of(5.0, nan), no_cell);
  EXPECT_EQ(g.cell_of(inf, 5.0), no_cell);
  EXPECT_EQ(g.cell_of(-inf, 5.0), no_cell);
}

TEST(GridSpec, NegativeCoordinatesSnapOutwards)
{
  bounds b;
  b.extend(-3.5, -7.25);
  b.extend(-0.5, -1.0);
  auto const g = grid_from_bounds(b, 1.0, 1.0);
  EXPECT_DOUBLE_EQ(g.x0, -4.0);
  EXPECT_DOUBLE_EQ(g.y0, -1.0);
  EXPECT_EQ(g.cols, 4U);  // floor((-0.5 - -4) / 1) + 1
  EXPECT_EQ(g.rows, 7U);  // floor((-1 - -7.25) / 1) + 1
  EXPECT_EQ(g.cell_of(-3.5, -7.25), 6U * 4U + 0U);
  EXPECT_EQ(g.cell_of(-0.5, -1.0), 3U);  // y on the top edge -> row 0
}

TEST(GridSpec, LargeUtmCoordinates)
{
  bounds b;
  b.extend(636001.76, 4849497.9);
  b.extend(636010.25, 4849500.0);
  auto const g = grid_from_bounds(b, 0.5, 0.5);
  EXPECT_DOUBLE_EQ(g.x0, 636001.5);
  EXPECT_DOUBLE_EQ(g.y0, 4849500.0);
  EXPECT_EQ(g.cols, 18U);  // floor(8.75 / 0.5) + 1
  EXPECT_EQ(g.rows, 5U);   // floor(2.1 / 0.5) + 1 with 2.1 just above 2.0
  // col = floor(0.26 / 0.5) = 0, row = floor((4849500 - 4849497.9) / 0.5) = 4
  EXPECT_EQ(g.cell_of(636001.76, 4849497.9), 4U * 18U + 0U);
  // y exactly on the top edge of the grid is row 0; x exactly on a cell edge starts a new column
  EXPECT_EQ(g.cell_of(636002.0, 4849500.0), 1U);
}

TEST(GridSpec, EveryPointOfTheBoundsHasACell)
{
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> xs(-1e6, 1e6);
  std::uniform_real_distribution<double> res(0.01, 50.0);
  for (int trial = 0; trial < 2000; ++trial) {
    double const a = xs(rng), b2 = xs(rng), c = xs(rng), d = xs(rng);
    bounds bb;
    bb.extend(a, c);
    bb.extend(a + std::abs(b2) * 1e-3, c + std::abs(d) * 1e-3);
    double const r = res(rng);
    auto const g = grid_from_bounds(bb, r, r);
    ASSERT_NE(g.cell_of(bb.xmin, bb.ymin), no_cell) << "trial " << trial;
    ASSERT_NE(g.cell_of(bb.xmax, bb.ymax), no_cell) << "trial " << trial;
    ASSERT_NE(g.cell_of(bb.xmin, bb.ymax), no_cell) << "trial " << trial;
    ASSERT_NE(g.cell_of(bb.xmax, bb.ymin), no_cell) << "trial " << trial;
    // the last column and row are used (no empty margin)
    ASSERT_EQ(g.cell_of(bb.xmax, bb.ymin), g.num_cells() - 1) << "trial " << trial;
    // the origin is snapped to a multiple of the resolution
    ASSERT_DOUBLE_EQ(std::round(g.x0 / r) * r, g.x0);
    // the same under PDAL's edge rule
    auto const p = grid_from_bounds(bb, r, r, false, edge_rule::pdal);
    ASSERT_NE(p.cell_of(bb.xmin, bb.ymax), no_cell) << "trial " << trial;
    ASSERT_EQ(p.cell_of(bb.xmax, bb.ymin), p.num_cells() - 1) << "trial " << trial;
  }
}

TEST(GridSpec, SinglePointGivesOneCell)
{
  bounds b;
  b.extend(5.0, 5.0);
  auto const g = grid_from_bounds(b, 2.0, 2.0);
  EXPECT_EQ(g.num_cells(), 1U);
  EXPECT_EQ(g.cell_of(5.0, 5.0), 0U);
}

TEST(GridSpec, ExplicitExtentSizedLikeGdal)
{
  auto const g = grid_from_extent(0.0, 0.0, 10.0, 5.0, 3.0, 3.0);
  EXPECT_EQ(g.cols, 3U);  // floor(10/3 + 0.5)
  EXPECT_EQ(g.rows, 2U);  // floor(5/3 + 0.5)
  EXPECT_DOUBLE_EQ(g.x0, 0.0);
  EXPECT_DOUBLE_EQ(g.y0, 5.0);
  auto const gt = g.geotransform();
  EXPECT_DOUBLE_EQ(gt[1], 3.0);
  EXPECT_DOUBLE_EQ(gt[5], -3.0);
  EXPECT_DOUBLE_EQ(gt[2], 0.0);
  EXPECT_DOUBLE_EQ(gt[4], 0.0);
}

TEST(GridSpec, BadResolutionsAndHugeGridsAreRefused)
{
  bounds b;
  b.extend(0.0, 0.0);
  b.extend(1000.0, 1000.0);
  for (double r : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    try {
      (void)grid_from_bounds(b, r, r);
      FAIL() << "resolution " << r << " accepted";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage);
      EXPECT_NE(std::string(e.what()).find("resolution"), std::string::npos);
    }
  }
  try {
    (void)grid_from_bounds(b, 1e-5, 1e-5);  // 10^8 x 10^8 cells
    FAIL() << "absurd grid accepted";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::resource);
  }
  EXPECT_THROW((void)grid_from_bounds(bounds{}, 1.0, 1.0), error);
  EXPECT_THROW((void)grid_from_extent(0, 0, 0, 1, 1, 1), error);
}

}  // namespace
}  // namespace heightgrid

namespace heightgrid {
namespace {

// Issue 24: a cell below the spacing of doubles near the coordinates once looped forever while
// snapping the origin. Each value here hung before; now each is refused at once as bad usage.
TEST(GridSpec, CellsTooFineForTheCoordinatesAreRefusedNotLoopedOn)
{
  struct tiny {
    double coordinate, res;
  };
  for (auto const t : {tiny{4000000.7, 1e-12}, tiny{637281.17, 1e-15}, tiny{0.3, 1e-310}, tiny{123456.789, 1e-310},
                       tiny{500000.3, std::numeric_limits<double>::denorm_min()}}) {
    bounds b;
    b.extend(t.coordinate, t.coordinate);
    try {
      (void)grid_from_bounds(b, t.res, t.res);
      ADD_FAILURE() << "no error for " << t.coordinate << " at " << t.res;
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
      EXPECT_NE(std::string(e.what()).find("too fine"), std::string::npos) << e.what();
    }
  }
  // Fine but representable cells near the origin still work.
  bounds b;
  b.extend(0.0, 0.0);
  b.extend(1e-9, 1e-9);
  auto const g = grid_from_bounds(b, 1e-12, 1e-12);
  EXPECT_GE(g.cols, 1000u);
  EXPECT_LE(g.cols, 1002u);
}

}  // namespace
}  // namespace heightgrid

namespace heightgrid {
namespace {

TEST(Tiling, TileCellsAreTheWholeGridsCellsBitForBit)
{
  // A resolution with no exact binary value and an origin far from zero: a tile with its own
  // origin (x0 + col0 * xres) would put some edge points in the neighbouring cell.
  bounds b;
  b.extend(512345.67, 4101234.5);
  b.extend(513345.67, 4102234.5);
  grid_spec const whole = grid_from_bounds(b, 0.3, 0.7);
  tiling const t = make_tiling(whole, 97, 41);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> ux(b.xmin, b.xmax), uy(b.ymin, b.ymax);
  std::uint64_t checked = 0;
  for (int i = 0; i < 200000; ++i) {
    // Half the points exactly on cell edges, where rounding decides.
    double x = ux(rng), y = uy(rng);
    if (i % 2 == 0) {
      x = whole.x0 + std::floor((x - whole.x0) / whole.xres) * whole.xres;
      y = whole.y0 - std::floor((whole.y0 - y) / whole.yres) * whole.yres;
    }
    cell_id const c = whole.cell_of(x, y);
    if (c == no_cell) { continue; }
    std::uint32_t const col = c % whole.cols, row = c / whole.cols;
    grid_spec const tile = t.tile(col / t.tile_cols, row / t.tile_rows);
    ASSERT_EQ(tile.cell_of(x, y), (row - tile.row0) * tile.cols + (col - tile.col0)) << x << " " << y;
    // Every other tile refuses it.
    grid_spec const right = t.tile(std::min(col / t.tile_cols + 1, t.tiles_x() - 1), row / t.tile_rows);
    if (right.col0 != tile.col0) { ASSERT_EQ(right.cell_of(x, y), no_cell); }
    ++checked;
  }
  EXPECT_GT(checked, 100000u);
}

TEST(Tiling, LastTilesAreCroppedAndGeoreferenced)
{
  grid_spec g;
  g.x0 = 100.0;
  g.y0 = 50.0;
  g.xres = 2.0;
  g.yres = 3.0;
  g.cols = 10;
  g.rows = 7;
  tiling const t = make_tiling(g, 4, 3);
  EXPECT_EQ(t.tiles_x(), 3u);
  EXPECT_EQ(t.tiles_y(), 3u);
  EXPECT_EQ(t.count(), 9u);
  grid_spec const last = t.tile(2, 2);
  EXPECT_EQ(last.cols, 2u);
  EXPECT_EQ(last.rows, 1u);
  auto const gt = last.geotransform();
  EXPECT_EQ(gt[0], 100.0 + 8 * 2.0);
  EXPECT_EQ(gt[3], 50.0 - 6 * 3.0);
  std::uint32_t x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bounds b;
  b.extend(101.0, 49.0);  // cell (0, 0)
  ASSERT_TRUE(t.tiles_meeting(b, 0, x0, x1, y0, y1));
  EXPECT_EQ(x0, 0u);
  EXPECT_EQ(x1, 0u);
  ASSERT_TRUE(t.tiles_meeting(b, 4, x0, x1, y0, y1));  // widened by 4 cells: the next tile east
  EXPECT_EQ(x1, 1u);
  EXPECT_EQ(y1, 1u);
  bounds far;
  far.extend(1000.0, 1000.0);
  EXPECT_FALSE(t.tiles_meeting(far, 1, x0, x1, y0, y1));
  EXPECT_THROW((void)make_tiling(g, 0, 3), error);
}

}  // namespace
}  // namespace heightgrid
