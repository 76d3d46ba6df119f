#pragma once
// A LAS point record as stored (ASPRS LAS 1.4 R15, point data record formats 0-10): where its
// fields are and how the attributes the filters look at are packed. One definition for every
// decoder of records — the CPU readers (io/) and the GPU's binning of raw records (kernels/) — so
// both judge and bin every point alike.
//
// Host-clean, also compiled by nvcc (like grid_spec.hpp).

#include "heightgrid/core/grid_spec.hpp"  // HG_HOST_DEVICE

#include <cstddef>
#include <cstdint>
#include <limits>

namespace heightgrid {

/// Byte offsets inside a point record (the same in every format, except where named).
namespace las_point_at {
inline constexpr std::size_t x = 0;
inline constexpr std::size_t y = 4;
inline constexpr std::size_t z = 8;
inline constexpr std::size_t intensity = 12;
inline constexpr std::size_t returns = 14;  // formats 0-5: return 3 bits, count 3 bits, scan dir, edge
                                            // formats 6-10: return 4 bits, count 4 bits
inline constexpr std::size_t legacy_classification = 15;  // class 5 bits, then 3 flag bits
inline constexpr std::size_t legacy_gps_time = 20;        // formats 1, 3, 4, 5
inline constexpr std::size_t extended_flags = 15;  // flags 4 bits, channel 2, scan dir, edge
inline constexpr std::size_t extended_classification = 16;
inline constexpr std::size_t extended_gps_time = 22;
}  // namespace las_point_at

/// A little-endian int32 at any alignment (records are packed: a 30-byte record's X is not
/// 4-byte aligned). Byte loads assembled in a register: no alignment trap on the device, and the
/// host compiler turns it into one load.
HG_HOST_DEVICE inline std::int32_t las_load_i32(std::uint8_t const* p) noexcept
{
  std::uint32_t const v = static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
                          (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
  return static_cast<std::int32_t>(v);
}

/// The attributes of one record that filtering looks at; flags as point_flag bits.
struct las_record_attributes {
  std::uint8_t classification;
  std::uint8_t flags;
  std::uint8_t return_number;
  std::uint8_t number_of_returns;
};

/// Decodes the attributes of the record at `p`; `extended` selects the layout of formats 6-10.
HG_HOST_DEVICE inline las_record_attributes las_attributes(std::uint8_t const* p, bool extended) noexcept
{
  std::uint8_t const returns = p[las_point_at::returns];
  if (extended) {
    // Bits 0-3 of the flags byte: synthetic, key-point, withheld, overlap: point_flag's order.
    return {p[las_point_at::extended_classification], static_cast<std::uint8_t>(p[las_point_at::extended_flags] & 0x0F),
            static_cast<std::uint8_t>(returns & 0x0F), static_cast<std::uint8_t>(returns >> 4)};
  }
  // Class in bits 0-4; synthetic, key-point, withheld in bits 5-7, which shifted down are
  // point_flag's synthetic, key_point, withheld. Overlap is class 12 in these formats.
  std::uint8_t const c = p[las_point_at::legacy_classification];
  return {static_cast<std::uint8_t>(c & 0x1F), static_cast<std::uint8_t>(c >> 5),
          static_cast<std::uint8_t>(returns & 0x07), static_cast<std::uint8_t>((returns >> 3) & 0x07)};
}

/// What binning raw records found for one source: the points each filter rule removed and the
/// stored-integer bounds of the points kept (lo > hi on an axis: none kept). Zeroed memory is not
/// an empty record_stats: start from `las_record_stats{}`.
struct las_record_stats {
  unsigned long long non_finite{0};
  unsigned long long by_class{0};
  unsigned long long withheld{0};
  unsigned long long by_return{0};
  unsigned long long by_z{0};
  std::int32_t lo[3]{std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::max(),
                     std::numeric_limits<std::int32_t>::max()};
  std::int32_t hi[3]{std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::min(),
                     std::numeric_limits<std::int32_t>::min()};

  [[nodiscard]] bool any_kept() const noexcept { return lo[0] <= hi[0]; }

  void add(las_record_stats const& o) noexcept
  {
    non_finite += o.non_finite;
    by_class += o.by_class;
    withheld += o.withheld;
    by_return += o.by_return;
    by_z += o.by_z;
    for (int a = 0; a < 3; ++a) {
      lo[a] = o.lo[a] < lo[a] ? o.lo[a] : lo[a];
      hi[a] = o.hi[a] > hi[a] ? o.hi[a] : hi[a];
    }
  }
};

}  // namespace heightgrid
