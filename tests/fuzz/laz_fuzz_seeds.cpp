// Seeds for laz_chunk_fuzz, cut from real LAZ files: for each of the first chunks of each file,
// the chunk's compressed bytes behind the fuzz target's input header (see laz_chunk_fuzz.cpp),
// once with the built-in item list that matches the file and once with the file's own LASzip
// VLR, plus the file's chunk table. Built without instrumentation by tests/fuzz/CMakeLists.txt
// and run by run_fuzz.sh:
//   laz_fuzz_seeds OUT_DIR FILE.laz...

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "laz/laz_arith.hpp"
#include "laz/laz_layered.hpp"
#include "laz/laz_pointwise.hpp"
#include "laz/laz_vlr.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace laz = heightgrid::io::laz;
using bytes = std::vector<std::uint8_t>;

// Mirrors of laz_chunk_fuzz.cpp's input layout.
constexpr std::size_t fuzz_max_points = 16384;
// Pointwise seeds decode this many points at most, to keep the fuzzer's executions fast.
constexpr std::size_t pointwise_seed_points = 256;
// A layered chunk decodes whole: larger ones (fullwave.laz's 10750 points take ~75 ms under
// ASan + UBSan) are seeded once, decoding heightgrid's layers only (~3x faster).
constexpr std::size_t layered_cheap_points = 2048;
constexpr std::size_t max_seed_bytes = 250000;
constexpr std::size_t chunks_per_file = 3;

/// The selector (byte 0) whose built-in item list equals the file's, or -1.
int builtin_selector(laz::laz_vlr_info const& vlr)
{
  using laz::item_type;
  std::vector<item_type> types;
  for (auto const& i : vlr.items) { types.push_back(i.type); }
  auto const is = [&types](std::initializer_list<item_type> want) {
    return std::equal(types.begin(), types.end(), want.begin(), want.end());
  };
  int set = -1;
  if (is({item_type::point10})) { set = 0; }
  if (is({item_type::point10, item_type::gpstime11})) { set = 1; }
  if (is({item_type::point10, item_type::rgb12})) { set = 2; }
  if (is({item_type::point10, item_type::gpstime11, item_type::rgb12})) { set = 3; }
  if (is({item_type::point14})) { set = 4; }
  if (is({item_type::point14, item_type::rgb14})) { set = 5; }
  if (is({item_type::point14, item_type::rgbnir14})) { set = 6; }
  if (is({item_type::point14, item_type::rgbnir14, item_type::wavepacket14})) { set = 7; }
  if (set < 0) { return -1; }
  std::uint16_t const v = vlr.items.front().version;
  bool const layered = set >= 4;
  if (layered ? (v != 3 && v != 4) : (v != 1 && v != 2)) { return -1; }
  bool const alternative = layered ? v == 4 : v == 1;
  bool const compressor1 = vlr.compressor == laz::compressor_pointwise;
  return set | (alternative ? 0x08 : 0) | (compressor1 ? 0x20 : 0);
}

/// Bits 0-1 of the fuzz target's control word.
enum class fuzz_mode : unsigned { chunk = 0, chunk_and_streaming = 1, chunk_table = 3 };

bytes fuzz_header(int selector, std::size_t points, fuzz_mode mode)
{
  std::size_t const p = std::min(std::max<std::size_t>(points, 1), fuzz_max_points) - 1;
  auto const control = static_cast<std::uint16_t>((p << 2) | static_cast<unsigned>(mode));
  return {static_cast<std::uint8_t>(selector), static_cast<std::uint8_t>(control & 0xFF),
          static_cast<std::uint8_t>(control >> 8)};
}

void write_seed(std::filesystem::path const& path, bytes const& head, std::uint8_t const* data,
                std::size_t size)
{
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<char const*>(head.data()), static_cast<std::streamsize>(head.size()));
  out.write(reinterpret_cast<char const*>(data), static_cast<std::streamsize>(size));
}

/// How many bytes the first `points` points of a chunk take; the whole chunk if decoding fails.
std::size_t bytes_for(laz::laz_vlr_info const& vlr, std::uint8_t const* data, std::size_t size,
                      std::size_t points)
{
  try {
    bytes records(points * vlr.record_length());
    return std::min(size, laz::decode_pointwise_chunk(vlr, data, size, points, records.data()) + 4);
  } catch (laz::decode_error const& e) {
    std::fprintf(stderr, "laz_fuzz_seeds: cannot decode (%s); using the chunk's first bytes\n", e.what());
    return size;
  }
}

