// The LAZ entropy decoder (io/src/laz/laz_arith) against the test-only encoder of
// laz_test_encoder.hpp: adaptive bits and symbols, raw bits, the integer decompressor, the exact
// end position of a stream and the behaviour past the end of the buffer.

#include "laz/laz_arith.hpp"
#include "laz_test_encoder.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace heightgrid::io::laz {
namespace {

namespace enc = test::laz_encoding;

TEST(laz_arith, adaptive_bits_round_trip_and_end_exactly_at_the_last_byte)
{
  std::mt19937 rng(1);
  for (double p_one : {0.0, 0.01, 0.3, 0.5, 0.97, 1.0}) {
    SCOPED_TRACE(p_one);
    std::bernoulli_distribution one(p_one);
    std::vector<std::uint32_t> bits(20000);
    for (auto& b : bits) b = one(rng) ? 1 : 0;
    enc::encoder e;
    enc::bit_model em;
    for (auto b : bits) e.encode_bit(em, b);
    auto const bytes = e.finish();

    arithmetic_decoder d;
    d.init(bytes.data(), bytes.size());
    codec::bit_model m{};
    codec::reset(m);
    for (std::size_t i = 0; i < bits.size(); ++i) ASSERT_EQ(d.state().decode_bit(m), bits[i]) << "bit " << i;
    EXPECT_EQ(d.position(), bytes.size());
    EXPECT_EQ(d.overrun(), 0U);
  }
}

TEST(laz_arith, symbols_of_small_and_large_alphabets_round_trip)
{
  std::mt19937 rng(2);
  // 2..16 symbols search the distribution directly; above 16 the decoder uses its lookup table.
  for (std::uint32_t symbols : {2U, 3U, 6U, 16U, 17U, 64U, 256U, 516U, 2048U}) {
    SCOPED_TRACE(symbols);
    // Skewed: mostly small symbols, sometimes any, so the model adapts and rescales.
    std::geometric_distribution<std::uint32_t> small(0.3);
    std::uniform_int_distribution<std::uint32_t> any(0, symbols - 1);
    std::vector<std::uint32_t> values(50000);
    for (std::size_t i = 0; i < values.size(); ++i) {
      values[i] = (i % 7 == 0) ? any(rng) : std::min(small(rng), symbols - 1);
    }
    values[0] = symbols - 1;  // the last symbol takes its own branch in the coder
    enc::encoder e;
    enc::symbol_model em(symbols);
    for (auto v : values) e.encode_symbol(em, v);
    auto const bytes = e.finish();

    arithmetic_decoder d;
    d.init(bytes.data(), bytes.size());
    symbol_model m(symbols);
    for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(d.decode_symbol(m), values[i]) << "symbol " << i;
    EXPECT_EQ(d.position(), bytes.size());
    EXPECT_EQ(d.overrun(), 0U);
  }
}

TEST(laz_arith, raw_bits_bytes_shorts_ints_round_trip_between_symbols)
{
  std::mt19937_64 rng(3);
  enc::encoder e;
  enc::symbol_model em(5);
  struct item {
    int kind;
    std::uint32_t bits;
    std::uint64_t value;
  };
  std::vector<item> items;
  for (int i = 0; i < 5000; ++i) {
    int const kind = static_cast<int>(rng() % 6);
    std::uint32_t const bits = 1 + static_cast<std::uint32_t>(rng() % 32);
    std::uint64_t v = rng();
    switch (kind) {
      case 0: v &= (bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1); e.write_bits(bits, static_cast<std::uint32_t>(v)); break;
      case 1: v &= 0xFF; e.write_byte(static_cast<std::uint32_t>(v)); break;
      case 2: v &= 0xFFFF; e.write_short(static_cast<std::uint32_t>(v)); break;
      case 3: v &= 0xFFFFFFFFu; e.write_int(static_cast<std::uint32_t>(v)); break;
      case 4: e.write_int64(v); break;
      default: v %= 5; e.encode_symbol(em, static_cast<std::uint32_t>(v)); break;
    }
    items.push_back({kind, bits, v});
  }
  auto const bytes = e.finish();
  arithmetic_decoder d;
  d.init(bytes.data(), bytes.size());
  symbol_model m(5);
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto const& it = items[i];
    std::uint64_t got = 0;
    switch (it.kind) {
      case 0: got = d.read_bits(it.bits); break;
      case 1: got = d.read_bits(8); break;
      case 2: got = d.read_bits(16); break;
      case 3: got = d.read_int(); break;
      case 4: got = d.read_int64(); break;
      default: got = d.decode_symbol(m); break;
    }
    ASSERT_EQ(got, it.value) << "item " << i << " kind " << it.kind;
  }
  EXPECT_EQ(d.position(), bytes.size());
  EXPECT_EQ(d.overrun(), 0U);
}

struct ic_params {
  std::uint32_t bits, contexts, bits_high, range;
};

