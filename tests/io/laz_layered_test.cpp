// The layered LAZ chunk decoder (io/src/laz/laz_layered.cpp, LAS 1.4 point formats 6-10)
// called directly on the chunks of the real files in ../shared/data/real, with every field, with
// heightgrid's selection and with X/Y only, plus corrupt variants of a real chunk.
//
// Expected values were computed with laspy 2.7 + lazrs 0.8.2 (laspy's LAZ backend), e.g.
//   python3 -c "import laspy; a = laspy.read('lasR/las14_pdrf6.laz').points.array; ..."
// with records = FNV-1a 64 over a.tobytes() (the raw point records, as in the LAS file):
//   def fnv(b):
//       h = 0xcbf29ce484222325
//       for x in b: h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
//       return h
//   records     = fnv(a.tobytes())
//   heightgrid  = fnv of a copy with every field except X, Y, Z, bit_fields,
//                 classification_flags, classification set to 0
//   xy_only     = the heightgrid copy with also Z = 0, classification = 0,
//                 classification_flags &= 0x30 (only the scanner channel left)
//   sum_X/Y/Z   = int(a['X'].astype(np.int64).sum()), ...
//   classes     = np.unique(las.classification, return_counts=True)
//
// Developer check (not run by CTest unless the variable is set): HEIGHTGRID_LAZ_LAYERED_CHECK
// names LAZ files ("a.laz:b.laz"); each needs a "<file>.records" twin holding the raw records
// laspy decodes. scripts/laz_layered_check.py makes such files with laspy + lazrs (multi-chunk,
// several scanner channels, RGB, NIR, extra bytes) and runs this check, which compares every
// byte and reports single-thread decode speed.

#include "laz/laz_layered.hpp"

