#include "heightgrid/io/geotiff_writer.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "gdal_internal.hpp"

#include <cpl_string.h>
#include <ogr_spatialref.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace heightgrid::io {
namespace {

namespace fs = std::filesystem;

/// Largest count that every Float32 holds exactly; above it the file switches to Float64.
constexpr std::uint32_t max_exact_float32_count = std::uint32_t{1} << 24;

/// Cells per write window (all bands at once): bounded memory whatever the grid width.
constexpr std::int64_t window_cells = std::int64_t{1} << 20;

enum class output_format { gtiff, cog };

bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept
{
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
         });
}

output_format parse_format(std::string const& format)
{
  if (equals_ignoring_case(format, "GTiff")) { return output_format::gtiff; }
  if (equals_ignoring_case(format, "COG")) { return output_format::cog; }
  throw error(error_kind::usage, "--of: unsupported output format '" + format + "' (expected GTiff or COG)");
}

void check_creation_options(std::vector<std::string> const& options)
{
  for (auto const& option : options) {
    auto const eq = option.find('=');
    expects(eq != std::string::npos && eq > 0, error_kind::usage, "--co: expected KEY=VALUE, got '" + option + "'");
  }
}

GDALDataType gdal_type(raster_data_type type) noexcept
{
  switch (type) {
    case raster_data_type::uint32: return GDT_UInt32;
    case raster_data_type::float32: return GDT_Float32;
    case raster_data_type::float64: return GDT_Float64;
  }
  return GDT_Float32;
}

/// Defaults first, then the user's --co (SetNameValue replaces a key regardless of case).
/// PREDICTOR is added last and only for codecs that use one, so that e.g. COMPRESS=NONE or
/// COMPRESS=JPEG from the user does not meet a predictor they never asked for.
CPLStringList creation_options(output_format format, raster_data_type type, std::vector<std::string> const& user)
{
  CPLStringList list;
  if (format == output_format::gtiff) { list.SetNameValue("TILED", "YES"); }
  list.SetNameValue("COMPRESS", "DEFLATE");
  list.SetNameValue("BIGTIFF", "IF_SAFER");
  // Overviews of a COG should hold real cell values: a cubic kernel would invent negative
  // ranges and fractional counts.
  if (format == output_format::cog) { list.SetNameValue("RESAMPLING", "NEAREST"); }
  for (auto const& option : user) {
    auto const eq = option.find('=');
    list.SetNameValue(option.substr(0, eq).c_str(), option.substr(eq + 1).c_str());
  }
  if (list.FetchNameValue("PREDICTOR") == nullptr) {
    std::string_view const codec = list.FetchNameValueDef("COMPRESS", "NONE");
    bool const uses_predictor = equals_ignoring_case(codec, "DEFLATE") || equals_ignoring_case(codec, "LZW") ||
                                equals_ignoring_case(codec, "ZSTD") || equals_ignoring_case(codec, "LZMA");
    if (uses_predictor) {
      char const* predictor =
        format == output_format::cog ? "YES" : (type == raster_data_type::uint32 ? "2" : "3");
      list.SetNameValue("PREDICTOR", predictor);
    }
  }
  return list;
}

bool same_file(fs::path const& a, fs::path const& b)
{
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    bool const same = fs::equivalent(a, b, ec);
    if (!ec) { return same; }
  }
  auto const ca = fs::weakly_canonical(a, ec);
  if (ec) { return false; }
  auto const cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

std::vector<float> const& float_column(cell_results const& results, metric m)
{
  switch (m) {
    case metric::range: return results.range;
    case metric::min: return results.min;
    case metric::max: return results.max;
    case metric::mean: return results.mean;
    case metric::stddev: return results.stddev;
    case metric::count: break;
  }
  throw error(error_kind::internal, "float_column: count is not a float column");
}

raster_data_type choose_data_type(cell_results const& results, std::vector<metric> const& bands) noexcept
{
  if (bands.size() == 1 && bands.front() == metric::count) { return raster_data_type::uint32; }
  bool const has_count = std::find(bands.begin(), bands.end(), metric::count) != bands.end();
  if (has_count && !results.count.empty() &&
      *std::max_element(results.count.begin(), results.count.end()) > max_exact_float32_count) {
    return raster_data_type::float64;
  }
  return raster_data_type::float32;
}

