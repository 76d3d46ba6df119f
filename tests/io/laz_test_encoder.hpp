#pragma once
// A test-only LASzip-style arithmetic *encoder* (range coder, adaptive models, raw bits, integer
// compressor), written for the tests from the format description: what it encodes, the decoder
// in io/src/laz must read back exactly, byte count included. It also lets the tests build items
// (point10/gpstime11/rgb12/byte v1) for which no real file exists. Not for production use: it
// has no safety checks of its own.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heightgrid::test::laz_encoding {

inline constexpr std::uint32_t min_length = 1u << 24;

/// The same adaptive bit model as the decoder's (13-bit probability, growing update period).
struct bit_model {
  std::uint32_t zeros = 1, total = 2, p0 = 1u << 12, cycle = 4, until = 4;
  void update()
  {
    total += cycle;
    if (total > (1u << 13)) {
      total = (total + 1) >> 1;
      zeros = (zeros + 1) >> 1;
      if (zeros == total) ++total;
    }
    p0 = (zeros * (0x80000000u / total)) >> 18;
    cycle = (5 * cycle) >> 2;
    if (cycle > 64) cycle = 64;
    until = cycle;
  }
};

/// The same adaptive multi-symbol model (15-bit distribution), without the decoder's table.
struct symbol_model {
  std::uint32_t n, total = 0, cycle, until;
  std::vector<std::uint32_t> dist, count;
  explicit symbol_model(std::uint32_t symbols) : n(symbols), cycle(symbols), dist(symbols), count(symbols, 1)
  {
    update();
    cycle = until = (n + 6) >> 1;
  }
  void update()
  {
    total += cycle;
    if (total > (1u << 15)) {
      total = 0;
      for (auto& c : count) total += (c = (c + 1) >> 1);
    }
    std::uint32_t const scale = 0x80000000u / total;
    std::uint32_t sum = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      dist[s] = (scale * sum) >> 16;
      sum += count[s];
    }
    cycle = (5 * cycle) >> 2;
    if (cycle > ((n + 6) << 3)) cycle = (n + 6) << 3;
    until = cycle;
  }
};

class encoder {
 public:
  void encode_bit(bit_model& m, std::uint32_t bit)
  {
    std::uint32_t const x = m.p0 * (length_ >> 13);
    if (bit == 0) {
      length_ = x;
      ++m.zeros;
    } else {
      add_to_base(x);
      length_ -= x;
    }
    if (length_ < min_length) renormalise();
    if (--m.until == 0) m.update();
  }

  void encode_symbol(symbol_model& m, std::uint32_t s)
  {
    std::uint32_t x;
    if (s == m.n - 1) {
      x = m.dist[s] * (length_ >> 15);
      add_to_base(x);
      length_ -= x;
    } else {
      length_ >>= 15;
      x = m.dist[s] * length_;
      add_to_base(x);
      length_ = m.dist[s + 1] * length_ - x;
    }
    if (length_ < min_length) renormalise();
    ++m.count[s];
    if (--m.until == 0) m.update();
  }

  void write_bits(std::uint32_t bits, std::uint32_t value)
  {
    if (bits > 19) {
      write_raw(16, value & 0xFFFFu);
      value >>= 16;
      bits -= 16;
    }
    write_raw(bits, value);
  }
  void write_byte(std::uint32_t v) { write_raw(8, v); }
  void write_short(std::uint32_t v) { write_raw(16, v); }
  void write_int(std::uint32_t v)
  {
    write_short(v & 0xFFFFu);
    write_short(v >> 16);
  }
  void write_int64(std::uint64_t v)
  {
    write_int(static_cast<std::uint32_t>(v));
    write_int(static_cast<std::uint32_t>(v >> 32));
  }

  /// Flushes the state; pads with zeros so that the decoder's reads end exactly at the end.
  std::vector<std::uint8_t> finish()
  {
    std::uint32_t const before = base_;
    bool three_zeros = true;
    if (length_ > 2 * min_length) {
      base_ += min_length;
      length_ = min_length >> 1;
    } else {
      base_ += min_length >> 1;
      length_ = min_length >> 9;
      three_zeros = false;
    }
    if (before > base_) carry();
    renormalise();
    out_.push_back(0);
    out_.push_back(0);
    if (three_zeros) out_.push_back(0);
    return out_;
  }

