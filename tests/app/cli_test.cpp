// End-to-end tests of `heightgrid grid` on the sample inputs (XYZ, CSV, GeoPackage, DEM): run it,
// then read what it wrote with GDAL; the options that change the grid or what is written; the
// limits and info subcommands. LAS/LAZ inputs are in las_cli_test.cpp, errors and failed writes in
// cli_errors_test.cpp; the Cli fixture is in cli_fixture.hpp.

#include "cli_fixture.hpp"

#include "heightgrid/io/las_writer.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <gdal_priv.h>
#include <ogr_spatialref.h>
#include <ogrsf_frmts.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

TEST_F(Cli, HelpAndVersion)
{
  auto const r = run("grid --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("Examples"), std::string::npos);
  auto const v = run("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.output, "heightgrid 0.1.0\n");
  auto const none = run("");
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("heightgrid: error: "), std::string::npos) << none.output;
}

TEST_F(Cli, SampleXyzMatchesTheHandCheckedTable)
{
  auto const tif = out("sample.tif");
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + tif.string() +
                     " --res 1 --metrics range,min,max,count --a_srs EPSG:32633 --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const ras = read_raster(tif);
  expect_sample_bands(ras);
  OGRSpatialReference got, want;
  got.importFromWkt(ras.wkt.c_str());
  want.importFromEPSG(32633);
  EXPECT_TRUE(got.IsSame(&want)) << ras.wkt;
  EXPECT_TRUE(std::isnan(ras.nodata[0]));
  EXPECT_EQ(ras.types[0], GDT_Float32);
  EXPECT_NE(r.output.find("14 points read"), std::string::npos) << r.output;
  // the temporary file is gone
  for (auto const& e : fs::directory_iterator(dir_)) { EXPECT_EQ(e.path().filename(), "sample.tif"); }
}

TEST_F(Cli, TwoVerboseFlagsLayTheJobOnATimeLine)
{
  // -vv: the moments of the job's stages, in seconds since the program's start, in order; -v: none.
  auto const tif = out("timeline.tif");
  auto const args = "grid " + data("sample.xyz").string() + " -o " + tif.string() + " --res 1 --device cpu";
  auto const r = run(args + " -vv");
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<std::string> moments;
  std::vector<double> at;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    std::string const prefix = "heightgrid: trace: at ";
    if (line.rfind(prefix, 0) != 0) { continue; }
    std::size_t const s = line.find(" s: ", prefix.size());
    ASSERT_NE(s, std::string::npos) << line;
    at.push_back(std::stod(line.substr(prefix.size(), s - prefix.size())));
    moments.push_back(line.substr(s + 4));
  }
  std::vector<std::string> const want = {"opening the inputs",
                                         "inputs opened",
                                         "a pass begins",
                                         "the pass's readers are done",
                                         "finalizing and writing a band",
                                         "writing a window of rows",
                                         "the band is written",
                                         "closing the output (the last blocks compressed, the file renamed into place)",
                                         "the output is closed",
                                         "the job ended (output written)",
                                         "exit"};
  EXPECT_EQ(moments, want) << r.output;
  for (std::size_t i = 1; i < at.size(); ++i) { EXPECT_LE(at[i - 1], at[i]) << moments[i]; }
  auto const quieter = run(args + " -v --overwrite");
  ASSERT_EQ(quieter.code, 0) << quieter.output;
  EXPECT_EQ(quieter.output.find("trace:"), std::string::npos) << quieter.output;
  EXPECT_NE(quieter.output.find("debug:"), std::string::npos) << quieter.output;
}

TEST_F(Cli, CommaSeparatedCopyGivesTheSameRaster)
{
  std::ifstream in(data("sample.xyz"));
  std::ofstream csv(out("sample.csv"));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '#') { continue; }
    for (auto& c : line) { c = c == ' ' ? ',' : c; }
    csv << line << "\r\n";
  }
  csv.close();
  auto const r = run("grid " + out("sample.csv").string() + " -o " + out("csv.tif").string() +
                     " --res 1 --metrics range,min,max,count --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  expect_sample_bands(read_raster(out("csv.tif")));
}

TEST_F(Cli, GeoPackagePointsRoundTrip)
{
  GDALAllRegister();
  auto const gpkg = out("sample.gpkg");
  {
    auto* driver = GetGDALDriverManager()->GetDriverByName("GPKG");
    ASSERT_NE(driver, nullptr);
    GDALDatasetUniquePtr ds(driver->Create(gpkg.c_str(), 0, 0, 0, GDT_Unknown, nullptr));
    ASSERT_TRUE(ds);
    OGRSpatialReference srs;
    srs.importFromEPSG(32633);
    auto* layer = ds->CreateLayer("pts", &srs, wkbPoint25D, nullptr);
    ASSERT_NE(layer, nullptr);
    std::ifstream in(data("sample.xyz"));
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      double x, y, z;
      if (!(fields >> x >> y >> z)) { continue; }
      OGRFeature feature(layer->GetLayerDefn());
      OGRPoint p(x, y, z);
      feature.SetGeometry(&p);
      ASSERT_EQ(layer->CreateFeature(&feature), OGRERR_NONE);
    }
  }
  auto const r = run("grid " + gpkg.string() + " -o " + out("gpkg.tif").string() +
                     " --res 1 --metrics range,min,max,count --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const ras = read_raster(out("gpkg.tif"));
  expect_sample_bands(ras);
  OGRSpatialReference got, want;
  got.importFromWkt(ras.wkt.c_str());
  want.importFromEPSG(32633);
  EXPECT_TRUE(got.IsSame(&want));  // CRS carried from the input
}

