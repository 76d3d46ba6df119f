#include "heightgrid/io/geotiff_writer.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "io/io_test_helpers.hpp"
#include "test_paths.hpp"

#include <gdal_priv.h>
#include <ogr_spatialref.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace heightgrid::io {
namespace {

namespace fs = std::filesystem;

float const nan = std::numeric_limits<float>::quiet_NaN();

/// Bitwise equality, so that NaN nodata compares equal to itself.
template <typename A, typename B>
bool same_bits(A const& a, B const& b)
{
  using T = typename A::value_type;
  static_assert(std::is_same_v<T, typename B::value_type>);
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <typename T>
std::vector<T> read_band(GDALDataset& ds, int band, GDALDataType type)
{
  int const cols = ds.GetRasterXSize();
  int const rows = ds.GetRasterYSize();
  std::vector<T> v(static_cast<std::size_t>(cols) * rows);
  EXPECT_EQ(ds.GetRasterBand(band)->RasterIO(GF_Read, 0, 0, cols, rows, v.data(), cols, rows, type, 0, 0, nullptr),
            CE_None);
  return v;
}

gdal_dataset_ptr open_output(fs::path const& path)
{
  gdal_dataset_ptr ds(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  EXPECT_NE(ds, nullptr) << path;
  return ds;
}

std::string dataset_wkt(GDALDataset& ds)
{
  auto const* srs = ds.GetSpatialRef();
  if (srs == nullptr) { return {}; }
  char* wkt = nullptr;
  EXPECT_EQ(srs->exportToWkt(&wkt), OGRERR_NONE);
  std::string out = wkt != nullptr ? wkt : "";
  CPLFree(wkt);
  return out;
}

std::string slurp(fs::path const& path)
{
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// 3 x 2 cells: cells 1 and 4 are empty.
struct small_grid {
  grid_spec grid{500000.0, 5000010.0, 2.0, 2.5, 3, 2};
  cell_results results;
  small_grid(float nodata = nan)
  {
    results.count = {3, 0, 1, 2, 0, 7};
    results.min = {1.5f, nodata, -2.0f, 10.0f, nodata, 0.25f};
    results.range = {0.75f, nodata, 0.0f, 3.5f, nodata, 100.125f};
  }
};

class GeotiffWriter : public ::testing::Test {
 protected:
  fs::path dir = test::scratch_dir("geotiff_writer");
  fs::path out = dir / "out.tif";
  std::string crs = crs_from_user_input("EPSG:32633");

  raster_write_options options() const
  {
    raster_write_options o;
    o.crs_wkt = crs;
    return o;
  }

  /// The message of the error `f` throws, checking its kind.
  template <typename F>
  static std::string error_of(F&& f, error_kind kind)
  {
    try {
      f();
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
  }
};

TEST_F(GeotiffWriter, Float32BandsReadBackExactly)
{
  small_grid g;
  auto const report = write_grid(out.string(), g.grid, g.results, {metric::range, metric::count, metric::min}, options());
  EXPECT_EQ(report.data_type, raster_data_type::float32);
  EXPECT_TRUE(report.notes.empty());
  EXPECT_EQ(test::list_dir(dir), std::vector<std::string>{"out.tif"});

  auto ds = open_output(out);
  ASSERT_EQ(ds->GetRasterCount(), 3);
  EXPECT_EQ(ds->GetRasterXSize(), 3);
  EXPECT_EQ(ds->GetRasterYSize(), 2);
  std::array<double, 6> gt{};
  ASSERT_EQ(ds->GetGeoTransform(gt.data()), CE_None);
  EXPECT_EQ(gt, (std::array<double, 6>{500000.0, 2.0, 0.0, 5000010.0, 0.0, -2.5}));
  EXPECT_TRUE(same_crs(dataset_wkt(*ds), crs));
  char const* const names[] = {"range", "count", "min"};
  char const* const descriptions[] = {"height range (max z - min z)", "number of points", "minimum z"};
  for (int b = 1; b <= 3; ++b) {
    auto* band = ds->GetRasterBand(b);
    EXPECT_EQ(band->GetRasterDataType(), GDT_Float32);
    EXPECT_STREQ(band->GetDescription(), names[b - 1]);
    EXPECT_STREQ(band->GetMetadataItem("METRIC_DESCRIPTION"), descriptions[b - 1]);
    int has_nodata = 0;
    EXPECT_TRUE(std::isnan(band->GetNoDataValue(&has_nodata)));
    EXPECT_TRUE(has_nodata);
  }
  EXPECT_TRUE(same_bits(read_band<float>(*ds, 1, GDT_Float32), g.results.range));
  EXPECT_TRUE(same_bits(read_band<float>(*ds, 2, GDT_Float32), std::vector<float>{3, nan, 1, 2, nan, 7}));
  EXPECT_TRUE(same_bits(read_band<float>(*ds, 3, GDT_Float32), g.results.min));
  EXPECT_STREQ(ds->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE"), "DEFLATE");
  EXPECT_EQ(ds->GetMetadataItem("PREDICTOR", "IMAGE_STRUCTURE"), nullptr) << "no predictor by default";
}

TEST_F(GeotiffWriter, CountAloneIsUInt32WithNodataZero)
{
  small_grid g;
  auto o = options();
  o.crs_wkt.clear();
  auto const report = write_grid(out.string(), g.grid, g.results, {metric::count}, o);
  EXPECT_EQ(report.data_type, raster_data_type::uint32);
  EXPECT_EQ(raster_data_type_name(report.data_type), "UInt32");
  auto ds = open_output(out);
  auto* band = ds->GetRasterBand(1);
  EXPECT_EQ(band->GetRasterDataType(), GDT_UInt32);
  int has_nodata = 0;
  EXPECT_EQ(band->GetNoDataValue(&has_nodata), 0.0);
  EXPECT_TRUE(has_nodata);
  EXPECT_TRUE(same_bits(read_band<std::uint32_t>(*ds, 1, GDT_UInt32), g.results.count));
  EXPECT_EQ(ds->GetSpatialRef(), nullptr);
  EXPECT_EQ(ds->GetMetadataItem("PREDICTOR", "IMAGE_STRUCTURE"), nullptr);
}

TEST_F(GeotiffWriter, LargeCountsSwitchToFloat64)
{
  small_grid g;
  g.results.count[5] = (1U << 24) + 1;
  auto const report = write_grid(out.string(), g.grid, g.results, {metric::min, metric::count}, options());
  EXPECT_EQ(report.data_type, raster_data_type::float64);
  ASSERT_EQ(report.notes.size(), 1U);
  EXPECT_NE(report.notes[0].find("Float64"), std::string::npos);
  auto ds = open_output(out);
  EXPECT_EQ(ds->GetRasterBand(2)->GetRasterDataType(), GDT_Float64);
  std::vector<double> min_d(g.results.min.begin(), g.results.min.end());
  EXPECT_TRUE(same_bits(read_band<double>(*ds, 1, GDT_Float64), min_d));
  auto const count = read_band<double>(*ds, 2, GDT_Float64);
  EXPECT_EQ(count[5], 16777217.0);
  EXPECT_TRUE(std::isnan(count[1]));
}

TEST_F(GeotiffWriter, CustomNodata)
{
  small_grid g(-9999.0f);
  auto o = options();
  o.nodata = -9999.0f;
  write_grid(out.string(), g.grid, g.results, {metric::count, metric::range}, o);
  auto ds = open_output(out);
  for (int b = 1; b <= 2; ++b) { EXPECT_EQ(ds->GetRasterBand(b)->GetNoDataValue(), -9999.0); }
  EXPECT_EQ(read_band<float>(*ds, 1, GDT_Float32), (std::vector<float>{3, -9999, 1, 2, -9999, 7}));
  EXPECT_TRUE(same_bits(read_band<float>(*ds, 2, GDT_Float32), g.results.range));
}

TEST_F(GeotiffWriter, ManyWindowsBothFormats)
{
  // Wider than one write window of 256-row tiles, and several windows for the COG's MEM source.
  grid_spec const grid{0.0, 300.0, 1.0, 1.0, 5000, 300};
  cell_results r;
  r.count.resize(grid.num_cells());
  r.max.resize(grid.num_cells());
  for (std::size_t i = 0; i < grid.num_cells(); ++i) {
    r.count[i] = static_cast<std::uint32_t>(i % 13);
    r.max[i] = r.count[i] == 0 ? nan : static_cast<float>(i) * 0.5f;
  }
  for (char const* format : {"GTiff", "COG"}) {
    auto o = options();
    o.format = format;
    o.overwrite = true;
    write_grid(out.string(), grid, r, {metric::max, metric::count}, o);
    auto ds = open_output(out);
    EXPECT_TRUE(same_bits(read_band<float>(*ds, 1, GDT_Float32), r.max)) << format;
    auto const count = read_band<float>(*ds, 2, GDT_Float32);
    for (std::size_t i = 0; i < count.size(); ++i) {
      ASSERT_TRUE(r.count[i] == 0 ? std::isnan(count[i]) : count[i] == static_cast<float>(r.count[i])) << i;
    }
  }
}

TEST_F(GeotiffWriter, CloudOptimized)
{
  small_grid g;
  auto o = options();
  o.format = "cog";
  write_grid(out.string(), g.grid, g.results, {metric::range, metric::min}, o);
  EXPECT_EQ(test::list_dir(dir), std::vector<std::string>{"out.tif"});
  auto ds = open_output(out);
  EXPECT_STREQ(ds->GetMetadataItem("LAYOUT", "IMAGE_STRUCTURE"), "COG");
  EXPECT_STREQ(ds->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE"), "DEFLATE");
  EXPECT_STREQ(ds->GetRasterBand(2)->GetDescription(), "min");
  EXPECT_STREQ(ds->GetRasterBand(1)->GetMetadataItem("METRIC_DESCRIPTION"), "height range (max z - min z)");
  EXPECT_TRUE(std::isnan(ds->GetRasterBand(1)->GetNoDataValue()));
  EXPECT_TRUE(same_crs(dataset_wkt(*ds), crs));
  EXPECT_TRUE(same_bits(read_band<float>(*ds, 1, GDT_Float32), g.results.range));
  EXPECT_TRUE(same_bits(read_band<float>(*ds, 2, GDT_Float32), g.results.min));
}

TEST_F(GeotiffWriter, CreationOptionsOverrideDefaults)
{
  small_grid g;
  auto o = options();
  o.creation_options = {"compress=LZW"};
  write_grid(out.string(), g.grid, g.results, {metric::range}, o);
  {
    auto ds = open_output(out);
    EXPECT_STREQ(ds->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE"), "LZW");
    EXPECT_EQ(ds->GetMetadataItem("PREDICTOR", "IMAGE_STRUCTURE"), nullptr);
  }
  o.overwrite = true;
  o.creation_options = {"PREDICTOR=3", "zlevel=9"};
  write_grid(out.string(), g.grid, g.results, {metric::range}, o);
  {
    auto ds = open_output(out);
    EXPECT_STREQ(ds->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE"), "DEFLATE");
    EXPECT_STREQ(ds->GetMetadataItem("PREDICTOR", "IMAGE_STRUCTURE"), "3");
    EXPECT_TRUE(same_bits(read_band<float>(*ds, 1, GDT_Float32), g.results.range));
  }
  o.creation_options = {"COMPRESS=NONE", "TILED=NO"};
  write_grid(out.string(), g.grid, g.results, {metric::range}, o);
  auto ds = open_output(out);
  EXPECT_EQ(ds->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE"), nullptr);
  EXPECT_EQ(ds->GetMetadataItem("PREDICTOR", "IMAGE_STRUCTURE"), nullptr);
  int block_cols = 0;
  int block_rows = 0;
  ds->GetRasterBand(1)->GetBlockSize(&block_cols, &block_rows);
  EXPECT_EQ(block_cols, 3) << "striped, not tiled";
}

TEST_F(GeotiffWriter, ExistingOutputNeedsOverwrite)
{
  small_grid g;
  test::write_text(out, "precious");
  auto const message = error_of([&] { write_grid(out.string(), g.grid, g.results, {metric::range}, options()); },
                                error_kind::output);
  EXPECT_EQ(message, out.string() + ": output exists; use --overwrite to replace it");
  EXPECT_EQ(slurp(out), "precious");
  test::write_text(dir / "out.tif.aux.xml", "<PAMDataset>stale</PAMDataset>");
  auto o = options();
  o.overwrite = true;
  write_grid(out.string(), g.grid, g.results, {metric::range}, o);
  EXPECT_EQ(open_output(out)->GetRasterCount(), 1);
  EXPECT_EQ(test::list_dir(dir), std::vector<std::string>{"out.tif"}) << "the stale side-car went with the old file";
}

TEST_F(GeotiffWriter, OutputThatIsAnInputIsRefused)
{
  small_grid g;
  test::write_text(dir / "in.tif", "input");
  fs::create_directory(dir / "sub");
  auto o = options();
  o.overwrite = true;
  o.inputs = input_files({(dir / "sub" / ".." / "in.tif").string()});
  auto const message = error_of(
    [&] { write_grid((dir / "in.tif").string(), g.grid, g.results, {metric::range}, o); }, error_kind::output);
  EXPECT_NE(message.find("output is the input"), std::string::npos) << message;
  EXPECT_EQ(slurp(dir / "in.tif"), "input");
  // Not yet existing paths are compared after resolving them.
  o.inputs = input_files({(dir / "sub" / ".." / "new.tif").string()});
  EXPECT_THROW(check_output_path((dir / "new.tif").string(), o), error);
}

TEST_F(GeotiffWriter, MissingDirectory)
{
  small_grid g;
  auto const message = error_of(
    [&] { write_grid((dir / "nowhere" / "out.tif").string(), g.grid, g.results, {metric::range}, options()); },
    error_kind::output);
  EXPECT_NE(message.find("does not exist"), std::string::npos) << message;
  EXPECT_TRUE(test::list_dir(dir).empty());
}

TEST_F(GeotiffWriter, ACreationOptionGdalRefusesIsAUsageErrorAndLeavesNothingBehind)
{
  // Tried in /vsimem before any file exists (issue 24: this was an output error naming the hidden
  // temporary).
  small_grid g;
  auto o = options();
  o.creation_options = {"BLOCKXSIZE=7"};  // TIFF tiles must be multiples of 16
  auto const message =
    error_of([&] { write_grid(out.string(), g.grid, g.results, {metric::range}, o); }, error_kind::usage);
  EXPECT_NE(message.find("--co: 'BLOCKXSIZE=7' is not a valid GTiff creation option"), std::string::npos) << message;
  EXPECT_NE(message.find("TileWidth"), std::string::npos) << "GDAL's own message is quoted: " << message;
  EXPECT_EQ(message.find(".tmp-"), std::string::npos) << message;
  EXPECT_TRUE(test::list_dir(dir).empty());
  o.creation_options = {"COMPRESS=FOO"};
  EXPECT_NE(error_of([&] { check_output_path(out.string(), o); }, error_kind::usage).find("--co: 'COMPRESS=FOO'"),
            std::string::npos);
}

TEST_F(GeotiffWriter, BadOptionsAreUsageErrors)
{
  small_grid g;
  auto o = options();
  o.format = "PNG";
  EXPECT_EQ(error_of([&] { check_output_path(out.string(), o); }, error_kind::usage),
            "--of: unsupported output format 'PNG' (expected GTiff or COG)");
  o = options();
  o.creation_options = {"COMPRESS"};
  EXPECT_EQ(error_of([&] { check_output_path(out.string(), o); }, error_kind::usage),
            "--co: expected KEY=VALUE, got 'COMPRESS'");
  EXPECT_EQ(error_of([&] { write_grid(out.string(), g.grid, g.results, {}, options()); }, error_kind::usage),
            out.string() + ": no metrics to write");
  EXPECT_TRUE(test::list_dir(dir).empty());
}

}  // namespace
}  // namespace heightgrid::io
