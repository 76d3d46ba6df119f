#pragma once
// The raster grid and the one rule that puts a point into a cell.
//
// This header is host-clean but also compiled by nvcc (kernels/): the cell rule is a single
// inline function shared by every backend, so cell assignment is bit-identical by construction.

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__CUDACC__)
#define HG_HOST_DEVICE __host__ __device__
#else
#define HG_HOST_DEVICE
#endif

namespace heightgrid {

/// Linear cell index, row-major from the top-left cell. Grids are limited to 2^32 - 1 cells.
using cell_id = std::uint32_t;
/// Cell id of a point that falls outside the grid (or has a non-finite coordinate).
inline constexpr cell_id no_cell = std::numeric_limits<cell_id>::max();
/// Largest number of cells a grid may have (no_cell stays reserved).
inline constexpr std::uint64_t max_cells = std::numeric_limits<cell_id>::max() - 1ULL;

/// Which cell a point exactly on a horizontal cell edge belongs to (--edge-rule). Vertical edges
/// are the same under both: a point on a cell's left edge belongs to it.
///  - gdal: rows are counted from the top, as GDAL's inverse geotransform does: a point on a
///    horizontal edge belongs to the cell below it (whose top edge it is on).
///  - pdal: PDAL's writers.gdal counts rows from the bottom, so such a point belongs to the cell
///    above it (whose bottom edge it is on).
/// E.g. y0 = 10, yres = 1, y = 8 (the edge between row 1, spanning 9..8, and row 2, 8..7):
/// gdal -> row 2, pdal -> row 1.
enum class edge_rule : std::uint8_t { gdal, pdal };

/// A north-up grid in GDAL's convention: (x0, y0) is the outer corner of the top-left cell,
/// cells are xres wide and yres tall (both positive), rows grow southwards.
struct grid_spec {
  double x0{0.0};
  double y0{0.0};
  double xres{1.0};
  double yres{1.0};
  std::uint32_t cols{0};
  std::uint32_t rows{0};
  /// A tile of a larger grid: this grid's cells are columns [col0, col0 + cols) and rows
  /// [row0, row0 + rows) of the grid whose top-left corner is (x0, y0). The cell rule stays the
  /// larger grid's (its column minus col0, exact in double), so a tile's cells are bit-identical to
  /// the same cells of the whole grid. 0 for a grid of its own.
  std::uint32_t col0{0};
  std::uint32_t row0{0};
  /// Where points exactly on a horizontal edge go; every backend reads it from here (cell_of).
  edge_rule edge{edge_rule::gdal};

  [[nodiscard]] std::uint64_t num_cells() const noexcept
  {
    return static_cast<std::uint64_t>(cols) * static_cast<std::uint64_t>(rows);
  }

  /// GDAL geotransform: x = gt[0] + col*gt[1] + row*gt[2], y = gt[3] + col*gt[4] + row*gt[5].
  /// North-up, so the rotation terms are 0 and gt[5] is the negative cell height.
  [[nodiscard]] std::array<double, 6> geotransform() const noexcept
  {
    return {x0 + static_cast<double>(col0) * xres, xres, 0.0, y0 - static_cast<double>(row0) * yres, 0.0, -yres};
  }

  /// The row, counted from the top edge y0 of the whole grid (row0 not subtracted), of a point
  /// `t` = (y0 - y) / yres cells below it: floor(t) under the gdal rule, ceil(t) - 1 under the pdal
  /// rule (the same for every t that is not a whole number).
  HG_HOST_DEVICE [[nodiscard]] static double row_below(double t, edge_rule rule) noexcept
  {
    return rule == edge_rule::gdal ? ::floor(t) : ::ceil(t) - 1.0;
  }

  /// The cell of (x, y): col = floor((x - x0) / xres), row = floor((y0 - y) / yres) (gdal edge rule;
  /// pdal: ceil(...) - 1), evaluated in double precision exactly as written (the
  /// inverse-geotransform rule; no fused multiply-add, no reciprocal). Cells are half-open: a point
  /// on the left edge of a cell belongs to it, and on the top edge (gdal) or the bottom edge (pdal).
  /// Returns no_cell for points outside the grid and for NaN/Inf coordinates.
  HG_HOST_DEVICE [[nodiscard]] cell_id cell_of(double x, double y) const noexcept
  {
    double const c = ::floor((x - x0) / xres) - static_cast<double>(col0);
    double const r = row_below((y0 - y) / yres, edge) - static_cast<double>(row0);
    // Written so that NaN compares false and lands in no_cell.
    if (!(c >= 0.0 && c < static_cast<double>(cols) && r >= 0.0 && r < static_cast<double>(rows))) {
      return no_cell;
    }
    return static_cast<cell_id>(r) * cols + static_cast<cell_id>(c);
  }
};

/// Which part of a grid an accumulator covers: rows [first_row, first_row + rows) of `grid`.
/// Points are binned with grid.cell_of on the whole grid (the one rule), then kept when their row is
/// in the band: a grid too large for memory is processed band by band with bit-identical cells.
struct grid_band {
  grid_spec grid;
  std::uint32_t first_row{0};
  std::uint32_t rows{0};