/// A rectangle of cells, written for all bands in one RasterIO call.
struct window {
  int col0;
  int row0;
  int cols;
  int rows;
};

/// Windows made of whole blocks, so that a pixel-interleaved GTiff gets every tile complete
/// (all bands) in one go and never has to re-read and re-compress one.
std::vector<window> write_windows(int cols, int rows, int block_cols, int block_rows)
{
  block_cols = std::clamp(block_cols, 1, cols);
  block_rows = std::clamp(block_rows, 1, rows);
  std::int64_t win_rows = block_rows;
  std::int64_t win_cols = cols;
  if (std::int64_t{block_rows} * cols <= window_cells) {
    win_rows = std::max<std::int64_t>(1, window_cells / cols / block_rows) * block_rows;
  } else {
    win_cols = std::max<std::int64_t>(1, window_cells / block_rows / block_cols) * block_cols;
  }
  win_rows = std::min<std::int64_t>(win_rows, rows);
  win_cols = std::min<std::int64_t>(win_cols, cols);
  std::vector<window> out;
  for (std::int64_t r = 0; r < rows; r += win_rows) {
    for (std::int64_t c = 0; c < cols; c += win_cols) {
      out.push_back({static_cast<int>(c), static_cast<int>(r), static_cast<int>(std::min(win_cols, cols - c)),
                     static_cast<int>(std::min(win_rows, rows - r))});
    }
  }
  return out;
}

/// Everything write_grid() puts into a dataset, whatever the driver.
struct grid_content {
  std::string const& path;  ///< the final output, for messages
  grid_spec const& grid;
  cell_results const& results;
  std::vector<metric> const& bands;
  raster_data_type type;
  std::string const& crs_wkt;
  float nodata;
};

/// Band-sequential buffer of one window in the file's sample type T; empty cells of count in a
/// float file become nodata.
template <typename T>
void fill_window(grid_content const& c, window const& w, std::vector<T>& buffer)
{
  auto const cells = static_cast<std::size_t>(w.cols) * static_cast<std::size_t>(w.rows);
  buffer.resize(cells * c.bands.size());
  T* out = buffer.data();
  for (auto const m : c.bands) {
    for (int r = 0; r < w.rows; ++r) {
      std::size_t const first = (static_cast<std::size_t>(w.row0) + static_cast<std::size_t>(r)) * c.grid.cols +
                                static_cast<std::size_t>(w.col0);
      if (m == metric::count) {
        auto const* in = c.results.count.data() + first;
        for (int k = 0; k < w.cols; ++k) {
          if constexpr (std::is_integral_v<T>) {
            out[k] = static_cast<T>(in[k]);
          } else {
            out[k] = in[k] == 0 ? static_cast<T>(c.nodata) : static_cast<T>(in[k]);
          }
        }
      } else {
        auto const* in = float_column(c.results, m).data() + first;
        for (int k = 0; k < w.cols; ++k) { out[k] = static_cast<T>(in[k]); }
      }
      out += w.cols;
    }
  }
}

template <typename T>
void write_cells(grid_content const& c, GDALDataset& dataset, gdal_error_scope const& errors)
{
  int block_cols = 0;
  int block_rows = 0;
  dataset.GetRasterBand(1)->GetBlockSize(&block_cols, &block_rows);
  auto const cols = static_cast<int>(c.grid.cols);
  auto const rows = static_cast<int>(c.grid.rows);
  std::vector<T> buffer;
  for (auto const& w : write_windows(cols, rows, block_cols, block_rows)) {
    fill_window(c, w, buffer);
    // nullptr band map: bands 1..n in buffer order; band spacing = one window of samples.
    auto const band_space = static_cast<GSpacing>(sizeof(T)) * w.cols * w.rows;
    CPLErr const err = dataset.RasterIO(GF_Write, w.col0, w.row0, w.cols, w.rows, buffer.data(), w.cols, w.rows,
                                        gdal_type(c.type), static_cast<int>(c.bands.size()), nullptr, 0, 0,
                                        band_space, nullptr);
    expects(err == CE_None, error_kind::output,
            c.path + ": cannot write cells at row " + std::to_string(w.row0) + ", column " +
              std::to_string(w.col0) + ": " + errors.message());
  }
}