TEST_F(Cli, DemPixelsBecomePoints)
{
  auto const r = run("grid " + data("dem_small.tif").string() + " -o " + out("dem.tif").string() +
                     " --res 20 --metrics range,count --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const ras = read_raster(out("dem.tif"));
  ASSERT_EQ(ras.cols, 4);
  ASSERT_EQ(ras.rows, 3);
  EXPECT_EQ(ras.gt[0], 500000.0);
  EXPECT_EQ(ras.gt[3], 4100060.0);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(ras.values[0][i], i == 11 ? 2.5 : 2.0) << "cell " << i;
    EXPECT_EQ(ras.values[1][i], i == 5 ? 3.0 : 4.0) << "cell " << i;
  }
  EXPECT_NE(r.output.find("47 points read"), std::string::npos) << r.output;
}

TEST_F(Cli, ExplicitExtentDropsAndCountsOutsidePoints)
{
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + out("te.tif").string() +
                     " --res 1 --te 500000 4100001 500002 4100002 --metrics count --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const ras = read_raster(out("te.tif"));
  ASSERT_EQ(ras.cols, 2);
  ASSERT_EQ(ras.rows, 1);
  EXPECT_EQ(ras.types[0], GDT_UInt32);
  EXPECT_EQ(ras.values[0], (std::vector<double>{4, 1}));
  // (500001.0, 4100001.0) is on the bottom edge of the extent: outside (cells are half-open)
  EXPECT_NE(r.output.find("9 points fell outside"), std::string::npos) << r.output;
}

