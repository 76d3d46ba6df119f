// End-to-end tests of the heightgrid executable: run it, then read what it wrote with GDAL.

#include "cli_run.hpp"
#include "test_paths.hpp"

#include "heightgrid/io/las_reader.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/io/las_writer.hpp"

#include <gdal_priv.h>
#include <ogr_spatialref.h>
#include <ogrsf_frmts.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

using run_result = heightgrid::test::cli_result;

run_result run(std::string const& args) { return heightgrid::test::run_cli(args); }

struct raster {
  int cols{0}, rows{0}, bands{0};
  std::array<double, 6> gt{};
  std::string wkt;
  std::vector<std::vector<double>> values;  // per band, row-major
  std::vector<std::string> descriptions;
  std::vector<double> nodata;
  std::vector<GDALDataType> types;
};

raster read_raster(fs::path const& path)
{
  GDALAllRegister();
  raster r;
  GDALDatasetUniquePtr ds(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  if (!ds) { return r; }
  r.cols = ds->GetRasterXSize();
  r.rows = ds->GetRasterYSize();
  r.bands = ds->GetRasterCount();
  ds->GetGeoTransform(r.gt.data());
  if (auto const* srs = ds->GetSpatialRef()) {
    char* w = nullptr;
    srs->exportToWkt(&w);
    r.wkt = w;
    CPLFree(w);
  }
  for (int b = 1; b <= r.bands; ++b) {
    auto* band = ds->GetRasterBand(b);
    std::vector<double> v(static_cast<std::size_t>(r.cols) * static_cast<std::size_t>(r.rows));
    if (band->RasterIO(GF_Read, 0, 0, r.cols, r.rows, v.data(), r.cols, r.rows, GDT_Float64, 0, 0) != CE_None) {
      ADD_FAILURE() << "RasterIO failed on " << path;
    }
    r.values.push_back(v);
    r.descriptions.emplace_back(band->GetDescription());
    int has = 0;
    r.nodata.push_back(band->GetNoDataValue(&has));
    r.types.push_back(band->GetRasterDataType());
  }
  return r;
}

fs::path data(std::string const& name) { return heightgrid::test::data_dir() / name; }

bool is_nan(double v) { return std::isnan(v); }

void expect_sample_bands(raster const& r)
{
  // data/README.md: 3 x 2 cells, origin (500000, 4100002); bands range,min,max,count
  ASSERT_EQ(r.cols, 3);
  ASSERT_EQ(r.rows, 2);
  ASSERT_EQ(r.bands, 4);
  EXPECT_EQ(r.gt[0], 500000.0);
  EXPECT_EQ(r.gt[3], 4100002.0);
  EXPECT_EQ(r.gt[1], 1.0);
  EXPECT_EQ(r.gt[5], -1.0);
  EXPECT_EQ(r.descriptions, (std::vector<std::string>{"range", "min", "max", "count"}));
  std::vector<double> const range{2.5, 0.0, NAN, 0.5, 2.5, 2.25};
  std::vector<double> const min{10.0, 20.0, NAN, 5.25, 7.0, 98.75};
  std::vector<double> const max{12.5, 20.0, NAN, 5.75, 9.5, 101.0};
  std::vector<double> const count{4, 1, NAN, 2, 4, 3};
  std::vector<std::vector<double>> const expected{range, min, max, count};
  for (int b = 0; b < 4; ++b) {
    for (std::size_t i = 0; i < 6; ++i) {
      if (is_nan(expected[b][i])) {
        EXPECT_TRUE(is_nan(r.values[b][i])) << "band " << b << " cell " << i;
      } else {
        EXPECT_EQ(r.values[b][i], expected[b][i]) << "band " << b << " cell " << i;
      }
    }
  }
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override
  {
    GDALAllRegister();
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = heightgrid::test::scratch_dir(std::string("cli-") + info->name());
  }
  fs::path out(std::string const& name) const { return dir_ / name; }
  fs::path dir_;
};

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

/// Writes every point of an uncompressed LAS file as "x y z" text with 17 significant digits (exact
/// doubles), decoded here from the bytes as the ASPRS tables lay them out (x, y, z: the first three
/// int32 of each record, times the header's scale plus its offset), not with heightgrid's reader:
/// the LAS-vs-XYZ tests then catch a decoding error of the reader.
void las_to_xyz(fs::path const& las, fs::path const& xyz)
{
  std::ifstream in(las, std::ios::binary);
  std::string const b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto const load = [&](std::size_t at, auto value) {
    std::memcpy(&value, b.data() + at, sizeof value);
    return value;
  };
  ASSERT_GE(b.size(), 227u);
  ASSERT_EQ(b.substr(0, 4), "LASF");
  ASSERT_EQ(static_cast<unsigned char>(b[104]) & 0x80, 0) << las << " is compressed";
  auto const start = load(96, std::uint32_t{});
  auto const record = load(105, std::uint16_t{});
  std::uint64_t count = load(107, std::uint32_t{});
  if (b[25] >= 4 && load(247, std::uint64_t{}) != 0) { count = load(247, std::uint64_t{}); }
  double scale[3], offset[3];
  for (std::size_t a = 0; a < 3; ++a) {
    scale[a] = load(131 + 8 * a, double{});
    offset[a] = load(155 + 8 * a, double{});
  }
  ASSERT_LE(start + count * record, b.size()) << las;
  std::ofstream out(xyz);
  out.precision(17);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::size_t const r = start + i * record;
    for (std::size_t a = 0; a < 3; ++a) {
      out << static_cast<double>(load(r + 4 * a, std::int32_t{})) * scale[a] + offset[a] << (a < 2 ? ' ' : '\n');
    }
  }
}

