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

/// Whether two WKT strings describe the same CRS (OGRSpatialReference::IsSame, ignoring the axis
/// order of geographic CRSs). Two empty strings are the same; empty and non-empty are not; when
/// either cannot be parsed the strings are compared as text.
[[nodiscard]] bool same_crs(std::string const& a, std::string const& b);

}  // namespace heightgrid::io
