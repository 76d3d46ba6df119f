#pragma once
// Which LAS attribute is gridded (--dimension): its place in a point record, its type and its
// scale and offset, for the standard dimensions (by PDAL's names) and the extra bytes the Extra
// Bytes VLR describes (by their names).

#include "las/las_internal.hpp"
#include "las/las_layout.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace heightgrid::io::detail {

/// How a dimension's value is stored in a record.
enum class las_value_type : std::uint8_t {
  u8, i8, u16, i16, u32, i32, u64, i64, f32, f64,
  return_number,      ///< bits of the returns byte (3 bits in formats 0-5, 4 in 6-10)
  number_of_returns,  ///< ditto
  classification,     ///< 5 bits in formats 0-5, a byte in 6-10
};

/// A dimension of one file: value = stored * scale + offset.
struct las_dimension {
  std::string name;  ///< as the file calls it (PDAL's spelling for the standard ones)
  std::size_t at{0};  ///< byte offset in the record
  las_value_type type{las_value_type::i32};
  double scale{1.0};
  double offset{0.0};
  bool is_z{true};  ///< Z itself: the reader's usual path

  /// Bytes of the record the value is read from (at, at + bytes()).
  [[nodiscard]] std::size_t bytes() const noexcept
  {
    switch (type) {
      case las_value_type::u16:
      case las_value_type::i16: return 2;
      case las_value_type::u32:
      case las_value_type::i32:
      case las_value_type::f32: return 4;
      case las_value_type::u64:
      case las_value_type::i64:
      case las_value_type::f64: return 8;
      default: return 1;  // u8, i8 and the bit fields of one byte
    }
  }

  /// Whether every stored value fits the int32 z slot of a scaled_int32 batch (else the batch
  /// carries doubles).
  [[nodiscard]] bool fits_int32() const noexcept
  {
    return type != las_value_type::u32 && type != las_value_type::u64 && type != las_value_type::i64 &&
           type != las_value_type::f32 && type != las_value_type::f64;
  }
};

/// The dimension called `name` (case-insensitive; "" or "Z": Z) in the file `h` describes, its
/// extra bytes read from `file`'s Extra Bytes VLR. Throws error_kind::input naming the file, the
/// dimension and the dimensions the file has ("a.las: no dimension 'Foo' (point format 1 has X,
/// Y, Z, Intensity, ...)").
[[nodiscard]] las_dimension find_las_dimension(std::string const& name, las_header_info const& h, las_file const& file);

/// The names of the dimensions a file has, standard then extra bytes.
[[nodiscard]] std::vector<std::string> las_dimension_names(las_header_info const& h, las_file const& file);

/// The value of `d` in the record at `p` (stored * scale + offset, in double).
template <bool Extended>
[[nodiscard]] inline double load_dimension(std::uint8_t const* p, las_dimension const& d) noexcept
{
  namespace layout = las_layout;
  double stored = 0.0;
  switch (d.type) {
    case las_value_type::u8: stored = p[d.at]; break;
    case las_value_type::i8: stored = static_cast<std::int8_t>(p[d.at]); break;
    case las_value_type::u16: stored = layout::load<std::uint16_t>(p + d.at); break;
    case las_value_type::i16: stored = layout::load<std::int16_t>(p + d.at); break;
    case las_value_type::u32: stored = layout::load<std::uint32_t>(p + d.at); break;
    case las_value_type::i32: stored = layout::load<std::int32_t>(p + d.at); break;
    case las_value_type::u64: stored = static_cast<double>(layout::load<std::uint64_t>(p + d.at)); break;
    case las_value_type::i64: stored = static_cast<double>(layout::load<std::int64_t>(p + d.at)); break;
    case las_value_type::f32: stored = layout::load<float>(p + d.at); break;
    case las_value_type::f64: stored = layout::load<double>(p + d.at); break;
    case las_value_type::return_number: stored = load_attributes<Extended>(p).return_number; break;
    case las_value_type::number_of_returns: stored = load_attributes<Extended>(p).number_of_returns; break;
    case las_value_type::classification: stored = load_attributes<Extended>(p).classification; break;
  }
  return stored * d.scale + d.offset;
}

/// The stored value of `d` as the int32 of a scaled_int32 batch's z slot (d.fits_int32()).
template <bool Extended>
[[nodiscard]] inline std::int32_t load_dimension_int(std::uint8_t const* p, las_dimension const& d) noexcept
{
  namespace layout = las_layout;
  switch (d.type) {
    case las_value_type::u8: return p[d.at];
    case las_value_type::i8: return static_cast<std::int8_t>(p[d.at]);
    case las_value_type::u16: return layout::load<std::uint16_t>(p + d.at);
    case las_value_type::i16: return layout::load<std::int16_t>(p + d.at);
    case las_value_type::i32: return layout::load<std::int32_t>(p + d.at);
    case las_value_type::return_number: return load_attributes<Extended>(p).return_number;
    case las_value_type::number_of_returns: return load_attributes<Extended>(p).number_of_returns;
    case las_value_type::classification: return load_attributes<Extended>(p).classification;
    default: return 0;
  }
}

}  // namespace heightgrid::io::detail