void cut(std::filesystem::path const& out, std::string const& file)
{
  std::ifstream in(file, std::ios::binary);
  bytes const b{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto const h = heightgrid::io::parse_las_header(b.data(), b.size(), file);
  std::uint64_t vlr_at = 0;
  std::uint64_t vlr_size = 0;
  for (auto const& v : h.vlrs) {
    if (v.user_id == "laszip encoded" && v.record_id == 22204) {
      vlr_at = v.offset + 54;
      vlr_size = v.length;
    }
  }
  if (vlr_at == 0 || vlr_size > 255) {
    std::fprintf(stderr, "laz_fuzz_seeds: %s: no usable LASzip VLR; skipped\n", file.c_str());
    return;
  }
  auto const vlr = laz::parse_laz_vlr(b.data() + vlr_at, vlr_size);
  std::int64_t table_at = 0;
  std::memcpy(&table_at, b.data() + h.offset_to_point_data, sizeof table_at);
  std::uint64_t const data_start = h.offset_to_point_data + 8;
  if (table_at <= 0 || static_cast<std::uint64_t>(table_at) >= b.size() ||
      static_cast<std::uint64_t>(table_at) < data_start) {
    std::fprintf(stderr, "laz_fuzz_seeds: %s: no chunk table; skipped\n", file.c_str());
    return;
  }
  auto const table_end = static_cast<std::uint64_t>(table_at);
  auto const chunks = laz::parse_chunk_table(vlr, b.data() + table_end, b.size() - table_end, data_start,
                                             table_end, h.point_count);
  std::string const stem = std::filesystem::path(file).stem().string();
  int const selector = builtin_selector(vlr);
  bool const layered = vlr.compressor == laz::compressor_layered_chunked;
  bytes const own_vlr(b.begin() + static_cast<std::ptrdiff_t>(vlr_at),
                      b.begin() + static_cast<std::ptrdiff_t>(vlr_at + vlr_size));

  for (std::size_t c = 0; c < std::min(chunks.size(), chunks_per_file); ++c) {
    auto const& e = chunks[c];
    std::uint8_t const* data = b.data() + e.offset;
    auto size = static_cast<std::size_t>(e.bytes);
    std::size_t points = static_cast<std::size_t>(e.points);
    int extra_flags = 0;
    bool const expensive = layered && points > layered_cheap_points;
    if (layered) {
      // A layered chunk keeps its layers one after the other: only whole chunks decode.
      if (points > fuzz_max_points) { extra_flags |= 0x40; }
      if (expensive) { extra_flags |= 0x20; }
    } else {
      points = std::min(points, pointwise_seed_points);
      size = bytes_for(vlr, data, size, points);
    }
    size = std::min(size, max_seed_bytes);
    std::string const name = stem + "_chunk" + std::to_string(c);
    if (selector >= 0) {
      write_seed(out / (name + "_builtin"), fuzz_header(selector | extra_flags, points, fuzz_mode::chunk), data,
                 size);
      if (!layered) {
        write_seed(out / (name + "_streaming"), fuzz_header(selector, points, fuzz_mode::chunk_and_streaming),
                   data, size);
      }
    }
    if (expensive && selector >= 0) { continue; }
    bytes head = fuzz_header((selector < 0 ? 0 : selector) | extra_flags | 0x80, points, fuzz_mode::chunk);
    head.push_back(static_cast<std::uint8_t>(own_vlr.size()));
    head.insert(head.end(), own_vlr.begin(), own_vlr.end());
    write_seed(out / (name + "_vlr"), head, data, size);
  }

  // The chunk table: the fuzz target's span and point total, then the table itself.
  bytes head = fuzz_header(selector < 0 ? 0 : selector, 1, fuzz_mode::chunk_table);
  auto const span = static_cast<std::uint32_t>(table_end - data_start);
  auto const total = static_cast<std::uint32_t>(h.point_count);
  for (std::uint32_t v : {span, total}) {
    for (int i = 0; i < 4; ++i) { head.push_back(static_cast<std::uint8_t>(v >> (8 * i))); }
  }
  write_seed(out / (stem + "_table"), head, b.data() + table_end,
             std::min<std::size_t>(b.size() - table_end, max_seed_bytes));
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 2) {
    std::fprintf(stderr, "usage: laz_fuzz_seeds OUT_DIR FILE.laz...\n");
    return 2;
  }
  std::filesystem::path const out = argv[1];
  std::filesystem::create_directories(out);
  int status = 0;
  for (int a = 2; a < argc; ++a) {
    try {
      cut(out, argv[a]);
    } catch (std::exception const& e) {  // a seed less, not a failed fuzz run
      std::fprintf(stderr, "laz_fuzz_seeds: %s: %s\n", argv[a], e.what());
      status = 1;
    }
  }
  return status;
}
