#pragma once
// Coordinate reference systems of LAS files: the OGC WKT record (LASF_Projection 2112) and the
// GeoTIFF key records (LASF_Projection 34735/34736/34737), interpreted through GDAL/OGR.

#include <cstdint>
#include <string>
#include <vector>

namespace heightgrid::io {

/// The three GeoTIFF key records of a LAS file, as stored: the key directory (unsigned shorts),
/// the double parameters and the ASCII parameters. `directory` is empty when the file has none.
struct las_geotiff_keys {
  std::vector<std::uint16_t> directory;
  std::vector<double> doubles;
  std::string ascii;

  [[nodiscard]] bool empty() const noexcept { return directory.empty(); }
};

/// A CRS as the reader reports it.
struct las_crs {
  std::string wkt;             ///< empty when the file has no usable CRS
  std::string source{"none"};  ///< "WKT VLR", "WKT EVLR", "GeoTIFF keys" or "none"
  std::string vertical_units;  ///< e.g. "metre", "US survey foot"; empty when unknown
  /// Why a CRS record present in the file was not used (empty when nothing was skipped), e.g.
  /// "GeoTIFF keys present but not interpretable: ...". For the caller to show as a warning.
  std::string note;
};

/// Interprets the CRS records of a LAS file. A WKT record that parses wins over GeoTIFF keys;
/// GeoTIFF keys are turned into a CRS by GDAL's GeoTIFF driver (libgeotiff), with the citation
/// strings as a fallback for user-defined systems. Never throws for bad records: they end up in
/// `note`. `wkt_record` is the record's text up to its first NUL.
[[nodiscard]] las_crs interpret_las_crs(std::string const& wkt_record, bool wkt_in_evlr,
                                        las_geotiff_keys const& keys);

/// The bytes of a 1x1 classic little-endian TIFF whose only georeferencing is `keys`: the form
/// in which GDAL can interpret GeoTIFF keys. Pure (no GDAL); throws error_kind::input when the
/// records are too large for a classic TIFF.
[[nodiscard]] std::vector<std::uint8_t> geotiff_keys_as_tiff(las_geotiff_keys const& keys);

/// The WKT that a LAS 1.4 file stores for `crs`: `crs` itself when it is WKT that GDAL reads
/// (kept verbatim), else the WKT1 form of whatever OGRSpatialReference::SetFromUserInput makes
/// of it ("EPSG:32615"). Throws error_kind::usage when `crs` does not parse.
[[nodiscard]] std::string las_wkt_from_crs(std::string const& crs);

/// The GeoTIFF keys that GDAL writes for `crs` (WKT, "EPSG:n" or anything
/// OGRSpatialReference::SetFromUserInput accepts), for LAS versions before 1.4 where WKT is not
/// the standard CRS record. Throws error_kind::usage when `crs` does not parse.
[[nodiscard]] las_geotiff_keys geotiff_keys_from_crs(std::string const& crs);

}  // namespace heightgrid::io
