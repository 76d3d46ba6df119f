#pragma once
// The LASzip entropy coder, the one the CPU readers (io/src/laz, through laz_arith.hpp's owning
// wrappers) and the GPU decoders (kernels/src/detail/laz) run: adaptive bit and symbol models whose
// tables are 16-bit words in storage the caller owns, the range decoder (its state in registers),
// the integer decompressor and the running median of the X/Y predictors. Host code under g++/clang++,
// host + device code under nvcc (hd.hpp).
//
// Written from the published descriptions of the LASzip format (Isenburg, "LASzip: lossless
// compression of LiDAR data", 2013, and the format notes of the LASzip/laz-rs projects).
//
// Models can be reset lazily: each carries the stamp of the chunk that last reset it, and use(m,
// stamp) resets it on its first use in a chunk (a chunk touches a few dozen of its hundreds of
// models); reset() resets at once.
//
// The decoder never reads outside [data, data + size): bytes past the end read as zero and are
// counted in `overrun`, which the chunk decoders turn into a status. Table indices derived from
// decoded data are clamped, so corrupt input gives garbage values, never an out-of-bounds access.

#include "heightgrid/core/laz/hd.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace heightgrid::detail::laz {

inline constexpr std::uint32_t min_length = 0x01000000u;  ///< renormalise below 2^24
inline constexpr std::uint32_t bit_length_shift = 13;     ///< bit models: 13-bit probabilities
inline constexpr std::uint32_t bit_max_count = 1u << bit_length_shift;
inline constexpr std::uint32_t symbol_length_shift = 15;  ///< symbol models: 15-bit distributions
inline constexpr std::uint32_t symbol_max_count = 1u << symbol_length_shift;

// ------------------------------------------------------------------------------------------
// Models
// ------------------------------------------------------------------------------------------

/// A binary model. One 32-byte sector (the decoder reads it on its critical path).
struct alignas(32) bit_model {
  std::uint32_t stamp;
  std::uint32_t zero_count, total_count, zero_probability, update_cycle, until_update;
};

/// A model of 2..2048 symbols: distribution[symbols], table[table_size + 2], counts[symbols] in
/// `storage` (an arena's), all below 2^16; up to 16 symbols (no table) the distribution and the
/// counts each in a 32-byte sector of their own (the counts' updates leave the other alone).
struct alignas(32) symbol_model {
  std::uint16_t* storage;
  std::uint32_t stamp;
  std::uint16_t symbols;
  std::uint16_t table_size;     ///< 0: no lookup table (16 symbols or fewer)
  std::uint16_t table_shift;
  std::uint16_t counts_offset;  ///< where the counts start in storage (see counts_of)
  std::uint32_t total_count, update_cycle, until_update;
};
static_assert(sizeof(symbol_model) == 32, "a symbol model's fields fill one 32-byte sector");

/// Lookup-table slots of a model: 2^bits >= symbols (at least 32), none up to 16 symbols.
HG_LAZ_HD constexpr std::uint32_t table_size_of(std::uint32_t symbols)
{
  if (symbols <= 16) { return 0; }
  std::uint32_t bits = 5;
  while (symbols > (1u << bits)) { ++bits; }
  return 1u << bits;
}

HG_LAZ_HD constexpr std::uint32_t table_bits_of(std::uint32_t table_size)
{
  std::uint32_t bits = 0;
  while ((1u << bits) < table_size) { ++bits; }
  return bits;
}

/// 16-bit words of a model's storage, padded to 32 bytes: every model's storage starts on a
/// 32-byte boundary of the (32-byte aligned) arena; a model of 16 symbols or fewer takes two
/// sectors, its distribution's (decode_symbol reads it whole) and its counts'.
HG_LAZ_HD constexpr std::size_t storage_u16(std::uint32_t symbols)
{
  std::uint32_t const t = table_size_of(symbols);
  if (t == 0) { return 32; }  // the distribution's sector, then the counts' (see counts_of)
  return (std::size_t{symbols} * 2 + t + 2 + 15) / 16 * 16;
}

