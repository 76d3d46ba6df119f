// LAZ pointwise chunks, the LASzip VLR and the chunk table (io/src/laz), and the LAZ point source:
//   - the raw records decoded from the real LAZ files equal their uncompressed twins byte for byte;
//   - version 1 items (no real file has them) round-trip through the test-only encoder;
//   - VLR and chunk table errors say what is wrong; damaged chunks name the file and the chunk;
//   - 1, 2 and 8 threads give the same points.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/error.hpp"
#include "las_test_helpers.hpp"
#include "laz/laz_arith.hpp"
#include "laz/laz_pointwise.hpp"
#include "laz/laz_vlr.hpp"
#include "laz_test_encoder.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace heightgrid::io::laz {
namespace {

namespace enc = test::laz_encoding;

// ---- VLR --------------------------------------------------------------------------------

std::vector<std::uint8_t> make_vlr(std::uint16_t compressor, std::vector<laz_item> const& items,
                                   std::uint32_t chunk_size = 50000, std::uint16_t coder = 0)
{
  std::vector<std::uint8_t> b(34 + 6 * items.size(), 0);
  auto put16 = [&](std::size_t at, std::uint16_t v) { std::memcpy(b.data() + at, &v, 2); };
  put16(0, compressor);
  put16(2, coder);
  b[4] = 3;
  b[5] = 4;
  put16(6, 3);
  std::memcpy(b.data() + 12, &chunk_size, 4);
  std::int64_t const minus_one = -1;
  std::memcpy(b.data() + 16, &minus_one, 8);
  std::memcpy(b.data() + 24, &minus_one, 8);
  put16(32, static_cast<std::uint16_t>(items.size()));
  for (std::size_t i = 0; i < items.size(); ++i) {
    put16(34 + 6 * i, static_cast<std::uint16_t>(items[i].type));
    put16(36 + 6 * i, items[i].size);
    put16(38 + 6 * i, items[i].version);
  }
  return b;
}

std::string vlr_error(std::vector<std::uint8_t> const& b)
{
  try {
    (void)parse_laz_vlr(b.data(), b.size());
  } catch (decode_error const& e) {
    return e.what();
  }
  return "";
}

TEST(laz_vlr, parses_a_pointwise_vlr)
{
  auto const b = make_vlr(2, {{item_type::point10, 20, 2}, {item_type::gpstime11, 8, 2}, {item_type::rgb12, 6, 2},
                              {item_type::byte, 3, 2}});
  auto const v = parse_laz_vlr(b.data(), b.size());
  EXPECT_EQ(v.compressor, 2);
  EXPECT_EQ(v.chunk_size, 50000U);
  EXPECT_FALSE(v.variable_chunks());
  EXPECT_EQ(v.record_length(), 37U);
  EXPECT_EQ(describe_items(v), "point10 v2, gpstime11 v2, rgb12 v2, byte v2 (3 bytes)");
  EXPECT_NO_THROW(check_laz_items(v, 3, 37));
  EXPECT_NE(std::string(), [&] {
    try {
      check_laz_items(v, 3, 34);
    } catch (decode_error const& e) {
      return std::string(e.what());
    }
    return std::string();
  }());
}

TEST(laz_vlr, says_what_is_wrong)
{
  std::vector<laz_item> const p10 = {{item_type::point10, 20, 2}};
  struct expectation {
    std::vector<std::uint8_t> bytes;
    char const* message_part;
  };
  auto truncated = make_vlr(2, p10);
  truncated.resize(30);
  auto short_items = make_vlr(2, p10);
  short_items.resize(36);
  for (auto const& e : {expectation{truncated, "less than the 34 bytes"},
                        expectation{short_items, "items need 40"},
                        expectation{make_vlr(0, p10), "compressor 0 is not supported"},
                        expectation{make_vlr(4, p10), "compressor 4 is not supported"},
                        expectation{make_vlr(2, p10, 50000, 1), "coder 1 is not supported"},
                        expectation{make_vlr(2, {}), "lists no items"},
                        expectation{make_vlr(2, {{static_cast<item_type>(99), 4, 2}}), "item type 99 is not known"},
                        expectation{make_vlr(2, {{item_type::point10, 20, 3}}), "point10 version 3 is not supported"},
                        expectation{make_vlr(2, {{item_type::wavepacket13, 29, 3}}), "wavepacket13 version 3"},
                        expectation{make_vlr(2, {{item_type::point10, 21, 2}}), "point10 has size 21, not 20"},
                        expectation{make_vlr(2, {{item_type::byte, 0, 2}}), "byte has size 0"},
                        expectation{make_vlr(2, {{item_type::point14, 30, 3}}), "needs the layered compressor"},
                        expectation{make_vlr(3, p10), "cannot be read with the layered compressor"}}) {
    std::string const message = vlr_error(e.bytes);
    EXPECT_NE(message.find(e.message_part), std::string::npos) << "got: \"" << message << "\", want \"" << e.message_part << "\"";
  }
}

TEST(laz_vlr, a_chunk_size_of_0_reads_as_variable_size_chunks)
{
  // LASlib writes 0 in COPC files, with a chunk table that lists each chunk's points.
  std::vector<laz_item> const p10 = {{item_type::point10, 20, 2}};
  auto const b = make_vlr(2, p10, 0);
  auto const v = parse_laz_vlr(b.data(), b.size());
  EXPECT_TRUE(v.chunk_size_zero);
  EXPECT_TRUE(v.variable_chunks());
}

TEST(laz_vlr, items_must_fit_the_point_format)
{
  auto check = [](unsigned format, std::size_t length, std::vector<laz_item> const& items) -> std::string {
    auto const b = make_vlr(items.front().type == item_type::point14 ? 3 : 2, items);
    auto const v = parse_laz_vlr(b.data(), b.size());
    try {
      check_laz_items(v, format, length);
    } catch (decode_error const& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(check(0, 20, {{item_type::point10, 20, 2}}), "");
  EXPECT_EQ(check(1, 28, {{item_type::point10, 20, 2}, {item_type::gpstime11, 8, 2}}), "");
  EXPECT_EQ(check(5, 63 + 2, {{item_type::point10, 20, 1}, {item_type::gpstime11, 8, 1}, {item_type::rgb12, 6, 1},
                              {item_type::wavepacket13, 29, 1}, {item_type::byte, 2, 1}}),
            "");
  EXPECT_EQ(check(10, 67, {{item_type::point14, 30, 3}, {item_type::rgbnir14, 8, 3}, {item_type::wavepacket14, 29, 3}}), "");
  EXPECT_NE(check(1, 20, {{item_type::point10, 20, 2}}).find("item 2 should be gpstime11"), std::string::npos);
  EXPECT_NE(check(0, 21, {{item_type::point10, 20, 2}}).find("the header's point record length is 21"),
            std::string::npos);
  EXPECT_NE(check(1, 28, {{item_type::point10, 20, 2}, {item_type::byte, 8, 2}}).find("item 2 should be gpstime11"),
            std::string::npos);
  EXPECT_NE(check(6, 30, {{item_type::point10, 20, 2}, {item_type::byte, 10, 2}}).find("should be point14"),
            std::string::npos);
}

// ---- chunk table ------------------------------------------------------------------------

std::vector<std::uint8_t> make_table(std::vector<std::uint32_t> const& bytes, std::vector<std::uint32_t> const& points,
                                     std::uint32_t version = 0)
{
  enc::encoder e;
  enc::integer_compressor ic(32, 2);
  std::uint32_t prev_points = 0, prev_bytes = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (!points.empty()) {
      ic.compress(e, static_cast<std::int32_t>(prev_points), static_cast<std::int32_t>(points[i]), 0);
      prev_points = points[i];
    }
    ic.compress(e, static_cast<std::int32_t>(prev_bytes), static_cast<std::int32_t>(bytes[i]), 1);
    prev_bytes = bytes[i];
  }
  auto const coded = e.finish();
  std::vector<std::uint8_t> t(8 + coded.size());
  auto const count = static_cast<std::uint32_t>(bytes.size());
  std::memcpy(t.data(), &version, 4);
  std::memcpy(t.data() + 4, &count, 4);
  std::copy(coded.begin(), coded.end(), t.begin() + 8);
  return t;
}

laz_vlr_info vlr_with_chunks(std::uint32_t chunk_size)
{
  auto const b = make_vlr(2, {{item_type::point10, 20, 2}}, chunk_size);
  return parse_laz_vlr(b.data(), b.size());
}

std::string table_error(laz_vlr_info const& v, std::vector<std::uint8_t> const& t, std::uint64_t end, std::uint64_t points)
{
  try {
    (void)parse_chunk_table(v, t.data(), t.size(), 1000, end, points);
  } catch (decode_error const& e) {
    return e.what();
  }
  return "";
}

TEST(laz_chunk_table, fixed_and_variable_chunks)
{
  auto const fixed = vlr_with_chunks(100);
  auto const t = make_table({500, 480, 90}, {});
  auto const c = parse_chunk_table(fixed, t.data(), t.size(), 1000, 3000, 250);
  ASSERT_EQ(c.size(), 3U);
  EXPECT_EQ(c[0].offset, 1000U);
  EXPECT_EQ(c[1].offset, 1500U);
  EXPECT_EQ(c[2].offset, 1980U);
  EXPECT_EQ(c[2].bytes, 90U);
  EXPECT_EQ(c[0].points, 100U);
  EXPECT_EQ(c[2].points, 50U);

  auto const variable = vlr_with_chunks(0xFFFFFFFFu);
  auto const tv = make_table({500, 480, 90}, {7, 300, 1});
  auto const cv = parse_chunk_table(variable, tv.data(), tv.size(), 1000, 2070, 308);
  ASSERT_EQ(cv.size(), 3U);
  EXPECT_EQ(cv[1].points, 300U);
  EXPECT_EQ(cv[2].offset + cv[2].bytes, 2070U);

  // Variable-size chunks of no points, as lazrs writes when a writer ends a chunk just before
  // closing the file (no bytes for layered chunks, a few for pointwise ones), are stepped over.
  auto const te = make_table({500, 480, 0, 90, 4}, {7, 300, 0, 1, 0});
  auto const ce = parse_chunk_table(variable, te.data(), te.size(), 1000, 2074, 308);
  ASSERT_EQ(ce.size(), 3U);
  EXPECT_EQ(ce[2].offset, 1980U);
  EXPECT_EQ(ce[2].points, 1U);
  EXPECT_NE(table_error(variable, make_table({500, 480, 90, 0}, {7, 300, 1, 2}), 2070, 310).find("does not fit"),
            std::string::npos);
  EXPECT_NE(table_error(variable, make_table({500, 480, 90, 8}, {7, 300, 1, 0}), 2074, 308).find("does not fit"),
            std::string::npos);
  // Fixed-size chunks never hold no points.
  EXPECT_NE(table_error(fixed, make_table({500, 480, 90, 0}, {}), 3000, 250).find("make 3"), std::string::npos);

  EXPECT_NE(table_error(fixed, t, 2000, 250).find("does not fit in the point data"), std::string::npos);
  EXPECT_NE(table_error(fixed, t, 3000, 400).find("make 4"), std::string::npos);
  // A count near 2^64 does not wrap the chunks it needs to zero.
  EXPECT_NE(table_error(fixed, t, 3000, ~std::uint64_t{0}).find("make 184467440737095517"), std::string::npos);
  EXPECT_NE(table_error(variable, tv, 3000, 309).find("hold 308 points, the header says 309"), std::string::npos);
  EXPECT_NE(table_error(fixed, make_table({500, 480, 90}, {}, 1), 3000, 250).find("version 1"), std::string::npos);
  EXPECT_NE(table_error(fixed, make_table({500, 0, 90}, {}), 3000, 250).find("does not fit"), std::string::npos);
  auto cut = t;
  cut.resize(9);
  EXPECT_NE(table_error(fixed, cut, 3000, 250).find("cut off"), std::string::npos);
  cut.resize(5);
  EXPECT_NE(table_error(fixed, cut, 3000, 250).find("cut off"), std::string::npos);
  auto huge = t;
  std::uint32_t const many = 0x7FFFFFFF;
  std::memcpy(huge.data() + 4, &many, 4);
  EXPECT_NE(table_error(variable, huge, 3000, 250).find("chunks in 2000 bytes"), std::string::npos);
}

// ---- version 1 items through the test encoder ------------------------------------------

template <class T>
T get(std::uint8_t const* p)
{
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void put(std::uint8_t* p, T v)
{
  std::memcpy(p, &v, sizeof v);
}

std::int32_t median3(std::array<std::int32_t, 3> const& d)
{
  std::array<std::int32_t, 3> s = d;
  std::sort(s.begin(), s.end());
  return s[1];
}

/// Encodes point10 v1, gpstime11 v1, rgb12 v1 and byte v1 records as the decoder reads them.
class v1_encoder {
 public:
  explicit v1_encoder(std::size_t extra) : extra_(extra), byte_ic_(8, static_cast<std::uint32_t>(extra)) {}

  void encode(enc::encoder& e, std::uint8_t const* last, std::uint8_t const* now)
  {
    // point10: x, y, z, then the changed mask and the changed fields.
    std::int32_t const dx = get<std::int32_t>(now) - get<std::int32_t>(last);
    std::int32_t const dy = get<std::int32_t>(now + 4) - get<std::int32_t>(last + 4);
    dx_.compress(e, median3(x_diffs_), dx);
    std::uint32_t k = dx_.k();
    dy_.compress(e, median3(y_diffs_), dy, std::min(k, 19U));
    k = (k + dy_.k()) / 2;
    z_.compress(e, get<std::int32_t>(last + 8), get<std::int32_t>(now + 8), std::min(k, 19U));
    std::uint32_t changed = 0;
    if (get<std::uint16_t>(now + 12) != get<std::uint16_t>(last + 12)) changed |= 32;
    if (now[14] != last[14]) changed |= 16;
    if (now[15] != last[15]) changed |= 8;
    if (now[16] != last[16]) changed |= 4;
    if (now[17] != last[17]) changed |= 2;
    if (get<std::uint16_t>(now + 18) != get<std::uint16_t>(last + 18)) changed |= 1;
    e.encode_symbol(changed_, changed);
    if (changed & 32) intensity_.compress(e, get<std::uint16_t>(last + 12), get<std::uint16_t>(now + 12));
    if (changed & 16) e.encode_symbol(model(bits_, last[14]), now[14]);
    if (changed & 8) e.encode_symbol(model(classes_, last[15]), now[15]);
    if (changed & 4) scan_.compress(e, last[16], now[16], k < 3 ? 1 : 0);
    if (changed & 2) e.encode_symbol(model(users_, last[17]), now[17]);
    if (changed & 1) source_.compress(e, get<std::uint16_t>(last + 18), get<std::uint16_t>(now + 18));
    x_diffs_[next_] = dx;
    y_diffs_[next_] = dy;
    next_ = (next_ + 1) % 3;

    // gpstime11 v1: 0/1/2 while the last difference is 0; else multiples of it, or raw.
    auto const t_last = get<std::int64_t>(last + 20), t_now = get<std::int64_t>(now + 20);
    std::int64_t const diff = t_now - t_last;
    bool const fits = diff >= INT32_MIN && diff <= INT32_MAX;
    if (last_diff_ == 0) {
      if (diff == 0) {
        e.encode_symbol(zero_, 0);
      } else if (fits) {
        e.encode_symbol(zero_, 1);
        time_.compress(e, 0, static_cast<std::int32_t>(diff), 0);
        last_diff_ = static_cast<std::int32_t>(diff);
      } else {
        e.encode_symbol(zero_, 2);
        e.write_int64(static_cast<std::uint64_t>(t_now));
      }
    } else if (!fits) {
      e.encode_symbol(multi_, 510);
      e.write_int64(static_cast<std::uint64_t>(t_now));
    } else {
      auto const d = static_cast<std::int32_t>(diff);
      std::int64_t const q = d / last_diff_;
      if (d % last_diff_ == 0 && q >= 2 && q <= 509) {
        auto const m = static_cast<std::uint32_t>(q);
        e.encode_symbol(multi_, m);
        time_.compress(e, static_cast<std::int32_t>(m) * last_diff_, d, m < 10 ? 3 : (m < 50 ? 4 : 5));
        if (m == 509) extreme(d);
      } else if (std::abs(d) < std::abs(last_diff_) / 2) {
        e.encode_symbol(multi_, 0);
        time_.compress(e, last_diff_ / 4, d, 2);
        extreme(d);
      } else {
        e.encode_symbol(multi_, 1);
        time_.compress(e, last_diff_, d, 1);
        last_diff_ = d;
        extremes_ = 0;
      }
    }

    // rgb12 v1: a mask of the changed bytes, each against its last value.
    std::uint32_t used = 0;
    for (unsigned b = 0; b < 6; ++b) {
      if (now[28 + b] != last[28 + b]) used |= 1u << b;
    }
    e.encode_symbol(rgb_used_, used);
    for (unsigned b = 0; b < 6; ++b) {
      if (used & (1u << b)) rgb_.compress(e, last[28 + b], now[28 + b], b);
    }

    // byte v1: every extra byte against its last value, one context each.
    for (std::size_t i = 0; i < extra_; ++i) {
      byte_ic_.compress(e, last[34 + i], now[34 + i], static_cast<std::uint32_t>(i));
    }
  }

 private:
  static enc::symbol_model& model(std::map<std::uint8_t, enc::symbol_model>& m, std::uint8_t key)
  {
    return m.try_emplace(key, 256).first->second;
  }
  void extreme(std::int32_t d)
  {
    if (++extremes_ > 3) {
      last_diff_ = d;
      extremes_ = 0;
    }
  }

  std::size_t extra_;
  std::array<std::int32_t, 3> x_diffs_{}, y_diffs_{};
  unsigned next_ = 0;
  enc::integer_compressor dx_{32}, dy_{32, 20}, z_{32, 20}, intensity_{16}, scan_{8, 2}, source_{16};
  enc::symbol_model changed_{64};
  std::map<std::uint8_t, enc::symbol_model> bits_, classes_, users_;
  std::int32_t last_diff_ = 0, extremes_ = 0;
  enc::symbol_model multi_{512}, zero_{3};
  enc::integer_compressor time_{32, 6};
  enc::symbol_model rgb_used_{64};
  enc::integer_compressor rgb_{8, 6};
  enc::integer_compressor byte_ic_;
};

TEST(laz_pointwise, version_1_items_round_trip)
{
  constexpr std::size_t extra = 3, length = 34 + extra, points = 3000;
  std::mt19937_64 rng(7);
  std::vector<std::uint8_t> records(points * length);
  std::int64_t time = 400000000000LL;
  for (std::size_t i = 0; i < points; ++i) {
    std::uint8_t* p = records.data() + i * length;
    put<std::int32_t>(p, static_cast<std::int32_t>(100000 + 3 * i + rng() % 5));
    put<std::int32_t>(p + 4, static_cast<std::int32_t>(-5000 + (rng() % 100)));
    put<std::int32_t>(p + 8, static_cast<std::int32_t>(rng() % 3 == 0 ? rng() : 700 + rng() % 9));
    put<std::uint16_t>(p + 12, static_cast<std::uint16_t>(rng() % 4 == 0 ? rng() : 5));
    p[14] = static_cast<std::uint8_t>(rng() % 3 == 0 ? rng() : 0x09);
    p[15] = static_cast<std::uint8_t>(rng() % 5 == 0 ? rng() % 32 : 2);
    p[16] = static_cast<std::uint8_t>(rng() % 7 == 0 ? rng() : 250);
    p[17] = static_cast<std::uint8_t>(rng() % 11 == 0 ? rng() : 0);
    put<std::uint16_t>(p + 18, static_cast<std::uint16_t>(rng() % 13 == 0 ? rng() : 17));
    switch (rng() % 6) {  // the time: same, regular steps, multiples, tiny, huge jumps
      case 0: break;
      case 1: time += 1000; break;
      case 2: time += 3000; break;
      case 3: time += 1000 * static_cast<std::int64_t>(rng() % 600); break;
      case 4: time += 17; break;
      default: time += (rng() % 2 ? 1 : -1) * static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 40)); break;
    }
    put<std::int64_t>(p + 20, time);
    for (unsigned b = 0; b < 6; ++b) p[28 + b] = static_cast<std::uint8_t>(rng() % 3 == 0 ? rng() : b);
    for (std::size_t b = 0; b < extra; ++b) p[34 + b] = static_cast<std::uint8_t>(rng() % 2 ? rng() : 42);
  }
  // The chunk: the first record raw, then the rest arithmetic-coded.
  enc::encoder e;
  v1_encoder items(extra);
  for (std::size_t i = 1; i < points; ++i) items.encode(e, &records[(i - 1) * length], &records[i * length]);
  auto const coded = e.finish();
  std::vector<std::uint8_t> chunk(records.begin(), records.begin() + length);
  chunk.insert(chunk.end(), coded.begin(), coded.end());

  auto const vb = make_vlr(2, {{item_type::point10, 20, 1}, {item_type::gpstime11, 8, 1}, {item_type::rgb12, 6, 1},
                               {item_type::byte, extra, 1}});
  auto const vlr = parse_laz_vlr(vb.data(), vb.size());
  std::vector<std::uint8_t> decoded(points * length);
  EXPECT_EQ(decode_pointwise_chunk(vlr, chunk.data(), chunk.size(), points, decoded.data()), chunk.size());
  for (std::size_t i = 0; i < points; ++i) {
    ASSERT_EQ(0, std::memcmp(&decoded[i * length], &records[i * length], length)) << "record " << i;
  }

  // Streamed in uneven steps, the same records.
  pointwise_decoder d(vlr);
  d.start(chunk.data(), chunk.size());
  std::vector<std::uint8_t> streamed(points * length);
  for (std::size_t done = 0, step = 1; done < points; done += step, step = step * 3 + 1) {
    step = std::min(step, points - done);
    d.decode(step, &streamed[done * length]);
  }
  EXPECT_EQ(d.consumed(), chunk.size());
  EXPECT_EQ(streamed, records);

  // Cut short: an error, not a crash.
  for (std::size_t cut : {std::size_t{0}, std::size_t{10}, length + 2, chunk.size() / 2, chunk.size() - 1}) {
    SCOPED_TRACE(cut);
    EXPECT_THROW(decode_pointwise_chunk(vlr, chunk.data(), cut, points, decoded.data()), decode_error);
  }
}

// ---- real files -------------------------------------------------------------------------

#define REQUIRE_REAL_DATA()                                                                     \
  if (test::real_data_dir().empty()) { GTEST_SKIP() << "HEIGHTGRID_REAL_DATA_DIR (../shared/data/real) not present"; }

struct laz_file_parts {
  std::vector<std::uint8_t> bytes;
  las_header_info header;
  laz_vlr_info vlr;
  std::vector<chunk_entry> chunks;
};

laz_file_parts open_parts(std::string const& name)
{
  laz_file_parts f;
  f.bytes = test::file_bytes(test::real_data_dir() / name);
  f.header = parse_las_header(f.bytes.data(), f.bytes.size(), name);
  EXPECT_TRUE(f.header.laz.has_value());
  f.vlr = parse_laz_vlr(&f.bytes[f.header.laz->vlr_data_offset], f.header.laz->vlr_data_length);
  std::uint64_t const start = f.header.offset_to_point_data;
  auto const table_at = static_cast<std::uint64_t>(test::get<std::int64_t>(f.bytes, start));
  f.chunks = parse_chunk_table(f.vlr, &f.bytes[table_at], f.bytes.size() - table_at, start + 8, table_at,
                               f.header.point_count);
  return f;
}

TEST(laz_pointwise_real, decoded_records_equal_the_uncompressed_twin_byte_for_byte)
{
  REQUIRE_REAL_DATA();
  struct twin {
    char const* laz;
    char const* las;
  };
  for (auto const& t : {twin{"pdal/laz_autzen_trim.laz", "pdal/las_autzen_trim.las"},
                        twin{"lidR/Topography.laz", "lasR/Topography.las"}}) {
    SCOPED_TRACE(t.laz);
    auto const f = open_parts(t.laz);
    auto const las = test::file_bytes(test::real_data_dir() / t.las);
    auto const lh = parse_las_header(las.data(), las.size(), t.las);
    ASSERT_EQ(lh.point_count, f.header.point_count);
    ASSERT_EQ(lh.record_length, f.header.record_length);
    std::size_t const length = f.header.record_length;
    std::uint64_t point = 0;
    for (std::size_t c = 0; c < f.chunks.size(); ++c) {
      auto const& chunk = f.chunks[c];
      std::vector<std::uint8_t> records(chunk.points * length);
      std::size_t const consumed = decode_pointwise_chunk(f.vlr, &f.bytes[chunk.offset], chunk.bytes, chunk.points,
                                                          records.data());
      EXPECT_EQ(consumed, chunk.bytes) << "chunk " << c << ": the decoder must stop exactly at the chunk's end";
      for (std::size_t i = 0; i < chunk.points; ++i, ++point) {
        ASSERT_EQ(0, std::memcmp(&records[i * length], &las[lh.offset_to_point_data + point * length], length))
          << "chunk " << c << " point " << i;
      }
    }
    EXPECT_EQ(point, f.header.point_count);
  }
}

TEST(laz_pointwise_real, header_describes_the_compression)
{
  REQUIRE_REAL_DATA();
  auto const h = read_las_header((test::real_data_dir() / "pdal/laz_autzen_trim.laz").string());
  ASSERT_TRUE(h.laz.has_value());
  EXPECT_EQ(h.laz->compressor, 2);
  EXPECT_EQ(h.laz->chunk_size, 50000U);
  EXPECT_EQ(h.laz->chunk_count, 3U);
  EXPECT_EQ(h.laz->items, "point10 v2, gpstime11 v2, rgb12 v2");
  EXPECT_NE(h.laz->describe().find("compressor 2, fixed chunks of 50000 points, 3 chunks), items: point10 v2"),
            std::string::npos)
    << h.laz->describe();
}

point_chunk read_all(std::string const& path, std::size_t threads, std::size_t max_points = 40000)
{
  las_read_options o;
  o.threads = threads;
  return test::read_all_points(path, o, max_points);
}

TEST(laz_source_real, one_two_and_eight_threads_give_the_points_of_the_las_twin)
{
  REQUIRE_REAL_DATA();
  auto const dir = test::real_data_dir();
  auto const las = read_all((dir / "pdal/las_autzen_trim.las").string(), 0);
  ASSERT_EQ(las.size(), 110000U);
  for (std::size_t threads : {1U, 2U, 8U}) {
    SCOPED_TRACE(threads);
    auto const laz = read_all((dir / "pdal/laz_autzen_trim.laz").string(), threads, 7777);
    ASSERT_EQ(laz.size(), las.size());
    EXPECT_EQ(laz.x, las.x);
    EXPECT_EQ(laz.y, las.y);
    EXPECT_EQ(laz.z, las.z);
    EXPECT_EQ(laz.classification, las.classification);
    EXPECT_EQ(laz.return_number, las.return_number);
    EXPECT_EQ(laz.flags, las.flags);
  }
}

TEST(laz_source_real, a_damaged_chunk_is_an_input_error_naming_the_file_and_the_chunk)
{
  REQUIRE_REAL_DATA();
  auto const f = open_parts("pdal/laz_autzen_trim.laz");
  ASSERT_EQ(f.chunks.size(), 3U);
  // A rewritten chunk table says chunk 1 is 40 bytes long: its decoder runs out of data.
  auto const& c1 = f.chunks[1];
  auto const table_at = static_cast<std::size_t>(test::get<std::int64_t>(f.bytes, f.header.offset_to_point_data));
  std::vector<std::uint8_t> b(f.bytes.begin(), f.bytes.begin() + static_cast<std::ptrdiff_t>(table_at));
  auto const table = make_table({static_cast<std::uint32_t>(f.chunks[0].bytes), 40, static_cast<std::uint32_t>(f.chunks[2].bytes)}, {});
  b.insert(b.end(), table.begin(), table.end());
  auto const path = (test::las_scratch_dir() / "laz_damaged_chunk.laz").string();
  test::write_bytes(path, b);
  for (std::size_t threads : {1U, 4U}) {
    SCOPED_TRACE(threads);
    std::string message;
    try {
      (void)read_all(path, threads);
      ADD_FAILURE() << "no error";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      message = e.what();
    }
    std::string const where = "chunk 1 (bytes " + std::to_string(c1.offset) + "-" + std::to_string(c1.offset + 40) + "): ";
    EXPECT_NE(message.find(path + ": " + where), std::string::npos) << message;
  }
}

TEST(laz_source_real, without_a_chunk_table_fixed_chunks_decode_one_after_the_other)
{
  REQUIRE_REAL_DATA();
  auto const f = open_parts("lidR/Topography.laz");
  auto b = f.bytes;
  test::put<std::int64_t>(b, f.header.offset_to_point_data, static_cast<std::int64_t>(f.header.offset_to_point_data));
  auto const path = (test::las_scratch_dir() / "laz_no_table.laz").string();
  test::write_bytes(path, b);
  auto const with_table = read_all((test::real_data_dir() / "lidR/Topography.laz").string(), 2);
  auto const without = read_all(path, 2, 1234);
  EXPECT_EQ(without.size(), f.header.point_count);
  EXPECT_EQ(without.x, with_table.x);
  EXPECT_EQ(without.z, with_table.z);
  EXPECT_EQ(without.classification, with_table.classification);
}

}  // namespace
}  // namespace heightgrid::io::laz
