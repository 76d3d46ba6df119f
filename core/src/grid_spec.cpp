#include "heightgrid/core/grid_spec.hpp"

#include "heightgrid/core/error.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace heightgrid {
namespace {

void check_resolution(double xres, double yres)
{
  std::ostringstream msg;
  msg << "invalid resolution " << xres << " x " << yres << ": it must be finite and > 0";
  HG_EXPECTS(std::isfinite(xres) && std::isfinite(yres) && xres > 0.0 && yres > 0.0, error_kind::usage,
          msg.str());
}

std::uint32_t checked_size(double n, char const* axis, double span, double res)
{
  // 2^32 - 1 per axis at most; the product is checked against max_cells by the caller.
  if (!(n >= 1.0 && n <= 4294967295.0)) {
    std::ostringstream msg;
    msg << "the grid would need " << n << " " << axis << " (span " << span << " at resolution " << res
        << "); choose a coarser resolution or a smaller extent";
    throw error(error_kind::resource, msg.str());
  }
  return static_cast<std::uint32_t>(n);
}

/// Throws error_kind::usage when `res` is too small for coordinates near `lo`..`hi`: the snapped
/// origin is not finite, or one cell does not move it (the cell is below the spacing of doubles).
void check_precision(double lo, double hi, double origin, double res, char const* axis)
{
  double const far = std::max(std::abs(lo), std::abs(hi));
  if (std::isfinite(origin) && origin - res != origin && origin + res != origin && far + res != far) { return; }
  std::ostringstream msg;
  msg << "resolution " << res << " is too fine for " << axis << " coordinates near " << (std::abs(lo) > std::abs(hi) ? lo : hi)
      << ": a cell must be larger than the spacing of double-precision numbers there (about "
      << std::nextafter(far, HUGE_VAL) - far << "); choose a coarser resolution";
  throw error(error_kind::usage, msg.str());
}

void check_cells(grid_spec const& g)
{
  if (g.num_cells() > max_cells) {
    std::ostringstream msg;
    msg << "the grid would have " << g.cols << " x " << g.rows << " = " << g.num_cells()
        << " cells, more than the " << max_cells << " heightgrid supports; choose a coarser resolution";
    throw error(error_kind::resource, msg.str());
  }
}

}  // namespace

grid_spec grid_from_bounds(bounds const& b, double xres, double yres, bool tiled, edge_rule edge)
{
  check_resolution(xres, yres);
  HG_EXPECTS(!b.empty(), error_kind::input, "no points to grid: the input is empty after filtering");
  HG_EXPECTS(std::isfinite(b.xmin) && std::isfinite(b.xmax) && std::isfinite(b.ymin) &&
            std::isfinite(b.ymax),
          error_kind::internal, "grid_from_bounds: non-finite bounds");

  grid_spec g;
  g.xres = xres;
  g.yres = yres;
  g.edge = edge;
  g.x0 = std::floor(b.xmin / xres) * xres;
  g.y0 = std::ceil(b.ymax / yres) * yres;
  // A cell smaller than the spacing of doubles near the coordinates cannot be snapped (stepping
  // the origin by one cell leaves it where it is) nor told apart from its neighbours.
  check_precision(b.xmin, b.xmax, g.x0, xres, "x");
  check_precision(b.ymin, b.ymax, g.y0, yres, "y");
  // floor/ceil of a rounded quotient times the resolution can miss the extreme point by an ulp;
  // step the origin outwards until the extreme points map to column 0 / row 0 under the cell rule
  // (a step or two; check_precision made sure that each step moves the origin).
  while (std::floor((b.xmin - g.x0) / xres) < 0.0) { g.x0 -= xres; }
  while (grid_spec::row_below((g.y0 - b.ymax) / yres, edge) < 0.0) { g.y0 += yres; }

  double const cols = std::floor((b.xmax - g.x0) / xres) + 1.0;
  double const rows = grid_spec::row_below((g.y0 - b.ymin) / yres, edge) + 1.0;
  g.cols = checked_size(cols, "columns", b.xmax - g.x0, xres);
  g.rows = checked_size(rows, "rows", g.y0 - b.ymin, yres);
  if (!tiled) { check_cells(g); }
  return g;
}