TEST_F(Cli, CogAndCreationOptions)
{
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + out("cog.tif").string() +
                     " --res 1 --of COG --co COMPRESS=LZW --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  GDALDatasetUniquePtr ds(GDALDataset::Open(out("cog.tif").c_str(), GDAL_OF_RASTER));
  ASSERT_TRUE(ds);
  char const* layout = ds->GetMetadataItem("LAYOUT", "IMAGE_STRUCTURE");
  ASSERT_NE(layout, nullptr);
  EXPECT_STREQ(layout, "COG");
  EXPECT_STREQ(ds->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE"), "LZW");
}

TEST_F(Cli, SameResultWhateverTheThreadCount)
{
  // 200k random points; compare 1 and 3 threads byte for byte across every metric
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> xy(0.0, 200.0), z(0.0, 50.0);
  {
    std::ofstream f(out("rand.xyz"));
    f.precision(17);
    for (int i = 0; i < 200000; ++i) { f << 636000.0 + xy(rng) << ' ' << 4849000.0 + xy(rng) << ' ' << z(rng) << '\n'; }
  }
  std::string const common = " --res 2 --metrics range,min,max,count,mean,stddev --device cpu --threads ";
  ASSERT_EQ(run("grid " + out("rand.xyz").string() + " -o " + out("t1.tif").string() + common + "1").code, 0);
  ASSERT_EQ(run("grid " + out("rand.xyz").string() + " -o " + out("t3.tif").string() + common + "3").code, 0);
  auto const a = read_raster(out("t1.tif"));
  auto const b = read_raster(out("t3.tif"));
  ASSERT_EQ(a.bands, 6);
  for (int band = 0; band < 6; ++band) {
    ASSERT_EQ(0, std::memcmp(a.values[band].data(), b.values[band].data(), a.values[band].size() * sizeof(double)))
      << "band " << band;
  }
}

// ---- options that change the grid or what is written (issue 24: each was untested)

TEST_F(Cli, NonSquareCellsOnTheCpu)
{
  auto const tif = out("tr.tif");
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + tif.string() +
                     " --tr 2 1 --metrics max,count --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const g = read_raster(tif);
  ASSERT_EQ(g.cols, 2);
  ASSERT_EQ(g.rows, 2);
  EXPECT_EQ(g.gt[1], 2.0);
  EXPECT_EQ(g.gt[5], -1.0);
  EXPECT_EQ(g.gt[0], 500000.0);
  EXPECT_EQ(g.gt[3], 4100002.0);
  // Hand-counted from data/sample.xyz: row 0 holds y in (4100001, 4100002], x split at 500002.
  std::vector<double> const max{20.0, NAN, 9.5, 101.0};
  std::vector<double> const count{5.0, NAN, 6.0, 3.0};
  for (std::size_t i = 0; i < 4; ++i) {
    if (std::isnan(max[i])) {
      EXPECT_TRUE(std::isnan(g.values[0][i])) << i;
      EXPECT_TRUE(std::isnan(g.values[1][i])) << i;
    } else {
      EXPECT_EQ(g.values[0][i], max[i]) << i;
      EXPECT_EQ(g.values[1][i], count[i]) << i;
    }
  }
}

TEST_F(Cli, ExtentWithANonIntegerSpanIsSizedAsGdalDoes)
{
  // 2.5 columns round to 3 (GDAL: round(span / res)), 1.4 rows to 1; the origin is --te's corner.
  auto const tif = out("te.tif");
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + tif.string() +
                     " --res 1 --te 500000 4100000 500002.5 4100001.4 --metrics count --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const g = read_raster(tif);
  EXPECT_EQ(g.cols, 3);
  EXPECT_EQ(g.rows, 1);
  EXPECT_EQ(g.gt[0], 500000.0);
  EXPECT_EQ(g.gt[3], 4100001.4);
}

TEST_F(Cli, NodataValueFillsEmptyCellsAndIsDeclared)
{
  auto const tif = out("nd.tif");
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + tif.string() +
                     " --res 1 --metrics range --nodata -9999 --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const g = read_raster(tif);
  ASSERT_EQ(g.values.size(), 1u);
  EXPECT_EQ(g.values[0][2], -9999.0);  // the one empty cell of the sample (data/README.md)
  EXPECT_EQ(g.values[0][0], 2.5);
  EXPECT_EQ(g.nodata[0], -9999.0);
}

TEST_F(Cli, CrsOfLasAndDemReachTheGeoTiffAndASrsOverridesIt)
{
  OGRSpatialReference utm33;
  utm33.importFromEPSG(32633);
  OGRSpatialReference utm32;
  utm32.importFromEPSG(32632);
  auto const same = [](std::string const& wkt, OGRSpatialReference const& want) {
    OGRSpatialReference got;
    return !wkt.empty() && got.importFromWkt(wkt.c_str()) == OGRERR_NONE && got.IsSame(&want);
  };
  // LAS with a WKT CRS record.
  std::vector<heightgrid::io::las_point> pts(3);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    pts[i].x = 500000.5 + static_cast<double>(i);
    pts[i].y = 4100000.5;
    pts[i].z = static_cast<double>(i);
  }
  heightgrid::io::las_write_options w;
  char* wkt = nullptr;
  utm33.exportToWkt(&wkt);
  w.crs_wkt = wkt;
  CPLFree(wkt);
  heightgrid::io::write_las(out("crs.las").string(), pts, w);
  ASSERT_EQ(run("grid " + out("crs.las").string() + " -o " + out("las.tif").string() + " --res 1 --device cpu").code, 0);
  EXPECT_TRUE(same(read_raster(out("las.tif")).wkt, utm33)) << read_raster(out("las.tif")).wkt;
  // The DEM sample's CRS (EPSG:32633).
  ASSERT_EQ(run("grid " + data("dem_small.tif").string() + " -o " + out("dem.tif").string() + " --res 20 --device cpu").code, 0);
  EXPECT_TRUE(same(read_raster(out("dem.tif")).wkt, utm33)) << read_raster(out("dem.tif")).wkt;
  // --a_srs wins over the input's.
  ASSERT_EQ(run("grid " + out("crs.las").string() + " -o " + out("a.tif").string() + " --res 1 --a_srs EPSG:32632 --device cpu").code, 0);
  EXPECT_TRUE(same(read_raster(out("a.tif")).wkt, utm32)) << read_raster(out("a.tif")).wkt;
}

// ---- the other subcommands

TEST_F(Cli, LimitsMeasuresReadsAndSaysWhetherThereIsAGpu)
{
  auto const r = run("limits " + data("sample.xyz").string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("page-cache read of 1 file(s)"), std::string::npos) << r.output;
  if (heightgrid::gpu_available()) {
    EXPECT_NE(r.output.find("host->device"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("device read bandwidth"), std::string::npos) << r.output;
  } else {
    EXPECT_NE(r.output.find("GPU: none"), std::string::npos) << r.output;
  }
  auto const bad = run("limits --copy-size 0");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--copy-size"), std::string::npos) << bad.output;
  auto const missing = run("limits /nonexistent-heightgrid/none.las");
  EXPECT_EQ(missing.code, 3) << missing.output;
  EXPECT_NE(missing.output.find("/nonexistent-heightgrid/none.las"), std::string::npos) << missing.output;
}

TEST_F(Cli, InfoDescribesTheSample)
{
  auto const r = run("info " + data("sample.xyz").string() + " --res 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("14 read"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("x 500000.100000 .. 500002.500000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("z range: 5.250000 .. 101.000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3 x 2 = 6 cells, 5 non-empty"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("suggested --res"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace heightgrid::test
