#include "heightgrid/io/crs.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "gdal_internal.hpp"

#include <ogr_spatialref.h>

#include <optional>

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
  auto const sa = parse_wkt(a);
  auto const sb = parse_wkt(b);
  if (!sa || !sb) { return a == b; }
  char const* const criteria[] = {"CRITERION=EQUIVALENT_EXCEPT_AXIS_ORDER_GEOGCRS", nullptr};
  return sa->IsSame(&*sb, criteria) != 0;
}

}  // namespace heightgrid::io
