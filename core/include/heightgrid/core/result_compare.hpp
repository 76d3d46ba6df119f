#pragma once
// Are two backends' bands the same? The output convention (metrics.hpp) makes min, max, range
// and count bit-identical across backends and modes; mean and stddev come from double sums whose
// order may differ, so they may differ by one unit in the last place of the float.

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace heightgrid {

/// Distance between two floats in units in the last place: 0 for identical bit patterns (the
/// same NaN included) and for +0 / -0; the maximum for a NaN against anything but itself.
[[nodiscard]] std::uint64_t ulp_distance(float a, float b) noexcept;

/// The first cell where two results disagree.
struct band_difference {
  metric band{metric::range};
  std::uint64_t cell{0};
  double a{0.0}, b{0.0};  ///< the two values (counts converted)
  std::string describe() const;  ///< "band min, cell 12: 1.5 [0x3fc00000] vs 1.25 [0x3fa00000]"
};

/// Compares the requested bands of `a` and `b`: min/max/range/count bit for bit, mean/stddev
/// within `mean_ulps` float ulps. Bands are checked in metric order (range, min, max, count, mean,
/// stddev); the first differing cell of the first differing band is returned. A band whose
/// lengths differ is a difference at the first cell past the shorter one.
[[nodiscard]] std::optional<band_difference> first_difference(cell_results const& a, cell_results const& b,
                                                               metric_request const& request,
                                                               std::uint64_t mean_ulps = 1);

/// `heightgrid compare`'s check of one mode's bands against the first mode's (first_difference,
/// mean/stddev within 1 ulp): "" when they agree, else "modes thread and warp differ: band min,
/// cell 12: ... (row 0, col 12; thread first)", the cell placed in `grid`.
[[nodiscard]] std::string mode_mismatch(std::string const& first_mode, cell_results const& first,
                                        std::string const& mode, cell_results const& bands,
                                        metric_request const& request, grid_spec const& grid);

/// The verdict that ends a `compare` run once its report is out: modes that must agree and did
/// not are a bug, so a non-empty `mismatch` (mode_mismatch) throws error_kind::internal (exit 70)
/// with "compare: " + mismatch; an empty one returns.
void require_modes_agree(std::string const& mismatch);

}  // namespace heightgrid
