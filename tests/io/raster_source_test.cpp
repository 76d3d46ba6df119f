#include "heightgrid/io/raster_source.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "io/io_test_helpers.hpp"
#include "test_paths.hpp"

#include <gdal_priv.h>
#include <ogr_spatialref.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace heightgrid::io {
namespace {

using test::read_all;
using test::xyz;
using geotransform = std::array<double, 6>;

double const nan = std::numeric_limits<double>::quiet_NaN();

/// A GeoTIFF with `bands` bands of `values` (row-major, band b offset by 100 * b).
std::string make_raster(std::filesystem::path const& path, GDALDataType type, int cols, int rows,
                        std::optional<geotransform> gt, std::vector<double> const& values,
                        std::optional<double> nodata = std::nullopt, int bands = 1,
                        char const* const* options = nullptr)
{
  GDALAllRegister();
  auto* driver = GetGDALDriverManager()->GetDriverByName("GTiff");
  gdal_dataset_ptr ds(driver->Create(path.c_str(), cols, rows, bands, type, const_cast<char**>(options)));
  EXPECT_NE(ds, nullptr);
  if (gt) { EXPECT_EQ(ds->SetGeoTransform(gt->data()), CE_None); }
  OGRSpatialReference srs;
  srs.importFromEPSG(32633);
  EXPECT_EQ(ds->SetSpatialRef(&srs), CE_None);
  for (int b = 1; b <= bands; ++b) {
    std::vector<double> v = values;
    for (auto& x : v) {
      if (!(nodata && x == *nodata)) { x += 100.0 * (b - 1); }
    }
    auto* band = ds->GetRasterBand(b);
    if (nodata) { EXPECT_EQ(band->SetNoDataValue(*nodata), CE_None); }
    EXPECT_EQ(band->RasterIO(GF_Write, 0, 0, cols, rows, v.data(), cols, rows, GDT_Float64, 0, 0, nullptr), CE_None);
  }
  return path.string();
}

/// Pixel centre through the full geotransform, written exactly as the reader documents it.
xyz centre(geotransform const& gt, int col, int row, double z)
{
  double const c = col + 0.5;
  double const r = row + 0.5;
  return {gt[0] + c * gt[1] + r * gt[2], gt[3] + c * gt[4] + r * gt[5], z};
}

class RasterSource : public ::testing::Test {
 protected:
  std::filesystem::path dir = test::scratch_dir("raster_source");
};

TEST_F(RasterSource, NorthUpWithNodataAndNan)
{
  geotransform const gt{500000, 2, 0, 5000000, 0, -2};
  auto const path = make_raster(dir / "dem.tif", GDT_Float32, 3, 2, gt, {1.5, -9999, 3, nan, 5.25, -6}, -9999.0);
  auto source = open_raster_source(path, 1);
  EXPECT_EQ(source->info().format, "GTiff raster");
  EXPECT_EQ(source->info().path, path);
  EXPECT_FALSE(source->info().point_count.has_value());
  EXPECT_TRUE(same_crs(source->info().crs_wkt, crs_from_user_input("EPSG:32633")));
  EXPECT_EQ(source->info().vertical_units, "");
  std::vector<xyz> const expected = {centre(gt, 0, 0, 1.5), centre(gt, 2, 0, 3), centre(gt, 1, 1, 5.25),
                                     centre(gt, 2, 1, -6)};
  EXPECT_EQ(read_all(*source), expected);
  EXPECT_EQ(expected[0], (xyz{500001, 4999999, 1.5}));
}

TEST_F(RasterSource, RotatedGeotransform)
{
  geotransform const gt{1000, 2, 0.5, 2000, 0.25, -2};
  auto const path = make_raster(dir / "rotated.tif", GDT_Int16, 2, 2, gt, {1, 2, 3, 4});
  auto source = open_raster_source(path, 1);
  std::vector<xyz> const expected = {centre(gt, 0, 0, 1), centre(gt, 1, 0, 2), centre(gt, 0, 1, 3),
                                     centre(gt, 1, 1, 4)};
  EXPECT_EQ(read_all(*source, 1), expected);
  EXPECT_EQ(expected[3], (xyz{1000 + 1.5 * 2 + 1.5 * 0.5, 2000 + 1.5 * 0.25 - 1.5 * 2, 4}));
}

TEST_F(RasterSource, BandSelection)
{
  geotransform const gt{0, 1, 0, 10, 0, -1};
  auto const path = make_raster(dir / "two.tif", GDT_Float64, 2, 1, gt, {7, 8}, std::nullopt, 2);
  auto second = open_raster_source(path, 2);
  EXPECT_EQ(read_all(*second), (std::vector<xyz>{{0.5, 9.5, 107}, {1.5, 9.5, 108}}));
  for (int bad : {0, 3, -1}) {
    try {
      (void)open_raster_source(path, bad);
      FAIL() << "no error for band " << bad;
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      std::string const message = e.what();
      EXPECT_NE(message.find("two.tif"), std::string::npos) << message;
      EXPECT_NE(message.find("no band " + std::to_string(bad)), std::string::npos) << message;
      EXPECT_NE(message.find("has 2 bands"), std::string::npos) << message;
    }
  }
}

TEST_F(RasterSource, ManyWindowsAndTiles)
{
  // 1.2M pixels in 256x256 tiles: several read windows, chunks that end mid-window.
  int const cols = 1500;
  int const rows = 800;
  geotransform const gt{10, 0.5, 0, 20, 0, -0.5};
  std::vector<double> values(static_cast<std::size_t>(cols) * rows);
  std::vector<xyz> expected;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      bool const empty = (r + c) % 97 == 0;
      double const v = empty ? -32768 : static_cast<double>((r * 7 + c) % 30000 - 100);
      values[static_cast<std::size_t>(r) * cols + c] = v;
      if (!empty) { expected.push_back(centre(gt, c, r, v)); }
    }
  }
  char const* const tiled[] = {"TILED=YES", nullptr};
  auto const path = make_raster(dir / "big.tif", GDT_Int16, cols, rows, gt, values, -32768.0, 1, tiled);
  auto source = open_raster_source(path, 1);
  EXPECT_EQ(read_all(*source, 300007), expected);
}