/// Georeferencing, band descriptions, nodata and cells of `dataset`.
void fill_dataset(grid_content const& c, GDALDataset& dataset, gdal_error_scope const& errors)
{
  // North-up grid: x = x0 + col * xres, y = y0 - row * yres, from the outer corner of the
  // top-left cell (see grid_spec::geotransform); no rotation terms.
  auto gt = c.grid.geotransform();
  expects(dataset.SetGeoTransform(gt.data()) == CE_None, error_kind::output,
          c.path + ": cannot set the geotransform: " + errors.message());
  if (!c.crs_wkt.empty()) {
    OGRSpatialReference srs;
    expects(srs.importFromWkt(c.crs_wkt.c_str()) == OGRERR_NONE, error_kind::output,
            c.path + ": cannot interpret the CRS to write: " + errors.message());
    expects(dataset.SetSpatialRef(&srs) == CE_None, error_kind::output,
            c.path + ": cannot set the CRS: " + errors.message());
  }
  // An empty cell has 0 points, so 0 is the natural nodata of an integer count band.
  double const nodata = c.type == raster_data_type::uint32 ? 0.0 : static_cast<double>(c.nodata);
  for (std::size_t i = 0; i < c.bands.size(); ++i) {
    GDALRasterBand* band = dataset.GetRasterBand(static_cast<int>(i) + 1);
    band->SetDescription(std::string(metric_name(c.bands[i])).c_str());
    expects(band->SetMetadataItem("METRIC_DESCRIPTION", std::string(metric_description(c.bands[i])).c_str()) ==
              CE_None,
            error_kind::output, c.path + ": cannot set band metadata: " + errors.message());
    expects(band->SetNoDataValue(nodata) == CE_None, error_kind::output,
            c.path + ": cannot set the nodata value: " + errors.message());
  }
  switch (c.type) {
    case raster_data_type::uint32: write_cells<std::uint32_t>(c, dataset, errors); break;
    case raster_data_type::float32: write_cells<float>(c, dataset, errors); break;
    case raster_data_type::float64: write_cells<double>(c, dataset, errors); break;
  }
}

fs::path aux_of(fs::path const& p) { return fs::path(p.string() + ".aux.xml"); }

/// The ".<name>.tmp-<pid>" file next to the target: removed unless commit() renamed it over
/// the target. Declared before the dataset writing it, so the dataset is closed first.
class temporary_output {
 public:
  explicit temporary_output(fs::path const& target)
    : path_(target.parent_path() / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid())))
  {
  }
  temporary_output(temporary_output const&) = delete;
  temporary_output& operator=(temporary_output const&) = delete;
  ~temporary_output()
  {
    if (committed_) { return; }
    std::error_code ec;
    fs::remove(path_, ec);
    fs::remove(aux_of(path_), ec);
  }

  [[nodiscard]] fs::path const& path() const noexcept { return path_; }

  void commit(fs::path const& target)
  {
    std::error_code ec;
    fs::rename(path_, target, ec);
    expects(!ec, error_kind::output,
            target.string() + ": cannot move '" + path_.string() + "' into place: " + ec.message());
    committed_ = true;
    // GDAL keeps what a format cannot hold in a ".aux.xml" side-car. A new one belongs to the
    // new file; an old one described the replaced file and would be read as the new one's.
    if (fs::exists(aux_of(path_), ec)) {
      fs::rename(aux_of(path_), aux_of(target), ec);
      expects(!ec, error_kind::output,
              target.string() + ": cannot move '" + aux_of(path_).string() + "' into place: " + ec.message());
    } else {
      fs::remove(aux_of(target), ec);
    }
  }

 private:
  fs::path path_;
  bool committed_{false};
};

GDALDriver& driver_named(char const* name, std::string const& path)
{
  auto* driver = GetGDALDriverManager()->GetDriverByName(name);
  expects(driver != nullptr, error_kind::output, path + ": this GDAL has no " + std::string(name) + " driver");
  return *driver;
}

}  // namespace

std::string_view raster_data_type_name(raster_data_type type) noexcept
{
  switch (type) {
    case raster_data_type::uint32: return "UInt32";
    case raster_data_type::float32: return "Float32";
    case raster_data_type::float64: return "Float64";
  }
  return "?";
}

