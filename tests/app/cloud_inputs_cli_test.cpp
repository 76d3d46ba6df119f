// `heightgrid grid` and `info` on cloud-optimised inputs (issue #37). COPC: -te reads only the
// octree nodes that meet the grid and gives the cells of the whole file's grid; tiles read only
// theirs and mosaic as the single run; --copc-level N|auto reads the levels down to N; info shows
// the levels. EPT datasets grid as their node files. Catalogue files (.vpc, STAC, lists) grid as
// the files they name, and entries whose bounds miss -te are never opened. Binary and zstandard EPT
// copies (written here from the laszip samples) give the laszip datasets' GeoTIFFs byte for byte.
// data/copc_octree_pdrf6.copc.laz: 20,000 points over 100 m x 100 m, 1,114 nodes in levels 0-5.

#include "cli_fixture.hpp"
#include "ept_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

std::string octree() { return data("copc_octree_pdrf6.copc.laz").string(); }

/// The share of the chunks' bytes `-v`'s COPC line says were read, in percent (-1 when absent).
double bytes_share(std::string const& log)
{
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(R"(COPC: .* of their chunks \(([0-9.]+) %\))"))) { return -1.0; }
  return std::stod(m[1].str());
}

/// Cells of `window` (a raster whose cells are those of `whole`'s, offset by whole cells) equal the
/// same cells of `whole`, band by band, NaN equal to NaN.
::testing::AssertionResult window_of(fs::path const& window, fs::path const& whole)
{
  auto const w = read_raster(window);
  auto const a = read_raster(whole);
  if (w.values.empty() || a.values.empty() || w.values.size() != a.values.size()) {
    return ::testing::AssertionFailure() << "unreadable or different bands";
  }
  double const dx = (w.gt[0] - a.gt[0]) / a.gt[1], dy = (w.gt[3] - a.gt[3]) / a.gt[5];
  auto const c0 = static_cast<int>(std::lround(dx)), r0 = static_cast<int>(std::lround(dy));
  if (std::abs(dx - c0) > 1e-9 || std::abs(dy - r0) > 1e-9 || w.gt[1] != a.gt[1] || w.gt[5] != a.gt[5]) {
    return ::testing::AssertionFailure() << "the window's cells are not the whole grid's";
  }
  for (std::size_t b = 0; b < w.values.size(); ++b) {
    for (int r = 0; r < w.rows; ++r) {
      for (int c = 0; c < w.cols; ++c) {
        double const p = w.values[b][static_cast<std::size_t>(r) * w.cols + c];
        double const q = a.values[b][static_cast<std::size_t>(r + r0) * a.cols + (c + c0)];
        if (!(std::isnan(p) && std::isnan(q)) && std::memcmp(&p, &q, sizeof p) != 0) {
          return ::testing::AssertionFailure() << "band " << b + 1 << " cell " << r << "," << c << ": " << p
                                               << " vs " << q;
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

std::string const metrics = " --metrics range,min,max,count --device cpu --co COMPRESS=NONE";

TEST_F(Cli, CopcWindowReadsItsNodesAndGivesTheWholeFilesCells)
{
  auto const whole = run("grid " + octree() + " -o " + out("whole.tif").string() +
                         " -te 500000 4100000 500100 4100100 -tr 1 1" + metrics);
  ASSERT_EQ(whole.code, 0) << whole.output;
  // 1 % of the area in the middle, and a window across node edges.
  for (std::string const te : {"500045 4100045 500055 4100055", "500028 4100030 500036 4100070"}) {
    auto const r = run("grid " + octree() + " -o " + out("window.tif").string() + " --overwrite -te " + te +
                       " -tr 1 1 -v" + metrics);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("of 1,114 nodes read (levels 0-5 of 0-5)"), std::string::npos) << r.output;
    double const share = bytes_share(r.output);
    EXPECT_GT(share, 0.0) << r.output;
    if (te.rfind("500045", 0) == 0) { EXPECT_LE(share, 5.0) << "issue #37: 1 % of the area, at most 5 % of the bytes"; }
    EXPECT_TRUE(window_of(out("window.tif"), out("whole.tif"))) << te;
  }
}

TEST_F(Cli, CopcTilesReadTheirNodesAndMosaicAsTheSingleRun)
{
  auto const single = run("grid " + octree() + " -o " + out("single.tif").string() + " --res 1" + metrics);
  ASSERT_EQ(single.code, 0) << single.output;
  auto const tiles = run("grid " + octree() + " -o " + out("tiles").string() + " --res 1 --tile-size 32" + metrics);
  ASSERT_EQ(tiles.code, 0) << tiles.output;
  auto const a = read_raster(out("single.tif"));
  auto const b = read_raster(out("tiles") / "tiles.vrt");
  ASSERT_EQ(a.cols, b.cols);
  ASSERT_EQ(a.rows, b.rows);
  for (std::size_t band = 0; band < a.values.size(); ++band) {
    for (std::size_t i = 0; i < a.values[band].size(); ++i) {
      double const p = a.values[band][i], q = b.values[band][i];
      ASSERT_TRUE((std::isnan(p) && std::isnan(q)) || std::memcmp(&p, &q, sizeof p) == 0)
        << "band " << band + 1 << " cell " << i;
    }
  }
}

TEST_F(Cli, CopcLevelsAutoAndByNumber)
{
  // 10x the points' spacing (0.71 m): auto reads levels 0-2 (spacing 5.65 m), 672 points.
  auto const automatic = run("grid " + octree() + " -o " + out("auto.tif").string() + " --res 7.1 --copc-level auto -v" +
                             metrics);
  ASSERT_EQ(automatic.code, 0) << automatic.output;
  EXPECT_NE(automatic.output.find("672 points read"), std::string::npos) << automatic.output;
  EXPECT_NE(automatic.output.find("(levels 0-2 of 0-5), 672 of 20,000 points"), std::string::npos) << automatic.output;
  // The output keeps the whole file's grid (the header's bounds), not the coarse points' extent.
  auto const full = run("grid " + octree() + " -o " + out("full.tif").string() + " --res 7.1" + metrics);
  ASSERT_EQ(full.code, 0) << full.output;
  auto const a = read_raster(out("auto.tif"));
  auto const f = read_raster(out("full.tif"));
  EXPECT_EQ(a.cols, f.cols);
  EXPECT_EQ(a.rows, f.rows);
  EXPECT_EQ(a.gt, f.gt);
  auto const level0 = run("grid " + octree() + " -o " + out("l0.tif").string() + " --res 7.1 --copc-level 0 -v" + metrics);
  ASSERT_EQ(level0.code, 0) << level0.output;
  EXPECT_NE(level0.output.find("32 points read"), std::string::npos) << level0.output;
  auto const deep = run("grid " + octree() + " -o " + out("l9.tif").string() + " --res 7.1 --copc-level 9 -v" + metrics);
  ASSERT_EQ(deep.code, 0) << deep.output;
  EXPECT_NE(deep.output.find("20,000 points read"), std::string::npos) << deep.output;
  for (std::string const bad : {"-1", "32", "x", "1.5"}) {
    auto const r = run("grid " + octree() + " -o " + out("bad.tif").string() + " --res 7.1 --copc-level=" + bad);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("--copc-level: '" + bad + "' is not auto or a level from 0 to 31"), std::string::npos)
      << r.output;
    EXPECT_FALSE(fs::exists(out("bad.tif")));
  }
}

TEST_F(Cli, PdalsCopcFileGridsAsItsLasTwin)
{
  // ../shared/data/cloud's COPC sample and its plain LAS twin: the same cells, whole and windowed
  // (only the window's nodes read).
  auto const real = real_data_dir();
  auto const copc = real.empty() ? fs::path() : real.parent_path() / "cloud/pdal/copc/1.2-with-color.copc.laz";
  auto const las = real.empty() ? fs::path() : real / "pdal/las_1.2-with-color.las";
  if (copc.empty() || !fs::exists(copc) || !fs::exists(las)) {
    GTEST_SKIP() << "../shared/data/cloud/pdal/copc/1.2-with-color.copc.laz or its LAS twin not present";
  }
  for (std::string const extent : {" --res 10", " --res 10 -te 636000 850000 637000 851000"}) {
    ASSERT_EQ(run("grid " + copc.string() + " -o " + out("c.tif").string() + " --overwrite" + extent + metrics).code, 0);
    ASSERT_EQ(run("grid " + las.string() + " -o " + out("l.tif").string() + " --overwrite" + extent + metrics).code, 0);
    auto const a = read_raster(out("c.tif"));
    auto const b = read_raster(out("l.tif"));
    ASSERT_EQ(a.cols, b.cols) << extent;
    ASSERT_EQ(a.rows, b.rows) << extent;
    EXPECT_EQ(a.gt, b.gt) << extent;
    ASSERT_EQ(a.values.size(), 4U);
    for (std::size_t band = 0; band < a.values.size(); ++band) {
      std::size_t differ = 0;
      for (std::size_t i = 0; i < a.values[band].size(); ++i) {
        double const p = a.values[band][i], q = b.values[band][i];
        differ += (std::isnan(p) && std::isnan(q)) || p == q ? 0 : 1;
      }
      EXPECT_EQ(differ, 0U) << "band " << band + 1 << extent;
    }
  }
}

TEST_F(Cli, EptDatasetsGridAsTheirNodeFiles)
{
  // lasR's EPT of Topography.las (four depth-1 nodes, its points re-quantised by Entwine to 0.01,
  // so not bit for bit the LAS file's 0.00025): given as its folder or its ept.json, the same
  // GeoTIFF as its four node files read as plain LAZ, and as many points as the LAS file; a window
  // in one corner reads one node and gives the node files' cells there.
  auto const real = real_data_dir();
  auto const ept = real.empty() ? fs::path() : real.parent_path() / "cloud/lasR/ept-test-multi";
  if (ept.empty() || !fs::exists(ept)) { GTEST_SKIP() << "../shared/data/cloud/lasR/ept-test-multi not present"; }
  std::string nodes;
  for (auto const* n : {"1-0-0-0", "1-0-1-0", "1-1-0-0", "1-1-1-0"}) { nodes += " " + (ept / "ept-data" / n).string() + ".laz"; }
  ASSERT_EQ(run("grid" + nodes + " -o " + out("n.tif").string() + " --res 2" + metrics).code, 0);
  for (auto const& input : {ept.string(), (ept / "ept.json").string()}) {
    auto const r = run("grid " + input + " -o " + out("e.tif").string() + " --overwrite --res 2 -v" + metrics);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find(": 4 of 4 nodes read (levels 0-1 of 0-1), 73403 of 73403 points"), std::string::npos)
      << r.output;
    EXPECT_NE(r.output.find("73,403 points read"), std::string::npos) << r.output;  // Topography.las's count
    EXPECT_TRUE(window_of(out("e.tif"), out("n.tif"))) << input;
  }
  auto const info = run("info " + ept.string());
  ASSERT_EQ(info.code, 0) << info.output;
  EXPECT_NE(info.output.find(": EPT of laszip data, cube side 288, span 128, 4 nodes, 73,403 points"), std::string::npos)
    << info.output;
  EXPECT_NE(info.output.find("level 1: spacing 1.125, 4 nodes, 73,403 points"), std::string::npos) << info.output;
  auto const corner = run("grid " + ept.string() + " -o " + out("c.tif").string() +
                          " -te 273360 5274360 273400 5274400 -tr 2 2 -v" + metrics);
  ASSERT_EQ(corner.code, 0) << corner.output;
  EXPECT_NE(corner.output.find(": 1 of 4 nodes read"), std::string::npos) << corner.output;
  EXPECT_TRUE(window_of(out("c.tif"), out("n.tif")));
}

TEST_F(Cli, BinaryAndZstandardEptGridAsTheLaszipDataset)
{
  auto const real = real_data_dir();
  int datasets = 0;
  for (auto const* name : {"lasR/ept-test-multi", "pdal/ept/1.2-with-color"}) {
    auto const laszip = real.empty() ? fs::path() : real.parent_path() / "cloud" / name;
    if (laszip.empty() || !fs::exists(laszip)) { continue; }
    ++datasets;
    bool const multi = std::string(name) == "lasR/ept-test-multi";
    // Whole, filtered, another dimension, and (lasR's four nodes) a window that reads one node.
    std::vector<std::string> const jobs{" --res 2", " --res 2 --classes 2 --returns first", " --res 3 --dimension Intensity",
                                        multi ? " -te 273360 5274360 273400 5274400 -tr 2 2" : " --res 20 --returns last"};
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      std::string const tag = (multi ? "multi_" : "pdal_") + std::to_string(j);
      auto const want = out("laszip_" + tag + ".tif");
      auto const r = run("grid " + laszip.string() + " -o " + want.string() + jobs[j] + metrics);
      ASSERT_EQ(r.code, 0) << r.output;
      for (std::string const type : {"binary", "zstandard"}) {
        auto const copy = out(std::string(multi ? "multi_" : "pdal_") + type);
        if (!fs::exists(copy)) { write_binary_ept(laszip, copy, type); }
        auto const got = out(type + "_" + tag + ".tif");
        auto const b = run("grid " + copy.string() + " -o " + got.string() + jobs[j] + metrics + " -v");
        ASSERT_EQ(b.code, 0) << b.output;
        // PDAL's LAZ node carries no CRS while its ept.json has one (which the binary nodes take):
        // there the cells must be equal; lasR's nodes and ept.json agree, so the files must be.
        EXPECT_TRUE(window_of(got, want)) << type << jobs[j];
        EXPECT_EQ(read_raster(got).cols, read_raster(want).cols) << type << jobs[j];
        if (multi) { EXPECT_TRUE(file_bytes(got) == file_bytes(want)) << type << jobs[j] << " differs from laszip"; }
        if (j == 0) {
          auto const info = run("info " + copy.string());
          EXPECT_NE(info.output.find(": EPT of " + type + " data, cube side"), std::string::npos) << info.output;
        }
      }
    }
  }
  if (datasets == 0) { GTEST_SKIP() << "../shared/data/cloud's EPT datasets are not present"; }
}

TEST_F(Cli, CatalogueFilesGridAsTheFilesTheyName)
{
  fs::copy_file(data("copc_octree_pdrf6.copc.laz"), out("a.copc.laz"));
  ASSERT_EQ(run("grid " + out("a.copc.laz").string() + " -o " + out("direct.tif").string() + " --res 1" + metrics).code, 0);
  // A virtual point cloud (a STAC ItemCollection): the real file, and one that does not exist whose
  // catalogued bounds lie far away.
  auto const item = [](std::string const& id, std::string const& href, std::string const& bbox) {
    return R"({"type": "Feature", "stac_version": "1.0.0", "id": ")" + id +
           R"(", "geometry": null, "properties": {"datetime": null, "pc:count": 20000, "proj:bbox": [)" + bbox +
           R"(]}, "assets": {"data": {"href": ")" + href + R"(", "roles": ["data"]}}})";
  };
  std::ofstream(out("tiles.vpc")) << R"({"type": "FeatureCollection", "features": [)"
                                  << item("a", "./a.copc.laz", "500000, 4100000, 15, 500100, 4100100, 50") << ", "
                                  << item("b", "./missing.laz", "600000, 0, 0, 600010, 10, 1") << "]}";
  std::ofstream(out("item.json")) << item("a", "a.copc.laz", "500000, 4100000, 500100, 4100100");
  std::ofstream(out("tiles.lst")) << "# one tile\n" << out("a.copc.laz").string() << "\n";
  std::ofstream(out("tiles.txt")) << "a.copc.laz\n";
  for (std::string const input : {"item.json", "tiles.lst", "tiles.txt"}) {
    auto const r = run("grid " + out(input).string() + " -o " + out("c.tif").string() + " --overwrite --res 1 -v" + metrics);
    ASSERT_EQ(r.code, 0) << input << r.output;
    EXPECT_NE(r.output.find("catalogue " + out(input).string() + ": 1 of 1 entries read"), std::string::npos) << r.output;
    EXPECT_TRUE(window_of(out("c.tif"), out("direct.tif"))) << input;
  }
  // With -te over the real file only, the missing one is never opened.
  auto const te = " -te 500000 4100000 500100 4100100 -tr 1 1";
  auto const inside = run("grid " + out("tiles.vpc").string() + " -o " + out("v.tif").string() + te + " -v" + metrics);
  ASSERT_EQ(inside.code, 0) << inside.output;
  EXPECT_NE(inside.output.find("1 of 2 entries read (those whose bounds meet the window)"), std::string::npos)
    << inside.output;
  EXPECT_TRUE(window_of(out("v.tif"), out("direct.tif")));
  // Without it, it is opened, and its absence is an input error naming it.
  auto const whole = run("grid " + out("tiles.vpc").string() + " -o " + out("w.tif").string() + " --res 1" + metrics);
  EXPECT_EQ(whole.code, 3) << whole.output;
  EXPECT_NE(whole.output.find("missing.laz"), std::string::npos) << whole.output;
  // A list line that names no point cloud.
  std::ofstream(out("bad.lst")) << out("a.copc.laz").string() << "\nnotes.xyz\n";
  auto const bad = run("grid " + out("bad.lst").string() + " -o " + out("b.tif").string() + " --res 1");
  EXPECT_EQ(bad.code, 3) << bad.output;
  EXPECT_NE(bad.output.find("bad.lst: line 2 ('notes.xyz') names no .las/.laz file or ept.json"), std::string::npos)
    << bad.output;
}

TEST_F(Cli, InfoShowsTheCopcLevels)
{
  auto const r = run("info " + octree());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("COPC: root cube centre (500064.000, 4100064.000, 64.000), half side 64.000; root spacing 22.6"),
            std::string::npos)
    << r.output;
  EXPECT_NE(r.output.find("level 0: spacing 22.6, 1 nodes, 32 points"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("level 5: spacing 0.70625"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace heightgrid::test
