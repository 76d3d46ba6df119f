// libFuzzer target for the LAZ chunk decoders (io/src/laz): decode_pointwise_chunk,
// decode_layered_chunk, parse_laz_vlr and parse_chunk_table. Any input must either decode or
// throw laz::decode_error; anything else (a crash, a sanitizer report, another exception, a
// leak, a hang, a broken postcondition) is a finding. Built and run by tests/fuzz/run_fuzz.sh,
// seeded with the chunks of the real LAZ files (laz_fuzz_seeds.cpp writes them).
//
// Input layout (seeds follow it; the fuzzer mutates everything, header included):
//   byte 0   bits 0-2  item set: the LASzip item list of PDRF 0, 1, 2, 3, 6, 7, 8 or 10
//            bit 3     pointwise: items v1 instead of v2; layered: v4 instead of v3
//            bit 4     an extra-bytes item (byte / byte14) after the others, of 1 + (bits
//                      13-15 of bytes 1-2) bytes
//            bit 5     pointwise: compressor 1 instead of 2; layered: heightgrid's fields only
//            bit 6     layered: expected_points 0 (no chunk table) instead of the point count
//            bit 7     the LASzip VLR comes from the input (byte 3 = its length) instead
//   bytes 1-2 (little-endian u16)
//            bits 0-1  3: the rest is a chunk table (parse_chunk_table), else a chunk;
//                      1 with a pointwise chunk: also decode it through pointwise_decoder in
//                      steps of 1-8 points, which must give the same records and outcome
//            bits 2-15 points to decode - 1 (1..16384; pointwise at most 2048)
//   [byte 3, then that many bytes: the LASzip VLR payload, when byte 0 bit 7 is set]
//   the rest: the chunk's compressed bytes, or for a chunk table 8 bytes (u32 data span, u32
//   point total) followed by the table.

#include "laz/laz_arith.hpp"
#include "laz/laz_layered.hpp"
#include "laz/laz_pointwise.hpp"
#include "laz/laz_vlr.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

namespace laz = heightgrid::io::laz;
using laz::item_type;

// Layered chunks are decoded whole (the real fullwave.laz chunk has 10750 points); pointwise
// decoding of garbage runs on until its last point, so fewer points keep executions fast.
constexpr std::size_t max_points = 16384;
constexpr std::size_t max_pointwise_points = 2048;
// Records of a VLR taken from the input are bounded too (item sizes are u16).
constexpr std::size_t max_record_bytes = std::size_t{8} << 20;

/// The item lists LASzip writes for each point format (laszip_dll.c, laszip_prepare_point_for_write).
laz::laz_vlr_info builtin_vlr(std::uint8_t selector, std::uint8_t extra_bytes)
{
  static constexpr int formats[8] = {0, 1, 2, 3, 6, 7, 8, 10};
  int const format = formats[selector & 0x7];
  bool const alternative_version = (selector & 0x08) != 0;
  bool const layered = format >= 6;
  laz::laz_vlr_info vlr{};
  vlr.coder = 0;
  vlr.version_major = 3;
  vlr.version_minor = 4;
  vlr.chunk_size = 50000;
  vlr.special_evlr_count = -1;
  vlr.special_evlr_offset = -1;
  if (layered) {
    std::uint16_t const v = alternative_version ? 4 : 3;
    vlr.compressor = laz::compressor_layered_chunked;
    vlr.items.push_back({item_type::point14, 30, v});
    if (format == 7) { vlr.items.push_back({item_type::rgb14, 6, v}); }
    if (format == 8 || format == 10) { vlr.items.push_back({item_type::rgbnir14, 8, v}); }
    if (format == 10) { vlr.items.push_back({item_type::wavepacket14, 29, v}); }
    if ((selector & 0x10) != 0) { vlr.items.push_back({item_type::byte14, extra_bytes, v}); }
  } else {
    std::uint16_t const v = alternative_version ? 1 : 2;
    vlr.compressor = (selector & 0x20) != 0 ? laz::compressor_pointwise : laz::compressor_pointwise_chunked;
    vlr.items.push_back({item_type::point10, 20, v});
    if (format == 1 || format == 3) { vlr.items.push_back({item_type::gpstime11, 8, v}); }
    if (format == 2 || format == 3) { vlr.items.push_back({item_type::rgb12, 6, v}); }
    if ((selector & 0x10) != 0) { vlr.items.push_back({item_type::byte, extra_bytes, v}); }
  }
  return vlr;
}

