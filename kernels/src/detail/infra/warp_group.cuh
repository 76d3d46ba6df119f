#pragma once
// Reductions over a group of lanes that share a key (__match_any_sync): the per-point atomic
// kernels combine the lanes of one cell before touching memory.

#include <cstdint>

namespace heightgrid::detail {

/// Minimum over the lanes of `group` (the calling lane's, as __match_any_sync gives it) of a 64-bit
/// value, in two 32-bit hardware reductions: the high words, then the low words of the lanes whose
/// high word is the minimum. Every lane of the group calls it with the same `group`; the result is
/// valid in every lane of the group.
__device__ inline unsigned long long group_min(unsigned int group, unsigned long long v) noexcept
{
  auto const high = static_cast<unsigned int>(v >> 32);
  unsigned int const min_high = __reduce_min_sync(group, high);
  unsigned int const min_low = __reduce_min_sync(group, high == min_high ? static_cast<unsigned int>(v) : 0xffffffffU);
  return (static_cast<unsigned long long>(min_high) << 32) | min_low;
}

}  // namespace heightgrid::detail
