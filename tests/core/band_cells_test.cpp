#include "heightgrid/core/band_cells.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace heightgrid {
namespace {

/// The rule band_cells must follow, point by point: grid_spec::cell_of on the whole grid.
std::uint32_t expected_cell(grid_band const& band, double x, double y)
{
  cell_id const c = band.grid.cell_of(x, y);
  if (c == no_cell) { return cell_outside; }
  std::uint64_t const first = band.first_cell();
  return c >= first && c - first < band.cells() ? static_cast<std::uint32_t>(c - first) : cell_skipped;
}

/// Points of a batch in either encoding over `g`'s extent and around it: random ones, ones exactly on
/// cell edges and corners, far outside, and NaN / infinite (float64).
struct test_batch {
  std::vector<double> memory;
  point_batch batch;
};

test_batch make_batch(grid_spec const& g, coord_encoding encoding, std::size_t n, std::uint64_t seed)
{
  test_batch t;
  t.memory.resize(3 * n);
  t.batch.data = t.memory.data();
  t.batch.capacity = t.batch.size = n;
  t.batch.encoding = encoding;
  std::mt19937_64 rng(seed);
  double const w = g.cols * g.xres, h = g.rows * g.yres;
  std::uniform_real_distribution<double> ux(g.x0 - 0.1 * w, g.x0 + 1.1 * w), uy(g.y0 - 1.1 * h, g.y0 + 0.1 * h);
  std::uniform_int_distribution<int> col(-1, static_cast<int>(g.cols) + 1), row(-1, static_cast<int>(g.rows) + 1);
  if (encoding == coord_encoding::scaled_int32) {
    t.batch.transform.scale[0] = t.batch.transform.scale[1] = t.batch.transform.scale[2] = 0.01;
    t.batch.transform.offset[0] = g.x0 - 0.2 * w;
    t.batch.transform.offset[1] = g.y0 - 1.2 * h;
  }
  for (std::size_t i = 0; i < n; ++i) {
    double x = ux(rng), y = uy(rng);
    if (i % 4 == 1) {  // on an edge or a corner
      x = g.x0 + col(rng) * g.xres;
      y = g.y0 - row(rng) * g.yres;
    }
    if (encoding == coord_encoding::float64) {
      if (i % 97 == 5) { x = std::numeric_limits<double>::quiet_NaN(); }
      if (i % 89 == 7) { y = -std::numeric_limits<double>::infinity(); }
      if (i % 83 == 3) { x = 1e300; }
      t.batch.x()[i] = x;
      t.batch.y()[i] = y;
    } else {
      auto const to_int = [](double v, double s, double o) {
        return static_cast<std::int32_t>(std::llround((v - o) / s));
      };
      t.batch.xi()[i] = to_int(x, 0.01, t.batch.transform.offset[0]);
      t.batch.yi()[i] = to_int(y, 0.01, t.batch.transform.offset[1]);
    }
  }
  return t;
}

TEST(BandCells, EveryCodeFollowsCellOfForBothEncodingsAndEdgeRules)
{
  std::vector<cell_code> codes{cell_code::baseline};
  if (cell_code_available(cell_code::avx2)) { codes.push_back(cell_code::avx2); }
  for (edge_rule edge : {edge_rule::gdal, edge_rule::pdal}) {
    for (double res : {1.0, 0.3, 1.0 / 3.0, 2.5}) {
      grid_spec g;
      g.x0 = 1000.05;
      g.y0 = 2000.0;
      g.xres = res;
      g.yres = res * 0.7;
      g.cols = 211;
      g.rows = 97;
      g.edge = edge;
      for (grid_band const& band : {grid_band::whole(g), grid_band{g, 30, 41}}) {
        for (coord_encoding enc : {coord_encoding::float64, coord_encoding::scaled_int32}) {
          auto const t = make_batch(g, enc, 5000, 17);
          std::vector<std::uint32_t> want(t.batch.size);
          std::size_t inside = 0, skipped = 0, outside = 0;
          for (std::size_t i = 0; i < t.batch.size; ++i) {
            want[i] = expected_cell(band, t.batch.x_at(i), t.batch.y_at(i));
            inside += want[i] < cell_skipped;
            skipped += want[i] == cell_skipped;
            outside += want[i] == cell_outside;
          }
          EXPECT_GT(inside, 100U);
          EXPECT_GT(outside, 100U);
          if (band.rows < g.rows) { EXPECT_GT(skipped, 100U); }
          for (cell_code code : codes) {
            // In blocks that do not divide the batch, from an offset, as the binner calls it.
            std::vector<std::uint32_t> got(t.batch.size, 12345U);
            for (std::size_t first = 0; first < t.batch.size; first += 333) {
              std::size_t const n = std::min<std::size_t>(333, t.batch.size - first);
              band_cells(band, t.batch, first, n, got.data() + first, code);
            }
            std::size_t differ = 0;
            for (std::size_t i = 0; i < want.size(); ++i) { differ += got[i] != want[i]; }
            EXPECT_EQ(differ, 0U) << "code " << static_cast<int>(code) << ", res " << res << ", encoding "
                                  << static_cast<int>(enc) << ", band rows " << band.rows;
          }
        }
      }
    }
  }
}

TEST(BandCells, BandsOfMoreThanTwoToTheThirtyOneCells)
{
  // Local cells from 2^31 up take the vector code's other conversion path (no memory is needed:
  // only cells are computed).
  grid_spec g;
  g.y0 = 50000.0;
  g.cols = 100000;
  g.rows = 50000;
  grid_band const band{g, 10000, 30000};  // 3 * 10^9 cells
  ASSERT_GT(band.cells(), std::uint64_t{1} << 31);
  std::vector<cell_code> codes{cell_code::baseline};
  if (cell_code_available(cell_code::avx2)) { codes.push_back(cell_code::avx2); }
  auto const t = make_batch(g, coord_encoding::scaled_int32, 20000, 23);
  std::size_t high = 0;
  std::vector<std::uint32_t> want(t.batch.size);
  for (std::size_t i = 0; i < want.size(); ++i) {
    want[i] = expected_cell(band, t.batch.x_at(i), t.batch.y_at(i));
    high += want[i] < cell_skipped && want[i] >= (1U << 31);
  }
  EXPECT_GT(high, 1000U);
  for (cell_code code : codes) {
    std::vector<std::uint32_t> got(want.size());
    band_cells(band, t.batch, 0, got.size(), got.data(), code);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < want.size(); ++i) { differ += got[i] != want[i]; }
    EXPECT_EQ(differ, 0U) << "code " << static_cast<int>(code);
  }
}

TEST(BandCells, TheBestCodeIsAvailable)
{
  EXPECT_TRUE(cell_code_available(best_cell_code()));
  EXPECT_TRUE(cell_code_available(cell_code::baseline));
  if (!cell_code_available(cell_code::avx2)) { GTEST_SKIP() << "this CPU has no AVX2: only the baseline code runs"; }
  EXPECT_EQ(best_cell_code(), cell_code::avx2);
}

}  // namespace
}  // namespace heightgrid