void expect_same_raster_from_las_and_xyz(fs::path const& las, fs::path const& dir, std::string const& res)
{
  las_to_xyz(las, dir / "points.xyz");
  // --keep-all: XYZ has no classes or flags, so the LAS side must not filter either
  std::string const common = " --res " + res + " --metrics range,min,max,count,mean,stddev --keep-all --device cpu -q --overwrite";
  auto const a = run("grid " + las.string() + " -o " + (dir / "las.tif").string() + common);
  ASSERT_EQ(a.code, 0) << a.output;
  auto const b = run("grid " + (dir / "points.xyz").string() + " -o " + (dir / "xyz.tif").string() + common);
  ASSERT_EQ(b.code, 0) << b.output;
  auto const r1 = read_raster(dir / "las.tif");
  auto const r2 = read_raster(dir / "xyz.tif");
  ASSERT_EQ(r1.bands, 6);
  ASSERT_EQ(r1.gt, r2.gt);
  for (int band = 0; band < 6; ++band) {
    ASSERT_EQ(0, std::memcmp(r1.values[band].data(), r2.values[band].data(), r1.values[band].size() * sizeof(double)))
      << las << " band " << band;
  }
}

TEST_F(Cli, LasGivesTheSameRasterAsTheSamePointsAsXyz)
{
  std::vector<heightgrid::io::las_point> pts;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> xy(0.0, 50.0), z(-5.0, 40.0);
  for (int i = 0; i < 50000; ++i) {
    heightgrid::io::las_point p;
    p.x = 636000.0 + xy(rng);
    p.y = 4849000.0 + xy(rng);
    p.z = z(rng);
    pts.push_back(p);
  }
  heightgrid::io::las_write_options w;
  w.scale = {0.001, 0.001, 0.001};
  w.offset = {636000.0, 4849000.0, 0.0};
  heightgrid::io::write_las(out("synthetic.las").string(), pts, w);
  expect_same_raster_from_las_and_xyz(out("synthetic.las"), dir_, "1");
}

TEST_F(Cli, RealLasFilesGiveTheSameRasterAsXyz)
{
  auto const real = heightgrid::test::real_data_dir();
  if (real.empty()) { GTEST_SKIP() << "../shared/data/real is not present (HEIGHTGRID_REAL_DATA_DIR)"; }
  for (auto const* name : {"pdal/las_autzen_trim.las", "laspy/vegetation_1_3.las", "lasR/Topography.las"}) {
    expect_same_raster_from_las_and_xyz(real / name, dir_, "2");
  }
}