std::uint32_t load_u32(std::uint8_t const* p)
{
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// decode_pointwise_chunk and the streaming pointwise_decoder agree: both throw, or both give
/// the same records after consuming the same bytes.
void compare_pointwise_streaming(laz::laz_vlr_info const& vlr, std::size_t points, std::uint8_t const* data,
                                 std::size_t size, std::vector<std::uint8_t>& records)
{
  bool whole_ok = true;
  std::size_t whole_consumed = 0;
  try {
    whole_consumed = laz::decode_pointwise_chunk(vlr, data, size, points, records.data());
  } catch (laz::decode_error const&) {
    whole_ok = false;
  }
  std::vector<std::uint8_t> streamed(records.size());
  bool stream_ok = true;
  std::size_t stream_consumed = 0;
  try {
    laz::pointwise_decoder decoder(vlr);
    decoder.start(data, size);
    std::size_t const record = vlr.record_length();
    for (std::size_t done = 0, step = 1; done < points; done += step, step = step % 8 + 1) {
      step = std::min(step, points - done);
      decoder.decode(step, streamed.data() + done * record);
    }
    stream_consumed = decoder.consumed();
  } catch (laz::decode_error const&) {
    stream_ok = false;
  }
  if (whole_ok != stream_ok) { std::abort(); }
  if (whole_ok && (whole_consumed != stream_consumed || streamed != records)) { std::abort(); }
  if (!whole_ok) { throw laz::decode_error("both failed"); }
}

void decode_chunk(laz::laz_vlr_info const& vlr, std::uint8_t selector, std::size_t points,
                  bool compare_streaming, std::uint8_t const* data, std::size_t size)
{
  std::size_t const record = vlr.record_length();
  if (record == 0) { return; }
  bool const pointwise =
    vlr.compressor == laz::compressor_pointwise || vlr.compressor == laz::compressor_pointwise_chunked;
  if (pointwise) { points = std::min(points, max_pointwise_points); }
  points = std::min(points, std::max<std::size_t>(1, max_record_bytes / record));
  // Exactly the size the decoders may write, so that ASan sees one byte too many.
  std::vector<std::uint8_t> records(points * record);
  if (pointwise && compare_streaming) {
    compare_pointwise_streaming(vlr, points, data, size, records);
  } else if (pointwise) {
    std::size_t const consumed = laz::decode_pointwise_chunk(vlr, data, size, points, records.data());
    if (consumed > size) { std::abort(); }
  } else if (vlr.compressor == laz::compressor_layered_chunked) {
    auto const fields =
      (selector & 0x20) != 0 ? laz::field_selection::heightgrid() : laz::field_selection::all();
    std::size_t const expected = (selector & 0x40) != 0 ? 0 : points;
    std::size_t consumed = 0;
    std::size_t const decoded =
      laz::decode_layered_chunk(vlr, data, size, expected, points, records.data(), fields, &consumed);
    if (decoded > points || consumed > size || (expected != 0 && decoded != expected)) { std::abort(); }
  }
}

void decode_chunk_table(laz::laz_vlr_info const& vlr, std::uint8_t const* data, std::size_t size)
{
  if (size < 8) { return; }
  // A file's chunks lie within it: a span up to 1 MiB keeps the work per input bounded.
  std::uint64_t const data_start = 1000;
  std::uint64_t const data_end = data_start + (load_u32(data) & 0xFFFFF);
  std::uint64_t const total_points = load_u32(data + 4);
  auto const entries = laz::parse_chunk_table(vlr, data + 8, size - 8, data_start, data_end, total_points);
  std::uint64_t points = 0;
  for (auto const& e : entries) {
    if (e.offset < data_start || e.offset > data_end || e.bytes > data_end - e.offset) { std::abort(); }
    points += e.points;
  }
  if (points != total_points) { std::abort(); }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  if (size < 3) { return 0; }
  std::uint8_t const selector = data[0];
  std::uint16_t control;
  std::memcpy(&control, data + 1, sizeof control);
  bool const chunk_table = (control & 0x3) == 3;
  std::size_t const points = std::size_t{1} + ((control >> 2) % max_points);
  std::size_t at = 3;
  try {
    laz::laz_vlr_info vlr;
    if ((selector & 0x80) != 0) {
      if (size < at + 1) { return 0; }
      std::size_t const length = std::min<std::size_t>(data[at], size - at - 1);
      vlr = laz::parse_laz_vlr(data + at + 1, length);
      at += 1 + length;
    } else {
      vlr = builtin_vlr(selector, static_cast<std::uint8_t>(1 + (control >> 13)));
    }
    if (chunk_table) {
      decode_chunk_table(vlr, data + at, size - at);
    } else {
      decode_chunk(vlr, selector, points, (control & 0x3) == 1, data + at, size - at);
    }
  } catch (laz::decode_error const&) {
    // The expected outcome for most inputs.
  }
  return 0;
}
