#pragma once
// Byte layout of ASPRS LAS 1.0-1.4 files, shared by the reader and the writer so that the two
// cannot drift apart. Every multi-byte field in LAS is little-endian.

#include "heightgrid/core/las_record.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the LAS reader and writer copy fields with memcpy and assume a little-endian host"
#endif

namespace heightgrid::io::las_layout {

/// Smallest public header of each version: 1.0-1.2 end after Min Z, 1.3 adds the waveform
/// start, 1.4 adds EVLRs and 64-bit counts.
inline constexpr std::size_t header_size_1_0 = 227;
inline constexpr std::size_t header_size_1_3 = 235;
inline constexpr std::size_t header_size_1_4 = 375;

[[nodiscard]] constexpr std::size_t min_header_size(int version_minor) noexcept
{
  return version_minor <= 2 ? header_size_1_0
                            : (version_minor == 3 ? header_size_1_3 : header_size_1_4);
}

/// Byte offsets of the public header fields (LAS 1.4 R15, "Public Header Block").
namespace at {
inline constexpr std::size_t signature = 0;
inline constexpr std::size_t file_source_id = 4;
inline constexpr std::size_t global_encoding = 6;
inline constexpr std::size_t version_major = 24;
inline constexpr std::size_t version_minor = 25;
inline constexpr std::size_t system_id = 26;
inline constexpr std::size_t generating_software = 58;
inline constexpr std::size_t creation_day = 90;
inline constexpr std::size_t creation_year = 92;
inline constexpr std::size_t header_size = 94;
inline constexpr std::size_t offset_to_point_data = 96;
inline constexpr std::size_t vlr_count = 100;
inline constexpr std::size_t point_format = 104;
inline constexpr std::size_t record_length = 105;
inline constexpr std::size_t legacy_point_count = 107;
inline constexpr std::size_t legacy_points_by_return = 111;  // uint32_t[5]
inline constexpr std::size_t scale = 131;                    // double[3]: x, y, z
inline constexpr std::size_t offset = 155;                   // double[3]: x, y, z
inline constexpr std::size_t max_x = 179;                    // then min x, max y, min y, ...
inline constexpr std::size_t waveform_start = 227;           // 1.3+
inline constexpr std::size_t evlr_start = 235;               // 1.4
inline constexpr std::size_t evlr_count = 243;               // 1.4
inline constexpr std::size_t point_count = 247;              // 1.4, uint64_t
inline constexpr std::size_t points_by_return = 255;         // 1.4, uint64_t[15]
}  // namespace at

inline constexpr std::size_t string_field_size = 32;  // system id, software, VLR description
inline constexpr std::size_t user_id_size = 16;

/// Global encoding bit 4: the CRS is WKT (LAS 1.4).
inline constexpr std::uint16_t global_encoding_wkt = 0x10;

/// Variable length record headers. VLRs and EVLRs share the first 20 bytes; the EVLR length is
/// 8 bytes instead of 2, which shifts the description.
inline constexpr std::size_t vlr_header_size = 54;
inline constexpr std::size_t evlr_header_size = 60;
namespace vlr_at {
inline constexpr std::size_t user_id = 2;
inline constexpr std::size_t record_id = 18;
inline constexpr std::size_t length = 20;
inline constexpr std::size_t vlr_description = 22;
inline constexpr std::size_t evlr_description = 28;
}  // namespace vlr_at

/// Point data record formats 0-10; bits 6 and 7 of the format byte mark LASzip compression.
inline constexpr int max_point_format = 10;
inline constexpr std::uint8_t compressed_format_bits = 0xC0;
inline constexpr std::array<std::uint16_t, max_point_format + 1> base_record_size{
  20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};

/// Formats 6-10 share a different layout of the bytes after the intensity.
[[nodiscard]] constexpr bool is_extended_format(int format) noexcept { return format >= 6; }

/// Byte offsets inside a point record. X, Y, Z and intensity are common to all formats.
/// Offsets inside a point record: core's definition, which the GPU's record decoder shares.
namespace point_at = ::heightgrid::las_point_at;

/// Where the red channel starts, or 0 for formats without colour.
[[nodiscard]] constexpr std::size_t rgb_offset(int format) noexcept
{
  switch (format) {
    case 2: return 20;
    case 3:
    case 5: return 28;
    case 7:
    case 8:
    case 10: return 30;
    default: return 0;
  }
}

/// Where the GPS time is, or 0 for formats without it (0 and 2).
[[nodiscard]] constexpr std::size_t gps_time_offset(int format) noexcept
{
  if (is_extended_format(format)) { return point_at::extended_gps_time; }
  return (format == 0 || format == 2) ? 0 : point_at::legacy_gps_time;
}

/// The LASF_Projection records that carry a CRS.
inline constexpr char const* projection_user_id = "LASF_Projection";
inline constexpr std::uint16_t wkt_record_id = 2112;
inline constexpr std::uint16_t geo_key_directory_record_id = 34735;
inline constexpr std::uint16_t geo_double_params_record_id = 34736;
inline constexpr std::uint16_t geo_ascii_params_record_id = 34737;
/// LASzip's VLR: present in every LAZ file.
inline constexpr char const* laszip_user_id = "laszip encoded";
inline constexpr std::uint16_t laszip_record_id = 22204;
/// The Extra Bytes VLR that describes bytes past the base record size.
inline constexpr char const* spec_user_id = "LASF_Spec";
inline constexpr std::uint16_t extra_bytes_record_id = 4;
inline constexpr std::size_t extra_bytes_descriptor_size = 192;

template <class T>
[[nodiscard]] inline T load(std::uint8_t const* p) noexcept
{
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

template <class T>
inline void store(std::uint8_t* p, T value) noexcept
{
  std::memcpy(p, &value, sizeof value);
}

}  // namespace heightgrid::io::las_layout