// A LAZ file and its uncompressed twin grid to the same GeoTIFF, byte for byte (issue #8).
TEST_F(Cli, LazFilesGiveTheSameGeoTiffAsTheirLasTwin)
{
  auto const real = heightgrid::test::real_data_dir();
  if (real.empty()) { GTEST_SKIP() << "../shared/data/real is not present (HEIGHTGRID_REAL_DATA_DIR)"; }
  std::string const common = " --res 10 --metrics range,min,max,count --device cpu -q --co COMPRESS=NONE";
  for (auto const& [laz, las] : {std::pair{"pdal/laz_autzen_trim.laz", "pdal/las_autzen_trim.las"},
                                  std::pair{"lidR/Topography.laz", "lasR/Topography.las"}}) {
    if (!std::filesystem::exists(real / laz) || !std::filesystem::exists(real / las)) {
      GTEST_SKIP() << (real / laz).string() << " or its twin " << las << " is not in " << real.string();
    }
    ASSERT_EQ(run("grid " + (real / laz).string() + " -o " + out("laz.tif").string() + " --overwrite" + common).code, 0)
      << laz;
    ASSERT_EQ(run("grid " + (real / las).string() + " -o " + out("las.tif").string() + " --overwrite" + common).code, 0)
      << las;
    std::ifstream a(out("laz.tif"), std::ios::binary);
    std::ifstream b(out("las.tif"), std::ios::binary);
    std::string const bytes_a((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
    std::string const bytes_b((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
    EXPECT_FALSE(bytes_a.empty());
    EXPECT_TRUE(bytes_a == bytes_b) << laz << " and " << las << " gave different GeoTIFFs";
  }
  // info says it is LAZ and how it is chunked
  auto const info = run("info " + (real / "pdal/laz_autzen_trim.laz").string());
  EXPECT_EQ(info.code, 0);
  EXPECT_NE(info.output.find("compressor 2, fixed chunks of 50000 points, 3 chunks"), std::string::npos) << info.output;
}

TEST_F(Cli, TilesAsADirectoryOrAGlobGridLikeOneFile)
{
  // two LAS tiles side by side, and the same points as one XYZ file
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(0.0, 20.0), z(0.0, 30.0);
  fs::create_directories(out("tiles"));
  heightgrid::io::las_write_options w;
  w.scale = {0.001, 0.001, 0.001};
  for (int t = 0; t < 2; ++t) {
    std::vector<heightgrid::io::las_point> pts;
    for (int i = 0; i < 5000; ++i) {
      heightgrid::io::las_point p;
      p.x = 20.0 * t + std::floor(u(rng) * 1000.0) / 1000.0;
      p.y = std::floor(u(rng) * 1000.0) / 1000.0;
      p.z = std::floor(z(rng) * 1000.0) / 1000.0;
      pts.push_back(p);
    }
    heightgrid::io::write_las(out("tiles/tile" + std::to_string(t) + ".las").string(), pts, w);
  }
  las_to_xyz(out("tiles/tile0.las"), out("t0.xyz"));
  las_to_xyz(out("tiles/tile1.las"), out("t1.xyz"));
  std::string const common = " --res 2 --metrics range,min,max,count --device cpu -q";
  ASSERT_EQ(run("grid " + out("tiles").string() + " -o " + out("dir.tif").string() + common).code, 0);
  ASSERT_EQ(run("grid '" + out("tiles").string() + "/tile*.las' -o " + out("glob.tif").string() + common).code, 0);
  ASSERT_EQ(run("grid " + out("t0.xyz").string() + " " + out("t1.xyz").string() + " -o " + out("xyz.tif").string() + common).code, 0);
  auto const a = read_raster(out("dir.tif"));
  auto const b = read_raster(out("glob.tif"));
  auto const c = read_raster(out("xyz.tif"));
  ASSERT_EQ(a.cols, 20);
  ASSERT_EQ(a.bands, 4);
  for (int band = 0; band < 4; ++band) {  // bytewise: empty cells are NaN, and NaN != NaN
    auto const bytes = a.values[band].size() * sizeof(double);
    EXPECT_EQ(0, std::memcmp(a.values[band].data(), b.values[band].data(), bytes)) << "glob, band " << band;
    EXPECT_EQ(0, std::memcmp(a.values[band].data(), c.values[band].data(), bytes)) << "xyz, band " << band;
  }
  EXPECT_EQ(run("grid '" + out("tiles").string() + "/none*.las' -o " + out("n.tif").string() + common).code, 3);
}

TEST_F(Cli, LasFiltersAreAppliedAndCounted)
{
  // classes 2 (ground), 7 (noise), 5 (vegetation); one withheld ground point
  std::vector<heightgrid::io::las_point> pts;
  auto add = [&](double z, std::uint8_t cls, std::uint8_t flags, std::uint8_t rn, std::uint8_t nr) {
    heightgrid::io::las_point p;
    p.x = 0.5;
    p.y = 0.5;
    p.z = z;
    p.classification = cls;
    p.flags = flags;
    p.return_number = rn;
    p.number_of_returns = nr;
    pts.push_back(p);
  };
  add(10.0, 2, 0, 1, 1);
  add(11.0, 2, 0, 1, 1);
  add(99.0, 7, 0, 1, 1);                                    // noise: dropped by default
  add(50.0, 2, heightgrid::point_flag::withheld, 1, 1);     // withheld: dropped by default
  add(20.0, 5, 0, 1, 2);                                    // first of two returns
  add(12.0, 5, 0, 2, 2);                                    // last of two returns
  heightgrid::io::write_las(out("f.las").string(), pts, {});
  auto range_of = [&](std::string const& opts) {
    auto const r = run("grid " + out("f.las").string() + " -o " + out("f.tif").string() +
                       " --res 1 --overwrite --device cpu " + opts);
    EXPECT_EQ(r.code, 0) << r.output;
    return std::make_pair(read_raster(out("f.tif")).values[0][0], r.output);
  };
  auto [def, def_log] = range_of("");
  EXPECT_EQ(def, 10.0);  // 10, 11, 20, 12
  EXPECT_NE(def_log.find("2 filtered (1 by class, 1 withheld)"), std::string::npos) << def_log;
  EXPECT_EQ(range_of("--keep-all").first, 89.0);
  EXPECT_EQ(range_of("--classes 2").first, 1.0);
  EXPECT_EQ(range_of("--returns last").first, 2.0);   // 10, 11, 12
  EXPECT_EQ(range_of("--returns first").first, 10.0);  // 10, 11, 20
  EXPECT_EQ(range_of("--z-max 15").first, 2.0);
  EXPECT_EQ(range_of("--z-min 10.5").first, 9.0);        // 11, 20, 12
  EXPECT_EQ(range_of("--drop-classes 5").first, 89.0);   // replaces 7,18: 10, 11, 99 (withheld still out)
  EXPECT_EQ(range_of("--classes 5").first, 8.0);         // 20, 12
  EXPECT_EQ(range_of("--classes 2,5").first, 10.0);      // 10, 11, 20, 12
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

// ---- bad input: a clear message naming the file, a non-zero exit, and no output left behind

void expect_failure(run_result const& r, int code, std::string const& needle, fs::path const& output)
{
  EXPECT_EQ(r.code, code) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.output;
  EXPECT_NE(r.output.find("error"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(output)) << output;
  for (auto const& e : fs::directory_iterator(output.parent_path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "temporary left: " << e.path();
  }
}

TEST_F(Cli, MissingInput)
{
  auto const o = out("o.tif");
  expect_failure(run("grid " + out("nope.xyz").string() + " -o " + o.string() + " --res 1"), 3, "nope.xyz", o);
}

TEST_F(Cli, UnknownFormat)
{
  std::ofstream(out("junk.bin"), std::ios::binary) << std::string("\x01\x02\x03\x04garbage", 11);
  auto const o = out("o.tif");
  expect_failure(run("grid " + out("junk.bin").string() + " -o " + o.string() + " --res 1"), 3, "junk.bin", o);
}

TEST_F(Cli, EmptyInput)
{
  std::ofstream(out("empty.xyz")) << "x y z\n";
  auto const o = out("o.tif");
  expect_failure(run("grid " + out("empty.xyz").string() + " -o " + o.string() + " --res 1"), 3, "empty.xyz", o);
}

TEST_F(Cli, MalformedTextLine)
{
  std::ofstream(out("bad.xyz")) << "1 2 3\n4 five 6\n";
  auto const o = out("o.tif");
  expect_failure(run("grid " + out("bad.xyz").string() + " -o " + o.string() + " --res 1"), 3, "bad.xyz", o);
}

TEST_F(Cli, NonFiniteCoordinatesAreSkippedWithAWarning)
{
  std::ofstream(out("nan.xyz")) << "0.5 0.5 1\nnan 1 2\n1.5 0.5 inf\n0.7 0.2 3\n";
  auto const r = run("grid " + out("nan.xyz").string() + " -o " + out("o.tif").string() + " --res 1 --metrics range,count");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped 2 points with NaN or infinite"), std::string::npos) << r.output;
  auto const ras = read_raster(out("o.tif"));
  EXPECT_EQ(ras.values[0], (std::vector<double>{2.0}));
}

TEST_F(Cli, BadResolutions)
{
  auto const o = out("o.tif");
  for (std::string const res : {"0", "-1", "nan"}) {
    expect_failure(run("grid " + data("sample.xyz").string() + " -o " + o.string() + " --res " + res), 2,
                   "resolution", o);
  }
  expect_failure(run("grid " + data("sample.xyz").string() + " -o " + o.string()), 2, "--res", o);
  // absurd: 1e-9 m cells over metres of data -> refused up front with the numbers
  expect_failure(run("grid " + data("sample.xyz").string() + " -o " + o.string() + " --res 1e-9"), 5, "coarser", o);
}

TEST_F(Cli, GridLargerThanMemoryIsRefusedWithTheNumbers)
{
  auto const o = out("o.tif");
  // 60000 x 60000 cells: 3.6e9 cells fit in 32 bits; their accumulators (~100 GB) in 1 GiB would
  // take ~100 passes over the input, more than the pipeline accepts.
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + o.string() +
                     " --res 1 --te 0 0 60000 60000 --metrics range,min,max,count,mean,stddev --memory 1G");
  expect_failure(r, 5, "memory", o);
  EXPECT_NE(r.output.find("--res"), std::string::npos) << r.output;
}

TEST_F(Cli, UnwritableOutput)
{
  auto const o = fs::path("/nonexistent-dir-heightgrid/o.tif");
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + o.string() + " --res 1");
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("nonexistent-dir-heightgrid"), std::string::npos) << r.output;
}

TEST_F(Cli, OutputEqualToInputIsRefused)
{
  fs::copy_file(data("dem_small.tif"), out("dem.tif"));
  auto const before = fs::file_size(out("dem.tif"));
  auto const r = run("grid " + out("dem.tif").string() + " -o " + out("dem.tif").string() + " --res 20 --overwrite");
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("dem.tif"), std::string::npos) << r.output;
  EXPECT_EQ(fs::file_size(out("dem.tif")), before);
}

TEST_F(Cli, ExistingOutputNeedsOverwrite)
{
  std::ofstream(out("o.tif")) << "precious";
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + out("o.tif").string() + " --res 1");
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("--overwrite"), std::string::npos) << r.output;
  std::ifstream in(out("o.tif"));
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
  ASSERT_EQ(run("grid " + data("sample.xyz").string() + " -o " + out("o.tif").string() + " --res 1 --overwrite").code, 0);
  EXPECT_EQ(read_raster(out("o.tif")).cols, 3);
}

// ---- failures after the output has started: expect_failure above only meets errors raised before
// the temporary exists. Here the run may not write a file past a few KiB (RLIMIT_FSIZE, SIGXFSZ
// ignored: heightgrid::test::run_cli_file_limited), so GDAL's writes fail with EFBIG ("File too
// large") part-way through the cells, as on a full disk, with nothing added to the product.

/// Large enough for the whole GeoTIFF of the sample (under 2 KiB), far smaller than the cells
/// below: a failure under it comes from writing cells, not from creating the file.
constexpr std::uint64_t small_file_limit = 16 * 1024;

/// 200,000 points on a 2000 x 2000 grid: 16 MB of Float32 cells uncompressed.
std::vector<std::string> dense_grid(fs::path const& o)
{
  return {"grid", "--synth", "uniform", "--points", "200000", "--synth-extent", "0", "0", "2000", "2000",
          "--res", "1", "--device", "cpu", "-o", o.string()};
}

/// The same grid holding 2000 points in its 100 x 100 corner: nearly every cell is empty (NaN), so
/// the rows compress to a few KiB, while an uncompressed COG of it still takes 16 MB.
std::vector<std::string> sparse_grid(fs::path const& o)
{
  return {"grid", "--synth", "uniform", "--points", "2000", "--synth-extent", "0", "0", "100", "100",
          "--te", "0", "0", "2000", "2000", "--res", "1", "--device", "cpu", "-o", o.string()};
}

std::vector<std::string> with(std::vector<std::string> args, std::vector<std::string> const& more)
{
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::string file_bytes(fs::path const& p)
{
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A failed write: exit 4 (output not writable), the output named with the cause, no temporary
/// (".NAME.tmp-PID", the COG's ".NAME.tmp-PID.src", their ".aux.xml") left in the directory.
/// A failure while rows are written may also surface when the file is flushed: with GDAL's
/// compression threads (NUM_THREADS=ALL_CPUS) on a many-core host the row writes only queue.
void expect_write_failure(run_result const& r, fs::path const& output, std::string const& phase)
{
  EXPECT_EQ(r.code, 4) << r.output;
  bool const named = r.output.find("error: " + output.string() + ": " + phase) != std::string::npos ||
                     (phase == "cannot write cells at row " &&
                      r.output.find("error: " + output.string() + ": cannot write: ") != std::string::npos);
  EXPECT_TRUE(named) << "expected '" << output.string() << ": " << phase << "' in: " << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << "the cause is not named: " << r.output;
  for (auto const& e : fs::directory_iterator(output.parent_path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "temporary left: " << e.path();
  }
}

TEST_F(Cli, FileSizeLimitAdmitsASmallGeoTiff)
{
  // The control of the tests below: under the same limit a whole (small) GeoTIFF and COG are
  // written, so their failures are those of writing cells.
  for (std::string const format : {"GTiff", "COG"}) {
    auto const o = out("small-" + format + ".tif");
    auto const r = heightgrid::test::run_cli_file_limited(
      {"grid", data("sample.xyz").string(), "-o", o.string(), "--res", "1", "--metrics", "range,min,max,count",
       "--device", "cpu", "--of", format},
      small_file_limit);
    ASSERT_EQ(r.code, 0) << format << ": " << r.output;
    EXPECT_LT(fs::file_size(o), small_file_limit) << format;
    expect_sample_bands(read_raster(o));
  }
}

TEST_F(Cli, GeoTiffWriteFailingPartWayLeavesNothing)
{
  // Uncompressed: the cells go straight to the file. Compressed (the default): blocks are
  // compressed and written on GDAL's worker threads.
  for (auto const& codec : std::vector<std::vector<std::string>>{{"--co", "COMPRESS=NONE"}, {}}) {
    auto const o = out("dense.tif");
    auto const r = heightgrid::test::run_cli_file_limited(with(dense_grid(o), codec), small_file_limit);
    SCOPED_TRACE(codec.empty() ? "default compression" : codec.back());
    expect_write_failure(r, o, "cannot write cells at row ");
    EXPECT_FALSE(fs::exists(o));
  }
}

TEST_F(Cli, CogWriteFailingPartWayLeavesNothing)
{
  // A COG is written in two steps: the rows to a GTiff beside the target, then GDAL's
  // CreateCopy to the COG driver. Each step fails once.
  auto const o = out("cog.tif");
  // 1. The rows do not fit: the GTiff the COG is made from fails.
  auto const rows = heightgrid::test::run_cli_file_limited(with(dense_grid(o), {"--of", "COG"}), small_file_limit);
  expect_write_failure(rows, o, "cannot write cells at row ");
  EXPECT_FALSE(fs::exists(o));
  // 2. The rows fit in 1 MiB (the writer keeps them in a compressed GTiff; as the default GTiff
  //    they take a few KiB, checked first), the uncompressed COG (16 MB) does not: CreateCopy
  //    fails, after every row was written.
  constexpr std::uint64_t limit = 1024 * 1024;
  auto const gtiff = out("sparse-gtiff.tif");
  auto const rows_fit = heightgrid::test::run_cli_file_limited(sparse_grid(gtiff), limit);
  ASSERT_EQ(rows_fit.code, 0) << rows_fit.output;
  EXPECT_LT(fs::file_size(gtiff), limit / 8);
  auto const copy =
    heightgrid::test::run_cli_file_limited(with(sparse_grid(o), {"--of", "COG", "--co", "COMPRESS=NONE"}), limit);
  expect_write_failure(copy, o, "cannot write the COG: ");
  EXPECT_FALSE(fs::exists(o));
  // Without the limit the same run succeeds: the limit alone made it fail.
  auto const full = heightgrid::test::run_cli_file_limited(with(sparse_grid(o), {"--of", "COG", "--co", "COMPRESS=NONE"}),
                                                           std::uint64_t{1} << 40);
  ASSERT_EQ(full.code, 0) << full.output;
  EXPECT_GT(fs::file_size(o), limit);
}

TEST_F(Cli, ExistingOutputSurvivesAFailedOverwrite)
{
  auto const o = out("old.tif");
  ASSERT_EQ(run("grid " + data("sample.xyz").string() + " -o " + o.string() +
                " --res 1 --metrics range,min,max,count --device cpu")
              .code,
            0);
  std::ofstream(out("old.tif.aux.xml")) << "<PAMDataset/>\n";  // a side-car of the old file
  auto const before = file_bytes(o);
  auto const aux_before = file_bytes(out("old.tif.aux.xml"));
  ASSERT_FALSE(before.empty());
  struct attempt {
    std::string what;
    std::vector<std::string> args;
    std::uint64_t limit;
    std::string phase;
  };
  std::vector<attempt> const attempts{
    {"GTiff cells", with(dense_grid(o), {"--overwrite", "--co", "COMPRESS=NONE"}), small_file_limit,
     "cannot write cells at row "},
    {"COG rows", with(dense_grid(o), {"--overwrite", "--of", "COG"}), small_file_limit, "cannot write cells at row "},
    {"COG CreateCopy", with(sparse_grid(o), {"--overwrite", "--of", "COG", "--co", "COMPRESS=NONE"}), 1024 * 1024,
     "cannot write the COG: "},
  };
  for (auto const& a : attempts) {
    SCOPED_TRACE(a.what);
    expect_write_failure(heightgrid::test::run_cli_file_limited(a.args, a.limit), o, a.phase);
    EXPECT_TRUE(file_bytes(o) == before) << "the existing output was changed";
    EXPECT_TRUE(file_bytes(out("old.tif.aux.xml")) == aux_before) << "its side-car was changed";
  }
  expect_sample_bands(read_raster(o));
}

TEST_F(Cli, BadOptionValues)
{
  auto const o = out("o.tif");
  auto const base = "grid " + data("sample.xyz").string() + " -o " + o.string() + " --res 1 ";
  expect_failure(run(base + "--metrics range,bogus"), 2, "bogus", o);
  expect_failure(run(base + "--nodata abc"), 2, "abc", o);
  expect_failure(run(base + "--of PNG"), 2, "PNG", o);
  expect_failure(run(base + "--co NOEQUALS"), 2, "NOEQUALS", o);
  expect_failure(run(base + "--a_srs EPSG:999999999"), 2, "EPSG:999999999", o);
  expect_failure(run(base + "--device tpu"), 2, "tpu", o);
  expect_failure(run(base + "--returns middle"), 2, "middle", o);
}

TEST_F(Cli, TruncatedLas)
{
  std::vector<heightgrid::io::las_point> pts(1000);
  for (std::size_t i = 0; i < pts.size(); ++i) { pts[i].x = pts[i].y = pts[i].z = static_cast<double>(i); }
  heightgrid::io::write_las(out("full.las").string(), pts, {});
  fs::copy_file(out("full.las"), out("cut.las"));
  fs::resize_file(out("cut.las"), fs::file_size(out("full.las")) - 700);
  auto const o = out("o.tif");
  auto const r = run("grid " + out("cut.las").string() + " -o " + o.string() + " --res 1");
  expect_failure(r, 3, "cut.las", o);
  EXPECT_NE(r.output.find("byte"), std::string::npos) << r.output;
}

TEST_F(Cli, GpuRequestedWithoutAGpu)
{
  // On a machine with a usable GPU this is a real run; without one it must fail clearly.
  auto const o = out("o.tif");
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + o.string() +
                     " --res 1 --metrics range,min,max,count --device gpu");
  // Decided by whether a GPU is there, not by the result: a silent CPU fallback must fail.
  if (heightgrid::gpu_available()) {
    ASSERT_EQ(r.code, 0) << r.output;
    expect_sample_bands(read_raster(o));
  } else {
    expect_failure(r, 6, "--device gpu", o);
    auto const a = run("grid " + data("sample.xyz").string() + " -o " + o.string() +
                       " --res 1 --metrics range,min,max,count --device auto");
    EXPECT_EQ(a.code, 0) << a.output;
    expect_sample_bands(read_raster(o));
  }
}

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
