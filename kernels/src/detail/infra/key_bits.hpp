#pragma once
// The bits a radix sort of cell keys looks at.

#include <cstdint>

namespace heightgrid::detail {

/// Bits that hold every key 0..max_key (ceil(log2(max_key + 1))), at least 1 (CUB sorts bits
/// [begin, end) with end > begin) and at most 32 (a cell key is a 32-bit cell_id). Sorting keys
/// 0..cells where `cells` is the sentinel of points outside: max_key = cells.
constexpr int key_bits(std::uint64_t max_key) noexcept
{
  int bits = 1;
  while (bits < 32 && (max_key >> bits) != 0) { ++bits; }
  return bits;
}
static_assert(key_bits(0) == 1 && key_bits(1) == 1 && key_bits(2) == 2 && key_bits(3) == 2 && key_bits(4) == 3 &&
              key_bits(0xFFFFFFFFull) == 32);

}  // namespace heightgrid::detail
