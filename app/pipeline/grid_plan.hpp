#pragma once
// How a grid job plans its passes, as pure functions of what it knows before reading: the bands of
// rows a memory budget allows, and the points an order-statistics band may keep. No I/O: tested alone
// (tests/app/pipeline_test.cpp, GridPlan).

#include "heightgrid/core/grid_spec.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace heightgrid::app {

/// Each band of rows is one pass over every input: beyond this many the job is refused with the
/// numbers (a finer --res than the data supports, or a --memory far too small) rather than run
/// for hours.
inline constexpr std::uint64_t max_band_passes = 64;

/// What the bands of a grid cost.
struct band_plan_facts {
  grid_spec grid;
  std::uint64_t bytes_per_cell{0};   ///< accumulators (accumulator_bytes_per_cell, tagged counts)
  std::uint64_t points{0};           ///< known points (0: unknown)
  std::uint64_t bytes_per_point{0};  ///< what a kept point costs (order statistics; 0 otherwise)
  std::uint64_t budget{0};           ///< the memory for them (host, device: the smaller)
  bool budget_from_option{false};    ///< --memory set it (named in the error)
};

/// Bands of rows the grid is binned in, one pass each: the accumulators and kept points over the
/// budget, rounded up; at most the grid's rows. Throws error_kind::resource naming the sizes past
/// max_band_passes (or more bands than rows).
[[nodiscard]] int plan_bands(band_plan_facts const& f);

/// The bands of `bands` rows each (the last shorter) of `grid`, the first one last (a stack).
[[nodiscard]] std::vector<grid_band> band_stack(grid_spec const& grid, int bands);

/// Points a band's order store may hold: what `budget` leaves beside its accumulators, at least 1.
[[nodiscard]] std::uint64_t order_capacity(std::uint64_t budget, std::uint64_t accumulator_bytes,
                                           std::uint64_t bytes_per_point) noexcept;

/// "1.5 GiB", "640 MiB".
[[nodiscard]] std::string format_bytes(std::uint64_t b);

}  // namespace heightgrid::app