/// Gives `m` (nullptr: nothing, only counts) `symbols` symbols and its storage at arena + used;
/// advances `used`. The model is unused (stamp 0) until its first use().
HG_LAZ_HD inline void place(symbol_model* m, std::uint32_t symbols, std::uint16_t* arena, std::size_t& used)
{
  if (m != nullptr) {
    std::uint32_t const t = table_size_of(symbols);
    m->storage = arena + used;
    m->stamp = 0;
    m->symbols = static_cast<std::uint16_t>(symbols);
    m->table_size = static_cast<std::uint16_t>(t);
    m->table_shift = static_cast<std::uint16_t>(t != 0 ? symbol_length_shift - table_bits_of(t) : 0);
    // Up to 16 symbols the counts have the second sector; else they follow distribution and table.
    m->counts_offset = static_cast<std::uint16_t>(t != 0 ? symbols + t + 2u : 16u);
  }
  used += storage_u16(symbols);
}

HG_LAZ_HD_INLINE std::uint16_t* counts_of(symbol_model const& m)
{
  return m.storage + m.counts_offset;
}

/// Rebuilds the distribution (and lookup table) from the counts.
///
/// The lookup table: table[t] (1 <= t <= table_size + 1) is the last symbol whose interval starts
/// in a slot below t (the number of symbols s with dist[s] >> table_shift < t, less one), table[0]
/// is 0. The distribution does not decrease, so one sweep over the symbols writes each entry once.
/// The model's fields are read once into locals and the arrays reached through restricted ones, so
/// a store into the table does not make the compiler load them again. (It had been zeroed, filled as
/// a histogram and summed, a load after every store: on the device a chain of memory round trips;
/// docs/benchmarks.md, "Pointwise LAZ on the device", has what the sweep measured.)
HG_LAZ_HD_COLD inline void update(symbol_model& m)
{
  std::uint32_t const n = m.symbols;
  std::uint32_t const table_size = m.table_size;
  std::uint32_t const table_shift = m.table_shift;
  std::uint16_t* __restrict__ const dist = m.storage;
  std::uint16_t* __restrict__ const table = m.storage + n;
  std::uint16_t* __restrict__ const c = counts_of(m);
  std::uint32_t total = m.total_count + m.update_cycle;
  if (total > symbol_max_count) {
    total = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      std::uint32_t const halved = (std::uint32_t{c[s]} + 1) >> 1;
      c[s] = static_cast<std::uint16_t>(halved);
      total += halved;
    }
  }
  m.total_count = total;
  std::uint32_t const scale = 0x80000000u / total;
  std::uint32_t sum = 0;
  if (table_size == 0) {
    for (std::uint32_t s = 0; s < n; ++s) {
      dist[s] = static_cast<std::uint16_t>((scale * sum) >> (31 - symbol_length_shift));
      sum += c[s];
    }
  } else {
    std::uint32_t t = 1;  // the next table entry; the entries before it are final
    for (std::uint32_t s = 0; s < n; ++s) {
      std::uint32_t const d = (scale * sum) >> (31 - symbol_length_shift);
      dist[s] = static_cast<std::uint16_t>(d);
      sum += c[s];
      // Symbol s is the first in a slot at or above t..slot: below each of these entries lie
      // symbols 0..s-1, the last of them s - 1 (s >= 1 here: symbol 0's slot is 0).
      for (std::uint32_t const slot = d >> table_shift; t <= slot; ++t) {
        table[t] = static_cast<std::uint16_t>(s - 1);
      }
    }
    for (; t <= table_size + 1; ++t) { table[t] = static_cast<std::uint16_t>(n - 1); }
    table[0] = 0;
  }
  m.update_cycle = (5 * m.update_cycle) >> 2;
  std::uint32_t const max_cycle = (n + 6) << 3;
  if (m.update_cycle > max_cycle) { m.update_cycle = max_cycle; }
  m.until_update = m.update_cycle;
}

HG_LAZ_HD_COLD inline void update(bit_model& m)
{
  m.total_count += m.update_cycle;
  if (m.total_count > bit_max_count) {
    m.total_count = (m.total_count + 1) >> 1;
    m.zero_count = (m.zero_count + 1) >> 1;
    if (m.zero_count == m.total_count) { ++m.total_count; }
  }
  std::uint32_t const scale = 0x80000000u / m.total_count;
  m.zero_probability = (m.zero_count * scale) >> (31 - bit_length_shift);
  m.update_cycle = (5 * m.update_cycle) >> 2;
  if (m.update_cycle > 64) { m.update_cycle = 64; }
  m.until_update = m.update_cycle;
}

