#pragma once
// Per-cell results -> GeoTIFF (or Cloud Optimized GeoTIFF), written atomically.

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace heightgrid::io {

struct raster_write_options {
  std::string format = "GTiff";                ///< "GTiff" or "COG" (case-insensitive)
  std::vector<std::string> creation_options;   ///< KEY=VALUE (--co); override the defaults by key
  bool overwrite = false;                      ///< replace an existing output
  std::string crs_wkt;                         ///< empty: no CRS written
  float nodata = default_nodata;               ///< value of empty cells in float bands
  std::vector<std::string> input_paths;        ///< inputs, which the output must not replace
};

/// Sample type of every band of a written file (GeoTIFF has one type per file).
enum class raster_data_type { uint32, float32, float64 };

/// GDAL's name of a data type: "UInt32", "Float32", "Float64".
[[nodiscard]] std::string_view raster_data_type_name(raster_data_type type) noexcept;

/// What write_grid() did, for the app to report.
struct write_report {
  raster_data_type data_type{raster_data_type::float32};
  /// Decisions the user should hear about, e.g. the switch to Float64 for large counts.
  std::vector<std::string> notes;
};

/// Everything about the output that can be checked before any work is done: the format and the
/// --co syntax, an existing output without `overwrite`, an output that is one of the inputs
/// (compared after resolving links), a missing or read-only directory.
/// Throws error_kind::usage for bad options and error_kind::output for the rest, e.g.
/// "out.tif: output exists; use --overwrite to replace it".
void check_output_path(std::string const& path, raster_write_options const& options);

/// Writes one band per metric in `bands` order; band description = metric_name, band metadata
/// METRIC_DESCRIPTION = metric_description, nodata set on every band.
///
/// Data type: UInt32 when the only band is count (empty cell = 0 points = nodata 0); otherwise
/// Float32, with count written as a float band whose empty cells are nodata. A count above 2^24
/// has no exact Float32 value, so then the whole file becomes Float64 (and a note says so).
/// The float columns of `results` must already hold `options.nodata` in empty cells (as
/// reduce_cells_cpu(..., nodata) produces them).
///
/// GTiff defaults: TILED=YES, COMPRESS=DEFLATE, PREDICTOR=3 (float) / 2 (integer),
/// BIGTIFF=IF_SAFER. COG defaults: COMPRESS=DEFLATE, PREDICTOR=YES, BIGTIFF=IF_SAFER,
/// RESAMPLING=NEAREST. A --co with the same key replaces a default.
///
/// The file is written as ".<name>.tmp-<pid>" next to `path` and renamed over it once complete:
/// on any failure the temporary is removed and nothing appears at `path`. Runs
/// check_output_path() first. Throws error_kind::output (with GDAL's message) on failure.
write_report write_grid(std::string const& path, grid_spec const& grid, cell_results const& results,
                        std::vector<metric> const& bands, raster_write_options const& options);

}  // namespace heightgrid::io
