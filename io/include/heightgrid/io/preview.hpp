#pragma once
// --preview: a quick look at a written raster for a headless server, as a PNG.

#include <cstddef>
#include <string>

namespace heightgrid::io {

/// Size of the PNG preview() writes for a grid of `cols` x `rows` cells: the grid scaled by a
/// whole factor to at least 256 pixels on its longer side (a factor of 1 if it already is), or
/// shrunk to at most 2048 pixels on it (nearest cell), plus a legend strip of legend_height rows
/// below (at least 256 pixels wide, for the labels).
struct preview_size {
  std::size_t width{0};         ///< the whole PNG
  std::size_t image_width{0};   ///< columns of the picture of the grid (at the left)
  std::size_t image_height{0};  ///< rows of the picture of the grid, above the legend
  std::size_t height{0};        ///< the whole PNG
  static constexpr std::size_t legend_height = 40;
};
[[nodiscard]] preview_size preview_size_for(std::size_t cols, std::size_t rows) noexcept;

/// Checks that `png` can be written (a .png name, not an existing file unless `overwrite`, in a
/// writable directory): throws error_kind::usage / error_kind::output naming it.
void check_preview_path(std::string const& png, bool overwrite);

/// Renders band 1 of the raster at `raster_path` into `png`: a viridis colour ramp from the band's
/// smallest to its largest valid value, nodata cells light grey, and a legend below (the ramp with
/// its two end values, and the nodata swatch). Written to a temporary beside `png` and renamed.
/// Throws error_kind::output (with GDAL's message) on failure.
void write_preview(std::string const& raster_path, std::string const& png, bool overwrite);

}  // namespace heightgrid::io
