// The LAZ chunk decoders of kernels/ against the CPU decoder of io/, chunk by chunk, byte for byte.
//
// Host codec (runs everywhere): the pointwise codec that the GPU kernel runs
// (kernels/src/detail/laz/pointwise.hpp), compiled here for the host, on every chunk of the real
// pointwise LAZ files, on prefixes, single points, truncated chunks and garbage.
// GPU (skips without a device): laz_gpu_decoder on the same chunks, pointwise and layered, in one
// call and in batches, with corrupt chunks among good ones.
//
// Inputs: every *.laz under HEIGHTGRID_REAL_DATA_DIR (../shared/data/real), plus the files listed
// in HEIGHTGRID_LAZ_TEST_FILES (':'-separated paths), so that a GPU host can point it at its own.

#include "detail/laz/pointwise.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/laz/tables.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"
#include "heightgrid/kernels/laz_gpu.hpp"

#include "kernels_test_support.hpp"
#include "las/las_internal.hpp"
#include "laz/laz_arith.hpp"
#include "laz/laz_pointwise.hpp"
#include "laz/laz_source.hpp"
#include "laz/laz_vlr.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace heightgrid {
namespace {

namespace laz = io::laz;
namespace hd = detail::laz;

// ------------------------------------------------------------------------------------------
// Inputs
// ------------------------------------------------------------------------------------------

struct laz_file {
  std::string name;
  laz::laz_vlr_info vlr;
  laz::laz_file_layout layout;
  std::vector<laz::chunk_entry> chunks;
  std::vector<std::vector<std::uint8_t>> bytes;  ///< each chunk's compressed bytes
};

std::vector<std::filesystem::path> laz_paths()
{
  std::vector<std::filesystem::path> paths;
  auto const dir = test::real_data_dir();
  if (!dir.empty()) {
    for (auto const& e : std::filesystem::recursive_directory_iterator(dir)) {
      if (e.is_regular_file() && e.path().extension() == ".laz") { paths.push_back(e.path()); }
    }
  }
  if (char const* extra = std::getenv("HEIGHTGRID_LAZ_TEST_FILES")) {
    std::string const list = extra;
    for (std::size_t at = 0; at <= list.size();) {
      std::size_t const end = std::min(list.find(':', at), list.size());
      if (end > at) { paths.emplace_back(list.substr(at, end - at)); }
      at = end + 1;
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

/// Every LAZ file with a usable chunk table, its chunks read into memory.
std::vector<laz_file> const& laz_files()
{
  static std::vector<laz_file> const files = [] {
    std::vector<laz_file> out;
    for (auto const& path : laz_paths()) {
      auto opened = io::detail::open_las_file(path.string());
      if (!opened.laz_vlr) { continue; }
      laz_file f;
      f.name = path.filename().string();
      f.vlr = *opened.laz_vlr;
      f.layout = io::detail::laz_layout_of(opened.header);
      auto const& file = opened.file;
      f.chunks = laz::locate_laz_chunks(f.layout, f.vlr, [&file](std::uint64_t o, std::size_t n, std::uint8_t* b) {
                   file.read_exact(o, n, b);
                 }).chunks;
      for (auto const& c : f.chunks) {
        std::vector<std::uint8_t> bytes(static_cast<std::size_t>(c.bytes));
        file.read_exact(c.offset, bytes.size(), bytes.data());
        f.bytes.push_back(std::move(bytes));
      }
      if (!f.chunks.empty()) { out.push_back(std::move(f)); }
    }
    return out;
  }();
  return files;
}

/// The items of a pointwise chunk the GPU decodes (compressor 2: point10 v2, then gpstime11 v2,
/// rgb12 v2 and byte v2 at most once each, in that order), or nothing.
std::optional<hd::pointwise_items> pointwise_items_of(laz::laz_vlr_info const& vlr)
{
  if (vlr.compressor != laz::compressor_pointwise_chunked || vlr.items.empty()) { return std::nullopt; }
  auto const& items = vlr.items;
  if (items[0].type != laz::item_type::point10 || items[0].version != 2 || items[0].size != 20) { return std::nullopt; }
  hd::pointwise_items out;
  std::size_t i = 1;
  if (i < items.size() && items[i].type == laz::item_type::gpstime11) {
    if (items[i].version != 2 || items[i].size != 8) { return std::nullopt; }
    out.gps_time = true;
    ++i;
  }
  if (i < items.size() && items[i].type == laz::item_type::rgb12) {
    if (items[i].version != 2 || items[i].size != 6) { return std::nullopt; }
    out.rgb = true;
    ++i;
  }
  if (i < items.size() && items[i].type == laz::item_type::byte) {
    if (items[i].version != 2) { return std::nullopt; }
    out.extra_bytes = items[i].size;
    ++i;
  }
  if (i != items.size()) { return std::nullopt; }
  return out;
}

std::vector<laz_file const*> pointwise_files()
{
  std::vector<laz_file const*> out;
  for (auto const& f : laz_files()) {
    if (pointwise_items_of(f.vlr)) { out.push_back(&f); }
  }
  return out;
}

std::vector<laz_file const*> layered_files()
{
  std::vector<laz_file const*> out;
  for (auto const& f : laz_files()) {
    if (laz::layered_layer_count(f.vlr) != 0) { out.push_back(&f); }
  }
  return out;
}

#define HG_REQUIRE_FILES(list, what)                                                                         \
  do {                                                                                                        \
    if ((list).empty()) {                                                                                     \
      GTEST_SKIP() << "no " what " LAZ file under HEIGHTGRID_REAL_DATA_DIR (../shared/data/real) or in "      \
                      "HEIGHTGRID_LAZ_TEST_FILES";                                                            \
    }                                                                                                         \
  } while (0)

/// A pointwise VLR of these items (for the CPU decoder on synthetic chunks).
laz::laz_vlr_info vlr_of(hd::pointwise_items const& items)
{
  laz::laz_vlr_info vlr{};
  vlr.compressor = laz::compressor_pointwise_chunked;
  vlr.chunk_size = 50000;
  vlr.items.push_back({laz::item_type::point10, 20, 2});
  if (items.gps_time) { vlr.items.push_back({laz::item_type::gpstime11, 8, 2}); }
  if (items.rgb) { vlr.items.push_back({laz::item_type::rgb12, 6, 2}); }
  if (items.extra_bytes != 0) {
    vlr.items.push_back({laz::item_type::byte, static_cast<std::uint16_t>(items.extra_bytes), 2});
  }
  return vlr;
}

// ------------------------------------------------------------------------------------------
// The two decoders
// ------------------------------------------------------------------------------------------

/// The CPU decoder's records of a chunk, or nothing when it rejects the chunk.
std::optional<std::vector<std::uint8_t>> cpu_decode(laz::laz_vlr_info const& vlr, std::uint8_t const* data,
                                                    std::size_t size, std::size_t points)
{
  std::vector<std::uint8_t> records(points * vlr.record_length());
  try {
    laz::decode_pointwise_chunk(vlr, data, size, points, records.data());
  } catch (laz::decode_error const&) {
    return std::nullopt;
  }
  return records;
}

/// The host build of the GPU's pointwise codec: one slot of models, reused from chunk to chunk as
/// a block of the kernel reuses its slot.
class host_codec {
 public:
  explicit host_codec(std::uint32_t extra_bytes)
    : memory_(hd::pointwise_slot_bytes(extra_bytes) / sizeof(unit)),
      models_(hd::lay_out_pointwise(memory_.data(), extra_bytes))
  {
  }

  struct result {
    laz_gpu_status status;
    std::vector<std::uint8_t> point10;  ///< 20 bytes a point
    std::vector<std::uint8_t> whole;    ///< record_length bytes a point
  };

  result decode(hd::pointwise_items const& items, std::uint8_t const* data, std::size_t size, std::uint32_t points)
  {
    result r{};
    r.point10.assign(std::size_t{points} * hd::point10_bytes, 0);
    r.whole.assign(std::size_t{points} * items.record_length(), 0);
    r.status = hd::decode_pointwise_chunk_hd<true>(*models_, items, laz_point10_context, data, size, points,
                                                   r.point10.data(), r.whole.data());
    return r;
  }

 private:
  struct alignas(32) unit {
    unsigned char bytes[32];
  };
  std::vector<unit> memory_;
  hd::pointwise_models* models_;
};

/// The host codec and the CPU decoder agree on `chunk` decoded as `points` points: both accept it
/// with the same records (whole records; the point10 output is their first 20 bytes), or both
/// reject it.
void expect_same_as_cpu(host_codec& codec, hd::pointwise_items const& items, std::uint8_t const* data,
                        std::size_t size, std::uint32_t points, std::string const& what)
{
  SCOPED_TRACE(what + ", " + std::to_string(size) + " bytes, " + std::to_string(points) + " points");
  auto const cpu = cpu_decode(vlr_of(items), data, size, points);
  auto const got = codec.decode(items, data, size, points);
  bool const cpu_rejects = !cpu.has_value() || points == 0;  // 0 points: rejected here, conservatively
  ASSERT_EQ(got.status == laz_gpu_status::ok, !cpu_rejects) << "status " << static_cast<int>(got.status);
  if (cpu_rejects) { return; }
  std::size_t const length = items.record_length();
  for (std::uint32_t i = 0; i < points; ++i) {
    ASSERT_EQ(0, std::memcmp(got.whole.data() + i * length, cpu->data() + i * length, length)) << "record " << i;
    ASSERT_EQ(0, std::memcmp(got.point10.data() + std::size_t{i} * 20, cpu->data() + i * length, 20)) << "record " << i;
  }
}

// ------------------------------------------------------------------------------------------
// Host codec
// ------------------------------------------------------------------------------------------

TEST(LazPointwiseHostCodec, RealChunksMatchTheCpuDecoder)
{
  auto const files = pointwise_files();
  HG_REQUIRE_FILES(files, "pointwise (compressor 2, v2 items)");
  // One slot for every file and chunk, forwards then backwards: the stamps must isolate chunks.
  host_codec codec(16);
  std::size_t chunks = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto const* f : files) {
      auto const items = *pointwise_items_of(f->vlr);
      for (std::size_t k = 0; k < f->chunks.size(); ++k) {
        std::size_t const c = pass == 0 ? k : f->chunks.size() - 1 - k;
        auto const& bytes = f->bytes[c];
        auto const points = static_cast<std::uint32_t>(f->chunks[c].points);
        auto const cpu = cpu_decode(f->vlr, bytes.data(), bytes.size(), points);
        ASSERT_TRUE(cpu.has_value()) << f->name << " chunk " << c;
        expect_same_as_cpu(codec, items, bytes.data(), bytes.size(), points, f->name + " chunk " + std::to_string(c));
        ++chunks;
      }
    }
  }
  EXPECT_GT(chunks, 0u);
}

TEST(LazPointwiseHostCodec, PrefixesAndSinglePointChunks)
{
  auto const files = pointwise_files();
  HG_REQUIRE_FILES(files, "pointwise (compressor 2, v2 items)");
  host_codec codec(16);
  for (auto const* f : files) {
    auto const items = *pointwise_items_of(f->vlr);
    auto const& bytes = f->bytes[0];
    auto const points = static_cast<std::uint32_t>(f->chunks[0].points);
    for (std::uint32_t n : {0u, 1u, 2u, 31u, 32u, 33u, 64u, 65u, 1023u, 1024u, 1025u, 4097u}) {
      if (n <= points) { expect_same_as_cpu(codec, items, bytes.data(), bytes.size(), n, f->name + " prefix"); }
    }
    // A chunk of one point: its raw record and the coder's 4 initial bytes (fewer: both reject).
    std::uint32_t const length = items.record_length();
    for (std::uint32_t size = length - 1; size <= length + 5; ++size) {
      expect_same_as_cpu(codec, items, bytes.data(), size, 1, f->name + " one point");
    }
    EXPECT_EQ(codec.decode(items, bytes.data(), length + 3, 1).status, laz_gpu_status::short_header);
    EXPECT_EQ(codec.decode(items, bytes.data(), length + 4, 1).status, laz_gpu_status::ok);
  }
}

TEST(LazPointwiseHostCodec, TruncatedChunksAreRejectedLikeTheCpu)
{
  auto const files = pointwise_files();
  HG_REQUIRE_FILES(files, "pointwise (compressor 2, v2 items)");
  host_codec codec(16);
  for (auto const* f : files) {
    auto const items = *pointwise_items_of(f->vlr);
    for (std::size_t c : {std::size_t{0}, f->chunks.size() - 1}) {
      auto const& bytes = f->bytes[c];
      auto const points = static_cast<std::uint32_t>(f->chunks[c].points);
      std::vector<std::size_t> sizes = {0, 1, items.record_length(), bytes.size() / 2, bytes.size() * 9 / 10};
      for (std::size_t cut = 1; cut <= 16 && cut < bytes.size(); ++cut) { sizes.push_back(bytes.size() - cut); }
      bool rejected_any = false;
      for (std::size_t size : sizes) {
        expect_same_as_cpu(codec, items, bytes.data(), size, points, f->name + " truncated");
        rejected_any = rejected_any || codec.decode(items, bytes.data(), size, points).status != laz_gpu_status::ok;
      }
      EXPECT_TRUE(rejected_any) << f->name;
      EXPECT_EQ(codec.decode(items, bytes.data(), bytes.size() / 2, points).status, laz_gpu_status::overrun);
      EXPECT_EQ(codec.decode(items, bytes.data(), 10, points).status, laz_gpu_status::short_header);
    }
  }
}

TEST(LazPointwiseHostCodec, CorruptChunksMatchTheCpuDecoder)
{
  auto const files = pointwise_files();
  HG_REQUIRE_FILES(files, "pointwise (compressor 2, v2 items)");
  host_codec codec(16);
  std::mt19937 rng(7);
  for (auto const* f : files) {
    auto const items = *pointwise_items_of(f->vlr);
    auto bytes = f->bytes[0];
    auto const points = static_cast<std::uint32_t>(f->chunks[0].points);
    for (int trial = 0; trial < 8; ++trial) {
      auto corrupt = bytes;
      std::uniform_int_distribution<std::size_t> at(items.record_length(), corrupt.size() - 1);
      for (int k = 0; k < 4; ++k) { corrupt[at(rng)] ^= static_cast<std::uint8_t>(1u + rng() % 255u); }
      expect_same_as_cpu(codec, items, corrupt.data(), corrupt.size(), points, f->name + " corrupt");
    }
  }
}

/// Random bytes in every item combination: both decoders read garbage the same way (the same
/// models, updates and foldings, the GPS time's sequence switches), byte v2 included, which no
/// real file here has.
TEST(LazPointwiseHostCodec, GarbageMatchesTheCpuDecoder)
{
  std::mt19937 rng(11);
  host_codec codec(9);
  int accepted = 0;
  int rejected = 0;
  for (int trial = 0; trial < 96; ++trial) {
    hd::pointwise_items items;
    items.gps_time = (trial & 1) != 0;
    items.rgb = (trial & 2) != 0;
    items.extra_bytes = static_cast<std::uint32_t>((trial >> 2) % 4 == 3 ? 9 : (trial >> 2) % 4);
    std::uint32_t const points = 1 + static_cast<std::uint32_t>(rng() % 3000);
    // Long chunks decode whole; short ones run out.
    std::size_t const size = (trial % 3 == 0) ? 64 + rng() % 512 : std::size_t{points} * 64 + 4096;
    std::vector<std::uint8_t> bytes(size);
    for (auto& b : bytes) { b = static_cast<std::uint8_t>(rng()); }
    if (trial % 5 == 0) {
      // Mostly zeros: long runs of one symbol, the models' count halving and the lookup tables' edges.
      for (std::size_t i = items.record_length(); i < bytes.size(); ++i) {
        bytes[i] = (i % 97 == 0) ? bytes[i] : 0;
      }
    }
    expect_same_as_cpu(codec, items, bytes.data(), bytes.size(), points, "garbage trial " + std::to_string(trial));
    (codec.decode(items, bytes.data(), bytes.size(), points).status == laz_gpu_status::ok ? accepted : rejected) += 1;
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

// ------------------------------------------------------------------------------------------
// GPU
// ------------------------------------------------------------------------------------------

/// A batch of chunks in one upload: their bytes back to back, their records after each other.
struct batch {
  std::vector<std::uint8_t> compressed;
  std::vector<laz_gpu_chunk> chunks;
  std::uint64_t points{0};

  void add(std::vector<std::uint8_t> const& bytes, std::uint32_t chunk_points)
  {
    chunks.push_back({compressed.size(), bytes.size(), points, chunk_points});
    compressed.insert(compressed.end(), bytes.begin(), bytes.end());
    points += chunk_points;
  }
};

/// Every chunk of `f`, in order.
batch whole_file(laz_file const& f)
{
  batch b;
  for (std::size_t c = 0; c < f.chunks.size(); ++c) { b.add(f.bytes[c], static_cast<std::uint32_t>(f.chunks[c].points)); }
  return b;
}

/// The decoder's format of a layered (point14) file.
laz_gpu_format layered_format(laz_file const& f)
{
  laz_gpu_format format;
  format.layout = laz_gpu_layout::layered_point14;
  format.record_length = static_cast<std::uint32_t>(f.vlr.record_length());
  format.layer_count = static_cast<std::uint32_t>(laz::layered_layer_count(f.vlr));
  return format;
}

/// Uploads `b`, decodes its chunks (all at once, or `per_call` a call) and returns the records
/// (laz_gpu_record_bytes_of(format.layout) each) and statuses.
std::pair<std::vector<std::uint8_t>, std::vector<laz_gpu_status>> gpu_decode(laz_gpu_decoder& decoder,
                                                                             laz_gpu_format const& format,
                                                                             batch const& b, std::size_t per_call = 0)
{
  decoder.reserve(b.compressed.size(), b.points);
  decoder.upload(b.compressed.data(), b.compressed.size(), 0);
  std::vector<laz_gpu_status> status;
  if (per_call == 0) { per_call = b.chunks.size(); }
  for (std::size_t at = 0; at < b.chunks.size(); at += per_call) {
    std::vector<laz_gpu_chunk> const part(b.chunks.begin() + static_cast<std::ptrdiff_t>(at),
                                          b.chunks.begin() + static_cast<std::ptrdiff_t>(std::min(at + per_call, b.chunks.size())));
    auto const s = decoder.decode(format, part);
    status.insert(status.end(), s.begin(), s.end());
  }
  EXPECT_EQ(decoder.layout(), format.layout);
  std::size_t const stride = laz_gpu_record_bytes_of(format.layout);
  std::vector<std::uint8_t> records(b.points * stride);
  decoder.download(0, b.points, records.data());
  return {records, status};
}

laz_gpu_format pointwise_format_of(hd::pointwise_items const& items)
{
  laz_gpu_format f;
  f.layout = laz_gpu_layout::pointwise_point10;
  f.record_length = items.record_length();
  f.gps_time = items.gps_time;
  f.rgb = items.rgb;
  f.extra_bytes = items.extra_bytes;
  return f;
}

TEST(LazGpuChunks, RecordStrides)
{
  static_assert(laz_gpu_record_bytes_of(laz_gpu_layout::layered_point14) == laz_gpu_record_bytes);
  static_assert(laz_gpu_record_bytes_of(laz_gpu_layout::pointwise_point10) == 20);
  static_assert(laz_gpu_max_record_bytes >= 20);
  EXPECT_EQ(hd::pointwise_items{}.record_length(), 20u);
  EXPECT_EQ((hd::pointwise_items{true, true, 3}.record_length()), 37u);
}

TEST(LazGpuChunks, PointwiseFilesMatchTheCpuDecoder)
{
  HG_SKIP_WITHOUT_GPU();
  auto const files = pointwise_files();
  HG_REQUIRE_FILES(files, "pointwise (compressor 2, v2 items)");
  // Files of one record format share a call: all their chunks at once.
  std::map<std::tuple<bool, bool, std::uint32_t>, std::vector<laz_file const*>> groups;
  for (auto const* f : files) {
    auto const items = *pointwise_items_of(f->vlr);
    groups[{items.gps_time, items.rgb, items.extra_bytes}].push_back(f);
  }
  laz_gpu_decoder all_at_once;
  laz_gpu_decoder three_at_once(3);  // more chunks than blocks: blocks take several in turn
  EXPECT_EQ(all_at_once.last_chunks_at_once(), 0U) << "before any decode()";
  for (auto const& [key, group] : groups) {
    auto const items = *pointwise_items_of(group.front()->vlr);
    auto const format = pointwise_format_of(items);
    batch b;
    std::vector<std::vector<std::uint8_t>> cpu;
    std::vector<std::string> names;
    for (auto const* f : group) {
      for (std::size_t c = 0; c < f->chunks.size(); ++c) {
        auto const points = static_cast<std::uint32_t>(f->chunks[c].points);
        b.add(f->bytes[c], points);
        auto r = cpu_decode(f->vlr, f->bytes[c].data(), f->bytes[c].size(), points);
        ASSERT_TRUE(r.has_value()) << f->name << " chunk " << c;
        cpu.push_back(std::move(*r));
        names.push_back(f->name + " chunk " + std::to_string(c));
      }
    }
    std::size_t const length = items.record_length();
    for (auto [decoder, per_call] : {std::pair{&all_at_once, std::size_t{0}}, std::pair{&three_at_once, std::size_t{0}},
                                     std::pair{&all_at_once, std::size_t{2}}, std::pair{&three_at_once, std::size_t{5}}}) {
      auto const [records, status] = gpu_decode(*decoder, format, b, per_call);
      // The last call's chunks at once: its chunks, at most the pointwise kernel's blocks (fewer
      // than the layered kernel's: it holds more registers a lane).
      std::size_t const last_call = per_call == 0 ? b.chunks.size() : (b.chunks.size() - 1) % per_call + 1;
      EXPECT_GT(decoder->last_chunks_at_once(), 0U);
      EXPECT_LE(decoder->last_chunks_at_once(), std::min(last_call, decoder->threads()));
      if (decoder == &three_at_once) { EXPECT_EQ(decoder->last_chunks_at_once(), std::min<std::size_t>(3, last_call)); }
      for (std::size_t c = 0; c < b.chunks.size(); ++c) {
        SCOPED_TRACE(names[c] + ", " + std::to_string(per_call) + " a call");
        ASSERT_EQ(status[c], laz_gpu_status::ok);
        for (std::uint32_t i = 0; i < b.chunks[c].points; ++i) {
          ASSERT_EQ(0, std::memcmp(records.data() + (b.chunks[c].first_record + i) * 20, cpu[c].data() + i * length, 20))
            << "record " << i;
        }
      }
    }
  }
}

/// How many pointwise chunks a warp decodes side by side (host rule, runs everywhere): one while one
/// a warp holds every chunk at once, two up to three times the device's blocks, four beyond; one
/// for RGB.
TEST(LazPointwiseLanes, MoreAWarpOnlyWhereOneAWarpCannotHoldThemAll)
{
  static_assert(laz_pointwise_lanes(false, 4000, 4224) == 1);   // one a warp holds them all
  static_assert(laz_pointwise_lanes(false, 6540, 4224) == 2);   // 2.4e8 points of Topography
  static_assert(laz_pointwise_lanes(false, 10000, 4224) == 2);  // two a warp beat four there
  static_assert(laz_pointwise_lanes(false, 16000, 4224) == 4);
  static_assert(laz_pointwise_lanes(true, 16000, 2112) == 1);   // RGB: one a warp whatever the count
  EXPECT_EQ(laz_pointwise_lanes(false, 0, 4224), 1U);
  EXPECT_EQ(laz_pointwise_lanes(false, 4224, 4224), 1U);
  EXPECT_EQ(laz_pointwise_lanes(false, 4225, 4224), 2U);
  EXPECT_EQ(laz_pointwise_lanes(false, 12672, 4224), 2U);
  EXPECT_EQ(laz_pointwise_lanes(false, 12673, 4224), 4U);
  EXPECT_EQ(laz_pointwise_lanes(false, 1'000'000, 4224), 4U);  // more than four a warp hold: four, in turns
  EXPECT_EQ(laz_pointwise_lanes(false, 4, 1), 4U);             // a device of one block
}

/// Two and four chunks a warp (forced; the rule picks them only for thousands of chunks) decode
/// every chunk as the CPU does: all at once, and with fewer slots than chunks (lanes take chunks in
/// turn), for each item set of the real pointwise files. Each chunk three times over, so that a
/// warp's lanes decode different chunks and copies of one chunk side by side.
TEST(LazGpuChunks, PointwiseChunksDecodeTheSameTwoAndFourToAWarp)
{
  HG_SKIP_WITHOUT_GPU();
  auto const files = pointwise_files();
  HG_REQUIRE_FILES(files, "pointwise (compressor 2, v2 items)");
  {
    laz_gpu_decoder d;
    EXPECT_EQ(d.last_pointwise_lanes(), 0U) << "before any decode()";
    for (unsigned const bad : {3U, 8U}) {
      try {
        d.set_pointwise_lanes(bad);
        ADD_FAILURE() << bad << " lanes accepted";
      } catch (error const& e) {
        EXPECT_EQ(e.kind(), error_kind::usage);
      }
    }
  }
  for (auto const* f : files) {
    SCOPED_TRACE(f->name);
    auto const items = *pointwise_items_of(f->vlr);
    auto const format = pointwise_format_of(items);
    batch b;
    std::vector<std::vector<std::uint8_t>> cpu;
    for (int copy = 0; copy < 3; ++copy) {
      for (std::size_t c = 0; c < f->chunks.size(); ++c) {
        auto const points = static_cast<std::uint32_t>(f->chunks[c].points);
        b.add(f->bytes[c], points);
        auto r = cpu_decode(f->vlr, f->bytes[c].data(), f->bytes[c].size(), points);
        ASSERT_TRUE(r.has_value()) << "chunk " << c;
        cpu.push_back(std::move(*r));
      }
    }
    std::size_t const length = items.record_length();
    struct variant {
      unsigned lanes;
      std::size_t at_once;  // the constructor's chunks_at_once (0: the device's)
    };
    for (variant const v : {variant{1, 0}, variant{2, 0}, variant{4, 0}, variant{2, 2}, variant{4, 4}, variant{2, 5}}) {
      SCOPED_TRACE(std::to_string(v.lanes) + " lanes, " + std::to_string(v.at_once) + " at once");
      laz_gpu_decoder decoder(v.at_once);
      decoder.set_pointwise_lanes(v.lanes);
      auto const [records, status] = gpu_decode(decoder, format, b);
      EXPECT_EQ(decoder.last_pointwise_lanes(), v.lanes);
      // Blocks of `lanes` slots each: the constructor's count rounded down to whole blocks.
      std::size_t const slots = v.at_once == 0 ? b.chunks.size() : v.at_once / v.lanes * v.lanes;
      EXPECT_EQ(decoder.last_chunks_at_once(), std::min(slots, b.chunks.size()));
      for (std::size_t c = 0; c < b.chunks.size(); ++c) {
        ASSERT_EQ(status[c], laz_gpu_status::ok) << "chunk " << c;
        for (std::uint32_t i = 0; i < b.chunks[c].points; ++i) {
          ASSERT_EQ(0, std::memcmp(records.data() + (b.chunks[c].first_record + i) * 20, cpu[c].data() + i * length, 20))
            << "chunk " << c << " record " << i;
        }
      }
    }
  }
}

TEST(LazGpuChunks, CorruptAndTruncatedPointwiseChunksAreFlagged)
{
  HG_SKIP_WITHOUT_GPU();
  auto const files = pointwise_files();
  HG_REQUIRE_FILES(files, "pointwise (compressor 2, v2 items)");
  laz_file const& f = *files.front();
  auto const items = *pointwise_items_of(f.vlr);
  std::size_t const length = items.record_length();
  auto const& good = f.bytes[0];
  auto const points = static_cast<std::uint32_t>(f.chunks[0].points);
  std::vector<std::uint8_t> const truncated(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  std::vector<std::uint8_t> const raw_only(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(length));
  std::vector<std::uint8_t> garbage(4096);
  std::mt19937 rng(3);
  for (auto& b : garbage) { b = static_cast<std::uint8_t>(rng()); }
  ASSERT_FALSE(cpu_decode(f.vlr, truncated.data(), truncated.size(), points).has_value());
  ASSERT_FALSE(cpu_decode(f.vlr, raw_only.data(), raw_only.size(), 1).has_value());
  auto const cpu_garbage = cpu_decode(f.vlr, garbage.data(), garbage.size(), 2000);

  batch b;
  b.add(good, points);
  b.add(truncated, points);
  b.add(good, 1);
  b.add(raw_only, 1);
  b.add(garbage, 2000);
  b.add(good, points);
  auto const cpu = *cpu_decode(f.vlr, good.data(), good.size(), points);
  // One chunk a warp, and two and four side by side (a corrupt chunk's lane ends early beside a
  // good one's).
  for (unsigned const lanes : {1U, 2U, 4U}) {
    SCOPED_TRACE(std::to_string(lanes) + " lanes");
    laz_gpu_decoder decoder;
    decoder.set_pointwise_lanes(lanes);
    auto const [records, status] = gpu_decode(decoder, pointwise_format_of(items), b);
    EXPECT_EQ(status[1], laz_gpu_status::overrun);
    EXPECT_EQ(status[3], laz_gpu_status::short_header);
    EXPECT_EQ(status[4] == laz_gpu_status::ok, cpu_garbage.has_value());
    for (std::size_t c : {std::size_t{0}, std::size_t{2}, std::size_t{5}}) {
      ASSERT_EQ(status[c], laz_gpu_status::ok) << "chunk " << c;
      for (std::uint32_t i = 0; i < b.chunks[c].points; ++i) {
        ASSERT_EQ(0, std::memcmp(records.data() + (b.chunks[c].first_record + i) * 20, cpu.data() + i * length, 20))
          << "chunk " << c << " record " << i;
      }
    }
    if (cpu_garbage) {
      for (std::uint32_t i = 0; i < 2000; ++i) {
        ASSERT_EQ(0, std::memcmp(records.data() + (b.chunks[4].first_record + i) * 20, cpu_garbage->data() + i * length, 20));
      }
    }
  }
}

TEST(LazGpuChunks, LayeredFilesMatchTheCpuDecoder)
{
  HG_SKIP_WITHOUT_GPU();
  auto const files = layered_files();
  HG_REQUIRE_FILES(files, "layered (compressor 3)");
  laz_gpu_decoder decoder;
  laz_gpu_decoder three_at_once(3);
  for (auto const* f : files) {
    SCOPED_TRACE(f->name);
    laz_gpu_format const format = layered_format(*f);
    batch const b = whole_file(*f);
    // The CPU decoder with what the GPU decodes (Z, classification, flags): the other fields of
    // the first 18 bytes (intensity, user data) are zero in both.
    std::vector<std::vector<std::uint8_t>> cpu;
    laz::chunk_scratch scratch;
    for (std::size_t c = 0; c < f->chunks.size(); ++c) {
      std::vector<std::uint8_t> records(f->chunks[c].points * f->vlr.record_length(), 0);
      auto const& bytes = f->bytes[c];
      auto const& e = f->chunks[c];
      laz::decode_laz_chunk(
        f->layout, f->vlr,
        [&](std::uint64_t o, std::size_t n, std::uint8_t* out) { std::memcpy(out, bytes.data() + (o - e.offset), n); }, c, e,
        scratch, records.data(), laz::field_selection::heightgrid());
      cpu.push_back(std::move(records));
    }
    std::size_t const length = f->vlr.record_length();
    for (auto [d, per_call] : {std::pair{&decoder, std::size_t{0}}, std::pair{&three_at_once, std::size_t{2}}}) {
      auto const [records, status] = gpu_decode(*d, format, b, per_call);
      for (std::size_t c = 0; c < b.chunks.size(); ++c) {
        ASSERT_EQ(status[c], laz_gpu_status::ok) << "chunk " << c;
        for (std::uint32_t i = 0; i < b.chunks[c].points; ++i) {
          ASSERT_EQ(0, std::memcmp(records.data() + (b.chunks[c].first_record + i) * laz_gpu_record_bytes,
                                   cpu[c].data() + i * length, laz_gpu_record_bytes))
            << "chunk " << c << " record " << i;
        }
      }
    }
  }
}

/// A decoder made on the host's last GPU, used from threads whose current device is another (a
/// tiled job's upload threads on its second GPU): every call works on the decoder's own device,
/// and decodes what a decoder on the first GPU decodes. Before, the upload threads copied through
/// device 0 and the stage fell back to the CPU on every tile of GPU 1.
TEST(LazGpuChunks, ADecoderOnAnotherGpuDecodesTheSameFromAnyThread)
{
  HG_SKIP_WITHOUT_GPU();
  int const gpus = gpu_count();
  if (gpus < 2) { GTEST_SKIP() << "one GPU: a decoder on another device than the threads' is checked on a host with two"; }
  auto const files = layered_files();
  HG_REQUIRE_FILES(files, "layered (compressor 3)");
  auto const* f = files.front();
  laz_gpu_format const format = layered_format(*f);
  batch const b = whole_file(*f);
  ASSERT_TRUE(start_gpu(nullptr, 0));
  laz_gpu_decoder first(64);
  auto const want = gpu_decode(first, format, b);
  std::unique_ptr<laz_gpu_decoder> last;
  std::thread([&] {
    ASSERT_TRUE(start_gpu(nullptr, gpus - 1));
    last = std::make_unique<laz_gpu_decoder>(64);
  }).join();
  ASSERT_NE(last, nullptr);
  // This thread's current device is 0; the calls run on a pool of other threads, as a stage's do.
  std::pair<std::vector<std::uint8_t>, std::vector<laz_gpu_status>> got;
  std::thread([&] {
    ASSERT_TRUE(start_gpu(nullptr, 0));
    got = gpu_decode(*last, format, b);
  }).join();
  ASSERT_EQ(got.second.size(), want.second.size());
  for (std::size_t c = 0; c < got.second.size(); ++c) { ASSERT_EQ(got.second[c], laz_gpu_status::ok) << "chunk " << c; }
  EXPECT_TRUE(got.first == want.first);
  last.reset();  // freed on its own device from this thread too
}

/// A layered chunk's bytes decoded by the CPU decoder (Z, classification, flags: what the GPU
/// decodes), or nothing where the CPU rejects them.
std::optional<std::vector<std::uint8_t>> cpu_layered(laz_file const& f, std::vector<std::uint8_t> const& bytes,
                                                     std::uint32_t points)
{
  laz::chunk_entry const e{f.chunks[0].offset, bytes.size(), points};
  std::vector<std::uint8_t> records(std::size_t{points} * f.vlr.record_length(), 0);
  laz::chunk_scratch scratch;
  try {
    laz::decode_laz_chunk(
      f.layout, f.vlr,
      [&](std::uint64_t o, std::size_t n, std::uint8_t* out) {
        if (o < e.offset || o - e.offset > bytes.size() || n > bytes.size() - (o - e.offset)) {
          throw error(error_kind::input, "read past the chunk");
        }
        std::memcpy(out, bytes.data() + (o - e.offset), n);
      },
      0, e, scratch, records.data(), laz::field_selection::heightgrid());
  } catch (error const&) {
    return std::nullopt;
  }
  return records;
}

/// Damaged layered chunks beside good ones in one call: the GPU rejects what the CPU rejects (a
/// chunk cut in half, one holding only its first record, more points than the chunk says, random
/// bytes) and decodes what the CPU decodes (flipped bytes inside the layers) to the same records;
/// the good chunks around them are unharmed.
TEST(LazGpuChunks, CorruptAndTruncatedLayeredChunksAreFlaggedLikeTheCpu)
{
  HG_SKIP_WITHOUT_GPU();
  auto const files = layered_files();
  HG_REQUIRE_FILES(files, "layered (compressor 3)");
  laz_file const& f = *files.front();
  std::size_t const length = f.vlr.record_length();
  auto const& good = f.bytes[0];
  auto const points = static_cast<std::uint32_t>(f.chunks[0].points);
  std::vector<std::uint8_t> const half(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  std::vector<std::uint8_t> const first_record_only(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(length));
  std::vector<std::uint8_t> garbage(4096);
  std::mt19937 rng(5);
  for (auto& b : garbage) { b = static_cast<std::uint8_t>(rng()); }
  std::vector<std::vector<std::uint8_t>> flipped;
  for (int k = 0; k < 6; ++k) {
    auto bytes = good;
    // Past the first record, the point count and the layer sizes: inside the layers.
    std::uniform_int_distribution<std::size_t> at(length + 4 + 4 * 9, bytes.size() - 1);
    for (int j = 0; j <= k; ++j) { bytes[at(rng)] ^= static_cast<std::uint8_t>(1u + rng() % 255u); }
    flipped.push_back(std::move(bytes));
  }

  struct entry {
    std::vector<std::uint8_t> const* bytes;
    std::uint32_t points;
    char const* what;
  };
  std::vector<entry> entries{{&good, points, "good"},
                             {&half, points, "cut in half"},
                             {&good, points + 1, "more points than the chunk says"},
                             {&first_record_only, points, "its first record alone"},
                             {&garbage, 2000, "random bytes"},
                             {&good, points, "good again"}};
  for (auto const& b : flipped) { entries.push_back({&b, points, "flipped bytes"}); }
  batch b;
  for (auto const& e : entries) { b.add(*e.bytes, e.points); }
  laz_gpu_format format;
  format.layout = laz_gpu_layout::layered_point14;
  format.record_length = static_cast<std::uint32_t>(length);
  format.layer_count = static_cast<std::uint32_t>(laz::layered_layer_count(f.vlr));
  laz_gpu_decoder decoder;
  auto const [records, status] = gpu_decode(decoder, format, b);
  int rejected = 0;
  for (std::size_t c = 0; c < entries.size(); ++c) {
    SCOPED_TRACE("chunk " + std::to_string(c) + " (" + entries[c].what + ")");
    auto const cpu = cpu_layered(f, *entries[c].bytes, entries[c].points);
    ASSERT_EQ(status[c] == laz_gpu_status::ok, cpu.has_value()) << "GPU status " << static_cast<int>(status[c]);
    if (!cpu) {
      ++rejected;
      continue;
    }
    for (std::uint32_t i = 0; i < entries[c].points; ++i) {
      ASSERT_EQ(0, std::memcmp(records.data() + (b.chunks[c].first_record + i) * laz_gpu_record_bytes,
                               cpu->data() + i * length, laz_gpu_record_bytes))
        << "record " << i;
    }
  }
  EXPECT_GE(rejected, 4) << "the cut, the count, the lone record and the random bytes";
}

TEST(LazGpuChunks, PointwiseFormatMustMatchItsItems)
{
  HG_SKIP_WITHOUT_GPU();
  laz_gpu_decoder decoder;
  decoder.reserve(64, 4);
  laz_gpu_format f;
  f.layout = laz_gpu_layout::pointwise_point10;
  f.record_length = 34;
  f.gps_time = true;  // 28 bytes without rgb
  EXPECT_THROW((void)decoder.decode(f, {}), heightgrid::error);
  f.rgb = true;
  EXPECT_NO_THROW((void)decoder.decode(f, {}));
}

}  // namespace
}  // namespace heightgrid
