#pragma once
// A GDAL VRT mosaic over tiles written separately (tiled output), built by GDAL's own VRT builder.

#include <string>
#include <vector>

namespace heightgrid::io {

/// Builds `path` (a .vrt) over `tiles` (GeoTIFFs with the same bands, data type, resolution and
/// CRS) with GDALBuildVRT; tiles in the VRT's directory are referenced by relative paths, so the
/// directory can be moved as a whole. Written under a temporary name and renamed into place:
/// nothing appears at `path` on failure. Throws error_kind::output (with GDAL's message).
/// Bands listed in `without_nodata` (1-based) have no nodata value in the mosaic: where no tile
/// lies they read 0 (--fill's "filled" mask: 0 where nothing was filled, as in one raster).
void build_vrt(std::string const& path, std::vector<std::string> const& tiles, std::vector<int> const& without_nodata = {});

}  // namespace heightgrid::io
