// --ground DTM.tif (issue #38): heights above a terrain raster. A DTM that is a plane is reproduced
// exactly by the bilinear rule, so points at plane + h grid to h; points outside the raster or on its
// nodata are dropped and counted; a raster in another CRS than the points, --dimension with
// --ground and a missing raster are clear errors; the GPU bins the same heights.

#include "cli_fixture.hpp"

#include "heightgrid/kernels/gpu.hpp"

#include <gdal_priv.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

double plane(double x, double y) { return 100.0 + 2.0 * x + 0.5 * y; }

/// A 10 x 10 DTM of 1-unit cells over [0, 10] x [0, 10] holding the plane at the cell centres; cell
/// (row 2, col 7) is nodata (-9999). `epsg` 0: no CRS.
void write_dtm(fs::path const& path, int epsg)
{
  GDALAllRegister();
  GDALDriver* gtiff = GetGDALDriverManager()->GetDriverByName("GTiff");
  GDALDatasetUniquePtr ds(gtiff->Create(path.c_str(), 10, 10, 1, GDT_Float64, nullptr));
  double gt[6] = {0.0, 1.0, 0.0, 10.0, 0.0, -1.0};
  ds->SetGeoTransform(gt);
  if (epsg != 0) {
    OGRSpatialReference srs;
    srs.importFromEPSG(epsg);
    ds->SetSpatialRef(&srs);
  }
  std::vector<double> v(100);
  for (int r = 0; r < 10; ++r) {
    for (int c = 0; c < 10; ++c) { v[static_cast<std::size_t>(r * 10 + c)] = plane(c + 0.5, 10.0 - (r + 0.5)); }
  }
  v[2 * 10 + 7] = -9999.0;
  auto* band = ds->GetRasterBand(1);
  band->SetNoDataValue(-9999.0);
  ASSERT_EQ(band->RasterIO(GF_Write, 0, 0, 10, 10, v.data(), 10, 10, GDT_Float64, 0, 0), CE_None);
}

TEST_F(Cli, GroundGivesHeightsAboveThePlaneAndDropsPointsOffIt)
{
  write_dtm(out("dtm.tif"), 0);
  // Points in the middle of the DTM at plane + 1..3 (four a cell, two cells), one outside it, two by
  // the nodata cell (centre 7.5, 7.5: any point whose four centres include it).
  std::ofstream xyz(out("p.xyz"));
  for (double const h : {1.0, 3.0}) {
    for (double const x : {2.25, 2.75}) { xyz << x << " 5.25 " << plane(x, 5.25) + h << "\n"; }
    for (double const x : {4.25, 4.75}) { xyz << x << " 3.5 " << plane(x, 3.5) + 2.0 * h << "\n"; }
  }
  xyz << "20 5 50\n" << "7.5 7.5 300\n" << "7.9 7.1 300\n";
  xyz.close();
  std::string const args = "grid " + out("p.xyz").string() + " --ground " + out("dtm.tif").string() +
                           " --te 0 0 10 10 --tr 2 2 --metrics min,max,count";
  auto const r = run(args + " -o " + out("h.tif").string() + " --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("11 points read, 3 filtered (3 off the --ground raster)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("heightgrid: warning: " + out("dtm.tif").string() +
                          ": 3 of 11 points (27.27 %) lie outside the --ground raster or use a nodata cell of it"),
            std::string::npos)
    << r.output;
  auto const h = read_raster(out("h.tif"));
  ASSERT_EQ(h.cols, 5);
  // Cell (row 2, col 1): x 2-4, y 4-6: heights 1 and 3. Cell (row 3, col 2): x 4-6, y 2-4: 2 and 6.
  EXPECT_EQ(h.values[0][2 * 5 + 1], 1.0);
  EXPECT_EQ(h.values[1][2 * 5 + 1], 3.0);
  EXPECT_EQ(h.values[2][2 * 5 + 1], 4.0);
  EXPECT_EQ(h.values[0][3 * 5 + 2], 2.0);
  EXPECT_EQ(h.values[1][3 * 5 + 2], 6.0);
  if (gpu_available()) {
    auto const g = run(args + " -o " + out("g.tif").string() + " --device gpu");
    ASSERT_EQ(g.code, 0) << g.output;
    EXPECT_EQ(file_bytes(out("g.tif")), file_bytes(out("h.tif")));
  }
}