TEST(laz_arith, integers_round_trip_for_every_corrector_size)
{
  std::mt19937_64 rng(4);
  // The decompressor has what LASzip's items use: bits_high 8, correctors folded into 2^bits (or
  // wrapped in 32 bits); the test encoder's other shapes (a range, another bits_high) are not read.
  for (auto p : {ic_params{16, 1, 8, 0}, ic_params{32, 3, 8, 0}, ic_params{8, 6, 8, 0}, ic_params{32, 22, 8, 0},
                 ic_params{16, 4, 8, 0}, ic_params{1, 1, 8, 0}, ic_params{12, 2, 8, 0}}) {
    SCOPED_TRACE(::testing::Message() << "bits " << p.bits << " contexts " << p.contexts << " bits_high "
                                      << p.bits_high << " range " << p.range);
    // Values inside the integer's range; small and huge differences to the prediction.
    std::uint64_t const span = p.range ? p.range : (p.bits == 0 || p.bits >= 32 ? (std::uint64_t{1} << 32) : (std::uint64_t{1} << p.bits));
    struct value {
      std::int32_t pred, real;
      std::uint32_t context;
      std::uint32_t k;
    };
    std::vector<value> values;
    enc::encoder e;
    enc::integer_compressor ec(p.bits, p.contexts, p.bits_high, p.range);
    for (int i = 0; i < 20000; ++i) {
      auto draw = [&] {
        std::uint64_t v = rng() % span;
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
      };
      std::int32_t const pred = draw();
      std::int32_t real;
      switch (i % 4) {
        case 0: real = pred; break;
        case 1: real = static_cast<std::int32_t>(static_cast<std::uint32_t>(pred) + static_cast<std::uint32_t>(rng() % 5) - 2); break;
        default: real = draw(); break;
      }
      if (span < (std::uint64_t{1} << 32)) {  // keep real inside [0, span)
        real = static_cast<std::int32_t>(static_cast<std::uint32_t>(real) % static_cast<std::uint32_t>(span));
      }
      std::uint32_t const context = static_cast<std::uint32_t>(rng() % p.contexts);
      // With 32-bit values a corrector of exactly -2^31 has no code in LASzip's scheme.
      auto const corr = static_cast<std::int32_t>(static_cast<std::uint32_t>(real) - static_cast<std::uint32_t>(pred));
      if (span == (std::uint64_t{1} << 32) && corr == std::numeric_limits<std::int32_t>::min()) { continue; }
      ec.compress(e, pred, real, context);
      values.push_back({pred, real, context, ec.k()});
    }
    auto const bytes = e.finish();
    arithmetic_decoder d;
    d.init(bytes.data(), bytes.size());
    integer_decompressor ic(p.bits, p.contexts);
    ic.init();
    for (std::size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(ic.decompress(d, values[i].pred, values[i].context), values[i].real) << "value " << i;
      ASSERT_EQ(ic.k(), values[i].k) << "value " << i;
    }
    EXPECT_EQ(d.position(), bytes.size());
    EXPECT_EQ(d.overrun(), 0U);
  }
}

TEST(laz_arith, init_resets_the_models_for_the_next_chunk)
{
  enc::encoder e;
  enc::integer_compressor ec(32, 2);
  for (int i = 0; i < 1000; ++i) ec.compress(e, i, 3 * i + 7, i % 2);
  auto const bytes = e.finish();
  integer_decompressor ic(32, 2);
  for (int round = 0; round < 2; ++round) {  // the second round reuses the adapted models
    arithmetic_decoder d;
    d.init(bytes.data(), bytes.size());
    ic.init();
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(ic.decompress(d, i, static_cast<std::uint32_t>(i % 2)), 3 * i + 7);
  }
}

TEST(laz_arith, a_models_lookup_table_names_the_last_symbol_below_each_slot)
{
  // update() writes the table in one sweep over the symbols; here against the definition: table[t]
  // (1 <= t <= table_size + 1) is the number of symbols whose interval starts in a slot below t,
  // less one, and table[0] is 0. Counts from flat to very skewed, some past the rescaling limit.
  std::mt19937 rng(7);
  for (std::uint32_t symbols : {17U, 33U, 64U, 256U, 257U, 516U, 2048U}) {
    SCOPED_TRACE(symbols);
    std::vector<std::uint16_t> arena(codec::storage_u16(symbols));
    std::size_t used = 0;
    codec::symbol_model m{};
    codec::place(&m, symbols, arena.data(), used);
    ASSERT_EQ(used, arena.size());
    ASSERT_NE(m.table_size, 0U);
    codec::rebuild_fresh(m);
    for (int round = 0; round < 40; ++round) {
      SCOPED_TRACE(round);
      // Counts as decoding leaves them: at least one each, their sum the model's total plus the
      // symbols of this cycle, below 2^16 (one halving brings it under the 2^15 limit).
      std::uint16_t* const counts = codec::counts_of(m);
      std::uniform_int_distribution<std::uint32_t> heavy(0, symbols - 1);
      std::uint32_t const peak = heavy(rng);
      std::uint32_t const spread = std::min<std::uint32_t>(1 + round * 20, 40000 / symbols);
      std::uint32_t sum = 0;
      for (std::uint32_t s = 0; s < symbols; ++s) {
        counts[s] = static_cast<std::uint16_t>(1 + rng() % spread + (s == peak ? 10000 * (round % 3) : 0));
        sum += counts[s];
      }
      m.update_cycle = std::min(m.update_cycle, sum);
      m.total_count = sum - m.update_cycle;
      codec::update(m);
      std::uint16_t const* const dist = m.storage;
      std::uint16_t const* const table = m.storage + symbols;
      ASSERT_EQ(dist[0], 0U);
      ASSERT_EQ(table[0], 0U);
      for (std::uint32_t t = 1; t <= std::uint32_t{m.table_size} + 1; ++t) {
        std::uint32_t below = 0;
        for (std::uint32_t s = 0; s < symbols; ++s) {
          below += (std::uint32_t{dist[s]} >> m.table_shift) < t ? 1U : 0U;
        }
        ASSERT_EQ(table[t], below - 1) << "table entry " << t;
      }
    }
  }
}