 private:
  void add_to_base(std::uint32_t x)
  {
    std::uint32_t const before = base_;
    base_ += x;
    if (before > base_) carry();
  }
  void carry()
  {
    for (std::size_t i = out_.size(); i-- > 0;) {
      if (out_[i] == 0xFF) {
        out_[i] = 0;
      } else {
        ++out_[i];
        return;
      }
    }
  }
  void renormalise()
  {
    do {
      out_.push_back(static_cast<std::uint8_t>(base_ >> 24));
      base_ <<= 8;
      length_ <<= 8;
    } while (length_ < min_length);
  }
  void write_raw(std::uint32_t bits, std::uint32_t value)
  {
    length_ >>= bits;
    add_to_base(value * length_);
    if (length_ < min_length) renormalise();
  }

  std::vector<std::uint8_t> out_;
  std::uint32_t base_ = 0;
  std::uint32_t length_ = 0xFFFFFFFFu;
};

/// The integer compressor's encoding side: k = bits needed by the corrector, then the corrector.
class integer_compressor {
 public:
  explicit integer_compressor(std::uint32_t bits = 16, std::uint32_t contexts = 1, std::uint32_t bits_high = 8,
                              std::uint32_t range = 0)
    : bits_high_(bits_high)
  {
    if (range != 0) {
      corr_bits_ = 0;
      for (std::uint32_t r = range; r; r >>= 1) ++corr_bits_;
      if (range == (1u << (corr_bits_ - 1))) --corr_bits_;
      corr_range_ = range;
    } else if (bits != 0 && bits < 32) {
      corr_bits_ = bits;
      corr_range_ = 1u << bits;
    } else {
      corr_bits_ = 32;
      corr_range_ = 0;
    }
    if (corr_range_ != 0) {
      corr_min_ = -static_cast<std::int64_t>(corr_range_ / 2);
      corr_max_ = corr_min_ + corr_range_ - 1;
    }
    for (std::uint32_t c = 0; c < contexts; ++c) k_models_.emplace_back(corr_bits_ + 1);
    corrector_.emplace_back(2);
    for (std::uint32_t k = 1; k <= corr_bits_; ++k) corrector_.emplace_back(1u << (k <= bits_high ? k : bits_high));
  }

  void compress(encoder& enc, std::int32_t pred, std::int32_t real, std::uint32_t context = 0)
  {
    std::int64_t corr = static_cast<std::int32_t>(static_cast<std::uint32_t>(real) - static_cast<std::uint32_t>(pred));
    if (corr_range_ != 0) {
      if (corr < corr_min_) corr += corr_range_;
      else if (corr > corr_max_) corr -= corr_range_;
    }
    auto const c = static_cast<std::int32_t>(corr);
    std::uint32_t const magnitude = c <= 0 ? static_cast<std::uint32_t>(-static_cast<std::int64_t>(c))
                                           : static_cast<std::uint32_t>(c - 1);
    std::uint32_t k = 0;
    for (std::uint32_t m = magnitude; m; m >>= 1) ++k;
    last_k_ = k;
    enc.encode_symbol(k_models_[context], k);
    if (k == 0) {
      enc.encode_bit(zero_, static_cast<std::uint32_t>(c));
      return;
    }
    std::uint32_t v = c < 0 ? static_cast<std::uint32_t>(c + static_cast<std::int32_t>((1u << k) - 1))
                            : static_cast<std::uint32_t>(c - 1);
    if (k <= bits_high_) {
      enc.encode_symbol(corrector_[k], v);
    } else {
      std::uint32_t const low_bits = k - bits_high_;
      enc.encode_symbol(corrector_[k], v >> low_bits);
      enc.write_bits(low_bits, v & ((1u << low_bits) - 1));
    }
  }
  std::uint32_t k() const { return last_k_; }

 private:
  std::uint32_t bits_high_;
  std::uint32_t corr_bits_{0};
  std::uint32_t corr_range_{0};
  std::int64_t corr_min_{0}, corr_max_{0};
  std::uint32_t last_k_{0};
  std::vector<symbol_model> k_models_;
  std::vector<symbol_model> corrector_;
  bit_model zero_;
};

}  // namespace heightgrid::test::laz_encoding
