#include "heightgrid/io/geotiff_writer.hpp"

#include "gdal/raster_fill.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/output_path.hpp"
#include "heightgrid/core/temp_registry.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "gdal/gdal_internal.hpp"
#include "gdal/raster_options.hpp"

#include <cpl_string.h>
#include <ogr_spatialref.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace heightgrid::io {
namespace {

namespace fs = std::filesystem;
using detail::cog_source_options;
using detail::merged_creation_options;
using detail::output_format;
using detail::parse_format;

/// Largest count that every Float32 holds exactly; above it the file switches to Float64.
constexpr std::uint32_t max_exact_float32_count = std::uint32_t{1} << 24;

GDALDataType gdal_type(raster_data_type type) noexcept
{
  switch (type) {
    case raster_data_type::uint32: return GDT_UInt32;
    case raster_data_type::float32: return GDT_Float32;
    case raster_data_type::float64: return GDT_Float64;
  }
  return GDT_Float32;
}

column<float> const& float_column(cell_results const& results, metric m) { return results.float_column(m); }

/// The whole numbers of a count-like band (count, or a tagged count: tag_empty in an empty cell).
column<std::uint32_t> const& count_column(cell_results const& results, metric m)
{
  return m == metric::count ? results.count : results.tag_column(m);
}

std::size_t column_size(cell_results const& results, metric m)
{
  return m.is_count_like() ? count_column(results, m).size() : float_column(results, m).size();
}

bool has_count(std::vector<metric> const& bands) noexcept
{
  return std::any_of(bands.begin(), bands.end(), [](metric m) { return m.is_count_like(); });
}

bool counts_alone(std::vector<metric> const& bands) noexcept
{
  return !bands.empty() && std::all_of(bands.begin(), bands.end(), [](metric m) { return m.is_count_like(); });
}

raster_data_type choose_data_type(std::vector<metric> const& bands, std::uint64_t max_count,
                                  std::optional<raster_data_type> forced) noexcept
{
  if (forced) { return *forced; }
  if (counts_alone(bands)) { return raster_data_type::uint32; }
  if (has_count(bands) && max_count > max_exact_float32_count) { return raster_data_type::float64; }
  return raster_data_type::float32;
}

std::vector<std::string> data_type_notes(raster_data_type type, float nodata, std::vector<metric> const& bands,
                                         std::uint64_t max_count, bool forced)
{
  std::vector<std::string> notes;
  if (forced && type == raster_data_type::float32 && has_count(bands) && max_count > max_exact_float32_count) {
    notes.push_back("--ot Float32: a cell has more than 2^24 points, so some counts are rounded (Float64 keeps them "
                    "exact)");
  }
  if (type == raster_data_type::float64 && !forced) {
    notes.push_back("a cell has more than 2^24 points, which Float32 cannot count exactly: "
                    "all bands are written as Float64");
  }
  if (type == raster_data_type::uint32 && !std::isnan(nodata)) {
    notes.push_back("counts alone are written as UInt32 with nodata 0 (an empty cell has 0 points); "
                    "--nodata applies to float bands");
  }
  return notes;
}

/// Georeferencing, band descriptions, METRIC_DESCRIPTION and nodata of a new dataset.
void describe_dataset(GDALDataset& dataset, std::string const& path, grid_spec const& grid,
                      std::vector<metric> const& bands, raster_data_type type, raster_write_options const& options,
                      gdal_error_scope const& errors)
{
  // North-up grid: x = x0 + col * xres, y = y0 - row * yres, from the outer corner of the
  // top-left cell (see grid_spec::geotransform); no rotation terms.
  // Each GDAL call is made before its check: HG_EXPECTS() evaluates its arguments in an unspecified
  // order, so a call inside the condition may run after errors.message() was read.
  auto gt = grid.geotransform();
  bool const geotransform_set = dataset.SetGeoTransform(gt.data()) == CE_None;
  HG_EXPECTS(geotransform_set, error_kind::output, path + ": cannot set the geotransform: " + errors.message());
  if (!options.crs_wkt.empty()) {
    OGRSpatialReference srs;
    bool const crs_read = srs.importFromWkt(options.crs_wkt.c_str()) == OGRERR_NONE;
    HG_EXPECTS(crs_read, error_kind::output, path + ": cannot interpret the CRS to write: " + errors.message());
    bool const crs_set = dataset.SetSpatialRef(&srs) == CE_None;
    HG_EXPECTS(crs_set, error_kind::output, path + ": cannot set the CRS: " + errors.message());
  }
  // An empty cell has 0 points, so 0 is the natural nodata of an integer count band.
  double const nodata = type == raster_data_type::uint32 ? 0.0 : static_cast<double>(options.nodata);
  for (std::size_t i = 0; i < bands.size(); ++i) {
    GDALRasterBand* band = dataset.GetRasterBand(static_cast<int>(i) + 1);
    band->SetDescription(std::string(metric_name(bands[i])).c_str());
    bool const described =
      band->SetMetadataItem("METRIC_DESCRIPTION", metric_description(bands[i], options.prange_lo, options.prange_hi).c_str()) == CE_None;
    HG_EXPECTS(described, error_kind::output, path + ": cannot set band metadata: " + errors.message());
    bool const nodata_set = band->SetNoDataValue(nodata) == CE_None;
    HG_EXPECTS(nodata_set, error_kind::output, path + ": cannot set the nodata value: " + errors.message());
  }
}

/// One block row in the file's sample type, band-sequential (band b's rows start at
/// b * rows * cols), and how many of its rows have arrived.
struct pending_block_row {
  std::variant<std::vector<std::uint32_t>, std::vector<float>, std::vector<double>> samples;
  std::size_t rows_filled{0};
};

GDALDriver& driver_named(char const* name, std::string const& path)
{
  auto* driver = GetGDALDriverManager()->GetDriverByName(name);
  HG_EXPECTS(driver != nullptr, error_kind::output, path + ": this GDAL has no " + std::string(name) + " driver");
  return *driver;
}

}  // namespace

