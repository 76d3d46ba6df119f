#pragma once
// Helpers shared by the GDAL-backed sources and the writer; not part of the public API.

#include <cpl_error.h>
#include <ogr_spatialref.h>

#include <cstdint>
#include <string>

namespace heightgrid::io::detail {

/// GDALAllRegister(), once per process.
void ensure_gdal_registered();

/// Where a message goes when no gdal_error_scope keeps it: the init_gdal() sink, or GDAL's
/// default handler (stderr) when none was installed.
void route_gdal_message(CPLErr level, CPLErrorNum number, char const* message);

/// `srs` as single-line WKT2 (WKT1 if GDAL cannot express it as WKT2); "" for nullptr.
[[nodiscard]] std::string wkt_of(OGRSpatialReference const* srs);

/// Adds `bytes` read of a remote input through GDAL's VSI layer to remote_bytes_requested().
void note_remote_bytes(std::uint64_t bytes) noexcept;

/// Unit of the vertical axis of `srs` ("metre", "US survey foot"), "" when it has none.
[[nodiscard]] std::string vertical_units_of(OGRSpatialReference const* srs);

}  // namespace heightgrid::io::detail
