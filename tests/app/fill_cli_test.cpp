// --fill (issue #38): idw gives gdal_fillnodata.py's cells bit for bit (when GDAL's Python tools are
// installed: Debian python3-gdal), nearest takes the nearest non-empty cell within the radius (ties
// to the first in row order), tin is linear in the triangles (those shorter than --fill-max-edge), a
// last band "filled" marks the filled cells, count stays as counted, and bad requests are usage
// errors that leave no output.

#include "cli_fixture.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

/// A cloud with holes: points of a sparse lidar scene.
std::string const holes = " --synth lidar --points 4000 --synth-extent 0 0 60 60 --res 1 --device cpu";

bool same_bits(std::vector<double> const& a, std::vector<double> const& b)
{
  if (a.size() != b.size()) { return false; }
  for (std::size_t i = 0; i < a.size(); ++i) {
    // The bands are Float32: compare them as written.
    auto const x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    if (std::memcmp(&x, &y, sizeof x) != 0) { return false; }
  }
  return true;
}

TEST_F(Cli, FillIdwIsGdalFillnodata)
{
  auto const plain = out("plain.tif"), filled = out("idw.tif");
  auto const a = run("grid -o " + plain.string() + holes + " --metrics max,count");
  ASSERT_EQ(a.code, 0) << a.output;
  auto const b = run("grid -o " + filled.string() + holes + " --metrics max,count --fill idw --fill-radius 4");
  ASSERT_EQ(b.code, 0) << b.output;
  auto const before = read_raster(plain), after = read_raster(filled);
  ASSERT_EQ(after.bands, 3);
  EXPECT_EQ(after.descriptions[2], "filled");
  std::size_t empty = 0, filled_cells = 0;
  for (std::size_t i = 0; i < before.values[0].size(); ++i) {
    bool const was_empty = std::isnan(before.values[0][i]);
    bool const now = !std::isnan(after.values[0][i]);
    empty += was_empty;
    filled_cells += was_empty && now;
    ASSERT_EQ(after.values[2][i], was_empty && now ? 1.0 : 0.0) << i;
    if (!was_empty) { ASSERT_EQ(after.values[0][i], before.values[0][i]) << i; }  // measured cells unchanged
    ASSERT_TRUE(std::isnan(after.values[1][i]) == std::isnan(before.values[1][i])) << i;  // count is not filled
  }
  EXPECT_GT(empty, 100U);
  EXPECT_GT(filled_cells, empty / 2);
  if (std::system("command -v gdal_fillnodata.py > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "gdal_fillnodata.py not installed (Debian python3-gdal): the comparison with it is skipped";
  }
  auto const ref = out("ref.tif");
  std::string const cmd = "gdal_fillnodata.py -q -md 4 -b 1 " + plain.string() + " " + ref.string() + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_TRUE(same_bits(read_raster(ref).values[0], after.values[0]));
}

TEST_F(Cli, FillNearestTakesTheNearestCellWithinTheRadius)
{
  // One row of 6 cells: points in cells 0 and 5 only.
  auto const xyz = out("row.xyz");
  std::ofstream(xyz) << "0.5 0.5 1\n5.5 0.5 6\n";
  std::string const grid = " --te 0 0 6 1 --tr 1 1 --metrics max --device cpu";
  auto const r = run("grid " + xyz.string() + " -o " + out("n.tif").string() + grid + " --fill nearest --fill-radius 2");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const n = read_raster(out("n.tif"));
  ASSERT_EQ(n.bands, 2);
  // Cells 1, 2 take cell 0's value (cell 2 is 2 away from cell 0 and 3 from cell 5), 3 and 4 cell 5's.
  std::vector<double> const want{1, 1, 1, 6, 6, 6}, mask{0, 1, 1, 1, 1, 0};
  EXPECT_EQ(n.values[0], want);
  EXPECT_EQ(n.values[1], mask);
  // A radius of 1 leaves the cells 2 and 3 away empty.
  auto const t = run("grid " + xyz.string() + " -o " + out("t.tif").string() + grid + " --fill nearest --fill-radius 1");
  ASSERT_EQ(t.code, 0) << t.output;
  auto const m = read_raster(out("t.tif"));
  EXPECT_EQ(m.values[0][1], 1.0);
  EXPECT_TRUE(std::isnan(m.values[0][2]) && std::isnan(m.values[0][3]));
  EXPECT_EQ(m.values[0][4], 6.0);
  std::ofstream(xyz) << "0.5 0.5 1\n4.5 0.5 5\n";  // cell 2 is 2 from both: the first in row order
  ASSERT_EQ(run("grid " + xyz.string() + " -o " + out("tie.tif").string() + grid + " --fill nearest --fill-radius 3").code, 0);
  EXPECT_EQ(read_raster(out("tie.tif")).values[0][2], 1.0);
}

TEST_F(Cli, FillTinIsLinearInTheTrianglesAndLeavesLongOnesEmpty)
{
  // Points at the cell centres of 10 x 10 cells on the plane z = 2x + 3y, but for a 3 x 3 hole
  // (x and y from 3 to 6) and the corner cell (9, 9) of the top row: tin fills the hole with the
  // plane; triangles across the hole have edges of 4 cells or more, so --fill-max-edge 2 keeps it
  // empty; a corner outside the hull stays empty either way.
  auto const xyz = out("plane.xyz");
  {
    std::ofstream f(xyz);
    for (int r = 0; r < 10; ++r) {
      for (int c = 0; c < 10; ++c) {
        double const x = c + 0.5, y = r + 0.5;
        bool const hole = c >= 3 && c < 6 && r >= 3 && r < 6;
        if (hole || (c == 9 && r == 9)) { continue; }
        f << x << " " << y << " " << 2 * x + 3 * y << "\n";
      }
    }
  }
  std::string const grid = " --te 0 0 10 10 --tr 1 1 --metrics max,count --device cpu";
  auto const r = run("grid " + xyz.string() + " -o " + out("tin.tif").string() + grid + " --fill tin");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const t = read_raster(out("tin.tif"));
  ASSERT_EQ(t.bands, 3);
  for (int row = 0; row < 10; ++row) {
    for (int col = 0; col < 10; ++col) {
      double const x = col + 0.5, y = 10 - (row + 0.5);
      auto const i = static_cast<std::size_t>(row * 10 + col);
      bool const hole = col >= 3 && col < 6 && y > 3 && y < 6;
      if (col == 9 && row == 0) {  // (9.5, 9.5): outside the hull of the points
        EXPECT_TRUE(std::isnan(t.values[0][i]));
        EXPECT_EQ(t.values[2][i], 0.0);
        continue;
      }
      EXPECT_NEAR(t.values[0][i], 2 * x + 3 * y, 1e-4) << row << "," << col;
      EXPECT_EQ(t.values[2][i], hole ? 1.0 : 0.0) << row << "," << col;
    }
  }
  auto const e = run("grid " + xyz.string() + " -o " + out("edge.tif").string() + grid + " --fill tin --fill-max-edge 2");
  ASSERT_EQ(e.code, 0) << e.output;
  auto const m = read_raster(out("edge.tif"));
  EXPECT_TRUE(std::isnan(m.values[0][4 * 10 + 4]));  // the hole's centre
  EXPECT_EQ(m.values[2][4 * 10 + 4], 0.0);
  // Two points: no triangle, a warning, the band as it was.
  std::ofstream(xyz) << "0.5 0.5 1\n5.5 0.5 6\n";
  auto const w = run("grid " + xyz.string() + " -o " + out("two.tif").string() + grid + " --fill tin");
  EXPECT_EQ(w.code, 0) << w.output;
  EXPECT_NE(w.output.find("--fill tin: band max has 2 non-empty cells, fewer than a triangle needs: not filled"),
            std::string::npos)
    << w.output;
}

TEST_F(Cli, BadFillRequestsAreUsageErrors)
{
  struct bad {
    std::string options;
    std::string named;
  };
  std::vector<bad> const cases{
    {" --metrics max --fill spline", "--fill: 'spline' is not none, nearest, idw or tin"},
    {" --metrics max --fill tin --fill-max-edge -1", "--fill-max-edge: -1.000000 is not a length in cells"},
    {" --metrics count --fill idw", "--fill: no band to fill"},
    {" --metrics max --fill idw --fill-radius 0", "--fill-radius: 0.000000 is not a distance of at least 1 cell"},
    {" --metrics max --fill tin --tile-size 10", "--fill tin with --tile-size needs --fill-max-edge"},
  };
  for (auto const& c : cases) {
    auto const o = out("bad.tif");
    auto const r = run("grid -o " + o.string() + holes + c.options);
    EXPECT_EQ(r.code, 2) << c.options << ": " << r.output;
    EXPECT_NE(r.output.find(c.named), std::string::npos) << c.options << ": " << r.output;
    EXPECT_FALSE(fs::exists(o)) << c.options;
  }
}

/// Cells of band `b` that differ between `one` (a single raster) and `mosaic` (the VRT of tiles),
/// and (filled band) where the mosaic has no tile.
std::size_t differing(raster const& one, raster const& mosaic, int b)
{
  std::size_t n = 0;
  auto const& x = one.values[static_cast<std::size_t>(b)];
  auto const& y = mosaic.values[static_cast<std::size_t>(b)];
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto const p = static_cast<float>(x[i]), q = static_cast<float>(y[i]);
    bool const same = (std::isnan(p) && std::isnan(q)) || std::memcmp(&p, &q, sizeof p) == 0;
    n += same ? 0 : 1;
  }
  return n;
}

