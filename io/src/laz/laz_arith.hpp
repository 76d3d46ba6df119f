#pragma once

// Entropy decoding for LAZ (LASzip-compressed LAS): the 32-bit range decoder with adaptive bit
// and multi-symbol models, raw bit reads through the same decoder, and the integer decompressor
// that codes an integer as (k = number of corrector bits, then the corrector itself).
//
// Written from the published descriptions of the LASzip format (Isenburg, "LASzip: lossless
// compression of LiDAR data", 2013, and the format notes of the LASzip/laz-rs projects). The
// decoder is the hot loop of LAZ reading, so everything called per point is inline here.
//
// Safety: the decoder never reads outside [data, data + size). Bytes requested past the end read
// as zero and are counted in overrun(); chunk decoders turn a non-zero overrun into an error.
// Every table index derived from decoded data is clamped, so corrupt input gives garbage values
// or an error, never an out-of-bounds access or an endless loop.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace heightgrid::io::laz {

/// Corrupt or unsupported compressed data. Callers add the file name and chunk position.
struct decode_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {
// The interval is renormalised (one byte shifted in) whenever it drops below 2^24.
inline constexpr std::uint32_t min_length = 0x01000000u;
inline constexpr std::uint32_t max_length = 0xFFFFFFFFu;
// Bit models keep probabilities with 13 bits of precision, symbol models with 15 bits.
inline constexpr std::uint32_t bit_length_shift = 13;
inline constexpr std::uint32_t bit_max_count = 1u << bit_length_shift;
inline constexpr std::uint32_t symbol_length_shift = 15;
inline constexpr std::uint32_t symbol_max_count = 1u << symbol_length_shift;
}  // namespace detail

/// Adaptive model of one binary decision. Probabilities are recomputed after an increasing
/// number of decoded bits (4, 5, 6, 7, 8, 10, ... up to 64) rather than after every bit.
class bit_model {
 public:
  bit_model() { reset(); }
  void reset() {
    zero_count_ = 1;
    total_count_ = 2;
    zero_probability_ = 1u << (detail::bit_length_shift - 1);
    update_cycle_ = 4;
    until_update_ = 4;
  }

 private:
  friend class arithmetic_decoder;
  void update() {
    total_count_ += update_cycle_;
    if (total_count_ > detail::bit_max_count) {
      total_count_ = (total_count_ + 1) >> 1;
      zero_count_ = (zero_count_ + 1) >> 1;
      if (zero_count_ == total_count_) ++total_count_;
    }
    std::uint32_t const scale = 0x80000000u / total_count_;
    zero_probability_ = (zero_count_ * scale) >> (31 - detail::bit_length_shift);
    update_cycle_ = (5 * update_cycle_) >> 2;
    if (update_cycle_ > 64) update_cycle_ = 64;
    until_update_ = update_cycle_;
  }

  std::uint32_t zero_count_;
  std::uint32_t total_count_;
  std::uint32_t zero_probability_;
  std::uint32_t update_cycle_;
  std::uint32_t until_update_;
};

/// Adaptive model of an alphabet of 2..2048 symbols. The cumulative distribution is rebuilt
/// periodically; alphabets above 16 symbols also keep a lookup table that narrows the search
/// for the decoded symbol to one or two steps.
class symbol_model {
 public:
  explicit symbol_model(std::uint32_t symbols);
  void reset();
  std::uint32_t symbols() const { return symbols_; }

 private:
  friend class arithmetic_decoder;
  void update();
  // One allocation: distribution[symbols], lookup table[table_size + 2], counts[symbols]; the
  // first two are read by every decode, so they come first and in 16 bits (distribution
  // values are below 2^15, symbols below 2^11) to halve what the cache must hold. Counts fit too:
  // their total stays below 2^15 + 8 * (2048 + 6) between two updates.
  std::uint16_t* distribution() { return storage_.data(); }
  std::uint16_t* table() { return storage_.data() + symbols_; }
  std::uint16_t* counts() { return storage_.data() + counts_offset_; }

  std::vector<std::uint16_t> storage_;
  std::uint32_t symbols_;
  std::uint32_t counts_offset_ = 0;  // where counts() starts in storage_, set with the table size
  std::uint32_t last_symbol_;
  std::uint32_t table_size_ = 0;   // 0: no lookup table, binary search over all symbols
  std::uint32_t table_shift_ = 0;
  std::uint32_t total_count_ = 0;
  std::uint32_t update_cycle_ = 0;
  std::uint32_t until_update_ = 0;
};

/// Decodes from [data, data + size). Reading past the end yields zero bytes and counts them in
/// overrun(); it never reads outside the buffer.
class arithmetic_decoder {
 public:
  arithmetic_decoder() = default;

  /// Starts decoding at data; reads the first 4 bytes (the initial code value).
  void init(std::uint8_t const* data, std::size_t size) {
    begin_ = data;
    next_ = data;
    end_ = data + size;
    overrun_ = 0;
    length_ = detail::max_length;
    value_ = std::uint32_t{next_byte()} << 24;
    value_ |= std::uint32_t{next_byte()} << 16;
    value_ |= std::uint32_t{next_byte()} << 8;
    value_ |= std::uint32_t{next_byte()};
  }

