#pragma once
// --ground DTM.tif: a terrain raster subtracted from every point's z before binning (heights above
// ground), sampled by bilinear interpolation between the centres of its cells.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid::io {

/// Band 1 of a north-up raster, held in memory as doubles.
class ground_raster {
 public:
  /// Reads `path` through GDAL. Throws error_kind::input naming the file: not a raster, rotated or
  /// south-up geotransform, a band that cannot be read.
  explicit ground_raster(std::string path);

  /// The terrain under (x, y): bilinear between the four cell centres around it; at the raster's
  /// outer half cells (no centre beyond) the edge cells' values are used as they are. Nothing for a
  /// point outside the raster or when any of the cells it uses holds nodata (or NaN).
  [[nodiscard]] std::optional<double> at(double x, double y) const noexcept;

  [[nodiscard]] std::string const& path() const noexcept { return path_; }
  [[nodiscard]] std::string const& crs_wkt() const noexcept { return crs_wkt_; }

 private:
  std::string path_;
  std::string crs_wkt_;
  int cols_{0}, rows_{0};
  double gt_[6]{};
  std::vector<double> v_;
  std::optional<double> nodata_;
};

}  // namespace heightgrid::io