class raster_writer::impl {
 public:
  impl(std::string path, grid_spec const& grid, std::vector<metric> bands, raster_write_options options,
       std::uint64_t max_count)
    : path_(std::move(path)),
      target_(path_),
      grid_(grid),
      bands_(std::move(bands)),
      options_(std::move(options)),
      max_count_(max_count)
  {
    check_output_path(path_, options_);
    format_ = parse_format(options_.format);
    HG_EXPECTS(!bands_.empty(), error_kind::usage, path_ + ": no metrics to write");
    HG_EXPECTS(grid_.cols > 0 && grid_.rows > 0 && grid_.cols <= INT_MAX && grid_.rows <= INT_MAX, error_kind::output,
            path_ + ": a grid of " + std::to_string(grid_.cols) + " x " + std::to_string(grid_.rows) +
              " cells cannot be written as a raster");
    type_ = choose_data_type(bands_, max_count_, options_.data_type);
    notes_ = data_type_notes(type_, options_.nodata, bands_, max_count_, options_.data_type.has_value());
    HG_EXPECTS(type_ != raster_data_type::uint32 || counts_alone(bands_), error_kind::usage,
               "--ot UInt32 holds count bands alone (count, count:CLASSES, first, last; the other metrics are not "
               "whole numbers)");
    filling_ = options_.fill.method != fill_method::none;
    if (filling_) {
      check_fill(bands_, options_.fill, false);
      HG_EXPECTS(type_ != raster_data_type::uint32, error_kind::usage,
                 "--fill: no band to fill (count and density stay as counted; ask for a float metric)");
    }
    co_ = merged_creation_options(format_, options_.creation_options);
    written_.assign(grid_.rows, false);

    detail::ensure_gdal_registered();
    GDALDriver& gtiff = driver_named("GTiff", path_);
    // COG: the driver only copies from a finished dataset, so the rows go to a GTiff first.
    auto const co = format_ == output_format::cog ? cog_source_options(co_, gtiff) : co_;
    // GDAL keeps what a format cannot hold in a ".aux.xml" side-car: it moves with the file.
    temp_.emplace(target_, "tmp", "", std::vector<std::string>{".aux.xml"});
    if (format_ == output_format::cog) { source_.emplace(target_, "tmp", ".src", std::vector<std::string>{".aux.xml"}); }
    fs::path const& written_path = format_ == output_format::cog ? source_->path() : temp_->path();
    try {
      gdal_error_scope errors;
      dataset_.reset(gtiff.Create(written_path.c_str(), static_cast<int>(grid_.cols), static_cast<int>(grid_.rows),
                                  static_cast<int>(bands_.size() + (filling_ ? 1 : 0)), gdal_type(type_), co.List()));
      HG_EXPECTS(dataset_ != nullptr, error_kind::output, path_ + ": cannot create: " + errors.message());
      describe_dataset(*dataset_, path_, grid_, bands_, type_, options_, errors);
      if (filling_) {
        GDALRasterBand* filled = dataset_->GetRasterBand(static_cast<int>(bands_.size()) + 1);
        filled->SetDescription("filled");
        bool const described =
          filled->SetMetadataItem("METRIC_DESCRIPTION", "1 where --fill filled the cell (in the first filled band), else 0") ==
          CE_None;
        HG_EXPECTS(described, error_kind::output, path_ + ": cannot set band metadata: " + errors.message());
      }
      int block_cols = 0;
      int block_rows = 0;
      dataset_->GetRasterBand(1)->GetBlockSize(&block_cols, &block_rows);
      block_rows_ = static_cast<std::size_t>(std::clamp<int>(block_rows, 1, static_cast<int>(grid_.rows)));
      char const* const interleave = dataset_->GetMetadataItem("INTERLEAVE", "IMAGE_STRUCTURE");
      band_blocks_ = dataset_->GetRasterCount() == 1 ||
                     (interleave != nullptr && detail::equals_ignoring_case(interleave, "BAND"));
    } catch (...) {
      abandon();
      throw;
    }
  }