grid_spec grid_from_extent(double xmin, double ymin, double xmax, double ymax, double xres, double yres,
                           bool tiled, edge_rule edge)
{
  check_resolution(xres, yres);
  std::ostringstream msg;
  msg << "invalid extent " << xmin << " " << ymin << " " << xmax << " " << ymax
      << ": it must be finite with xmin < xmax and ymin < ymax";
  HG_EXPECTS(std::isfinite(xmin) && std::isfinite(ymin) && std::isfinite(xmax) && std::isfinite(ymax) &&
            xmin < xmax && ymin < ymax,
          error_kind::usage, msg.str());
  grid_spec g;
  g.x0 = xmin;
  g.y0 = ymax;
  g.edge = edge;
  g.xres = xres;
  g.yres = yres;
  g.cols = checked_size(std::max(1.0, std::floor((xmax - xmin) / xres + 0.5)), "columns", xmax - xmin, xres);
  g.rows = checked_size(std::max(1.0, std::floor((ymax - ymin) / yres + 0.5)), "rows", ymax - ymin, yres);
  if (!tiled) { check_cells(g); }
  return g;
}

grid_spec tiling::tile(std::uint32_t tx, std::uint32_t ty) const noexcept
{
  grid_spec t = grid;
  t.col0 = tx * tile_cols;
  t.row0 = ty * tile_rows;
  t.cols = std::min(tile_cols, grid.cols - t.col0);
  t.rows = std::min(tile_rows, grid.rows - t.row0);
  return t;
}

bool tiling::tiles_meeting(bounds const& b, std::uint32_t margin, std::uint32_t& tx_first, std::uint32_t& tx_last,
                           std::uint32_t& ty_first, std::uint32_t& ty_last) const noexcept
{
  if (b.empty()) { return false; }
  // Columns and rows under the cell rule, as doubles (bounds may lie far outside the grid).
  double const m = static_cast<double>(margin);
  double const c_lo = std::floor((b.xmin - grid.x0) / grid.xres) - m;
  double const c_hi = std::floor((b.xmax - grid.x0) / grid.xres) + m;
  double const r_lo = grid_spec::row_below((grid.y0 - b.ymax) / grid.yres, grid.edge) - m;
  double const r_hi = grid_spec::row_below((grid.y0 - b.ymin) / grid.yres, grid.edge) + m;
  double const cols = static_cast<double>(grid.cols);
  double const rows = static_cast<double>(grid.rows);
  if (!(c_hi >= 0.0 && c_lo < cols && r_hi >= 0.0 && r_lo < rows)) { return false; }
  auto const clamp = [](double v, double hi) { return static_cast<std::uint32_t>(std::min(std::max(v, 0.0), hi - 1.0)); };
  tx_first = clamp(c_lo, cols) / tile_cols;
  tx_last = clamp(c_hi, cols) / tile_cols;
  ty_first = clamp(r_lo, rows) / tile_rows;
  ty_last = clamp(r_hi, rows) / tile_rows;
  return true;
}

tiling make_tiling(grid_spec const& grid, std::uint32_t tile_cols, std::uint32_t tile_rows)
{
  HG_EXPECTS(tile_cols > 0 && tile_rows > 0, error_kind::usage, "--tile-size: a tile must be at least one cell");
  tiling t{grid, std::min(tile_cols, std::max(grid.cols, 1u)), std::min(tile_rows, std::max(grid.rows, 1u))};
  std::ostringstream msg;
  msg << "a tile of " << t.tile_cols << " x " << t.tile_rows << " cells is more than the " << max_cells
      << " cells heightgrid bins at once; choose a smaller --tile-size";
  HG_EXPECTS(std::uint64_t{t.tile_cols} * t.tile_rows <= max_cells, error_kind::resource, msg.str());
  return t;
}

}  // namespace heightgrid
