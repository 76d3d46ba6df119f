#include "laz_vlr.hpp"

#include "laz_arith.hpp"
#include "las/las_layout.hpp"

#include <cstring>

namespace heightgrid::io::laz {
namespace {

template <class T>
T load_le(std::uint8_t const* p)
{
  T value;
  std::memcpy(&value, p, sizeof value);  // LAS is little-endian, so is every host we build for
  return value;
}

/// The fixed part of the VLR payload: compressor(2) coder(2) version(1+1+2) options(4)
/// chunk size(4) special EVLR count(8) and offset(8) item count(2); then 6 bytes per item.
constexpr std::size_t vlr_fixed_size = 34;
constexpr std::size_t vlr_item_size = 6;

/// The size every item type has (0: any size of at least one byte: extra bytes).
std::size_t item_fixed_size(item_type t)
{
  switch (t) {
    case item_type::byte:
    case item_type::byte14: return 0;
    case item_type::point10: return 20;
    case item_type::gpstime11: return 8;
    case item_type::rgb12: return 6;
    case item_type::wavepacket13: return 29;
    case item_type::point14: return 30;
    case item_type::rgb14: return 6;
    case item_type::rgbnir14: return 8;
    case item_type::wavepacket14: return 29;
  }
  return 0;
}

bool known_item_type(std::uint16_t t)
{
  return t == 0 || (t >= 6 && t <= 14);
}

/// Versions we decode: the pointwise items in versions 1 and 2, the layered LAS 1.4 items in
/// versions 3 and 4. wavepacket13 has one coding; writers label it with their compressor version
/// (LASzip 1, lazrs 1 or 2), so both labels decode the same way.
bool supported_version(item_type t, std::uint16_t v)
{
  switch (t) {
    case item_type::byte:
    case item_type::point10:
    case item_type::gpstime11:
    case item_type::rgb12: return v == 1 || v == 2;
    case item_type::wavepacket13: return v == 1 || v == 2;
    case item_type::point14:
    case item_type::rgb14:
    case item_type::rgbnir14:
    case item_type::wavepacket14:
    case item_type::byte14: return v == 3 || v == 4;
  }
  return false;
}

bool layered_item(item_type t)
{
  switch (t) {
    case item_type::point14:
    case item_type::rgb14:
    case item_type::rgbnir14:
    case item_type::wavepacket14:
    case item_type::byte14: return true;
    default: return false;
  }
}

}  // namespace

std::string item_type_name(item_type type)
{
  switch (type) {
    case item_type::byte: return "byte";
    case item_type::point10: return "point10";
    case item_type::gpstime11: return "gpstime11";
    case item_type::rgb12: return "rgb12";
    case item_type::wavepacket13: return "wavepacket13";
    case item_type::point14: return "point14";
    case item_type::rgb14: return "rgb14";
    case item_type::rgbnir14: return "rgbnir14";
    case item_type::wavepacket14: return "wavepacket14";
    case item_type::byte14: return "byte14";
  }
  return "item" + std::to_string(static_cast<unsigned>(type));
}

std::size_t laz_vlr_info::record_length() const
{
  std::size_t total = 0;
  for (auto const& item : items) { total += item.size; }
  return total;
}

laz_vlr_info parse_laz_vlr(std::uint8_t const* data, std::size_t size)
{
  if (size < vlr_fixed_size) {
    throw decode_error("LASzip VLR is " + std::to_string(size) + " bytes, less than the " +
                       std::to_string(vlr_fixed_size) + " bytes of its fixed part");
  }
  laz_vlr_info v;
  v.compressor = load_le<std::uint16_t>(data + 0);
  v.coder = load_le<std::uint16_t>(data + 2);
  v.version_major = data[4];
  v.version_minor = data[5];
  v.version_revision = load_le<std::uint16_t>(data + 6);
  v.options = load_le<std::uint32_t>(data + 8);
  v.chunk_size = load_le<std::uint32_t>(data + 12);
  v.special_evlr_count = load_le<std::int64_t>(data + 16);
  v.special_evlr_offset = load_le<std::int64_t>(data + 24);
  std::uint16_t const item_count = load_le<std::uint16_t>(data + 32);

  if (v.compressor == compressor_none || v.compressor > compressor_layered_chunked) {
    throw decode_error("LASzip compressor " + std::to_string(v.compressor) +
                       " is not supported (1 pointwise, 2 pointwise chunked, 3 layered chunked)");
  }
  if (v.coder != 0) {
    throw decode_error("LASzip coder " + std::to_string(v.coder) +
                       " is not supported (0, the arithmetic coder, is the only one defined)");
  }
  if (v.compressor != compressor_pointwise && v.chunk_size == 0) {
    // LASlib's COPC writer leaves 0 here and writes a chunk table with each chunk's points (the
    // variable-size table): lasR's example.copc.laz, one chunk of 30 points, which laspy reads.
    v.chunk_size = 0xFFFFFFFFu;
    v.chunk_size_zero = true;
  }
  if (item_count == 0) { throw decode_error("LASzip VLR lists no items"); }
  std::size_t const needed = vlr_fixed_size + vlr_item_size * item_count;
  if (size < needed) {
    throw decode_error("LASzip VLR is " + std::to_string(size) + " bytes but its " +
                       std::to_string(item_count) + " items need " + std::to_string(needed));
  }
  v.items.reserve(item_count);
  for (std::size_t i = 0; i < item_count; ++i) {
    std::uint8_t const* p = data + vlr_fixed_size + vlr_item_size * i;
    std::uint16_t const raw_type = load_le<std::uint16_t>(p);
    laz_item item{static_cast<item_type>(raw_type), load_le<std::uint16_t>(p + 2),
                  load_le<std::uint16_t>(p + 4)};
    std::string const which = "LASzip item " + std::to_string(i + 1) + " of " +
                              std::to_string(item_count);
    if (!known_item_type(raw_type)) {
      throw decode_error(which + ": item type " + std::to_string(raw_type) + " is not known");
    }
    std::string const name = item_type_name(item.type);
    if (!supported_version(item.type, item.version)) {
      throw decode_error(which + ": " + name + " version " + std::to_string(item.version) +
                         " is not supported");
    }
    std::size_t const fixed = item_fixed_size(item.type);
    if (fixed != 0 && item.size != fixed) {
      throw decode_error(which + ": " + name + " has size " + std::to_string(item.size) +
                         ", not " + std::to_string(fixed));
    }
    if (fixed == 0 && item.size == 0) {
      throw decode_error(which + ": " + name + " has size 0");
    }
    bool const layered = layered_item(item.type);
    if (layered != (v.compressor == compressor_layered_chunked)) {
      throw decode_error(which + ": " + name + " v" + std::to_string(item.version) +
                         (layered ? " needs" : " cannot be read with") +
                         " the layered compressor (3); the VLR says compressor " +
                         std::to_string(v.compressor));
    }
    v.items.push_back(item);
  }
  return v;
}

void check_laz_items(laz_vlr_info const& vlr, unsigned point_format, std::size_t record_length)
{
  if (vlr.record_length() != record_length) {
    throw decode_error("LASzip items (" + describe_items(vlr) + ") make records of " +
                       std::to_string(vlr.record_length()) +
                       " bytes, but the header's point record length is " +
                       std::to_string(record_length));
  }
  // The items LASzip writes for each format, in this order, then extra bytes.
  std::vector<item_type> expected;
  bool const extended = point_format >= 6;
  expected.push_back(extended ? item_type::point14 : item_type::point10);
  if (point_format != 0 && point_format != 2 && !extended) expected.push_back(item_type::gpstime11);
  if (point_format == 2 || point_format == 3 || point_format == 5) expected.push_back(item_type::rgb12);
  if (point_format == 7) expected.push_back(item_type::rgb14);
  if (point_format == 8 || point_format == 10) expected.push_back(item_type::rgbnir14);
  if (point_format == 4 || point_format == 5) expected.push_back(item_type::wavepacket13);
  if (point_format == 9 || point_format == 10) expected.push_back(item_type::wavepacket14);

  std::size_t i = 0;
  for (; i < expected.size(); ++i) {
    if (i >= vlr.items.size() || vlr.items[i].type != expected[i]) {
      throw decode_error("LASzip items (" + describe_items(vlr) + ") do not fit point format " +
                         std::to_string(point_format) + ": item " + std::to_string(i + 1) +
                         " should be " + item_type_name(expected[i]));
    }
  }
  item_type const extra = extended ? item_type::byte14 : item_type::byte;
  for (; i < vlr.items.size(); ++i) {
    if (vlr.items[i].type != extra) {
      throw decode_error("LASzip items (" + describe_items(vlr) + ") do not fit point format " +
                         std::to_string(point_format) + ": item " + std::to_string(i + 1) +
                         " should be " + item_type_name(extra) + " (extra bytes)");
    }
  }
}

std::string describe_items(laz_vlr_info const& vlr)
{
  std::string s;
  for (auto const& item : vlr.items) {
    if (!s.empty()) s += ", ";
    s += item_type_name(item.type) + " v" + std::to_string(item.version);
    if (item.type == item_type::byte || item.type == item_type::byte14) {
      s += " (" + std::to_string(item.size) + " bytes)";
    }
  }
  return s;
}

std::vector<chunk_entry> parse_chunk_table(laz_vlr_info const& vlr, std::uint8_t const* table,
                                           std::size_t table_size, std::uint64_t data_start,
                                           std::uint64_t data_end, std::uint64_t total_points)
{
  if (table_size < 8) {
    throw decode_error("the chunk table is cut off after " + std::to_string(table_size) +
                       " of its 8 header bytes");
  }
  std::uint32_t const version = load_le<std::uint32_t>(table);
  std::uint32_t const count = load_le<std::uint32_t>(table + 4);
  if (version != 0) {
    throw decode_error("chunk table version " + std::to_string(version) + " is not 0");
  }
  // Every chunk but an empty one (below) holds at least one byte: a table of more chunks than
  // bytes is refused, which bounds the allocation below by the file size.
  std::uint64_t const data_bytes = data_end > data_start ? data_end - data_start : 0;
  if (count > data_bytes) {
    throw decode_error("the chunk table lists " + std::to_string(count) + " chunks in " +
                       std::to_string(data_bytes) + " bytes of point data");
  }
  bool const variable = vlr.variable_chunks();
  if (!variable) {
    // Not (total_points + chunk_size - 1) / chunk_size: a header may claim 2^64 - 1 points.
    std::uint64_t const needed = total_points / vlr.chunk_size + (total_points % vlr.chunk_size != 0 ? 1 : 0);
    if (count != needed) {
      throw decode_error("the chunk table lists " + std::to_string(count) + " chunks, but " +
                         std::to_string(total_points) + " points in chunks of " +
                         std::to_string(vlr.chunk_size) + " make " + std::to_string(needed));
    }
  }
  std::vector<chunk_entry> chunks(count);
  if (count == 0) return chunks;

  // Entries are coded as differences to the previous entry: point counts with context 0,
  // byte counts with context 1.
  arithmetic_decoder dec;
  dec.init(table + 8, table_size - 8);
  integer_decompressor ic(32, 2);
  ic.init();
  std::uint32_t prev_points = 0;
  std::uint32_t prev_bytes = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (variable) {
      prev_points = static_cast<std::uint32_t>(ic.decompress(dec, static_cast<std::int32_t>(prev_points), 0));
      chunks[i].points = prev_points;
    }
    prev_bytes = static_cast<std::uint32_t>(ic.decompress(dec, static_cast<std::int32_t>(prev_bytes), 1));
    chunks[i].bytes = prev_bytes;
  }
  if (dec.overrun() > 0) {
    throw decode_error("the chunk table is cut off: its decoder ran " +
                       std::to_string(dec.overrun()) + " bytes past the end of the file");
  }