/// A fresh model's counters (what reset() leaves beside the distribution of counts of one).
HG_LAZ_HD_INLINE void set_fresh_counters(symbol_model& m)
{
  m.total_count = m.symbols;
  m.update_cycle = (m.symbols + 6u) >> 1;
  m.until_update = m.update_cycle;
}

/// The model as a fresh one, rebuilt: counts of one, and the distribution (and table) they give.
HG_LAZ_HD inline void rebuild_fresh(symbol_model& m)
{
  std::uint32_t const n = m.symbols;
  std::uint16_t* const c = counts_of(m);
  for (std::uint32_t s = 0; s < n; ++s) { c[s] = 1; }
  m.total_count = 0;
  m.update_cycle = n;
  update(m);
  set_fresh_counters(m);
}

#if !defined(__CUDA_ARCH__)
/// On the CPU a fresh model of n symbols is copied from one the thread built once instead of being
/// rebuilt (update() over every symbol): each scanner channel's start in a chunk resets the models
/// it uses (docs/benchmarks.md, "One LAZ codec for the CPU and the GPU").
inline void copy_fresh(symbol_model& m)
{
  thread_local std::vector<std::vector<std::uint16_t>> fresh_by_symbols;
  std::uint32_t const n = m.symbols;
  if (fresh_by_symbols.size() <= n) { fresh_by_symbols.resize(n + 1); }
  std::vector<std::uint16_t>& fresh = fresh_by_symbols[n];
  if (fresh.empty()) {
    rebuild_fresh(m);
    fresh.assign(m.storage, m.storage + storage_u16(n));
    return;
  }
  std::copy(fresh.begin(), fresh.end(), m.storage);
  set_fresh_counters(m);
}
#endif

/// The model as a fresh one: counts of one, and the distribution (and table) they give.
HG_LAZ_HD inline void reset(symbol_model& m)
{
#if defined(__CUDA_ARCH__)
  rebuild_fresh(m);
#else
  copy_fresh(m);
#endif
}

HG_LAZ_HD_INLINE void reset(bit_model& m)
{
  m.zero_count = 1;
  m.total_count = 2;
  m.zero_probability = 1u << (bit_length_shift - 1);
  m.update_cycle = 4;
  m.until_update = 4;
}

/// The model as a fresh one, unless it was reset already under this stamp.
HG_LAZ_HD_INLINE symbol_model& use(symbol_model& m, std::uint32_t stamp)
{
  if (m.stamp != stamp) {
    reset(m);
    m.stamp = stamp;
  }
  return m;
}

HG_LAZ_HD_INLINE bit_model& use(bit_model& m, std::uint32_t stamp)
{
  if (m.stamp != stamp) {
    reset(m);
    m.stamp = stamp;
  }
  return m;
}

// ------------------------------------------------------------------------------------------
// The range decoder (registers)
// ------------------------------------------------------------------------------------------

/// `ReduceCounts`: on the device a symbol's count is added by a reduction (the lane does not wait
/// for it); otherwise loaded and stored. `WideSmallSearch`: a model of up to 16 symbols is searched
/// by reading its distribution at once; otherwise by bisection. Both decode the same symbols; which
/// is faster depends on the kernel (the pointwise one: both; the layered one: neither).
template <bool ReduceCounts = true, bool WideSmallSearch = true>
struct basic_range_decoder {
  std::uint8_t const* next;
  std::uint8_t const* end;
  std::uint32_t value;
  std::uint32_t length;
  std::uint32_t overrun;  ///< bytes requested past the end (read as zeros)

  /// Starts at data; reads the 4 bytes of the initial code value.
  HG_LAZ_HD void init(std::uint8_t const* data, std::uint64_t size)
  {
    next = data;
    end = data + size;
    overrun = 0;
    length = 0xFFFFFFFFu;
    value = 0;
    for (int b = 0; b < 4; ++b) { value = (value << 8) | next_byte(); }
  }
  HG_LAZ_HD_INLINE std::uint32_t next_byte()
  {
    if (next != end) { return *next++; }
    ++overrun;
    return 0;
  }
  HG_LAZ_HD_INLINE void renormalise()
  {
    do {
      value = (value << 8) | next_byte();
      length <<= 8;
    } while (length < min_length);
  }

  HG_LAZ_HD_HOT std::uint32_t decode_bit(bit_model& m)
  {
    std::uint32_t const x = m.zero_probability * (length >> bit_length_shift);
    std::uint32_t bit;
    if (value < x) {
      bit = 0;
      length = x;
      ++m.zero_count;
    } else {
      bit = 1;
      value -= x;
      length -= x;
    }
    if (length < min_length) { renormalise(); }
    if (--m.until_update == 0) { update(m); }
    return bit;
  }

