// The tile coordinator (app/pipeline/tile_work.hpp) on its own: which tiles it hands out and in
// which order. No tile is gridded.

#include "pipeline/tile_work.hpp"
#include "pipeline/tiles.hpp"

#include "heightgrid/core/grid_spec.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace heightgrid::app {
namespace {

/// An input whose header declares the square [x, x + size] x [y, y + size] and `points` records.
catalogue_entry input(double x, double y, double size, std::uint64_t points)
{
  bounds b;
  b.extend(x + 0.5, y + 0.5);
  b.extend(x + size - 0.5, y + size - 0.5);
  return {"f", b, points};
}

/// Tiles of 100 x 100 cells (1 m) over [0, width] x [0, height].
tiling tiles_over(double width, double height)
{
  bounds all;
  all.extend(0.5, 0.5);
  all.extend(width - 0.5, height - 0.5);
  return make_tiling(grid_from_bounds(all, 1.0, 1.0, true), 100, 100);
}

/// The order in which a coordinator of `catalogue` over `layout` hands out its tiles.
std::vector<std::uint64_t> handed_out(tiling const& layout, std::vector<catalogue_entry> const& catalogue)
{
  tiled_job_options const o;
  tile_coordinator c(layout, catalogue, o);
  std::vector<std::uint64_t> order;
  while (auto const t = c.next()) { order.push_back(t->index); }
  return order;
}

TEST(TileCoordinator, HandsOutTheBiggestTilesFirst)
{
  // 3 x 2 tiles of 100 x 100 cells, one input each, of different sizes (a longest-first order keeps
  // a big tile from running alone at the end of the job).
  tiling const layout = tiles_over(300, 200);
  ASSERT_EQ(layout.count(), 6u);
  // Tile index = ty * 3 + tx, ty counted from the north (y 100-200 is ty 0).
  std::vector<catalogue_entry> const catalogue{
    input(0, 100, 100, 10),     // tile 0
    input(100, 100, 100, 500),  // tile 1
    input(200, 100, 100, 20),   // tile 2
    input(0, 0, 100, 20),       // tile 3: as big as tile 2, after it
    input(100, 0, 100, 7000),   // tile 4
    input(200, 0, 100, 0),      // tile 5: unknown count, last
  };
  EXPECT_EQ(handed_out(layout, catalogue), (std::vector<std::uint64_t>{4, 1, 2, 3, 0, 5}));
}

TEST(TileCoordinator, AnInputOverSeveralTilesCountsInEachOfThemByItsShare)
{
  tiling const layout = tiles_over(200, 100);
  ASSERT_EQ(layout.count(), 2u);
  // 900 points over both tiles (450 each) and 400 in tile 0 alone: tile 0 holds 850, tile 1 450.
  bounds both;
  both.extend(0.5, 0.5);
  both.extend(199.5, 99.5);
  EXPECT_EQ(handed_out(layout, {{"wide", both, 900}, input(0, 0, 100, 400)}), (std::vector<std::uint64_t>{0, 1}));
  // ...and with the small input in tile 1 instead, tile 1 comes first.
  EXPECT_EQ(handed_out(layout, {{"wide", both, 900}, input(100, 0, 100, 400)}), (std::vector<std::uint64_t>{1, 0}));
}

}  // namespace
}  // namespace heightgrid::app
