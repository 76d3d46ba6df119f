#include "pipeline/grid_plan.hpp"

#include "heightgrid/core/error.hpp"

#include <algorithm>
#include <sstream>

namespace heightgrid::app {

std::string format_bytes(std::uint64_t b)
{
  std::ostringstream s;
  s.precision(3);
  if (b < (std::uint64_t{1} << 20)) {
    s << b << " bytes";  // a budget of nothing usable reads as such, not as 9.54e-07 MiB
  } else if (b >= (std::uint64_t{1} << 30)) {
    s << static_cast<double>(b) / static_cast<double>(std::uint64_t{1} << 30) << " GiB";
  } else {
    s << static_cast<double>(b) / static_cast<double>(std::uint64_t{1} << 20) << " MiB";
  }
  return s.str();
}

int plan_bands(band_plan_facts const& f)
{
  // Kept points of order statistics spread over the bands as the points do: planned as if evenly,
  // and a band that overflows is split (grid_job's pass loop).
  grid_spec const& g = f.grid;
  std::uint64_t const bytes = g.num_cells() * f.bytes_per_cell + f.points * f.bytes_per_point;
  std::uint64_t const budget = std::max<std::uint64_t>(f.budget, 1);
  // Rounded up without overflow (the budget may be the largest uint64).
  std::uint64_t const passes = std::max<std::uint64_t>(1, bytes / budget + (bytes % budget != 0 ? 1 : 0));
  if (passes > max_band_passes || (passes > 1 && g.rows < passes)) {
    std::ostringstream m;
    m << "a grid of " << g.cols << " x " << g.rows << " = " << g.num_cells() << " cells needs " << format_bytes(bytes)
      << (f.bytes_per_point > 0 ? " of accumulators and of the points that percentiles keep"
                                : " of accumulators for these metrics")
      << ", but the memory budget is " << format_bytes(budget) << " ("
      << (f.budget_from_option ? "--memory" : "default: half the available memory") << "): " << passes
      << " passes over the input, more than " << max_band_passes
      << "; use a coarser --res, a smaller --te or a larger --memory";
    throw error(error_kind::resource, m.str());
  }
  return static_cast<int>(std::min<std::uint64_t>(passes, g.rows));
}

std::vector<grid_band> band_stack(grid_spec const& grid, int bands)
{
  auto const n = static_cast<std::uint32_t>(std::max(bands, 1));
  std::uint32_t const rows_per_band = (grid.rows + n - 1) / n;
  std::vector<grid_band> todo;
  for (std::uint32_t first = 0; first < grid.rows; first += rows_per_band) {
    todo.push_back(grid_band{grid, first, std::min(rows_per_band, grid.rows - first)});
  }
  std::reverse(todo.begin(), todo.end());
  return todo;
}

std::uint64_t order_capacity(std::uint64_t budget, std::uint64_t accumulator_bytes, std::uint64_t bytes_per_point) noexcept
{
  if (bytes_per_point == 0) { return 0; }
  return budget > accumulator_bytes ? std::max<std::uint64_t>(1, (budget - accumulator_bytes) / bytes_per_point) : 1;
}

}  // namespace heightgrid::app
