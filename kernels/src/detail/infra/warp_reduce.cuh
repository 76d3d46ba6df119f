#pragma once
// Warp-wide reductions. Every lane of the warp must call them (the mask is full_warp_mask: idle
// lanes pass the identity, +inf for min, -inf for max, 0 for sums); where the result is valid is
// said at each.

#include "detail/reduce/cell_store.cuh"
#include "detail/infra/launch.cuh"

namespace heightgrid::detail {

/// Minimum and maximum over the warp, valid in every lane (xor butterfly: min and max are exact,
/// so the order of the merges does not matter). The one warp min/max of the kernels.
/// Example: lanes hold lo=[5, 3, +inf, ...], hi=[5, 7, -inf, ...] -> every lane: lo=3, hi=7.
__device__ inline void warp_min_max(double& lo, double& hi) noexcept
{
#pragma unroll
  for (int delta = warp_size / 2; delta > 0; delta /= 2) {
    lo = min_of(lo, __shfl_xor_sync(full_warp_mask, lo, delta));
    hi = max_of(hi, __shfl_xor_sync(full_warp_mask, hi, delta));
  }
}

/// Sum over the warp (a fixed tree: deterministic for a given input), valid in lane 0.
/// Example: lanes hold [1, 2, 0, ...] -> lane 0: 3.
__device__ inline double warp_sum(double v) noexcept
{
  for (int delta = warp_size / 2; delta > 0; delta /= 2) {
    v += __shfl_down_sync(full_warp_mask, v, delta);
  }
  return v;
}

}  // namespace heightgrid::detail
