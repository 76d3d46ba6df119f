#pragma once

// The LASzip VLR (user id "laszip encoded", record 22204) that describes how a LAZ file's point
// records were compressed, and the chunk table that locates the independently decodable chunks.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace heightgrid::io::laz {

enum class item_type : std::uint16_t {
  byte = 0,
  point10 = 6,
  gpstime11 = 7,
  rgb12 = 8,
  wavepacket13 = 9,
  point14 = 10,
  rgb14 = 11,
  rgbnir14 = 12,
  wavepacket14 = 13,
  byte14 = 14
};

/// "point10", "gpstime11", ... ("item<N>" for unknown values).
std::string item_type_name(item_type type);

struct laz_item {
  item_type type;
  std::uint16_t size;
  std::uint16_t version;
};

inline constexpr std::uint16_t compressor_none = 0;
inline constexpr std::uint16_t compressor_pointwise = 1;
inline constexpr std::uint16_t compressor_pointwise_chunked = 2;
inline constexpr std::uint16_t compressor_layered_chunked = 3;

struct laz_vlr_info {
  std::uint16_t compressor;
  std::uint16_t coder;
  std::uint8_t version_major, version_minor;
  std::uint16_t version_revision;
  std::uint32_t options;
  std::uint32_t chunk_size;
  std::int64_t special_evlr_count, special_evlr_offset;
  std::vector<laz_item> items;
  /// The VLR said chunk size 0, as LASlib writes it in COPC files, whose chunk table lists each
  /// chunk's points (variable-size chunks, the octree's nodes): read as such (chunk_size is then
  /// 0xFFFFFFFF).
  bool chunk_size_zero{false};

  bool variable_chunks() const { return chunk_size == 0xFFFFFFFFu; }
  std::size_t record_length() const;  // sum of item sizes
};

/// Parses the VLR payload. Throws decode_error for truncated payloads, unknown compressors,
/// coders, item types or item versions, and item sizes that do not fit the item type.
laz_vlr_info parse_laz_vlr(std::uint8_t const* data, std::size_t size);

/// Checks that the items describe records of `point_format` (0-10) with `record_length` bytes:
/// the right base item (point10/point14), the optional gpstime/rgb/nir/wavepacket items, and
/// extra bytes making up the rest. Throws decode_error saying what does not match.
void check_laz_items(laz_vlr_info const& vlr, unsigned point_format, std::size_t record_length);

/// "point10 v2, gpstime11 v2, rgb12 v2" for `heightgrid info`.
std::string describe_items(laz_vlr_info const& vlr);

/// Where one chunk lies, relative to the start of the file.
struct chunk_entry {
  std::uint64_t offset;  // first byte of the chunk
  std::uint64_t bytes;   // compressed size
  std::uint64_t points;  // points in the chunk
};

/// Decodes the chunk table that starts at table[0] (version, count, then the integer-compressed
/// entries). `data_start` is the file offset of the first chunk (after the 8-byte table offset
/// for chunked compressors). `total_points` comes from the LAS header and fixes the last chunk's
/// size for fixed-size chunks. Throws decode_error when the table is inconsistent: entries that
/// run past `data_end`, point counts that do not add up to `total_points`.
std::vector<chunk_entry> parse_chunk_table(laz_vlr_info const& vlr, std::uint8_t const* table,
                                           std::size_t table_size, std::uint64_t data_start,
                                           std::uint64_t data_end, std::uint64_t total_points);

/// What the caller needs. Layered (point14) decoding may skip layers not asked for and leave
/// those bytes zero. XY, return numbers, number of returns are always decoded.
struct field_selection {
  bool z = true, classification = true, flags = true;  // flags: synthetic/key/withheld/overlap
  bool intensity = true, scan_angle = true, user_data = true, point_source = true,
       gps_time = true, rgb = true, nir = true, extra_bytes = true, wavepacket = true;
  static field_selection all() { return {}; }
  /// z, classification, flags only (everything else false).
  static field_selection heightgrid() {
    field_selection f;
    f.intensity = f.scan_angle = f.user_data = f.point_source = false;
    f.gps_time = f.rgb = f.nir = f.extra_bytes = f.wavepacket = false;
    return f;
  }
};

/// Layers a chunk of this layered (compressor 3) record lists in its header: point14's nine, one
/// for rgb14, two for rgbnir14, one a byte for byte14, one for wavepacket14. 0 when the record
/// is not layered or its items are not all layered ones.
std::size_t layered_layer_count(laz_vlr_info const& vlr);

/// `fields` and whatever layered items of `vlr` hold the record bytes [at, at + bytes): what a
/// reader gridding another attribute than Z (--dimension) must decode as well. Bytes outside
/// every layered item (the pointwise items decode everything) add nothing.
field_selection with_record_bytes(field_selection fields, laz_vlr_info const& vlr, std::size_t at,
                                  std::size_t bytes);

}  // namespace heightgrid::io::laz