TEST_F(RasterSource, MaskBandAndUnits)
{
  geotransform const gt{0, 1, 0, 2, 0, -1};
  auto const path = make_raster(dir / "masked.tif", GDT_Float32, 2, 2, gt, {1, 2, 3, 4});
  {
    gdal_dataset_ptr ds(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_UPDATE));
    ASSERT_NE(ds, nullptr);
    ASSERT_EQ(ds->CreateMaskBand(GMF_PER_DATASET), CE_None);
    std::array<std::uint8_t, 4> mask{255, 0, 0, 255};
    ASSERT_EQ(ds->GetRasterBand(1)->GetMaskBand()->RasterIO(GF_Write, 0, 0, 2, 2, mask.data(), 2, 2, GDT_Byte, 0,
                                                            0, nullptr),
              CE_None);
    ASSERT_EQ(ds->GetRasterBand(1)->SetUnitType("m"), CE_None);
  }
  auto source = open_raster_source(path, 1);
  EXPECT_EQ(source->info().vertical_units, "m");
  EXPECT_EQ(read_all(*source), (std::vector<xyz>{{0.5, 1.5, 1}, {1.5, 0.5, 4}}));
}

TEST_F(RasterSource, NoGeotransformIsAnError)
{
  auto const path = make_raster(dir / "plain.tif", GDT_Byte, 2, 2, std::nullopt, {1, 2, 3, 4});
  EXPECT_THROW((void)open_raster_source(path, 1), error);
}

TEST_F(RasterSource, MissingOrNonRasterFile)
{
  for (auto const& path : {dir / "absent.tif", test::write_text(dir / "notes.txt", "not a raster")}) {
    try {
      (void)open_raster_source(path.string(), 1);
      FAIL() << "no error for " << path;
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      EXPECT_EQ(std::string(e.what()).rfind(path.string() + ": cannot open as a raster: ", 0), 0U) << e.what();
    }
  }
}

/// Valid pixels of a real DEM counted directly from its values, without GDAL's mask band.
std::uint64_t count_valid_pixels(std::string const& path)
{
  gdal_dataset_ptr ds(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  auto* band = ds->GetRasterBand(1);
  int has_nodata = 0;
  double const nodata = band->GetNoDataValue(&has_nodata);
  bool const is_float32 = band->GetRasterDataType() == GDT_Float32;
  int const cols = band->GetXSize();
  int const rows = band->GetYSize();
  std::vector<double> v(static_cast<std::size_t>(cols) * rows);
  EXPECT_EQ(band->RasterIO(GF_Read, 0, 0, cols, rows, v.data(), cols, rows, GDT_Float64, 0, 0, nullptr), CE_None);
  std::uint64_t n = 0;
  for (double x : v) {
    // A Float32 band's nodata is compared as a float: -3.4e+38 has no exact double twin.
    bool const is_nodata =
      has_nodata != 0 && (is_float32 ? static_cast<float>(x) == static_cast<float>(nodata) : x == nodata);
    n += (!std::isnan(x) && !is_nodata) ? 1 : 0;
  }
  return n;
}

TEST(RasterSourceRealData, PublicDems)
{
  auto const real = test::real_data_dir();
  if (real.empty()) { GTEST_SKIP() << "HEIGHTGRID_REAL_DATA_DIR is not set or absent: no real rasters to read"; }
  struct expectation {
    char const* file;
    char const* format;
    std::uint64_t pixels;
  };
  for (auto const& e : {expectation{"pysheds/dem.tif", "GTiff raster", 367ULL * 359ULL},
                        expectation{"terra/elev_vinschgau.tif", "GTiff raster", 252ULL * 194ULL}}) {
    auto const path = (real / e.file).string();
    auto source = open_raster_source(path, 1);
    EXPECT_EQ(source->info().format, e.format);
    EXPECT_FALSE(source->info().crs_wkt.empty()) << path;
    auto const points = read_all(*source);
    auto const valid = count_valid_pixels(path);
    EXPECT_EQ(points.size(), valid) << path;
    EXPECT_LE(valid, e.pixels) << path;
    EXPECT_GT(valid, 0U) << path;
    for (auto const& p : points) { ASSERT_FALSE(std::isnan(p[2])) << path; }
  }
  auto dem = open_raster_source((real / "pysheds/dem.tif").string(), 1);
  EXPECT_TRUE(same_crs(dem->info().crs_wkt, crs_from_user_input("EPSG:4326")));
  auto vinschgau = open_raster_source((real / "terra/elev_vinschgau.tif").string(), 1);
  EXPECT_TRUE(same_crs(vinschgau->info().crs_wkt, crs_from_user_input("EPSG:32632")));
  auto const vinschgau_points = read_all(*vinschgau);
  EXPECT_LT(vinschgau_points.size(), 252U * 194U) << "its Float32 nodata (-3.4e+38) pixels are skipped";
  for (auto const& p : vinschgau_points) {
    ASSERT_GE(p[2], 388.0);
    ASSERT_LE(p[2], 3863.0);
  }
}

}  // namespace
}  // namespace heightgrid::io
