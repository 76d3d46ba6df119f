#pragma once
// Any GDAL raster (a DEM) as a point source: one point per valid pixel, at the pixel centre.

#include "heightgrid/core/point_source.hpp"

#include <memory>
#include <string>

namespace heightgrid::io {

/// Opens `path` with GDAL and streams band `band` (1-based) as points.
///
/// Each valid pixel (col, row) becomes the point at its centre through the full geotransform,
/// rotation terms included:
///   x = gt[0] + (col + 0.5) * gt[1] + (row + 0.5) * gt[2]
///   y = gt[3] + (col + 0.5) * gt[4] + (row + 0.5) * gt[5]
///   z = the pixel value as double.
/// Pixels are invalid when the band's mask says so (nodata value, alpha or mask band) or when
/// the value is NaN. Points come out row by row from the top; the raster is read in windows of
/// whole rows, never loaded at once. info().point_count stays empty (the pixel count is only an
/// upper bound).
///
/// Throws error_kind::input when the file cannot be opened as a raster, has no geotransform,
/// or has no band `band` (the message gives the band count), and on any read failure.
[[nodiscard]] std::unique_ptr<point_source> open_raster_source(std::string const& path, int band = 1);

}  // namespace heightgrid::io