  /// ++*c. On the device a reduction on the 32-bit word holding *c (a count stays below 2^16, so
  /// nothing carries into its neighbour): the lane need not wait for the count to arrive, and its
  /// own later loads of the count (update()) see the sum.
  HG_LAZ_HD_INLINE static void count(std::uint16_t* c)
  {
#if defined(__CUDA_ARCH__)
    if constexpr (!ReduceCounts) {
      ++*c;
      return;
    }
    auto const at = reinterpret_cast<std::uintptr_t>(c);
    atomicAdd(reinterpret_cast<unsigned int*>(at & ~std::uintptr_t{3}), 1u << ((at & 2u) * 8u));
#else
    ++*c;
#endif
  }

  /// The number of symbols s in 1..n-1 (n <= 16) whose interval starts at or below the value:
  /// dist[0..16) read as one aligned sector (the model's padded storage; words past n ignored).
  HG_LAZ_HD_INLINE std::uint32_t small_symbol(std::uint16_t const* dist, std::uint32_t n, std::uint32_t unit,
                                              std::uint32_t v) const
  {
    std::uint32_t symbol = 0;
#if defined(__CUDA_ARCH__)
    uint4 const* const q = reinterpret_cast<uint4 const*>(dist);
    uint4 const a = q[0];
    std::uint32_t const w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (std::uint32_t j = 0; j < 4; ++j) {
      std::uint32_t const s = 2 * j;
      symbol += (s != 0 && s < n && unit * (w[j] & 0xFFFFu) <= v) ? 1u : 0u;
      symbol += (s + 1 < n && unit * (w[j] >> 16) <= v) ? 1u : 0u;
    }
    if (n > 8) {
      uint4 const b = q[1];
      std::uint32_t const x[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (std::uint32_t j = 0; j < 4; ++j) {
        std::uint32_t const s = 8 + 2 * j;
        symbol += (s < n && unit * (x[j] & 0xFFFFu) <= v) ? 1u : 0u;
        symbol += (s + 1 < n && unit * (x[j] >> 16) <= v) ? 1u : 0u;
      }
    }
#else
    for (std::uint32_t s = 1; s < n; ++s) { symbol += unit * std::uint32_t{dist[s]} <= v ? 1u : 0u; }
#endif
    return symbol;
  }

  /// The last symbol whose interval starts at or below the value (a branch-free bisection in the
  /// lookup table's slot when the model has one, a count over the whole distribution otherwise).
  HG_LAZ_HD_HOT std::uint32_t decode_symbol(symbol_model& m)
  {
    std::uint16_t const* const dist = m.storage;
    std::uint32_t const unit = length >> symbol_length_shift;
    std::uint32_t symbol;
    if (m.table_size != 0) {
      std::uint32_t const target = value / unit;
      std::uint32_t slot = target >> m.table_shift;
      if (slot > m.table_size) { slot = m.table_size; }  // only corrupt data (value >= length)
      std::uint16_t const* const table = m.storage + m.symbols;
      symbol = table[slot];
      std::uint32_t n = std::uint32_t{table[slot + 1]} + 1 - symbol;
#if !defined(__CUDA_ARCH__)
      // On the CPU: most slots hold one or two interval starts, so one comparison and no loop
      // for the branch predictor to miss.
      if (n <= 2) {
        symbol += (n == 2 && dist[symbol + 1] <= target) ? 1 : 0;
        n = 1;
      }
#endif
      while (n > 1) {
        std::uint32_t const half = n >> 1;
        symbol = dist[symbol + half] <= target ? symbol + half : symbol;
        n -= half;
      }
    } else {
      // The distribution (<= 16 symbols, non-decreasing from dist[0] = 0) read at once: the last
      // symbol whose interval starts at or below the value is the number of symbols 1.. that do,
      // what the bisection finds, without its chain of dependent loads.
      if constexpr (WideSmallSearch) {
        symbol = small_symbol(dist, m.symbols, unit, value);
      } else {
        symbol = 0;
        std::uint32_t n = m.symbols;
        while (n > 1) {
          std::uint32_t const half = n >> 1;
          symbol = unit * std::uint32_t{dist[symbol + half]} <= value ? symbol + half : symbol;
          n -= half;
        }
      }
    }
    std::uint32_t const low = std::uint32_t{dist[symbol]} * unit;
    std::uint32_t const high = symbol != m.symbols - 1u ? std::uint32_t{dist[symbol + 1]} * unit : length;
    value -= low;
    length = high - low;
    if (length < min_length) { renormalise(); }
    count(counts_of(m) + symbol);
    if (--m.until_update == 0) { update(m); }
    return symbol;
  }

  /// 1..19 raw bits.
  HG_LAZ_HD_HOT std::uint32_t read_raw(std::uint32_t bits)
  {
    length >>= bits;
    std::uint32_t symbol = value / length;
    std::uint32_t const limit = (1u << bits) - 1;
    if (symbol > limit) { symbol = limit; }  // only corrupt data decodes past 2^bits - 1
    value -= length * symbol;
    if (length < min_length) { renormalise(); }
    return symbol;
  }
  /// 1..32 raw bits (above 19: the low 16, then the rest).
  HG_LAZ_HD_HOT std::uint32_t read_bits(std::uint32_t bits)
  {
    if (bits > 19) {
      std::uint32_t const low = read_raw(16);
      std::uint32_t const high = read_raw(bits - 16);
      return (high << 16) | low;
    }
    return read_raw(bits);
  }
  HG_LAZ_HD std::uint32_t read_int()
  {
    std::uint32_t const low = read_raw(16);
    std::uint32_t const high = read_raw(16);
    return (high << 16) | low;
  }
  HG_LAZ_HD std::uint64_t read_int64()
  {
    std::uint64_t const low = read_int();
    std::uint64_t const high = read_int();
    return (high << 32) | low;
  }
};

/// The decoder of the pointwise kernel and the host codec.
using range_decoder = basic_range_decoder<>;

// ------------------------------------------------------------------------------------------
// The integer decompressor
// ------------------------------------------------------------------------------------------

/// bits_high of every integer compressor LASzip's items use: a corrector of k <= 8 bits is one
/// symbol of the k-th model; above, its top 8 bits are, and the rest are raw bits.
inline constexpr std::uint32_t integer_bits_high = 8;

/// An integer coded as a corrector of `pred`: k (the corrector's bits) through `k_model` (k = 0:
/// the corrector 0 or 1 through `zero`; k >= 32, only with 32-bit values: the most negative one),
/// then the corrector through corrector[k]. `range` != 0 folds the sum into [0, range) as the
/// encoder wrapped it; 0 wraps in 32-bit arithmetic. `k` receives k (a context of later fields).
/// `Lazy`: models are used under `stamp` (see use()); otherwise the caller reset them.
template <bool Lazy, class Decoder>
HG_LAZ_HD_CALL std::int32_t decompress_integer(Decoder& dec, std::int32_t pred, symbol_model& k_model, bit_model& zero,
                                                 symbol_model* corrector, std::uint32_t range, std::uint32_t stamp,
                                                 std::uint32_t& k)
{
  if constexpr (Lazy) { use(k_model, stamp); }
  k = dec.decode_symbol(k_model);
  std::int32_t c;
  if (k == 0) {
    if constexpr (Lazy) { use(zero, stamp); }
    c = static_cast<std::int32_t>(dec.decode_bit(zero));
  } else if (k >= 32) {
    c = static_cast<std::int32_t>(0x80000000u);
  } else {
    if constexpr (Lazy) { use(corrector[k], stamp); }
    std::uint32_t v = dec.decode_symbol(corrector[k]);
    if (k > integer_bits_high) { v = (v << (k - integer_bits_high)) | dec.read_bits(k - integer_bits_high); }
    c = v >= (1u << (k - 1)) ? static_cast<std::int32_t>(v + 1) : static_cast<std::int32_t>(v - ((1u << k) - 1));
  }
  std::uint32_t const real = static_cast<std::uint32_t>(pred) + static_cast<std::uint32_t>(c);
  auto result = static_cast<std::int32_t>(real);
  if (range != 0) {
    if (result < 0) {
      result = static_cast<std::int32_t>(real + range);
    } else if (real >= range) {
      result = static_cast<std::int32_t>(real - range);
    }
  }
  return result;
}

/// Corrector models of `bits`-bit values, index k = 1.. (index 0 unused: k = 0 goes through the
/// bit model). k >= 32, only with 32 bits, codes the most negative corrector and needs no model.
HG_LAZ_HD constexpr std::uint32_t correctors_of(std::uint32_t bits) { return bits < 32 ? bits + 1 : 32; }

/// An integer decompressor with `Bits` corrector bits (below 32: correctors folded
/// into the 2^Bits range; 32: wrapped in 32-bit arithmetic), `Contexts` k models and bits_high 8
/// (what every pointwise and point14 item uses): the corrector's k bits through one model for k
/// <= 8, its top 8 bits through that model and the rest raw above.
template <std::uint32_t Contexts, std::uint32_t Bits>
struct integer_decompressor {
  static_assert(Contexts >= 1 && Bits >= 1 && Bits <= 32, "1.. contexts, 1..32 bits");
  static constexpr std::uint32_t bits_high = integer_bits_high;
  static constexpr std::uint32_t correctors = correctors_of(Bits);
  static constexpr std::uint32_t range = Bits < 32 ? (1u << (Bits < 32 ? Bits : 0)) : 0;