TEST(laz_arith, a_reset_symbol_model_decodes_as_a_new_one)
{
  // reset() copies the fresh state its thread built for that alphabet size: a model adapted to
  // one stream and reset must decode a second stream exactly as a model constructed for it.
  std::mt19937 rng(5);
  for (std::uint32_t symbols : {2U, 5U, 16U, 17U, 33U, 256U, 2048U}) {
    SCOPED_TRACE(symbols);
    std::uniform_int_distribution<std::uint32_t> any(0, symbols - 1);
    std::geometric_distribution<std::uint32_t> small(0.2);
    std::vector<std::uint32_t> first(3000), second(3000);
    for (auto& v : first) v = std::min(small(rng), symbols - 1);
    for (auto& v : second) v = any(rng);
    auto const encode = [&](std::vector<std::uint32_t> const& values) {
      enc::encoder e;
      enc::symbol_model em(symbols);
      for (auto v : values) e.encode_symbol(em, v);
      return e.finish();
    };
    auto const a = encode(first);
    auto const b = encode(second);
    symbol_model used(symbols);
    symbol_model other(symbols);  // another model of the size, used and reset in between
    for (int round = 0; round < 2; ++round) {
      arithmetic_decoder d;
      d.init(a.data(), a.size());
      used.reset();
      for (std::size_t i = 0; i < first.size(); ++i) ASSERT_EQ(d.decode_symbol(used), first[i]) << "symbol " << i;
      d.init(b.data(), b.size());
      used.reset();
      for (std::size_t i = 0; i < second.size(); ++i) ASSERT_EQ(d.decode_symbol(used), second[i]) << "symbol " << i;
      d.init(a.data(), a.size());
      other.reset();
      for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(d.decode_symbol(other), first[i]) << "symbol " << i;
    }
  }
}

TEST(laz_arith, reading_past_the_end_gives_zeros_and_counts_the_overrun)
{
  std::uint8_t const bytes[3] = {0x12, 0x34, 0x56};
  arithmetic_decoder d;
  d.init(bytes, sizeof bytes);
  EXPECT_EQ(d.position(), 3U);
  EXPECT_EQ(d.overrun(), 1U);
  codec::bit_model b{};
  codec::reset(b);
  symbol_model s(300);
  integer_decompressor ic(32, 4);
  ic.init();
  // Whatever comes out, it must stay inside the models' ranges and terminate.
  for (int i = 0; i < 10000; ++i) {
    EXPECT_LE(d.state().decode_bit(b), 1U);
    EXPECT_LT(d.decode_symbol(s), 300U);
    (void)ic.decompress(d, i, static_cast<std::uint32_t>(i));  // contexts past 3 are clamped
    EXPECT_LE(d.read_bits(7), 127U);
  }
  EXPECT_EQ(d.position(), 3U);
  EXPECT_GT(d.overrun(), 1U);

  arithmetic_decoder empty;
  empty.init(nullptr, 0);
  EXPECT_EQ(empty.overrun(), 4U);
  EXPECT_EQ(empty.read_int64(), 0U);
}

TEST(laz_arith, garbage_input_stays_in_range)
{
  std::mt19937 rng(5);
  std::vector<std::uint8_t> bytes(4096);
  for (int round = 0; round < 20; ++round) {
    for (auto& b : bytes) b = static_cast<std::uint8_t>(round % 2 ? 0xFF : rng());
    arithmetic_decoder d;
    d.init(bytes.data(), bytes.size());
    symbol_model s17(17), s2048(2048), s5(5);
    integer_decompressor ic(16, 1);
    ic.init();
    for (int i = 0; i < 5000; ++i) {
      ASSERT_LT(d.decode_symbol(s17), 17U);
      ASSERT_LT(d.decode_symbol(s2048), 2048U);
      ASSERT_LT(d.decode_symbol(s5), 5U);
      std::int32_t const v = ic.decompress(d, 100);
      ASSERT_GE(v, 0);
      ASSERT_LT(v, 65536);
    }
  }
}

}  // namespace
}  // namespace heightgrid::io::laz