  std::uint32_t decode_bit(bit_model& m) {
    std::uint32_t const x = m.zero_probability_ * (length_ >> detail::bit_length_shift);
    std::uint32_t bit;
    if (value_ < x) {
      bit = 0;
      length_ = x;
      ++m.zero_count_;
    } else {
      bit = 1;
      value_ -= x;
      length_ -= x;
    }
    if (length_ < detail::min_length) renormalise();
    if (--m.until_update_ == 0) m.update();
    return bit;
  }

  std::uint32_t decode_symbol(symbol_model& m) {
    std::uint16_t const* const dist = m.distribution();
    // The searches below find the last symbol whose interval starts at or below the value.
    // They halve a count instead of branching on each comparison (the outcome is data, so a
    // branch would be mispredicted half the time) and run a number of steps that depends only
    // on the model and table slot. Intervals start strictly increasing, so they find the same
    // symbol as a bisection would, corrupt data included.
    std::uint32_t value = value_;
    std::uint32_t const unit = length_ >> detail::symbol_length_shift;
    std::uint32_t symbol;
    if (m.table_size_ != 0) {
      std::uint32_t const target = value / unit;
      std::uint32_t slot = target >> m.table_shift_;
      // Only corrupt data (value >= length) can point beyond the table.
      if (slot > m.table_size_) slot = m.table_size_;
      std::uint16_t const* const table = m.table();
      symbol = table[slot];
      std::uint32_t n = std::uint32_t{table[slot + 1]} + 1 - symbol;
      if (n <= 2) {
        // Most slots hold one or two interval starts: one comparison, no loop to mispredict.
        symbol += (n == 2 && dist[symbol + 1] <= target) ? 1 : 0;
      } else {
        while (n > 1) {
          std::uint32_t const half = n >> 1;
          symbol = dist[symbol + half] <= target ? symbol + half : symbol;
          n -= half;
        }
      }
    } else {
      symbol = 0;
      std::uint32_t n = m.symbols_;
      while (n > 1) {
        std::uint32_t const half = n >> 1;
        symbol = unit * std::uint32_t{dist[symbol + half]} <= value ? symbol + half : symbol;
        n -= half;
      }
    }
    std::uint32_t const low = std::uint32_t{dist[symbol]} * unit;
    std::uint32_t const high =
        symbol != m.last_symbol_ ? std::uint32_t{dist[symbol + 1]} * unit : length_;
    value_ = value - low;
    length_ = high - low;
    if (length_ < detail::min_length) renormalise();
    ++m.counts()[symbol];
    if (--m.until_update_ == 0) m.update();
    return symbol;
  }

  /// 1..32 raw bits (values up to 19 bits are read in one step, longer ones in two).
  std::uint32_t read_bits(std::uint32_t bits) {
    if (bits > 19) {
      std::uint32_t const low = read_short();
      std::uint32_t const high = read_bits(bits - 16);
      return (high << 16) | low;
    }
    return read_raw(bits);
  }
  std::uint32_t read_byte() { return read_raw(8); }
  std::uint32_t read_short() { return read_raw(16); }
  std::uint32_t read_int() {
    std::uint32_t const low = read_short();
    std::uint32_t const high = read_short();
    return (high << 16) | low;
  }
  std::uint64_t read_int64() {
    std::uint64_t const low = read_int();
    std::uint64_t const high = read_int();
    return (high << 32) | low;
  }

  /// Bytes consumed so far. Encoders pad their output so that after the last symbol this is
  /// exactly the length of the compressed stream (used to find the next chunk without a table).
  std::size_t position() const { return static_cast<std::size_t>(next_ - begin_); }
  /// Bytes requested past the end of the buffer (read as zeros).
  std::size_t overrun() const { return overrun_; }

 private:
  std::uint8_t next_byte() {
    if (next_ != end_) return *next_++;
    ++overrun_;
    return 0;
  }
  void renormalise() {
    // length_ is never 0 here (models keep every probability in (0, 1)), so this shifts in at
    // most 3 bytes.
    do {
      value_ = (value_ << 8) | next_byte();
      length_ <<= 8;
    } while (length_ < detail::min_length);
  }
  std::uint32_t read_raw(std::uint32_t bits) {
    length_ >>= bits;
    std::uint32_t symbol = value_ / length_;
    // A valid stream never decodes past 2^bits - 1; clamp so corrupt data stays in range.
    std::uint32_t const limit = (bits >= 32) ? 0xFFFFFFFFu : ((1u << bits) - 1);
    if (symbol > limit) symbol = limit;
    value_ -= length_ * symbol;
    if (length_ < detail::min_length) renormalise();
    return symbol;
  }

