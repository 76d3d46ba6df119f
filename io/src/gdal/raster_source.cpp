#include "heightgrid/io/raster_source.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "gdal/gdal_internal.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace heightgrid::io {
namespace {

/// Pixels per read window: 8 MiB of doubles, whole rows, at least one row.
constexpr std::int64_t window_pixels = std::int64_t{1} << 20;

class raster_source final : public point_source {
 public:
  raster_source(std::string const& path, int band)
  {
    detail::ensure_gdal_registered();
    gdal_error_scope errors;
    dataset_.reset(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR));
    HG_EXPECTS(dataset_ != nullptr, error_kind::input, path + ": cannot open as a raster: " + errors.message());
    int const band_count = dataset_->GetRasterCount();
    HG_EXPECTS(band >= 1 && band <= band_count, error_kind::input,
            path + ": no band " + std::to_string(band) + " (the raster has " + std::to_string(band_count) +
              (band_count == 1 ? " band)" : " bands)"));
    HG_EXPECTS(dataset_->GetGeoTransform(gt_.data()) == CE_None, error_kind::input,
            path + ": the raster has no geotransform, so its pixels have no coordinates");

    band_ = dataset_->GetRasterBand(band);
    width_ = band_->GetXSize();
    height_ = band_->GetYSize();
    // GDAL's mask covers the nodata value (compared in the band's own type, which matters for
    // Float32 nodata such as -3.4e38), alpha bands and mask bands alike.
    if ((band_->GetMaskFlags() & GMF_ALL_VALID) == 0) { mask_ = band_->GetMaskBand(); }

    int block_cols = 0;
    int block_rows = 0;
    band_->GetBlockSize(&block_cols, &block_rows);
    auto rows = std::clamp<std::int64_t>(window_pixels / std::max(width_, 1), 1, std::max(height_, 1));
    // Whole blocks per window, so that no block is decoded twice.
    if (block_rows > 1 && rows >= block_rows) { rows -= rows % block_rows; }
    rows_per_window_ = static_cast<int>(rows);

    info_.path = path;
    info_.format = std::string(dataset_->GetDriver()->GetDescription()) + " raster";
    auto const* srs = dataset_->GetSpatialRef();
    info_.crs_wkt = detail::wkt_of(srs);
    char const* unit = band_->GetUnitType();
    info_.vertical_units = (unit != nullptr && *unit != '\0') ? std::string(unit) : detail::vertical_units_of(srs);
  }

  [[nodiscard]] source_info const& info() const override { return info_; }

  bool read(point_chunk& chunk, std::size_t max_points) override
  {
    chunk.clear();
    while (chunk.size() < max_points) {
      if (cursor_ == window_size()) {
        if (next_row_ == height_) { break; }
        load_window();
      }
      std::size_t const n = window_size();
      for (; cursor_ < n && chunk.size() < max_points; ++cursor_) {
        double const z = values_[cursor_];
        if (std::isnan(z) || (mask_ != nullptr && mask_values_[cursor_] == 0)) { continue; }
        auto const width = static_cast<std::size_t>(width_);
        double const col = static_cast<double>(cursor_ % width) + 0.5;
        double const row = static_cast<double>(static_cast<std::size_t>(window_row_) + cursor_ / width) + 0.5;
        chunk.x.push_back(gt_[0] + col * gt_[1] + row * gt_[2]);
        chunk.y.push_back(gt_[3] + col * gt_[4] + row * gt_[5]);
        chunk.z.push_back(z);
      }
    }
    return !chunk.empty();
  }

 private:
  [[nodiscard]] std::size_t window_size() const noexcept
  {
    return static_cast<std::size_t>(window_rows_) * static_cast<std::size_t>(width_);
  }

  void load_window()
  {
    window_row_ = next_row_;
    window_rows_ = std::min(rows_per_window_, height_ - next_row_);
    next_row_ += window_rows_;
    cursor_ = 0;
    values_.resize(window_size());
    gdal_error_scope errors;
    CPLErr const err = band_->RasterIO(GF_Read, 0, window_row_, width_, window_rows_, values_.data(), width_,
                                       window_rows_, GDT_Float64, 0, 0, nullptr);
    HG_EXPECTS(err == CE_None, error_kind::input,
            info_.path + ": cannot read rows " + std::to_string(window_row_) + " to " +
              std::to_string(window_row_ + window_rows_ - 1) + ": " + errors.message());
    if (mask_ == nullptr) { return; }
    mask_values_.resize(window_size());
    CPLErr const mask_err = mask_->RasterIO(GF_Read, 0, window_row_, width_, window_rows_, mask_values_.data(),
                                            width_, window_rows_, GDT_Byte, 0, 0, nullptr);
    HG_EXPECTS(mask_err == CE_None, error_kind::input,
            info_.path + ": cannot read the mask of rows " + std::to_string(window_row_) + " to " +
              std::to_string(window_row_ + window_rows_ - 1) + ": " + errors.message());
  }

  source_info info_;
  gdal_dataset_ptr dataset_;
  GDALRasterBand* band_{nullptr};
  GDALRasterBand* mask_{nullptr};  ///< null when every pixel is valid (NaN aside)
  std::array<double, 6> gt_{};
  int width_{0};
  int height_{0};
  int rows_per_window_{1};
  std::vector<double> values_;             ///< the current window, row-major
  std::vector<std::uint8_t> mask_values_;  ///< 0 = invalid, same layout as values_
  int window_row_{0};                      ///< first raster row of the window
  int window_rows_{0};
  std::size_t cursor_{0};  ///< next pixel of the window to look at
  int next_row_{0};        ///< first row not yet loaded
};

}  // namespace

std::unique_ptr<point_source> open_raster_source(std::string const& path, int band)
{
  return std::make_unique<raster_source>(path, band);
}

}  // namespace heightgrid::io