#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace heightgrid::io::laz {
namespace {

std::uint64_t fnv1a64(std::uint8_t const* p, std::size_t n)
{
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (std::size_t i = 0; i < n; ++i) { h = (h ^ p[i]) * 0x100000001B3ULL; }
  return h;
}

std::vector<std::uint8_t> read_file(std::filesystem::path const& path)
{
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::uint32_t u32_at(std::vector<std::uint8_t> const& b, std::size_t at)
{
  std::uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
std::uint64_t u64_at(std::vector<std::uint8_t> const& b, std::size_t at)
{
  std::uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

/// Just enough of a LAZ file to find its chunks: the LASzip VLR and where the points are.
struct laz_file {
  std::vector<std::uint8_t> bytes;
  laz_vlr_info vlr;
  std::uint64_t points = 0;
  std::size_t first_chunk = 0;  // after the 8-byte chunk table offset
  std::size_t chunk_table = 0;  // end of the chunk data
};

laz_file open_laz(std::filesystem::path const& path)
{
  laz_file f;
  f.bytes = read_file(path);
  auto const& b = f.bytes;
  if (b.size() < 375) throw std::runtime_error(path.string() + ": not a LAS 1.4 file");
  std::size_t const header_size = b[94] | (b[95] << 8);
  std::size_t const point_offset = u32_at(b, 96);
  std::uint32_t const vlrs = u32_at(b, 100);
  f.points = u64_at(b, 247);  // LAS 1.4 64-bit count
  bool found = false;
  std::size_t at = header_size;
  for (std::uint32_t v = 0; v < vlrs; ++v) {
    std::uint16_t const record_id = static_cast<std::uint16_t>(b[at + 18] | (b[at + 19] << 8));
    std::size_t const length = b[at + 20] | (b[at + 21] << 8);
    if (std::memcmp(b.data() + at + 2, "laszip encoded", 14) == 0 && record_id == 22204) {
      f.vlr = parse_laz_vlr(b.data() + at + 54, length);
      found = true;
    }
    at += 54 + length;
  }
  if (!found) throw std::runtime_error(path.string() + ": no LASzip VLR");
  f.first_chunk = point_offset + 8;
  f.chunk_table = static_cast<std::size_t>(u64_at(b, point_offset));
  return f;
}

struct expected_file {
  char const* path;
  std::uint64_t points;
  std::size_t record_length;
  std::int64_t sum_x, sum_y, sum_z;
  std::map<int, std::uint64_t> classes;
  std::uint64_t records, heightgrid, xy_only;
};

// clang-format off
expected_file const real_files[] = {
  // PDRF 6, one chunk, points on scanner channels 0 (59) and 1 (76).
  {"lasR/las14_pdrf6.laz", 135, 30, -19617430, 47446845, 93067351, {{1, 113}, {129, 21}, {143, 1}},
   0x622C76E9D8DF9B30ULL, 0xE22342FD29BC4F69ULL, 0xFC3C25D52D1C06A7ULL},
  // PDRF 10 (point14 + rgbnir14 + wavepacket14), one chunk, empty RGB/NIR/classification layers.
  {"laspy/fullwave.laz", 10750, 67, 72838651, -238239600, 10362336, {{0, 10750}},
   0xF26DF978390BB773ULL, 0xAB75EECCCBE7FB05ULL, 0x8F9B6EA0D3268BD7ULL},
};
// clang-format on

field_selection xy_only()
{
  field_selection f = field_selection::heightgrid();
  f.z = f.classification = f.flags = false;
  return f;
}

std::filesystem::path real_dir() { return test::real_data_dir(); }

#define REQUIRE_REAL_DATA()                                                                     \
  if (real_dir().empty()) { GTEST_SKIP() << "HEIGHTGRID_REAL_DATA_DIR (../shared/data/real) not present"; }

/// Decodes the single chunk of `f` with `fields`.
std::vector<std::uint8_t> decode_only_chunk(laz_file const& f, field_selection const& fields,
                                            std::size_t* consumed)
{
  std::size_t const stride = f.vlr.record_length();
  // Poisoned so that bytes the decoder forgets to write show up.
  std::vector<std::uint8_t> records(static_cast<std::size_t>(f.points) * stride, 0xA5);
  std::size_t const n = decode_layered_chunk(f.vlr, f.bytes.data() + f.first_chunk,
                                             f.chunk_table - f.first_chunk, f.points, f.points,
                                             records.data(), fields, consumed);
  EXPECT_EQ(n, f.points);
  return records;
}

TEST(LazLayered, HeightgridSelectionAsksForZClassificationAndFlagsOnly)
{
  field_selection const f = field_selection::heightgrid();
  EXPECT_TRUE(f.z && f.classification && f.flags);
  EXPECT_FALSE(f.intensity || f.scan_angle || f.user_data || f.point_source || f.gps_time ||
               f.rgb || f.nir || f.extra_bytes || f.wavepacket);
  field_selection const a = field_selection::all();
  EXPECT_TRUE(a.z && a.classification && a.flags && a.intensity && a.scan_angle && a.user_data &&
              a.point_source && a.gps_time && a.rgb && a.nir && a.extra_bytes && a.wavepacket);
}

TEST(LazLayered, RealFilesDecodeLikeLaspy)
{
  REQUIRE_REAL_DATA();
  for (auto const& e : real_files) {
    SCOPED_TRACE(e.path);
    laz_file const f = open_laz(real_dir() / e.path);
    ASSERT_EQ(f.points, e.points);
    ASSERT_EQ(f.vlr.record_length(), e.record_length);
    std::size_t const stride = e.record_length;

    std::size_t consumed = 0;
    auto const all = decode_only_chunk(f, field_selection::all(), &consumed);
    EXPECT_EQ(consumed, f.chunk_table - f.first_chunk);
    EXPECT_EQ(fnv1a64(all.data(), all.size()), e.records) << "records differ from laspy's";

    std::int64_t sx = 0, sy = 0, sz = 0;
    std::map<int, std::uint64_t> classes;
    for (std::size_t i = 0; i < f.points; ++i) {
      std::int32_t xyz[3];
      std::memcpy(xyz, all.data() + i * stride, 12);
      sx += xyz[0];
      sy += xyz[1];
      sz += xyz[2];
      ++classes[all[i * stride + 16]];
    }
    EXPECT_EQ(sx, e.sum_x);
    EXPECT_EQ(sy, e.sum_y);
    EXPECT_EQ(sz, e.sum_z);
    EXPECT_EQ(classes, e.classes);

    auto const hg = decode_only_chunk(f, field_selection::heightgrid(), &consumed);
    EXPECT_EQ(consumed, f.chunk_table - f.first_chunk);
    EXPECT_EQ(fnv1a64(hg.data(), hg.size()), e.heightgrid);

    auto const xy = decode_only_chunk(f, xy_only(), &consumed);
    EXPECT_EQ(fnv1a64(xy.data(), xy.size()), e.xy_only);
  }
}

TEST(LazLayered, ModelsDoNotLeakBetweenChunks)
{
  REQUIRE_REAL_DATA();
  // The decoder keeps its models per thread; decoding other files and selections in between
  // must not change the result.
  laz_file const a = open_laz(real_dir() / real_files[0].path);
  laz_file const b = open_laz(real_dir() / real_files[1].path);
  std::size_t consumed = 0;
  for (int round = 0; round < 3; ++round) {
    auto const ra = decode_only_chunk(a, round == 1 ? xy_only() : field_selection::all(), &consumed);
    auto const rb = decode_only_chunk(b, field_selection::all(), &consumed);
    EXPECT_EQ(fnv1a64(rb.data(), rb.size()), real_files[1].records);
    EXPECT_EQ(fnv1a64(ra.data(), ra.size()),
              round == 1 ? real_files[0].xy_only : real_files[0].records);
  }
}

// --- corrupt chunks -------------------------------------------------------------------------

class LazLayeredCorrupt : public ::testing::Test {
 protected:
  void SetUp() override
  {
    if (real_dir().empty()) GTEST_SKIP() << "HEIGHTGRID_REAL_DATA_DIR not present";
    file_ = open_laz(real_dir() / real_files[0].path);
    chunk_.assign(file_.bytes.begin() + static_cast<std::ptrdiff_t>(file_.first_chunk),
                  file_.bytes.begin() + static_cast<std::ptrdiff_t>(file_.chunk_table));
    records_.assign(static_cast<std::size_t>(file_.points) * 30 + 64, 0);
  }
  std::size_t decode(std::vector<std::uint8_t> const& chunk, std::size_t expected,
                     std::size_t max_points, field_selection const& fields = field_selection::all())
  {
    std::size_t consumed = 0;
    return decode_layered_chunk(file_.vlr, chunk.data(), chunk.size(), expected, max_points,
                                records_.data(), fields, &consumed);
  }
  std::string error_of(std::vector<std::uint8_t> const& chunk, std::size_t expected,
                       std::size_t max_points, field_selection const& fields = field_selection::all())
  {
    try {
      decode(chunk, expected, max_points, fields);
    } catch (decode_error const& e) {
      return e.what();
    }
    return "";
  }
  static void set_u32(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v)
  {
    std::memcpy(b.data() + at, &v, 4);
  }

  laz_file file_;
  std::vector<std::uint8_t> chunk_;
  std::vector<std::uint8_t> records_;
  static constexpr std::size_t count_at = 30;       // after the raw first point
  static constexpr std::size_t layers_at = 30 + 4;  // nine point14 layer sizes
};

TEST_F(LazLayeredCorrupt, EveryTruncationIsAnError)
{
  for (std::size_t size = 0; size < chunk_.size(); ++size) {
    std::vector<std::uint8_t> cut(chunk_.begin(), chunk_.begin() + static_cast<std::ptrdiff_t>(size));
    EXPECT_THROW(decode(cut, 135, 135), decode_error) << size << " bytes";
  }
}

TEST_F(LazLayeredCorrupt, PointCountsAreChecked)
{
  EXPECT_EQ(decode(chunk_, 0, 135), 135u);  // 0: the table does not say
  EXPECT_NE(error_of(chunk_, 135, 134).find("more than the 134"), std::string::npos);
  EXPECT_NE(error_of(chunk_, 136, 200).find("chunk table says 136"), std::string::npos);
  auto zero = chunk_;
  set_u32(zero, count_at, 0);
  EXPECT_NE(error_of(zero, 0, 135).find("point count is 0"), std::string::npos);
  auto huge = chunk_;
  set_u32(huge, count_at, 0xFFFFFFFFu);
  EXPECT_THROW(decode(huge, 0, 135), decode_error);
}

TEST_F(LazLayeredCorrupt, LayerSizesPastTheChunkAreErrors)
{
  for (std::size_t layer = 0; layer < 9; ++layer) {
    auto bad = chunk_;
    set_u32(bad, layers_at + 4 * layer, 0xFFFFFFF0u);
    EXPECT_NE(error_of(bad, 0, 135).find("runs past the end"), std::string::npos) << layer;
  }
}

TEST_F(LazLayeredCorrupt, ShortLayersAreReportedAsOverruns)
{
  // The XY layer declared 700 bytes shorter: its decoder runs out long before 135 points. (With
  // every field selected, the other layers now start at wrong offsets and one of them may fail
  // first; decoding X/Y only isolates the short layer.)
  auto bad = chunk_;
  std::uint32_t xy = 0;
  std::memcpy(&xy, bad.data() + layers_at, 4);
  set_u32(bad, layers_at, xy - 700);
  EXPECT_NE(error_of(bad, 0, 135, xy_only()).find("channel/returns/XY layer decoder ran"),
            std::string::npos);
  EXPECT_THROW(decode(bad, 0, 135), decode_error);
  // An empty XY layer with more than one point cannot be right.
  set_u32(bad, layers_at, 0);
  EXPECT_NE(error_of(bad, 0, 135).find("XY layer is empty"), std::string::npos);
}

TEST_F(LazLayeredCorrupt, ItemListsItCannotDecodeAreErrors)
{
  laz_vlr_info vlr = file_.vlr;
  std::size_t consumed = 0;
  auto decode_with = [&](laz_vlr_info const& v) {
    return decode_layered_chunk(v, chunk_.data(), chunk_.size(), 0, 135, records_.data(),
                                field_selection::all(), &consumed);
  };
  vlr.items[0].version = 2;
  EXPECT_THROW(decode_with(vlr), decode_error);
  vlr = file_.vlr;
  vlr.items[0].type = item_type::point10;
  vlr.items[0].size = 20;
  EXPECT_THROW(decode_with(vlr), decode_error);
  vlr = file_.vlr;
  vlr.items.push_back({item_type::rgb12, 6, 2});
  EXPECT_THROW(decode_with(vlr), decode_error);
  vlr = file_.vlr;
  vlr.items.push_back({item_type::rgb14, 6, 3});
  vlr.items.push_back({item_type::rgbnir14, 8, 3});
  EXPECT_THROW(decode_with(vlr), decode_error);
  vlr = file_.vlr;
  vlr.items.clear();
  EXPECT_THROW(decode_with(vlr), decode_error);
}

TEST_F(LazLayeredCorrupt, RandomDamageGivesAnErrorOrPointsNeverACrash)
{
  // Without sanitizers this catches crashes and hangs; the fuzz target runs the same decoder
  // under ASan/UBSan. Bytes beyond the records buffer must stay untouched.
  std::mt19937 rng(20240608);
  std::size_t errors = 0;
  for (int round = 0; round < 3000; ++round) {
    auto bad = chunk_;
    int const flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      // Mostly the header (count, layer sizes) and the first layers, where damage matters most.
      std::size_t const at = (round % 2 == 0) ? rng() % std::min<std::size_t>(bad.size(), 120)
                                              : rng() % bad.size();
      bad[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    }
    std::fill(records_.begin(), records_.end(), std::uint8_t{0x5A});
    try {
      std::size_t const n = decode(bad, 0, 135, round % 3 == 0 ? field_selection::heightgrid()
                                                               : field_selection::all());
      EXPECT_LE(n, 135u);
    } catch (decode_error const&) {
      ++errors;
    }
    for (std::size_t i = 135 * 30; i < records_.size(); ++i) { ASSERT_EQ(records_[i], 0x5A); }
  }
  EXPECT_GT(errors, 0u);
}

// --- developer check against laspy + lazrs (scripts/laz_layered_check.py) ---------------------

/// Decodes every chunk of `f` into `records`, walking the chunks by their consumed size.
std::size_t decode_file(laz_file const& f, field_selection const& fields,
                        std::vector<std::uint8_t>& records)
{
  std::size_t const stride = f.vlr.record_length();
  records.resize(static_cast<std::size_t>(f.points) * stride);
  std::size_t done = 0;
  std::size_t at = f.first_chunk;
  while (done < f.points) {
    std::size_t const left = static_cast<std::size_t>(f.points) - done;
    std::size_t const max_points =
        f.vlr.variable_chunks() ? left : std::min<std::size_t>(left, f.vlr.chunk_size);
    std::size_t consumed = 0;
    done += decode_layered_chunk(f.vlr, f.bytes.data() + at, f.chunk_table - at, 0, max_points,
                                 records.data() + done * stride, fields, &consumed);
    at += consumed;
  }
  return at;
}

TEST(LazLayeredDeveloperCheck, FilesFromTheCheckScriptMatchLaspy)
{
  char const* list = std::getenv("HEIGHTGRID_LAZ_LAYERED_CHECK");
  if (list == nullptr) GTEST_SKIP() << "HEIGHTGRID_LAZ_LAYERED_CHECK not set (see scripts/laz_layered_check.py)";
  std::stringstream names(list);
  std::string name;
  while (std::getline(names, name, ':')) {
    if (name.empty()) continue;
    SCOPED_TRACE(name);
    laz_file const f = open_laz(name);
    std::vector<std::uint8_t> const expected = read_file(name + ".records");
    std::size_t const stride = f.vlr.record_length();
    ASSERT_EQ(expected.size(), f.points * stride);

    std::vector<std::uint8_t> all, hg;
    auto time_decode = [&](field_selection const& fields, std::vector<std::uint8_t>& out) {
      double best = 1e30;
      for (int run = 0; run < 3; ++run) {
        auto const t0 = std::chrono::steady_clock::now();
        std::size_t const end = decode_file(f, fields, out);
        auto const t1 = std::chrono::steady_clock::now();
        EXPECT_EQ(end, f.chunk_table);
        best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
      }
      return best;
    };
    double const t_all = time_decode(field_selection::all(), all);
    double const t_hg = time_decode(field_selection::heightgrid(), hg);

    std::size_t first_bad = f.points;
    for (std::size_t i = 0; i < f.points && first_bad == f.points; ++i) {
      if (std::memcmp(all.data() + i * stride, expected.data() + i * stride, stride) != 0) first_bad = i;
    }
    EXPECT_EQ(first_bad, f.points) << "first record that differs";
    // heightgrid(): X, Y, Z, returns, flags byte and classification as laspy has them.
    std::size_t hg_bad = f.points;
    for (std::size_t i = 0; i < f.points && hg_bad == f.points; ++i) {
      if (std::memcmp(hg.data() + i * stride, expected.data() + i * stride, 12) != 0 ||
          std::memcmp(hg.data() + i * stride + 14, expected.data() + i * stride + 14, 3) != 0) {
        hg_bad = i;
      }
    }
    EXPECT_EQ(hg_bad, f.points) << "first record whose heightgrid fields differ";
    std::printf("%s: %llu points, %zu-byte records, %u items; all fields %.3f s (%.2f Mpoints/s), "
                "heightgrid() %.3f s (%.2f Mpoints/s)\n",
                name.c_str(), static_cast<unsigned long long>(f.points), stride,
                static_cast<unsigned>(f.vlr.items.size()), t_all, f.points / t_all / 1e6, t_hg,
                f.points / t_hg / 1e6);
  }
}

}  // namespace
}  // namespace heightgrid::io::laz