TEST_F(Cli, FillAcrossTilesGivesTheSingleRastersCells)
{
  // 60 x 60 cells in tiles of 17: every tile edge has holes on both sides.
  struct method {
    char const* options;
    std::size_t tolerated;  // cells of the value bands that may differ
  };
  method const methods[] = {{"--fill nearest --fill-radius 5", 0}, {"--fill idw --fill-radius 7", 0},
                            {"--fill tin --fill-max-edge 6", 0}};
  // A file: a synthetic input makes each tile's share of points anew (another cloud than the whole one).
  auto const las = out("holes.las");
  auto const made = run("synth lidar --points 4000 --extent 0 0 60 60 -o " + las.string());
  ASSERT_EQ(made.code, 0) << made.output;
  for (auto const& m : methods) {
    auto const one = out("one.tif"), tiles = out("tiles");
    std::string const common =
      " " + las.string() + " --res 1 --device cpu --te 0 0 60 60 --metrics max,min,count " + m.options + " --overwrite";
    auto const a = run("grid -o " + one.string() + common);
    ASSERT_EQ(a.code, 0) << a.output;
    auto const b = run("grid -o " + tiles.string() + common + " --tile-size 17");
    ASSERT_EQ(b.code, 0) << b.output;
    auto const x = read_raster(one), y = read_raster(tiles / "tiles.vrt");
    ASSERT_EQ(y.bands, 4) << m.options;
    EXPECT_EQ(read_raster(tiles / "tiles_0_0.tif").descriptions[3], "filled");
    ASSERT_EQ(x.values[0].size(), y.values[0].size()) << m.options;
    std::size_t filled = 0;
    for (double v : x.values[3]) { filled += v == 1.0; }
    EXPECT_GT(filled, 50U) << m.options << ": the test needs filled cells";
    EXPECT_LE(differing(x, y, 0), m.tolerated) << m.options << ": max";
    EXPECT_LE(differing(x, y, 1), m.tolerated) << m.options << ": min";
    EXPECT_EQ(differing(x, y, 2), 0U) << m.options << ": count is never filled";
    // The mask: 0 where no tile lies, as in the single raster.
    EXPECT_LE(differing(x, y, 3), m.tolerated) << m.options << ": filled";
    // No filled tile is left hidden.
    for (auto const& e : fs::directory_iterator(tiles)) {
      EXPECT_EQ(e.path().filename().string().find(".fill-"), std::string::npos) << e.path();
    }
  }
  // tin needs a longest edge with tiles; the tiled run leaves no output.
  auto const bad = run("grid " + las.string() + " -o " + out("bad").string() + " --res 1 --metrics max --fill tin --tile-size 17");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--fill tin with --tile-size needs --fill-max-edge"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(out("bad")));
}

}  // namespace
}  // namespace heightgrid::test