void check_output_path(std::string const& path, raster_write_options const& options)
{
  parse_format(options.format);
  check_creation_options(options.creation_options);
  expects(!path.empty(), error_kind::usage, "the output path is empty");
  fs::path const target(path);
  // Before the existence test, so that an input is never offered to --overwrite.
  for (auto const& input : options.input_paths) {
    expects(!same_file(target, input), error_kind::output,
            path + ": output is the input '" + input + "'; refusing to replace it");
  }
  std::error_code ec;
  auto const status = fs::status(target, ec);
  if (fs::exists(status)) {
    expects(!fs::is_directory(status), error_kind::output, path + ": output is a directory");
    expects(options.overwrite, error_kind::output, path + ": output exists; use --overwrite to replace it");
  }
  fs::path const dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  expects(fs::is_directory(dir, ec), error_kind::output,
          path + ": directory '" + dir.string() + "' does not exist");
  expects(::access(dir.c_str(), W_OK) == 0, error_kind::output,
          path + ": directory '" + dir.string() + "' is not writable: " + std::generic_category().message(errno));
}

write_report write_grid(std::string const& path, grid_spec const& grid, cell_results const& results,
                        std::vector<metric> const& bands, raster_write_options const& options)
{
  check_output_path(path, options);
  output_format const format = parse_format(options.format);
  expects(!bands.empty(), error_kind::usage, path + ": no metrics to write");
  expects(grid.cols > 0 && grid.rows > 0 && grid.cols <= INT_MAX && grid.rows <= INT_MAX, error_kind::output,
          path + ": a grid of " + std::to_string(grid.cols) + " x " + std::to_string(grid.rows) +
            " cells cannot be written as a raster");
  for (auto const m : bands) {
    std::size_t const size = m == metric::count ? results.count.size() : float_column(results, m).size();
    expects(size == grid.num_cells(), error_kind::internal,
            "write_grid: the " + std::string(metric_name(m)) + " column has " + std::to_string(size) +
              " cells, the grid " + std::to_string(grid.num_cells()));
  }

  write_report report;
  report.data_type = choose_data_type(results, bands);
  if (report.data_type == raster_data_type::float64) {
    report.notes.push_back("a cell has more than 2^24 points, which Float32 cannot count exactly: "
                           "all bands are written as Float64");
  }
  if (report.data_type == raster_data_type::uint32 && !std::isnan(options.nodata)) {
    report.notes.push_back("count alone is written as UInt32 with nodata 0 (an empty cell has 0 points); "
                           "--nodata applies to float bands");
  }

  detail::ensure_gdal_registered();
  grid_content const content{path, grid, results, bands, report.data_type, options.crs_wkt, options.nodata};
  auto const co = creation_options(format, report.data_type, options.creation_options);
  auto const nbands = static_cast<int>(bands.size());
  auto const cols = static_cast<int>(grid.cols);
  auto const rows = static_cast<int>(grid.rows);
  fs::path const target(path);

  gdal_error_scope errors;
  temporary_output temp(target);
  if (format == output_format::gtiff) {
    gdal_dataset_ptr dataset(driver_named("GTiff", path).Create(temp.path().c_str(), cols, rows, nbands,
                                                               gdal_type(report.data_type), co.List()));
    expects(dataset != nullptr, error_kind::output, path + ": cannot create: " + errors.message());
    fill_dataset(content, *dataset, errors);
    // Compressed tiles still in the cache are written on close: its failures count too.
    dataset.reset();
  } else {
    // The COG driver only copies: lay the grid out in memory, then let it write tiles and
    // overviews in COG order.
    gdal_dataset_ptr memory(
      driver_named("MEM", path).Create("", cols, rows, nbands, gdal_type(report.data_type), nullptr));
    expects(memory != nullptr, error_kind::resource,
            path + ": cannot hold the grid in memory for COG output: " + errors.message());
    fill_dataset(content, *memory, errors);
    gdal_dataset_ptr dataset(
      driver_named("COG", path).CreateCopy(temp.path().c_str(), memory.get(), FALSE, co.List(), nullptr, nullptr));
    expects(dataset != nullptr, error_kind::output, path + ": cannot create: " + errors.message());
    dataset.reset();
  }
  expects(!errors.failed(), error_kind::output, path + ": cannot write: " + errors.message());
  temp.commit(target);
  return report;
}

}  // namespace heightgrid::io
