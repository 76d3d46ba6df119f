#pragma once
// A GDAL VRT mosaic over tiles written separately (tiled output), built by GDAL's own VRT builder.

#include <string>
#include <vector>

namespace heightgrid::io {

/// Builds `path` (a .vrt) over `tiles` (GeoTIFFs with the same bands, data type, resolution and
/// CRS) with GDALBuildVRT; tiles in the VRT's directory are referenced by relative paths, so the
/// directory can be moved as a whole. Written under a temporary name and renamed into place:
/// nothing appears at `path` on failure. Throws error_kind::output (with GDAL's message).
void build_vrt(std::string const& path, std::vector<std::string> const& tiles);

}  // namespace heightgrid::io
