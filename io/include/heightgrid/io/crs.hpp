#pragma once
// Coordinate reference systems as WKT strings: the form every io stage exchanges them in.

#include <string>

namespace heightgrid::io {

/// The CRS named by a user (`--a_srs`): "EPSG:32633", a WKT string, a PROJ string, a .prj file...
/// (anything OGRSpatialReference::SetFromUserInput accepts), returned as WKT2.
/// Throws error_kind::usage: "--a_srs: cannot interpret 'foo': <GDAL message>".
[[nodiscard]] std::string crs_from_user_input(std::string const& text);

/// Short name for messages: "WGS 84 / UTM zone 33N (EPSG:32633)", "none" for an empty WKT,
/// "unrecognised CRS" when the WKT cannot be parsed.
[[nodiscard]] std::string crs_name(std::string const& wkt);

/// Whether two WKT strings describe the same CRS, as GDAL judges equivalence: IsSame with
/// CRITERION=EQUIVALENT_EXCEPT_AXIS_ORDER_GEOGCRS and IGNORE_DATA_AXIS_TO_SRS_AXIS_MAPPING, so names
/// do not matter ("RGF93 / Lambert-93" and "RGF93 v1 / Lambert-93" are both EPSG:2154); two CRSs
/// that carry the same authority code (EPSG:2154) are the same whatever else their WKT says. Equal
/// strings (empty ones too) are the same without being parsed; empty and non-empty are not; when
/// either cannot be parsed the strings are compared as text.
[[nodiscard]] bool same_crs(std::string const& a, std::string const& b);

/// What is wrong with cells of `xres` x `yres` in the units of the CRS `wkt`, for a warning:
/// cells wider than 1 degree in a geographic CRS ("--res 10 is in degrees ..."), or, in a
/// projected CRS, wider than 100 km or narrower than 1 mm once converted to metres. Empty when
/// plausible, or when there is no CRS.
[[nodiscard]] std::string cell_size_warning(std::string const& wkt, double xres, double yres);

}  // namespace heightgrid::io
