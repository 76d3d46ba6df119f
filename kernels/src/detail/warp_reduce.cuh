#pragma once
// Warp-wide reductions by __shfl_down_sync. Every lane of the warp must call them (the mask is
// full_warp_mask: idle lanes pass the identity, +inf for min, -inf for max, 0 for sums); the
// result is valid in lane 0 only.

#include "detail/cell_store.cuh"
#include "detail/launch.cuh"

namespace heightgrid::detail {

/// Minimum over the warp, valid in lane 0. Example: lanes hold [5, 3, +inf, ...] -> lane 0: 3.
__device__ inline double warp_min(double v) noexcept
{
  for (int delta = warp_size / 2; delta > 0; delta /= 2) {
    v = min_of(v, __shfl_down_sync(full_warp_mask, v, delta));
  }
  return v;
}

/// Maximum over the warp, valid in lane 0. Example: lanes hold [5, 3, -inf, ...] -> lane 0: 5.
__device__ inline double warp_max(double v) noexcept
{
  for (int delta = warp_size / 2; delta > 0; delta /= 2) {
    v = max_of(v, __shfl_down_sync(full_warp_mask, v, delta));
  }
  return v;
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
