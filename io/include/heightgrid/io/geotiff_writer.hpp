#pragma once
// Per-cell results -> GeoTIFF (or Cloud Optimized GeoTIFF), written atomically.

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace heightgrid::io {

/// The inputs of a job, which no output may replace, known by their identity on disk (device and
/// inode; an input that does not exist by its resolved path), so that an output is checked against
/// thousands of inputs with one stat: a tiled job checks every tile it writes. Cheap to copy.
class input_files {
 public:
  input_files() = default;
  explicit input_files(std::vector<std::string> const& paths);
  /// The input that writing `path` would replace, or nullptr.
  [[nodiscard]] std::string const* same_as(std::string const& path) const;

 private:
  struct index;
  std::shared_ptr<index const> index_;
};

/// Sample type of every band of a written file (GeoTIFF has one type per file).
enum class raster_data_type { uint32, float32, float64 };

/// --fill: how empty cells are filled after reduction.
enum class fill_method : std::uint8_t {
  none,
  nearest,  ///< the value of the nearest non-empty cell within the radius (Euclidean, in cells)
  idw,      ///< GDALFillNodata: inverse distance weighting within the radius (gdal_fillnodata.py)
  tin,      ///< linear in the triangles of a Delaunay triangulation of the non-empty cells (GDAL's)
};

/// --fill METHOD (none, nearest, idw, tin); nullopt for another name.
[[nodiscard]] std::optional<fill_method> parse_fill_method(std::string const& name);

struct fill_options {
  fill_method method{fill_method::none};
  double radius{10.0};  ///< --fill-radius: the farthest a value is taken from, in cells (nearest, idw)
  double max_edge{0.0};  ///< --fill-max-edge: tin's longest triangle edge, in cells (0: any)
};

/// Whether --fill fills band `m` (count-like bands and density stay as counted).
[[nodiscard]] bool fill_applies(metric m) noexcept;

/// --fill's options for `bands`: a radius of at least one cell, a finite max edge, a band to fill,
/// and (`tiled`) tin's --fill-max-edge set (the margin a tile is filled with). Throws error_kind::usage.
void check_fill(std::vector<metric> const& bands, fill_options const& fill, bool tiled);

/// Cells around a tile that fill_tiles reads to fill it (what a value may come from, twice).
[[nodiscard]] int fill_margin(fill_options const& fill) noexcept;

struct raster_write_options {
  std::string format = "GTiff";                ///< "GTiff" or "COG" (case-insensitive)
  std::optional<raster_data_type> data_type;   ///< --ot: forced; otherwise chosen from the bands
  std::vector<std::string> creation_options;   ///< KEY=VALUE (--co); override the defaults by key
  bool overwrite = false;                      ///< replace an existing output
  std::string crs_wkt;                         ///< empty: no CRS written
  float nodata = default_nodata;               ///< value of empty cells in float bands
  input_files inputs;                          ///< which the output must not replace
  double prange_lo = default_prange_lo;        ///< named in a prange band's description
  double prange_hi = default_prange_hi;
  /// Empty cells of every float band but count and density filled before the file is published,
  /// and a last band "filled" (1 where the first filled band was empty and was filled).
  fill_options fill;
};

/// GDAL's name of a data type: "UInt32", "Float32", "Float64".
[[nodiscard]] std::string_view raster_data_type_name(raster_data_type type) noexcept;

/// --ot's value by GDAL's name (case-insensitive): Float32, Float64 or UInt32 (count alone).
/// Throws error_kind::usage naming the value and the types heightgrid writes.
[[nodiscard]] raster_data_type parse_raster_data_type(std::string const& name);

/// The output format for `path` as GDAL's tools infer it: `requested` (--of, "" when not given) if
/// given, else from the extension (".tif", ".tiff" or none: GTiff). An extension that belongs to
/// another GDAL raster driver (".png": PNG) is refused, since heightgrid writes GTiff and COG
/// only, and so is one that contradicts `requested` ("-o out.png --of COG").
/// Throws error_kind::usage: "out.png: the extension .png is GDAL's PNG format, ...".
[[nodiscard]] std::string output_format_for(std::string const& path, std::string const& requested);

/// What write_grid() or raster_writer::commit() did, for the app to report.
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
/// GTiff defaults: TILED=YES, COMPRESS=DEFLATE, ZLEVEL=1, no predictor, BIGTIFF=IF_SAFER,
/// NUM_THREADS=ALL_CPUS, INTERLEAVE=BAND (each band's blocks written as they are). COG defaults:
/// COMPRESS=DEFLATE, LEVEL=1, no predictor, BIGTIFF=IF_SAFER, RESAMPLING=NEAREST, NUM_THREADS=ALL_CPUS.
/// A --co with the same key replaces a default (NUM_THREADS=1 compresses on the calling thread only).
///
/// The file is written as ".<name>.tmp-<pid>" next to `path` and renamed over it once complete:
/// on any failure the temporary is removed and nothing appears at `path`. Runs
/// check_output_path() first. Throws error_kind::output (with GDAL's message) on failure.
///
/// A raster_writer fed the whole grid in one window: the file is byte for byte the one a
/// raster_writer fed the same cells in row bands of any size writes.
write_report write_grid(std::string const& path, grid_spec const& grid, cell_results const& results,
                        std::vector<metric> const& bands, raster_write_options const& options);

/// Writes a grid's bands window by window (row bands, in any order), then publishes the file
/// atomically: the streaming form of write_grid(), with the same bands, data type, metadata,
/// creation options and file, for a caller that holds one row band of results at a time.
///
///   raster_writer out(path, grid, bands, options, acc.max_count());
///   for (std::uint32_t r = 0; r < grid.rows; r += window_rows) {
///     out.write_rows(r, acc.finalize_rows(r, std::min(window_rows, grid.rows - r), grid.cols, request, nodata));
///   }
///   auto const report = out.commit();
///
/// Block alignment. GDAL compresses a TIFF block (a tile, or a strip) when it is written out of
/// its block cache, on NUM_THREADS worker threads; a block written half-filled is compressed and
/// written, then read back, completed and written again at the end of the file. So the writer only
/// hands GDAL complete block rows (block_rows() rows, all bands; the last block row may be
/// shorter) and flushes each one to the compression threads at once: rows of a block row that is
/// not yet complete are held in a buffer of one block row until its other rows arrive. A caller
/// whose windows start on a multiple of block_rows() (and end on one, or at the last row) is never
/// held back; windows of any other size cost at most one buffered block row per block row they
/// leave unfinished. Compression of block row k runs while the caller prepares later rows, GDAL's
/// cache holds about one block row, and GDAL sees the same writes, so writes the same file,
/// however an in-order caller slices the rows (out of order, the blocks' order in the file follows
/// the order block rows complete; the values are the same).
///
/// Not thread-safe: one thread calls write_rows() and commit().
class raster_writer {
 public:
  /// Checks the output (check_output_path()), decides the data type as write_grid() does from
  /// `max_count` (the largest cell count of the whole grid; only used when `bands` has count),
  /// creates the temporary file with every band, band description, METRIC_DESCRIPTION, nodata,
  /// geotransform and CRS, and registers it for removal by a signal handler (temp_registry.hpp).
  /// For COG, the temporary is a tiled GTiff (ZSTD level 1, tiles of the COG's BLOCKSIZE) that
  /// commit() converts. Throws error_kind::usage for bad options or no bands, error_kind::output
  /// (with GDAL's message) when the file cannot be created.
  raster_writer(std::string path, grid_spec const& grid, std::vector<metric> bands, raster_write_options options,
                std::uint64_t max_count);
  raster_writer(raster_writer&&) noexcept;
  raster_writer& operator=(raster_writer&&) noexcept;
  raster_writer(raster_writer const&) = delete;
  raster_writer& operator=(raster_writer const&) = delete;
  /// Without commit(): closes and removes the temporary; nothing appears at the path.
  ~raster_writer();

  /// Sample type of every band of the file.
  [[nodiscard]] raster_data_type data_type() const noexcept;
  /// Rows of one TIFF block of the file being written: windows aligned to it are never buffered.
  [[nodiscard]] std::size_t block_rows() const noexcept;
  /// The creation options given to GDAL for the output, KEY=VALUE, defaults merged with --co.
  [[nodiscard]] std::vector<std::string> creation_options() const;

  /// Writes rows [row0, row0 + k) of every band, where `rows` holds k whole rows (k * grid.cols
  /// cells, k >= 1) in each column named by the writer's bands, laid out as cell_results always is
  /// (row-major, empty cells = nodata in float columns and 0 in count), i.e. what
  /// host_grid::finalize_rows() or reduce_cells_cpu() produces. Other columns are ignored.
  /// Windows may come in any order; each row must be written exactly once.
  /// Throws error_kind::internal for a window outside the grid, a row written twice, columns of
  /// different sizes, or a count above the `max_count` the writer was created with;
  /// error_kind::output (with GDAL's message) when GDAL fails. After a throw, only destruction is
  /// meaningful.
  void write_rows(std::size_t row0, cell_results const& rows);

  /// Writes what is still buffered, closes the file (GDAL compresses the blocks still in its cache),
  /// builds the COG from the temporary GTiff for COG output, and renames the result over the
  /// path. Throws error_kind::internal when rows were never written, error_kind::output (with
  /// GDAL's message) when GDAL fails; either way the temporary is removed and nothing appears at
  /// the path. Call once.
  write_report commit();

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

/// A tile of a mosaic for fill_tiles: its file, its place in the whole grid, and whether it was written.
struct mosaic_tile {
  std::string path;
  std::uint32_t col0{0}, row0{0};  ///< its first cell in the whole grid
  std::uint32_t cols{0}, rows{0};
  bool written{false};  ///< false: the tile had no point (no file); made when the fill reaches into it
};

/// --fill across the tiles of a mosaic of the whole grid `whole`, after every tile was written
/// unfilled: each tile is filled from a window of the mosaic reaching past its edges as far as a
/// value may come from (twice the radius, tin: --fill-max-edge, plus a cell), so that its cells take
/// the values one raster of the whole grid gives them; a tile that had no point is made where the
/// fill reaches into it. Each gets the last band "filled". Tiles are replaced (and made) once all
/// are filled: hidden ".NAME.fill-PID" files until then. Returns warnings (tin) and, in `made`, the
/// tiles made.
[[nodiscard]] std::vector<std::string> fill_tiles(grid_spec const& whole, std::vector<mosaic_tile> const& tiles,
                                                  std::vector<metric> const& bands, raster_write_options const& options,
                                                  std::vector<std::string>& made);

}  // namespace heightgrid::io
