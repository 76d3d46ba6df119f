#include "heightgrid/io/crs.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "gdal/gdal_internal.hpp"

#include <cpl_string.h>
#include <ogr_spatialref.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

namespace heightgrid::io {
namespace {

std::optional<OGRSpatialReference> parse_wkt(std::string const& wkt)
{
  gdal_error_scope errors;  // a malformed WKT is reported by the caller, not logged
  OGRSpatialReference srs;
  if (srs.importFromWkt(wkt.c_str()) != OGRERR_NONE) { return std::nullopt; }
  srs.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
  return srs;
}

}  // namespace

std::string crs_from_user_input(std::string const& text)
{
  detail::ensure_gdal_registered();
  gdal_error_scope errors;
  OGRSpatialReference srs;
  if (text.empty() || srs.SetFromUserInput(text.c_str()) != OGRERR_NONE) {
    throw error(error_kind::usage, "--a_srs: cannot interpret '" + text + "': " + errors.message());
  }
  auto wkt = detail::wkt_of(&srs);
  HG_EXPECTS(!wkt.empty(), error_kind::usage,
          "--a_srs: cannot interpret '" + text + "': " + errors.message());
  return wkt;
}

std::string crs_name(std::string const& wkt)
{
  if (wkt.empty()) { return "none"; }
  auto const srs = parse_wkt(wkt);
  if (!srs) { return "unrecognised CRS"; }
  char const* name = srs->GetName();
  std::string out = (name != nullptr && *name != '\0') ? name : "unnamed CRS";
  char const* authority = srs->GetAuthorityName(nullptr);
  char const* code = srs->GetAuthorityCode(nullptr);
  if (authority != nullptr && code != nullptr) {
    out += std::string(" (") + authority + ":" + code + ")";
  }
  return out;
}

bool same_crs(std::string const& a, std::string const& b)
{
  if (a.empty() || b.empty()) { return a.empty() && b.empty(); }
  // The common case, not parsed: the files of a catalogue carry the same text (twice a PROJ parse
  // and a comparison per file otherwise, 7 * 10^4 instructions, on the thread that opens the job).
  if (a == b) { return true; }
  auto const sa = parse_wkt(a);
  auto const sb = parse_wkt(b);
  if (!sa || !sb) { return a == b; }
  char const* const criteria[] = {"CRITERION=EQUIVALENT_EXCEPT_AXIS_ORDER_GEOGCRS",
                                  "IGNORE_DATA_AXIS_TO_SRS_AXIS_MAPPING=YES", nullptr};
  if (sa->IsSame(&*sb, criteria) != 0) { return true; }
  // The same code of the same authority names one CRS, however the two files spelled its WKT
  // (EPSG renamed "RGF93" to "RGF93 v1"; a WKT1 may carry TOWGS84 or ESRI datum names).
  char const* const auth_a = sa->GetAuthorityName(nullptr);
  char const* const auth_b = sb->GetAuthorityName(nullptr);
  char const* const code_a = sa->GetAuthorityCode(nullptr);
  char const* const code_b = sb->GetAuthorityCode(nullptr);
  return auth_a != nullptr && auth_b != nullptr && code_a != nullptr && code_b != nullptr &&
         EQUAL(auth_a, auth_b) && std::string(code_a) == code_b;
}

std::string cell_size_warning(std::string const& wkt, double xres, double yres)
{
  if (wkt.empty()) { return {}; }
  auto const srs = parse_wkt(wkt);
  if (!srs) { return {}; }
  double const cell = std::max(xres, yres);
  std::ostringstream s;
  s << "cells of " << cell;
  if (srs->IsGeographic() != 0) {
    char const* unit = nullptr;
    double const radians = srs->GetAngularUnits(&unit);
    double const degrees = cell * radians * 180.0 / 3.14159265358979323846;
    if (degrees <= 1.0) { return {}; }
    s << " " << (unit != nullptr ? unit : "degree") << " in " << crs_name(wkt)
      << ", a geographic CRS whose units are " << (unit != nullptr ? unit : "degree") << "s: about "
      << std::lround(degrees * 111.32) << " km at the equator. Give the cell size in degrees (1 m is about 9e-6 "
      << "degree), or grid points in a projected CRS";
    return s.str();
  }
  if (srs->IsProjected() == 0) { return {}; }
  char const* unit = nullptr;
  double const metres = cell * srs->GetLinearUnits(&unit);
  if (metres >= 1e-3 && metres <= 1e5) { return {}; }
  s << " " << (unit != nullptr ? unit : "unit") << " in " << crs_name(wkt) << ", whose units are "
    << (unit != nullptr ? unit : "unknown") << ": " << metres << " m per cell"
    << (metres < 1e-3 ? " (a cell size in degrees given for a projected CRS?)" : "");
  return s.str();
}

}  // namespace heightgrid::io