  impl(impl const&) = delete;
  impl& operator=(impl const&) = delete;

  ~impl() { abandon(); }

  [[nodiscard]] raster_data_type data_type() const noexcept { return type_; }
  [[nodiscard]] std::size_t block_rows() const noexcept { return block_rows_; }
  [[nodiscard]] std::vector<std::string> creation_options() const
  {
    std::vector<std::string> out;
    for (int i = 0; i < co_.Count(); ++i) { out.emplace_back(co_[i]); }
    return out;
  }

  void write_rows(std::size_t row0, cell_results const& rows)
  {
    guarded([&] {
      switch (type_) {
        case raster_data_type::uint32: write_rows_as<std::uint32_t>(row0, rows); break;
        case raster_data_type::float32: write_rows_as<float>(row0, rows); break;
        case raster_data_type::float64: write_rows_as<double>(row0, rows); break;
      }
    });
  }

  write_report commit()
  {
    write_report report;
    guarded([&] {
      HG_EXPECTS(rows_written_ == grid_.rows, error_kind::internal,
              path_ + ": commit with rows never written, from row " + std::to_string(first_unwritten_row()));
      gdal_error_scope errors;
      // Blocks still in GDAL's cache are compressed and written on close: its failures count too.
      dataset_.reset();
      HG_EXPECTS(!errors.failed(), error_kind::output, path_ + ": cannot write: " + errors.message());
      if (filling_) { fill_written(); }
      if (format_ == output_format::cog) {
        gdal_dataset_ptr source(GDALDataset::Open(source_->path().c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
        HG_EXPECTS(source != nullptr, error_kind::output, path_ + ": cannot reopen the rows written: " + errors.message());
        gdal_dataset_ptr cog(driver_named("COG", path_).CreateCopy(temp_->path().c_str(), source.get(), FALSE,
                                                                     co_.List(), nullptr, nullptr));
        // Named apart from the rows' failures: the rows are all written when CreateCopy starts.
        HG_EXPECTS(cog != nullptr, error_kind::output, path_ + ": cannot write the COG: " + errors.message());
        cog.reset();
        source.reset();
        HG_EXPECTS(!errors.failed(), error_kind::output, path_ + ": cannot write the COG: " + errors.message());
        source_->remove();
      }
      temp_->commit();
      committed_ = true;
      report.data_type = type_;
      report.notes = notes_;
    });
    return report;
  }

 private:
  /// Runs `f`; if it throws, the file is given up (closed, temporaries removed) before the error
  /// leaves, so that a failed writer holds no file however long it lives.
  template <typename F>
  void guarded(F&& f)
  {
    HG_EXPECTS(!failed_ && !committed_, error_kind::internal,
            path_ + ": raster_writer used after " + (committed_ ? "commit" : "a failure"));
    try {
      f();
    } catch (...) {
      failed_ = true;
      abandon();
      throw;
    }
  }

  static bool fills(metric m) noexcept { return fill_applies(m); }

  /// --fill on the closed file of rows, before it is converted (COG) and published.
  void fill_written()
  {
    fs::path const& written = format_ == output_format::cog ? source_->path() : temp_->path();
    gdal_error_scope errors;
    gdal_dataset_ptr rows(GDALDataset::Open(written.c_str(), GDAL_OF_RASTER | GDAL_OF_UPDATE));
    HG_EXPECTS(rows != nullptr, error_kind::output, path_ + ": --fill cannot reopen the rows written: " + errors.message());
    std::vector<int> targets;
    for (std::size_t b = 0; b < bands_.size(); ++b) {
      if (fills(bands_[b])) { targets.push_back(static_cast<int>(b) + 1); }
    }
    auto notes = detail::fill_bands(*rows, targets, static_cast<int>(bands_.size()) + 1, options_.fill,
                                    static_cast<double>(options_.nodata), path_);
    notes_.insert(notes_.end(), notes.begin(), notes.end());
    rows.reset();
    HG_EXPECTS(!errors.failed(), error_kind::output, path_ + ": --fill cannot write: " + errors.message());
  }

  void abandon() noexcept
  {
    if (committed_) { return; }
    {
      // Failures of a close whose file is deleted anyway are not worth a message.
      gdal_error_scope ignored;
      dataset_.reset();
    }
    if (source_) { source_->remove(); }
    if (temp_) { temp_->remove(); }
    pending_.clear();
  }

  [[nodiscard]] std::size_t first_unwritten_row() const
  {
    return static_cast<std::size_t>(std::find(written_.begin(), written_.end(), false) - written_.begin());
  }

  /// Rows in block row `k` (the last one may be short).
  [[nodiscard]] std::size_t block_row_height(std::size_t k) const noexcept
  {
    return std::min(block_rows_, std::size_t{grid_.rows} - k * block_rows_);
  }

  template <typename T>
  void write_rows_as(std::size_t row0, cell_results const& in)
  {
    std::size_t const cols = grid_.cols;
    std::size_t const cells = column_size(in, bands_.front());
    for (auto const m : bands_) {
      HG_EXPECTS(column_size(in, m) == cells, error_kind::internal,
              path_ + ": write_rows: the " + std::string(metric_name(m)) + " column has " +
                std::to_string(column_size(in, m)) + " cells, the " + std::string(metric_name(bands_.front())) +
                " column " + std::to_string(cells));
    }
    std::size_t const rows = cells / cols;
    HG_EXPECTS(rows > 0 && rows * cols == cells && row0 <= grid_.rows && rows <= grid_.rows - row0,
            error_kind::internal,
            path_ + ": write_rows: " + std::to_string(cells) + " cells at row " + std::to_string(row0) +
              " are not whole rows of a grid of " + std::to_string(grid_.cols) + " x " +
              std::to_string(grid_.rows));
    for (std::size_t r = row0; r < row0 + rows; ++r) {
      HG_EXPECTS(!written_[r], error_kind::internal, path_ + ": write_rows: row " + std::to_string(r) + " written twice");
    }

    for (std::size_t k = row0 / block_rows_; k * block_rows_ < row0 + rows; ++k) {
      std::size_t const block_row0 = k * block_rows_;
      std::size_t const height = block_row_height(k);
      std::size_t const first = std::max(row0, block_row0);
      std::size_t const last = std::min(row0 + rows, block_row0 + height);
      if ((bands_.size() == 1 || band_blocks_) && first == block_row0 && last == block_row0 + height) {
        // A whole block row, every band in the file's type: its blocks come straight from the
        // columns (one band, or bands stored apart: INTERLEAVE=BAND).
        std::vector<T const*> direct;
        for (auto const m : bands_) {
          if (T const* column = same_type_column<T>(in, m, (first - row0) * cols)) { direct.push_back(column); }
        }
        if (direct.size() == bands_.size()) {
          for (std::size_t r = first; r < last; ++r) { written_[r] = true; }
          rows_written_ += height;
          for (std::size_t b = 0; b < direct.size(); ++b) {
            write_blocks(static_cast<int>(b) + 1, block_row0, height, direct[b]);
          }
          continue;
        }
      }
      auto [it, fresh] = pending_.try_emplace(k);
      if (fresh) { it->second.samples = take_buffer<T>(height * cols * bands_.size()); }
      auto& samples = std::get<std::vector<T>>(it->second.samples);
      for (std::size_t b = 0; b < bands_.size(); ++b) {
        T* out = samples.data() + (b * height + (first - block_row0)) * cols;
        std::size_t const from = (first - row0) * cols;
        std::size_t const n = (last - first) * cols;
        convert_column<T>(in, bands_[b], from, n, out);
      }
      for (std::size_t r = first; r < last; ++r) { written_[r] = true; }
      rows_written_ += last - first;
      it->second.rows_filled += last - first;
      if (it->second.rows_filled == height) {
        write_block_row(block_row0, height, samples);
        spare_ = std::move(it->second.samples);
        pending_.erase(it);
      }
    }
  }

  /// A buffer of `n` samples, reusing the last block row's: an aligned caller allocates once.
  template <typename T>
  std::vector<T> take_buffer(std::size_t n)
  {
    std::vector<T> buffer;
    if (auto* spare = std::get_if<std::vector<T>>(&spare_)) { buffer = std::move(*spare); }
    buffer.resize(n);
    return buffer;
  }

  /// Band `m` of `in` from cell `from` on when its cells are already of type T (float bands in a
  /// Float32 file, count in a UInt32 one), else null.
  template <typename T>
  [[nodiscard]] T const* same_type_column(cell_results const& in, metric m, std::size_t from) const
  {
    if constexpr (std::is_same_v<T, float>) {
      if (!m.is_count_like()) { return float_column(in, m).data() + from; }
    }
    if constexpr (std::is_same_v<T, std::uint32_t>) {
      if (m == metric::count) { return in.count.data() + from; }  // tagged counts: tag_empty becomes 0
    }
    return nullptr;
  }

  /// Cells [from, from + n) of band `m` of `in`, in the file's sample type T: empty cells of count
  /// in a float file become nodata.
  template <typename T>
  void convert_column(cell_results const& in, metric m, std::size_t from, std::size_t n, T* out) const
  {
    if (m.is_count_like()) {
      // count: 0 in an empty cell; a tagged count: tag_empty there (0 where the cell's points are
      // all of other kinds).
      std::uint32_t const empty = m == metric::count ? 0U : tag_empty;
      auto const* count = count_column(in, m).data() + from;
      if constexpr (std::is_integral_v<T>) {
        for (std::size_t i = 0; i < n; ++i) { out[i] = count[i] == empty ? 0U : count[i]; }
      } else {
        auto const nodata = static_cast<T>(options_.nodata);
        std::uint32_t largest = 0;
        for (std::size_t i = 0; i < n; ++i) {
          bool const is_empty = count[i] == empty;
          out[i] = is_empty ? nodata : static_cast<T>(count[i]);
          largest = is_empty ? largest : std::max(largest, count[i]);
        }
        // A wrong max_count only matters where it chose Float32 for a count it cannot hold.
        HG_EXPECTS((std::is_same_v<T, double> || largest <= max_exact_float32_count), error_kind::internal,
                path_ + ": write_rows: a count of " + std::to_string(largest) +
                  ", which Float32 cannot hold, in a file created for max_count " + std::to_string(max_count_));
      }
    } else {
      if constexpr (std::is_floating_point_v<T>) {
        auto const* value = float_column(in, m).data() + from;
        std::copy(value, value + n, out);
      } else {
        throw error(error_kind::internal, path_ + ": a float band in a UInt32 file");
      }
    }
  }

  /// Hands one complete block row, all bands, to GDAL.
  template <typename T>
  void write_block_row(std::size_t row0, std::size_t rows, std::vector<T>& samples)
  {
    if (bands_.size() == 1 || band_blocks_) {
      // Bands stored apart: each band's blocks straight to the compression threads (samples are
      // band after band, `rows` rows each).
      for (std::size_t b = 0; b < bands_.size(); ++b) {
        write_blocks(static_cast<int>(b) + 1, row0, rows, samples.data() + b * rows * grid_.cols);
      }
      return;
    }
    gdal_error_scope errors;
    auto const cols = static_cast<int>(grid_.cols);
    // nullptr band map: bands 1..n in buffer order; band spacing = one block row of samples.
    auto const band_space = static_cast<GSpacing>(sizeof(T)) * cols * static_cast<GSpacing>(rows);
    CPLErr const err = dataset_->RasterIO(GF_Write, 0, static_cast<int>(row0), cols, static_cast<int>(rows),
                                          samples.data(), cols, static_cast<int>(rows), gdal_type(type_),
                                          static_cast<int>(bands_.size()), nullptr, 0, 0, band_space, nullptr);
    HG_EXPECTS(err == CE_None && !errors.failed(), error_kind::output,
            path_ + ": cannot write cells at row " + std::to_string(row0) + ": " + errors.message());
    // The block row is complete: send its blocks to the compression threads now rather than when
    // GDAL's cache fills or the file closes. Compression then overlaps the caller's next window,
    // the cache holds about one block row, and blocks reach the file in the same order whatever
    // the cache size. Band 1's flush writes the whole pixel-interleaved block; the other bands'
    // blocks are then clean and only leave the cache.
    int block_cols = 0;
    int block_rows = 0;
    dataset_->GetRasterBand(1)->GetBlockSize(&block_cols, &block_rows);
    int const y_block = static_cast<int>(row0) / block_rows;
    for (int x_block = 0; x_block * block_cols < cols; ++x_block) {
      for (int b = 1; b <= static_cast<int>(bands_.size()); ++b) {
        // Flushed before the check (see describe_dataset): the message must see its failures.
        bool const flushed = dataset_->GetRasterBand(b)->FlushBlock(x_block, y_block) == CE_None;
        HG_EXPECTS(flushed && !errors.failed(), error_kind::output,
                path_ + ": cannot write cells at row " + std::to_string(row0) + ": " + errors.message());
      }
    }
  }

  /// Band `band_index` of one band's file, or of a file whose bands are stored apart: each block of
  /// the block row (`rows` rows of grid_.cols samples at `samples`) goes to GDAL whole with
  /// WriteBlock, which hands it to the compression threads without GDAL's block cache (RasterIO
  /// copied the row into cached blocks, each new one zeroed first, and flushed them: two more
  /// passes over the samples on this thread). The part of an edge block outside the raster holds
  /// zeros, as the cached blocks did, so the file is the same byte for byte.
  template <typename T>
  void write_blocks(int band_index, std::size_t row0, std::size_t rows, T const* samples)
  {
    gdal_error_scope errors;
    GDALRasterBand* band = dataset_->GetRasterBand(band_index);
    int block_cols = 0;
    int block_rows = 0;
    band->GetBlockSize(&block_cols, &block_rows);
    auto const bc = static_cast<std::size_t>(block_cols);
    auto const br = static_cast<std::size_t>(block_rows);
    std::size_t const cols = grid_.cols;
    T const pad{0};
    auto* block = std::get_if<std::vector<T>>(&block_buffer_);
    if (block == nullptr) { block = &block_buffer_.emplace<std::vector<T>>(); }
    block->resize(bc * br);
    int const y_block = static_cast<int>(row0 / br);
    for (std::size_t x0 = 0, x_block = 0; x0 < cols; x0 += bc, ++x_block) {
      std::size_t const width = std::min(bc, cols - x0);
      for (std::size_t r = 0; r < br; ++r) {
        T* out = block->data() + r * bc;
        if (r < rows) {
          T const* in = samples + r * cols + x0;
          std::copy(in, in + width, out);
          std::fill(out + width, out + bc, pad);
        } else {
          std::fill(out, out + bc, pad);
        }
      }
      bool const written = band->WriteBlock(static_cast<int>(x_block), y_block, block->data()) == CE_None;
      HG_EXPECTS(written && !errors.failed(), error_kind::output,
              path_ + ": cannot write cells at row " + std::to_string(row0) + ": " + errors.message());
    }
  }

  std::string path_;
  fs::path target_;
  grid_spec grid_;
  std::vector<metric> bands_;
  raster_write_options options_;
  std::uint64_t max_count_;
  output_format format_{output_format::gtiff};
  raster_data_type type_{raster_data_type::float32};
  std::vector<std::string> notes_;
  CPLStringList co_;
  // Before the dataset, so that the dataset is closed before its file is removed.
  // Declared before the dataset writing them, so the dataset is closed first.
  std::optional<temporary_file> temp_;    ///< the file renamed over the path
  std::optional<temporary_file> source_;  ///< COG only: the GTiff the rows are written to
  gdal_dataset_ptr dataset_;
  std::size_t block_rows_{1};
  bool band_blocks_{false};  ///< one band, or bands stored apart (INTERLEAVE=BAND): blocks by WriteBlock
  std::map<std::size_t, pending_block_row> pending_;  ///< by block row index
  std::variant<std::vector<std::uint32_t>, std::vector<float>, std::vector<double>> spare_;
  std::variant<std::vector<std::uint32_t>, std::vector<float>, std::vector<double>> block_buffer_;  ///< write_blocks
  std::vector<bool> written_;
  std::size_t rows_written_{0};
  bool failed_{false};
  bool committed_{false};
  bool filling_{false};  ///< --fill: the file has a last band "filled"
};

raster_writer::raster_writer(std::string path, grid_spec const& grid, std::vector<metric> bands,
                             raster_write_options options, std::uint64_t max_count)
  : impl_(std::make_unique<impl>(std::move(path), grid, std::move(bands), std::move(options), max_count))
{
}

raster_writer::raster_writer(raster_writer&&) noexcept = default;
raster_writer& raster_writer::operator=(raster_writer&&) noexcept = default;
raster_writer::~raster_writer() = default;

raster_data_type raster_writer::data_type() const noexcept { return impl_->data_type(); }
std::size_t raster_writer::block_rows() const noexcept { return impl_->block_rows(); }
std::vector<std::string> raster_writer::creation_options() const { return impl_->creation_options(); }
void raster_writer::write_rows(std::size_t row0, cell_results const& rows) { impl_->write_rows(row0, rows); }
write_report raster_writer::commit() { return impl_->commit(); }

write_report write_grid(std::string const& path, grid_spec const& grid, cell_results const& results,
                        std::vector<metric> const& bands, raster_write_options const& options)
{
  check_output_path(path, options);
  for (auto const m : bands) {
    std::size_t const size = column_size(results, m);
    HG_EXPECTS(size == grid.num_cells(), error_kind::internal,
            "write_grid: the " + std::string(metric_name(m)) + " column has " + std::to_string(size) +
              " cells, the grid " + std::to_string(grid.num_cells()));
  }
  std::uint64_t const max_count =
    has_count(bands) && !results.count.empty() ? *std::max_element(results.count.begin(), results.count.end()) : 0;
  raster_writer out(path, grid, bands, options, max_count);
  out.write_rows(0, results);
  return out.commit();
}

}  // namespace heightgrid::io