  std::uint64_t offset = data_start;
  std::uint64_t points = 0;
  std::size_t kept = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    chunk_entry c = chunks[i];
    // A variable-size chunk of no points has nothing to decode and is stepped over: lazrs writes
    // one (no bytes, or the few bytes of a flushed coder) when a writer ends a chunk just before
    // closing the file, and laspy reads such files.
    bool const empty = variable && c.points == 0;
    if (!variable) {
      c.points = std::min<std::uint64_t>(vlr.chunk_size, total_points - points);
    }
    c.offset = offset;
    if ((c.bytes == 0 && !empty) || c.bytes > data_end - offset) {
      throw decode_error("chunk " + std::to_string(i) + " of the chunk table (" +
                         std::to_string(c.bytes) + " bytes at byte " + std::to_string(offset) +
                         ") does not fit in the point data, which ends at byte " +
                         std::to_string(data_end));
    }
    if (c.points == 0 && !empty) {
      throw decode_error("chunk " + std::to_string(i) + " of the chunk table holds no points");
    }
    offset += c.bytes;
    points += c.points;
    if (!empty) { chunks[kept++] = c; }
  }
  chunks.resize(kept);
  if (points != total_points) {
    throw decode_error("the chunk table's chunks hold " + std::to_string(points) +
                       " points, the header says " + std::to_string(total_points));
  }
  return chunks;
}

