#pragma once
// --ground DTM.tif: a part_source whose points are another's with the terrain under each subtracted
// from z (heights above ground), points off the terrain raster (outside it, or on its nodata)
// removed and counted (filter_stats::off_ground). Decoding stays on the readers (no raw LAS records,
// no chunks offloaded), so every backend bins the same heights.

#include "heightgrid/core/point_source.hpp"
#include "heightgrid/io/ground_raster.hpp"

#include <memory>

namespace heightgrid::app {

/// `inner` with the terrain of `ground` subtracted. Throws error_kind::input when both the source
/// and the raster have a CRS and they differ (naming both).
[[nodiscard]] std::unique_ptr<part_source> above_ground(std::unique_ptr<part_source> inner,
                                                        std::shared_ptr<io::ground_raster const> ground);

}  // namespace heightgrid::app