  symbol_model k_models[Contexts];       ///< Bits + 1 symbols each
  symbol_model corrector[correctors];  ///< index k = 1..; 0 unused (k = 0 goes through `zero`)
  bit_model zero;

  /// Places the models of `self` (nullptr: only counts), advancing `used` (see place()).
  HG_LAZ_HD static void lay_out(integer_decompressor* self, std::uint16_t* arena, std::size_t& used)
  {
    for (std::uint32_t i = 0; i < Contexts; ++i) { place(self != nullptr ? self->k_models + i : nullptr, Bits + 1, arena, used); }
    for (std::uint32_t k = 1; k < correctors; ++k) {
      place(self != nullptr ? self->corrector + k : nullptr, 1u << (k <= bits_high ? k : bits_high), arena, used);
    }
    if (self != nullptr) {
      self->zero.stamp = 0;
      self->corrector[0].stamp = 0;
    }
  }

  /// The integer predicted by `pred` in `context` (clamped to the last); `k` receives the number of
  /// corrector bits (a context of the next fields).
  template <class Decoder>
  HG_LAZ_HD_INLINE std::int32_t decompress(Decoder& dec, std::int32_t pred, std::uint32_t context,
                                           std::uint32_t stamp, std::uint32_t& k)
  {
    if (context >= Contexts) { context = Contexts - 1; }
    return decompress_integer<true>(dec, pred, k_models[context], zero, corrector, range, stamp, k);
  }
  template <class Decoder>
  HG_LAZ_HD_INLINE std::int32_t decompress(Decoder& dec, std::int32_t pred, std::uint32_t context,
                                           std::uint32_t stamp)
  {
    std::uint32_t k = 0;
    return decompress(dec, pred, context, stamp, k);
  }
};

/// Two's-complement multiplication without signed overflow (the format's predictions wrap around).
HG_LAZ_HD_INLINE std::int32_t wrap_mul(std::int32_t a, std::int32_t b)
{
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
}

HG_LAZ_HD_INLINE std::int32_t lo(std::int32_t a, std::int32_t b) { return a < b ? a : b; }
HG_LAZ_HD_INLINE std::int32_t hi(std::int32_t a, std::int32_t b) { return a < b ? b : a; }

/// LASzip's running median of five, the X and Y step predictor of the point10 v2 and point14 coders,
/// updated in O(1) as LASzip's coders do it: the five values kept sorted, a new value replaces one end
/// of the window, which alternates between the low and the high end depending on where the last value
/// went (ties included, as the encoder does). No data-dependent branch: x joins four of the five
/// sorted values, a min/max per slot.
struct median5 {
  std::int32_t v[5];
  bool replace_high;
  HG_LAZ_HD_INLINE void reset()
  {
    for (auto& x : v) { x = 0; }
    replace_high = true;
  }
  HG_LAZ_HD_INLINE std::int32_t get() const { return v[2]; }
  HG_LAZ_HD_INLINE void add(std::int32_t x)
  {
    std::int32_t const* const w = v + (replace_high ? 0 : 1);
    std::int32_t const w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
    replace_high = x < v[2] || (!replace_high && x == v[2]);
    v[0] = lo(w0, x);
    v[1] = hi(w0, lo(w1, x));
    v[2] = hi(w1, lo(w2, x));
    v[3] = hi(w2, lo(w3, x));
    v[4] = hi(w3, x);
  }
};

}  // namespace heightgrid::detail::laz
