#pragma once
// Points travel between stages in chunks of structure-of-arrays columns.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heightgrid {

/// Bits of point_chunk::flags (the LAS classification flags, kept in this order everywhere).
namespace point_flag {
inline constexpr std::uint8_t synthetic = 0x1;
inline constexpr std::uint8_t key_point = 0x2;
inline constexpr std::uint8_t withheld = 0x4;
inline constexpr std::uint8_t overlap = 0x8;
}  // namespace point_flag

/// A chunk of points as columns. x, y, z are always filled (same length); z is double so that
/// the range of a cell is exact until the final Float32 output. The attribute columns are either
/// empty (the source has no such attribute) or as long as x.
struct point_chunk {
  std::vector<double> x;
  std::vector<double> y;
  std::vector<double> z;
  std::vector<std::uint8_t> classification;     ///< ASPRS class (LAS), if the source has it
  std::vector<std::uint8_t> return_number;      ///< 1-based, if the source has it
  std::vector<std::uint8_t> number_of_returns;  ///< if the source has it
  std::vector<std::uint8_t> flags;              ///< point_flag bits, if the source has them

  [[nodiscard]] std::size_t size() const noexcept { return x.size(); }
  [[nodiscard]] bool empty() const noexcept { return x.empty(); }

  void clear() noexcept
  {
    x.clear();
    y.clear();
    z.clear();
    classification.clear();
    return_number.clear();
    number_of_returns.clear();
    flags.clear();
  }

  /// Appends the x/y/z columns of `other` (attributes are not carried: they are consumed by the
  /// filter stage before points are accumulated for gridding).
  void append_xyz(point_chunk const& other)
  {
    x.insert(x.end(), other.x.begin(), other.x.end());
    y.insert(y.end(), other.y.begin(), other.y.end());
    z.insert(z.end(), other.z.begin(), other.z.end());
  }
};

}  // namespace heightgrid
