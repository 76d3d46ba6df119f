#include "heightgrid/io/geotiff_writer.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/temp_registry.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "io/io_test_helpers.hpp"
#include "test_paths.hpp"

#include <gdal_priv.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
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

std::string slurp(fs::path const& path)
{
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

gdal_dataset_ptr open_output(fs::path const& path)
{
  gdal_dataset_ptr ds(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  EXPECT_NE(ds, nullptr) << path;
  return ds;
}

/// Every band of `ds` as doubles, band after band.
std::vector<double> read_all(GDALDataset& ds)
{
  int const cols = ds.GetRasterXSize();
  int const rows = ds.GetRasterYSize();
  std::size_t const cells = static_cast<std::size_t>(cols) * rows;
  std::vector<double> v(cells * ds.GetRasterCount());
  for (int b = 1; b <= ds.GetRasterCount(); ++b) {
    EXPECT_EQ(ds.GetRasterBand(b)->RasterIO(GF_Read, 0, 0, cols, rows, v.data() + (b - 1) * cells, cols, rows,
                                            GDT_Float64, 0, 0, nullptr),
              CE_None);
  }
  return v;
}

/// Bitwise equality, so that NaN nodata compares equal to itself.
bool same_bits(std::vector<double> const& a, std::vector<double> const& b)
{
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

/// Rows [row0, row0 + rows) of every column of `all` (a grid `cols` wide).
cell_results rows_of(cell_results const& all, std::size_t cols, std::size_t row0, std::size_t rows)
{
  auto slice = [&](auto const& column) {
    using column_t = std::decay_t<decltype(column)>;
    if (column.empty()) { return column_t{}; }
    auto const first = column.begin() + static_cast<std::ptrdiff_t>(row0 * cols);
    return column_t(first, first + static_cast<std::ptrdiff_t>(rows * cols));
  };
  cell_results out;
  out.range = slice(all.range);
  out.min = slice(all.min);
  out.count = slice(all.count);
  return out;
}

/// 300 x 600 cells (tiles of 256: block rows of 256, 256 and 88), a third of them empty.
struct test_grid {
  grid_spec grid{500000.0, 5000600.0, 1.0, 1.0, 300, 600};
  cell_results results;
  std::uint32_t max_count{0};
  explicit test_grid(float nodata = nan)
  {
    auto const n = grid.num_cells();
    results.count.resize(n);
    results.min.resize(n);
    results.range.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto const c = static_cast<std::uint32_t>((i * 7919) % 3 == 0 ? 0 : 1 + (i * 31) % 97);
      results.count[i] = c;
      results.min[i] = c == 0 ? nodata : 100.0f + std::sin(static_cast<float>(i) * 0.001f) * 20.0f;
      results.range[i] = c == 0 ? nodata : static_cast<float>(c % 11) * 0.25f;
      max_count = std::max(max_count, c);
    }
  }
};

class RasterWriter : public ::testing::Test {
 protected:
  fs::path dir = test::scratch_dir("raster_writer");
  fs::path out = dir / "out.tif";
  std::vector<metric> const bands{metric::range, metric::count, metric::min};

  raster_write_options options(char const* format = "GTiff") const
  {
    raster_write_options o;
    o.format = format;
    o.crs_wkt = crs_from_user_input("EPSG:32633");
    o.overwrite = true;
    return o;
  }

  /// Writes `g` in windows of `window_rows` rows, in order or from the last window to the first.
  write_report write_in_windows(test_grid const& g, std::size_t window_rows, raster_write_options const& o,
                                bool reversed = false)
  {
    raster_writer writer(out.string(), g.grid, bands, o, g.max_count);
    std::vector<std::size_t> starts;
    for (std::size_t r = 0; r < g.grid.rows; r += window_rows) { starts.push_back(r); }
    if (reversed) { std::reverse(starts.begin(), starts.end()); }
    for (auto const r : starts) {
      writer.write_rows(r, rows_of(g.results, g.grid.cols, r, std::min<std::size_t>(window_rows, g.grid.rows - r)));
    }
    return writer.commit();
  }

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

TEST_F(RasterWriter, SameFileWhateverTheWindows)
{
  test_grid const g;
  for (char const* format : {"GTiff", "COG"}) {
    write_grid(out.string(), g.grid, g.results, bands, options(format));
    std::string const whole = slurp(out);
    auto const values = read_all(*open_output(out));
    std::size_t block_rows = 0;
    {
      raster_writer probe((dir / "probe.tif").string(), g.grid, bands, options(format), g.max_count);
      block_rows = probe.block_rows();
    }
    EXPECT_EQ(block_rows, std::string(format) == "COG" ? 512U : 256U);
    for (std::size_t const window : {std::size_t{1}, std::size_t{7}, block_rows, std::size_t{g.grid.rows}}) {
      auto const report = write_in_windows(g, window, options(format));
      EXPECT_EQ(report.data_type, raster_data_type::float32);
      EXPECT_TRUE(slurp(out) == whole) << format << ": windows of " << window << " rows";
      EXPECT_TRUE(same_bits(read_all(*open_output(out)), values)) << format << ": windows of " << window;
    }
    EXPECT_EQ(test::list_dir(dir), std::vector<std::string>{"out.tif"});
  }
}

TEST_F(RasterWriter, WindowsOutOfOrder)
{
  test_grid const g;
  write_grid(out.string(), g.grid, g.results, bands, options());
  auto const values = read_all(*open_output(out));
  for (std::size_t const window : {7, 100, 256}) {
    write_in_windows(g, window, options(), true);
    auto ds = open_output(out);
    EXPECT_TRUE(same_bits(read_all(*ds), values)) << "windows of " << window << " rows, last first";
    EXPECT_STREQ(ds->GetRasterBand(2)->GetDescription(), "count");
    EXPECT_STREQ(ds->GetRasterBand(3)->GetMetadataItem("METRIC_DESCRIPTION"), "minimum z");
    EXPECT_TRUE(std::isnan(ds->GetRasterBand(1)->GetNoDataValue()));
    std::array<double, 6> gt{};
    ASSERT_EQ(ds->GetGeoTransform(gt.data()), CE_None);
    EXPECT_EQ(gt, (std::array<double, 6>{500000.0, 1.0, 0.0, 5000600.0, 0.0, -1.0}));
    EXPECT_NE(ds->GetSpatialRef(), nullptr);
  }
  // Windows of uneven sizes that straddle block rows, in no order: (first row, rows).
  raster_writer writer(out.string(), g.grid, bands, options(), g.max_count);
  std::pair<std::size_t, std::size_t> const windows[] = {{300, 255}, {0, 123}, {555, 35}, {123, 133}, {256, 44}, {590, 10}};
  for (auto const& [row0, rows] : windows) { writer.write_rows(row0, rows_of(g.results, g.grid.cols, row0, rows)); }
  writer.commit();
  EXPECT_TRUE(same_bits(read_all(*open_output(out)), values));
}

TEST_F(RasterWriter, CountAloneIsUInt32)
{
  test_grid const g;
  raster_writer writer(out.string(), g.grid, {metric::count}, options(), g.max_count);
  EXPECT_EQ(writer.data_type(), raster_data_type::uint32);
  for (std::size_t r = 0; r < g.grid.rows; r += 100) { writer.write_rows(r, rows_of(g.results, g.grid.cols, r, 100)); }
  EXPECT_EQ(writer.commit().data_type, raster_data_type::uint32);
  auto ds = open_output(out);
  auto* band = ds->GetRasterBand(1);
  EXPECT_EQ(band->GetRasterDataType(), GDT_UInt32);
  EXPECT_EQ(band->GetNoDataValue(), 0.0);
  column<std::uint32_t> count(g.grid.num_cells());
  ASSERT_EQ(band->RasterIO(GF_Read, 0, 0, 300, 600, count.data(), 300, 600, GDT_UInt32, 0, 0, nullptr), CE_None);
  EXPECT_EQ(count, g.results.count);
}

TEST_F(RasterWriter, MaxCountAbove2To24SwitchesToFloat64)
{
  test_grid g;
  g.results.count[12345] = (1U << 24) + 1;
  {
    // A writer told the wrong max_count refuses the count it cannot hold, and leaves nothing.
    raster_writer wrong(out.string(), g.grid, bands, options(), 1U << 24);
    EXPECT_EQ(wrong.data_type(), raster_data_type::float32);
    auto const message = error_of([&] { wrong.write_rows(0, g.results); }, error_kind::internal);
    EXPECT_NE(message.find("16777217"), std::string::npos) << message;
    EXPECT_TRUE(test::list_dir(dir).empty());
  }
  raster_writer writer(out.string(), g.grid, bands, options(), (1U << 24) + 1);
  EXPECT_EQ(writer.data_type(), raster_data_type::float64);
  writer.write_rows(0, rows_of(g.results, 300, 0, 256));
  writer.write_rows(256, rows_of(g.results, 300, 256, 344));
  auto const report = writer.commit();
  EXPECT_EQ(report.data_type, raster_data_type::float64);
  ASSERT_EQ(report.notes.size(), 1U);
  EXPECT_NE(report.notes[0].find("Float64"), std::string::npos);
  auto ds = open_output(out);
  EXPECT_EQ(ds->GetRasterBand(1)->GetRasterDataType(), GDT_Float64);
  auto const values = read_all(*ds);
  EXPECT_EQ(values[g.grid.num_cells() + 12345], 16777217.0);
  EXPECT_TRUE(std::isnan(values[g.grid.num_cells()]));
}

TEST_F(RasterWriter, NumThreadsDefaultAndOverride)
{
  test_grid const g;
  auto has = [](std::vector<std::string> const& list, std::string const& option) {
    return std::count(list.begin(), list.end(), option) == 1;
  };
  std::string all_cpus_file;
  for (char const* format : {"GTiff", "COG"}) {
    {
      raster_writer writer(out.string(), g.grid, bands, options(format), g.max_count);
      EXPECT_TRUE(has(writer.creation_options(), "NUM_THREADS=ALL_CPUS")) << format;
    }
    write_grid(out.string(), g.grid, g.results, bands, options(format));
    std::string const threaded = slurp(out);
    auto o = options(format);
    o.creation_options = {"num_threads=1"};
    raster_writer writer(out.string(), g.grid, bands, o, g.max_count);
    auto const co = writer.creation_options();
    EXPECT_TRUE(has(co, "NUM_THREADS=1")) << format;
    EXPECT_FALSE(has(co, "NUM_THREADS=ALL_CPUS")) << format;
    writer.write_rows(0, g.results);
    writer.commit();
    // Blocks are compressed independently and written in order: the threads change nothing.
    EXPECT_TRUE(slurp(out) == threaded) << format;
  }
}

TEST_F(RasterWriter, CloudOptimizedFromWindows)
{
  test_grid const g;
  auto o = options("COG");
  o.creation_options = {"BLOCKSIZE=128"};
  raster_writer writer(out.string(), g.grid, bands, o, g.max_count);
  EXPECT_EQ(writer.block_rows(), 128U);
  for (std::size_t r = 0; r < g.grid.rows; r += 50) { writer.write_rows(r, rows_of(g.results, g.grid.cols, r, 50)); }
  auto const names = test::list_dir(dir);
  ASSERT_EQ(names.size(), 1U) << "the GTiff the COG is made from";
  EXPECT_EQ(names[0], ".out.tif.tmp-" + std::to_string(::getpid()) + ".src");
  writer.commit();
  EXPECT_EQ(test::list_dir(dir), std::vector<std::string>{"out.tif"});
  auto ds = open_output(out);
  EXPECT_STREQ(ds->GetMetadataItem("LAYOUT", "IMAGE_STRUCTURE"), "COG");
  EXPECT_STREQ(ds->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE"), "DEFLATE");
  EXPECT_GT(ds->GetRasterBand(1)->GetOverviewCount(), 0);
  int block_cols = 0;
  int block_rows = 0;
  ds->GetRasterBand(1)->GetBlockSize(&block_cols, &block_rows);
  EXPECT_EQ(block_rows, 128);
  EXPECT_STREQ(ds->GetRasterBand(3)->GetDescription(), "min");
  write_grid((dir / "ref.tif").string(), g.grid, g.results, bands, options());
  EXPECT_TRUE(same_bits(read_all(*ds), read_all(*open_output(dir / "ref.tif"))));
}

TEST_F(RasterWriter, DestructionWithoutCommitLeavesNothing)
{
  test_grid const g;
  for (char const* format : {"GTiff", "COG"}) {
    {
      raster_writer writer(out.string(), g.grid, bands, options(format), g.max_count);
      writer.write_rows(0, rows_of(g.results, g.grid.cols, 0, 300));
      auto const names = test::list_dir(dir);
      ASSERT_EQ(names.size(), 1U);
      EXPECT_EQ(names[0].rfind(".out.tif.tmp-" + std::to_string(::getpid()), 0), 0U) << names[0];
    }
    EXPECT_TRUE(test::list_dir(dir).empty()) << format;
  }
  // The temporary is registered: a signal handler's cleanup removes it while the writer lives.
  raster_writer writer(out.string(), g.grid, bands, options(), g.max_count);
  EXPECT_EQ(test::list_dir(dir).size(), 1U);
  remove_registered_temporaries();
  EXPECT_TRUE(test::list_dir(dir).empty());
}

TEST_F(RasterWriter, MisuseIsAnInternalErrorAndLeavesNothing)
{
  test_grid const g;
  {
    raster_writer writer(out.string(), g.grid, bands, options(), g.max_count);
    writer.write_rows(0, rows_of(g.results, g.grid.cols, 0, 10));
    auto const message = error_of([&] { writer.commit(); }, error_kind::internal);
    EXPECT_NE(message.find("from row 10"), std::string::npos) << message;
    EXPECT_TRUE(test::list_dir(dir).empty());
    EXPECT_THROW(writer.commit(), error) << "a failed writer stays failed";
  }
  {
    raster_writer writer(out.string(), g.grid, bands, options(), g.max_count);
    writer.write_rows(0, rows_of(g.results, g.grid.cols, 0, 10));
    auto const message =
      error_of([&] { writer.write_rows(5, rows_of(g.results, g.grid.cols, 5, 10)); }, error_kind::internal);
    EXPECT_NE(message.find("row 5 written twice"), std::string::npos) << message;
    EXPECT_TRUE(test::list_dir(dir).empty());
  }
  {
    raster_writer writer(out.string(), g.grid, bands, options(), g.max_count);
    error_of([&] { writer.write_rows(595, rows_of(g.results, g.grid.cols, 590, 10)); }, error_kind::internal);
  }
  {
    raster_writer writer(out.string(), g.grid, bands, options(), g.max_count);
    auto partial = rows_of(g.results, g.grid.cols, 0, 10);
    partial.min.pop_back();
    error_of([&] { writer.write_rows(0, partial); }, error_kind::internal);
  }
  EXPECT_TRUE(test::list_dir(dir).empty());
}

TEST_F(RasterWriter, UnwritableDirectory)
{
  test_grid const g;
  if (::geteuid() != 0) {
    fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
    auto const message = error_of(
      [&] { raster_writer(out.string(), g.grid, bands, options(), g.max_count); }, error_kind::output);
    fs::permissions(dir, fs::perms::owner_all);
    EXPECT_NE(message.find("is not writable"), std::string::npos) << message;
  }
  // Root may write anywhere the permissions say no; /proc takes no new files from anyone.
  std::string const path = "/proc/heightgrid-raster-writer-test.tif";
  auto const message =
    error_of([&] { raster_writer(path, g.grid, bands, options(), g.max_count); }, error_kind::output);
  EXPECT_EQ(message.rfind(path + ": ", 0), 0U) << message;
  EXPECT_TRUE(test::list_dir(dir).empty());
}

}  // namespace
}  // namespace heightgrid::io