TEST_F(Cli, GroundAutoIsTheDtmOfTheGroundPointsFirst)
{
  // --ground auto = --classes 2 --metrics min --fill tin into a DTM, then --ground DTM: the same
  // bytes, on the CPU and the GPU, and nothing left beside the output.
  auto const synth = run("synth lidar --points 20000 --seed 5 -o " + out("l.las").string());
  ASSERT_EQ(synth.code, 0) << synth.output;
  std::string const in = out("l.las").string() + " --res 2 ";
  auto const dtm = run("grid " + in + "--classes 2 --metrics min --fill tin -o " + out("dtm.tif").string());
  ASSERT_EQ(dtm.code, 0) << dtm.output;
  auto const two_steps = run("grid " + in + "--ground " + out("dtm.tif").string() + " --metrics max,p95,cover -o " +
                             out("chm2.tif").string() + " --device cpu");
  ASSERT_EQ(two_steps.code, 0) << two_steps.output;
  fs::create_directories(out("auto"));
  auto const one = run("grid " + in + "--ground auto --metrics max,p95,cover -o " + out("auto/chm.tif").string() +
                       " --device cpu");
  ASSERT_EQ(one.code, 0) << one.output;
  EXPECT_NE(one.output.find("--ground auto: a DTM of"), std::string::npos) << one.output;
  EXPECT_EQ(file_bytes(out("auto/chm.tif")), file_bytes(out("chm2.tif")));
  if (gpu_available()) {
    auto const g = run("grid " + in + "--ground auto --metrics max,p95,cover -o " + out("auto/g.tif").string() +
                       " --device gpu");
    ASSERT_EQ(g.code, 0) << g.output;
    EXPECT_EQ(file_bytes(out("auto/g.tif")), file_bytes(out("chm2.tif")));
  }
  std::size_t files = 0;
  for (auto const& e : fs::directory_iterator(out("auto"))) {
    ++files;
    EXPECT_EQ(e.path().filename().string().rfind(".", 0), std::string::npos) << "left behind: " << e.path();
  }
  EXPECT_EQ(files, gpu_available() ? 2U : 1U);
  // No ground points (text has no classes), and tiles: clear errors, no output.
  auto const none = run("grid " + data("sample.xyz").string() + " --res 1 --ground auto -o " + out("auto/n.tif").string());
  EXPECT_EQ(none.code, 3) << none.output;
  EXPECT_NE(none.output.find("sample.xyz: --ground auto grids the ground points (class 2), and this input (XYZ text) "
                             "has no classes"),
            std::string::npos)
    << none.output;
  // A LAZ file without ground points (data/lazrs_variable_chunks_pf1.laz: classes 0 and 1).
  auto const no_ground = run("grid " + data("lazrs_variable_chunks_pf1.laz").string() + " --res 1 --ground auto -o " +
                             out("auto/m.tif").string());
  EXPECT_EQ(no_ground.code, 3) << no_ground.output;
  EXPECT_NE(no_ground.output.find("--ground auto: no terrain model from the ground points (class 2)"), std::string::npos)
    << no_ground.output;
  EXPECT_FALSE(fs::exists(out("auto/m.tif")));
  auto const tiles = run("grid " + in + "--ground auto --tile-size 50 -o " + out("auto/tiles").string());
  EXPECT_EQ(tiles.code, 2) << tiles.output;
  EXPECT_NE(tiles.output.find("--ground auto makes one DTM for one output raster"), std::string::npos) << tiles.output;
  EXPECT_FALSE(fs::exists(out("auto/n.tif")));
  EXPECT_FALSE(fs::exists(out("auto/tiles")));
}

TEST_F(Cli, GroundErrorsNameTheRasterAndTheCrs)
{
  write_dtm(out("utm.tif"), 32633);
  auto const missing = run("grid " + data("sample.xyz").string() + " --res 1 -o " + out("a.tif").string() +
                           " --ground " + out("nowhere.tif").string());
  EXPECT_EQ(missing.code, 3) << missing.output;
  EXPECT_NE(missing.output.find(out("nowhere.tif").string() + ": --ground: cannot open it as a raster"),
            std::string::npos)
    << missing.output;
  auto const dimension = run("grid " + data("layered_dims_pdrf8.las").string() + " --res 1 -o " +
                             out("b.tif").string() + " --ground " + out("utm.tif").string() + " --dimension Intensity");
  EXPECT_EQ(dimension.code, 2) << dimension.output;
  EXPECT_NE(dimension.output.find("--ground subtracts the terrain from Z"), std::string::npos) << dimension.output;
  auto const real = real_data_dir();
  auto const wgs84 = real.empty() ? fs::path() : real / "pdal" / "las_epsg_4326.las";
  if (!wgs84.empty() && fs::exists(wgs84)) {
    auto const crs = run("grid " + wgs84.string() + " --res 0.001 -o " + out("c.tif").string() + " --ground " +
                         out("utm.tif").string());
    EXPECT_EQ(crs.code, 3) << crs.output;
    EXPECT_NE(crs.output.find("EPSG:4326"), std::string::npos) << crs.output;
    EXPECT_NE(crs.output.find("is not the --ground raster's (" + out("utm.tif").string()), std::string::npos)
      << crs.output;
    EXPECT_NE(crs.output.find("EPSG:32633"), std::string::npos) << crs.output;
  }
  for (auto const* f : {"a.tif", "b.tif", "c.tif"}) { EXPECT_FALSE(fs::exists(out(f))) << f; }
}

}  // namespace
}  // namespace heightgrid::test
