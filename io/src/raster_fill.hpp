#pragma once
// --fill (raster_write_options::fill): the empty cells of a written file's bands filled before it is
// published. Internal to io.

#include "heightgrid/io/geotiff_writer.hpp"

#include <gdal_priv.h>

#include <string>
#include <vector>

namespace heightgrid::io::detail {

/// Fills the nodata cells of `bands` (1-based band numbers of `dataset`, opened for update) by
/// `fill`, and writes 1 into band `filled_band` (when > 0) where the first of them was nodata and was
/// filled, 0 elsewhere. Returns warnings (a band tin cannot triangulate). Throws error_kind::output
/// naming `path` when GDAL fails.
[[nodiscard]] std::vector<std::string> fill_bands(GDALDataset& dataset, std::vector<int> const& bands, int filled_band,
                                                  fill_options const& fill, double nodata, std::string const& path);

}  // namespace heightgrid::io::detail