  [[nodiscard]] std::uint64_t first_cell() const noexcept { return std::uint64_t{first_row} * grid.cols; }
  [[nodiscard]] std::uint64_t cells() const noexcept { return std::uint64_t{rows} * grid.cols; }
  /// The whole grid as one band.
  [[nodiscard]] static grid_band whole(grid_spec const& g) noexcept { return {g, 0, g.rows}; }
};

/// Axis-aligned bounds of a set of points; empty until the first extend().
struct bounds {
  double xmin{std::numeric_limits<double>::infinity()};
  double ymin{std::numeric_limits<double>::infinity()};
  double xmax{-std::numeric_limits<double>::infinity()};
  double ymax{-std::numeric_limits<double>::infinity()};

  [[nodiscard]] bool empty() const noexcept { return !(xmin <= xmax && ymin <= ymax); }
  void extend(double x, double y) noexcept
  {
    xmin = x < xmin ? x : xmin;
    xmax = x > xmax ? x : xmax;
    ymin = y < ymin ? y : ymin;
    ymax = y > ymax ? y : ymax;
  }
  void extend(bounds const& other) noexcept
  {
    if (other.empty()) { return; }
    extend(other.xmin, other.ymin);
    extend(other.xmax, other.ymax);
  }
};

/// Grid covering every point of `b`, with its origin snapped to multiples of the resolution
/// (like `gdal -tap`), so that tiles gridded in separate runs line up. Every point inside `b`
/// gets a cell: cols = floor((xmax - x0) / xres) + 1, rows = floor((y0 - ymin) / yres) + 1.
/// Throws error_kind::usage for a non-positive/non-finite resolution, error_kind::input for empty
/// bounds, and error_kind::resource when the grid would exceed max_cells (unless `tiled`: a grid
/// that is only ever binned tile by tile may hold more cells than one accumulator can).
/// Under the pdal edge rule the top row is the one whose bottom edge the highest point lies on or above:
/// the origin moves up a cell when that point is on a multiple of the resolution.
grid_spec grid_from_bounds(bounds const& b, double xres, double yres, bool tiled = false,
                           edge_rule edge = edge_rule::gdal);

/// Grid for an explicit extent (`--te xmin ymin xmax ymax`), as GDAL sizes it:
/// cols = floor((xmax - xmin) / xres + 0.5), at least 1. Points outside are dropped.
grid_spec grid_from_extent(double xmin, double ymin, double xmax, double ymax, double xres, double yres,
                           bool tiled = false, edge_rule edge = edge_rule::gdal);

/// A grid cut into tiles of tile_cols x tile_rows cells (the last column and row of tiles cropped):
/// tile (tx, ty) is a grid_spec with col0/row0 set, so its cells are the whole grid's, bit for bit.
struct tiling {
  grid_spec grid;  ///< the whole grid (col0 = row0 = 0); may exceed max_cells
  std::uint32_t tile_cols{0};
  std::uint32_t tile_rows{0};

  [[nodiscard]] std::uint32_t tiles_x() const noexcept { return (grid.cols + tile_cols - 1) / tile_cols; }
  [[nodiscard]] std::uint32_t tiles_y() const noexcept { return (grid.rows + tile_rows - 1) / tile_rows; }
  [[nodiscard]] std::uint64_t count() const noexcept { return std::uint64_t{tiles_x()} * tiles_y(); }
  /// Tile (tx, ty): tx counts columns of tiles from the west, ty rows of tiles from the north.
  [[nodiscard]] grid_spec tile(std::uint32_t tx, std::uint32_t ty) const noexcept;
  /// The tiles whose cells `b` meets under the cell rule, widened by `margin` cells on each side,
  /// as [tx_first, tx_last] x [ty_first, ty_last]; false when none does.
  [[nodiscard]] bool tiles_meeting(bounds const& b, std::uint32_t margin, std::uint32_t& tx_first,
                                   std::uint32_t& tx_last, std::uint32_t& ty_first, std::uint32_t& ty_last) const noexcept;
};

/// Cuts `grid` into tiles of `tile_cols` x `tile_rows` cells. Throws error_kind::usage for a zero
/// tile size and error_kind::resource when a tile exceeds max_cells.
tiling make_tiling(grid_spec const& grid, std::uint32_t tile_cols, std::uint32_t tile_rows);

}  // namespace heightgrid