std::size_t layered_layer_count(laz_vlr_info const& vlr)
{
  if (vlr.compressor != compressor_layered_chunked) { return 0; }
  std::size_t layers = 0;
  for (laz_item const& item : vlr.items) {
    switch (item.type) {
      case item_type::point14: layers += 9; break;
      case item_type::rgb14: layers += 1; break;
      case item_type::rgbnir14: layers += 2; break;
      case item_type::byte14: layers += item.size; break;
      case item_type::wavepacket14: layers += 1; break;
      default: return 0;
    }
  }
  return layers;
}

field_selection with_record_bytes(field_selection fields, laz_vlr_info const& vlr, std::size_t at,
                                  std::size_t bytes)
{
  // Whether [at, at + bytes) meets [begin, end) of the record.
  auto const meets = [&](std::size_t begin, std::size_t end) { return at < end && begin < at + bytes; };
  std::size_t offset = 0;
  for (laz_item const& item : vlr.items) {
    std::size_t const o = offset;
    offset += item.size;
    if (!meets(o, offset)) { continue; }
    switch (item.type) {
      case item_type::point14: {
        // The point14 record: X, Y (always decoded), Z, intensity, returns (always), flags,
        // classification, user data, scan angle, point source ID (one after the other), GPS time.
        namespace at = las_layout::point_at;
        std::size_t const user_data = at::extended_classification + 1, scan_angle = user_data + 1,
                          point_source = scan_angle + 2;
        fields.z = fields.z || meets(o + at::z, o + at::intensity);
        fields.intensity = fields.intensity || meets(o + at::intensity, o + at::returns);
        fields.flags = fields.flags || meets(o + at::extended_flags, o + at::extended_classification);
        fields.classification = fields.classification || meets(o + at::extended_classification, o + user_data);
        fields.user_data = fields.user_data || meets(o + user_data, o + scan_angle);
        fields.scan_angle = fields.scan_angle || meets(o + scan_angle, o + point_source);
        fields.point_source = fields.point_source || meets(o + point_source, o + at::extended_gps_time);
        fields.gps_time = fields.gps_time || meets(o + at::extended_gps_time, o + at::extended_gps_time + 8);
        break;
      }
      case item_type::rgb14: fields.rgb = true; break;
      case item_type::rgbnir14:
        fields.rgb = fields.rgb || meets(o, o + 6);
        fields.nir = fields.nir || meets(o + 6, o + 8);
        break;
      case item_type::byte14: fields.extra_bytes = true; break;
      case item_type::wavepacket14: fields.wavepacket = true; break;
      default: break;  // pointwise items: decoded whole
    }
  }
  return fields;
}

}  // namespace heightgrid::io::laz
