#pragma once
// --fill (raster_write_options::fill): the empty cells of a written file's bands filled before it is
// published. Internal to io.

#include "heightgrid/io/geotiff_writer.hpp"

#include <gdal_priv.h>

#include <cstdint>
#include <string>
#include <vector>

namespace heightgrid::io::detail {

/// Fills the nodata cells of `bands` (1-based band numbers of `dataset`, opened for update) by
/// `fill`, and writes 1 into band `filled_band` (when > 0) where the first of them was nodata and was
/// filled, 0 elsewhere. The dataset is the window of the whole grid whose first cell is (col0, row0)
/// (tin's triangles follow a rule of the whole grid: the same in a window and in the whole raster).
/// Returns warnings (a band tin cannot triangulate). Throws error_kind::output naming `path` when
/// GDAL fails.
[[nodiscard]] std::vector<std::string> fill_bands(GDALDataset& dataset, std::vector<int> const& bands, int filled_band,
                                                  fill_options const& fill, double nodata, std::string const& path,
                                                  std::int64_t col0 = 0, std::int64_t row0 = 0);

}  // namespace heightgrid::io::detail
