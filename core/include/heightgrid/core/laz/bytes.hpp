#pragma once
// Little-endian loads and stores of a LAZ chunk's raw fields (host and device).

#include "heightgrid/core/laz/hd.hpp"

#include <cstdint>

namespace heightgrid::detail::laz {

HG_LAZ_HD_INLINE std::uint32_t load_u16(std::uint8_t const* p) { return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8); }
HG_LAZ_HD_INLINE std::uint32_t load_u32(std::uint8_t const* p)
{
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}
HG_LAZ_HD_INLINE std::uint64_t load_u64(std::uint8_t const* p)
{
  return std::uint64_t{load_u32(p)} | (std::uint64_t{load_u32(p + 4)} << 32);
}
HG_LAZ_HD_INLINE void store_u16(std::uint8_t* p, std::uint32_t v)
{
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}
HG_LAZ_HD_INLINE void store_u64(std::uint8_t* p, std::uint64_t v)
{
  for (int b = 0; b < 8; ++b) { p[b] = static_cast<std::uint8_t>(v >> (8 * b)); }
}

}  // namespace heightgrid::detail::laz