  std::uint8_t const* begin_ = nullptr;
  std::uint8_t const* next_ = nullptr;
  std::uint8_t const* end_ = nullptr;
  std::size_t overrun_ = 0;
  std::uint32_t value_ = 0;
  std::uint32_t length_ = detail::max_length;
};

/// LASzip-style integer (de)compressor: corrector k-bit symbol models per context.
///
/// An integer is coded relative to a prediction. The corrector c = real - pred (wrapped into
/// the corrector range) is coded as k = the number of bits it needs (one symbol model per
/// context), then c's position inside [-(2^k - 1), -2^(k-1)] ∪ [2^(k-1) + 1, 2^k]: with one
/// symbol model per k for k <= bits_high, and for larger k the top bits_high bits through that
/// model and the rest as raw bits. k = 0 codes c in {0, 1} with a bit model.
class integer_decompressor {
 public:
  explicit integer_decompressor(std::uint32_t bits = 16, std::uint32_t contexts = 1,
                                std::uint32_t bits_high = 8, std::uint32_t range = 0);

  /// (Re)creates/resets its models; call at the start of every chunk.
  void init();

  std::int32_t decompress(arithmetic_decoder& dec, std::int32_t pred, std::uint32_t context = 0) {
    // Out-of-range contexts come only from corrupt data in a caller; keep them in range.
    if (context >= contexts_) context = contexts_ - 1;
    std::uint32_t const real =
        static_cast<std::uint32_t>(pred) + static_cast<std::uint32_t>(read_corrector(dec, context));
    std::int32_t result = static_cast<std::int32_t>(real);
    // 32-bit values (X, Y, Z steps) wrap in 32-bit arithmetic: nothing to fold. Testing that
    // first keeps the data-dependent sign test below off their path (a compressor's range is
    // fixed, so this branch is predicted).
    if (corr_range_ == 0) return result;
    if (result < 0) {
      result = static_cast<std::int32_t>(real + corr_range_);
    } else if (real >= corr_range_) {
      result = static_cast<std::int32_t>(real - corr_range_);
    }
    return result;
  }

  /// k of the last decompress.
  std::uint32_t k() const { return k_; }

 private:
  std::int32_t read_corrector(arithmetic_decoder& dec, std::uint32_t context) {
    k_ = dec.decode_symbol(k_models_[context]);
    if (k_ == 0) return static_cast<std::int32_t>(dec.decode_bit(zero_model_));
    if (k_ >= 32) return corr_min_;
    std::uint32_t c;
    if (k_ <= bits_high_) {
      c = dec.decode_symbol(corrector_models_[k_]);
    } else {
      std::uint32_t const low_bits = k_ - bits_high_;
      c = dec.decode_symbol(corrector_models_[k_]);
      c = (c << low_bits) | dec.read_bits(low_bits);
    }
    // Map [0, 2^(k-1)) to the negative half and [2^(k-1), 2^k) to the positive half.
    if (c >= (1u << (k_ - 1))) return static_cast<std::int32_t>(c + 1);
    return static_cast<std::int32_t>(c - ((1u << k_) - 1));
  }

  std::uint32_t contexts_;
  std::uint32_t bits_high_;
  std::uint32_t corr_bits_;
  std::uint32_t corr_range_;
  std::int32_t corr_min_;
  std::uint32_t k_ = 0;
  std::vector<symbol_model> k_models_;          // one per context, corr_bits + 1 symbols
  bit_model zero_model_;                        // k = 0
  std::vector<symbol_model> corrector_models_;  // index k = 1..corr_bits (0 unused)
};

/// Running median of the last five values, the X and Y step predictor of the point10 v2 and
/// point14 coders, updated in O(1) as LASzip's coders do it: the five values are kept sorted; a new
/// value replaces one end of the window, which alternates between the low and the high end
/// depending on where the last value went. The encoder does the same, so it is reproduced exactly,
/// ties included.
class median_of_five {
 public:
  void reset()
  {
    v_ = {0, 0, 0, 0, 0};
    replace_high_ = true;
  }
  std::int32_t get() const { return v_[2]; }
  void add(std::int32_t x)
  {
    // Either way x joins four of the five sorted values: the lower four when the largest drops
    // out, else the upper four. Merging one value into a sorted run is a min/max per slot, so
    // the update has no data-dependent branch (the steps of a real file are close to random).
    std::int32_t const* const w = v_.data() + (replace_high_ ? 0 : 1);
    std::int32_t const w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
    // Sides switch when x lands beyond the middle: above it (ties included) while the largest
    // drops out, below it (ties included) while the smallest does.
    replace_high_ = x < v_[2] || (!replace_high_ && x == v_[2]);
    v_[0] = std::min(w0, x);
    v_[1] = std::max(w0, std::min(w1, x));
    v_[2] = std::max(w1, std::min(w2, x));
    v_[3] = std::max(w2, std::min(w3, x));
    v_[4] = std::max(w3, x);
  }

 private:
  std::array<std::int32_t, 5> v_{};
  bool replace_high_{true};
};

}  // namespace heightgrid::io::laz
