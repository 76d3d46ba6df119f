#include "laz_pointwise.hpp"

#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::io::laz {
namespace {

template <class T>
T load_le(std::uint8_t const* p)
{
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

template <class T>
void store_le(std::uint8_t* p, T value)
{
  std::memcpy(p, &value, sizeof value);
}

/// Wrapping 32-bit arithmetic: LASzip's predictions rely on two's-complement overflow.
inline std::int32_t wrap_add(std::int32_t a, std::int32_t b)
{
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}
inline std::int32_t wrap_mul(std::int32_t a, std::int32_t b)
{
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
}

inline std::uint8_t clamp_u8(std::int32_t v)
{
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

/// Symbol models created on first use, one per value of a byte that selects them (the previous
/// classification, say). Kept across chunks and reset at each chunk start: a reset model is
/// indistinguishable from a new one.
class lazy_models {
 public:
  symbol_model& operator[](std::uint8_t key)
  {
    auto& slot = models_[key];
    if (!slot) slot = std::make_unique<symbol_model>(256);
    return *slot;
  }
  void reset()
  {
    for (auto& m : models_) {
      if (m) m->reset();
    }
  }

 private:
  std::array<std::unique_ptr<symbol_model>, 256> models_;
};

/// Running median of the last five values, updated in O(1) the way LASzip's point10 v2 coder
/// does it: the five values are kept sorted; a new value replaces the oldest end of the window,
/// which alternates between the low and the high end depending on where the last value went.
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
    if (replace_high_) {
      if (x < v_[2]) {
        v_[4] = v_[3];
        v_[3] = v_[2];
        if (x < v_[0]) {
          v_[2] = v_[1];
          v_[1] = v_[0];
          v_[0] = x;
        } else if (x < v_[1]) {
          v_[2] = v_[1];
          v_[1] = x;
        } else {
          v_[2] = x;
        }
      } else {
        if (x < v_[3]) {
          v_[4] = v_[3];
          v_[3] = x;
        } else {
          v_[4] = x;
        }
        replace_high_ = false;
      }
    } else {
      if (v_[2] < x) {
        v_[0] = v_[1];
        v_[1] = v_[2];
        if (v_[4] < x) {
          v_[2] = v_[3];
          v_[3] = v_[4];
          v_[4] = x;
        } else if (v_[3] < x) {
          v_[2] = v_[3];
          v_[3] = x;
        } else {
          v_[2] = x;
        }
      } else {
        if (v_[1] < x) {
          v_[0] = v_[1];
          v_[1] = x;
        } else {
          v_[0] = x;
        }
        replace_high_ = true;
      }
    }
  }

 private:
  std::array<std::int32_t, 5> v_{};
  bool replace_high_{true};
};

/// The point10 fields, unpacked from the 20 bytes of a LAS 1.0-1.3 base record.
struct point10 {
  std::int32_t x, y, z;
  std::uint16_t intensity;
  std::uint8_t returns;  // return number (3 bits), number of returns (3), scan direction, edge
  std::uint8_t classification;
  std::uint8_t scan_angle;
  std::uint8_t user_data;
  std::uint16_t point_source;

  void load(std::uint8_t const* p)
  {
    x = load_le<std::int32_t>(p);
    y = load_le<std::int32_t>(p + 4);
    z = load_le<std::int32_t>(p + 8);
    intensity = load_le<std::uint16_t>(p + 12);
    returns = p[14];
    classification = p[15];
    scan_angle = p[16];
    user_data = p[17];
    point_source = load_le<std::uint16_t>(p + 18);
  }
  void store(std::uint8_t* p) const
  {
    store_le(p, x);
    store_le(p + 4, y);
    store_le(p + 8, z);
    store_le(p + 12, intensity);
    p[14] = returns;
    p[15] = classification;
    p[16] = scan_angle;
    p[17] = user_data;
    store_le(p + 18, point_source);
  }
};

/// Median of three, LASzip point10 v1's x/y predictor.
inline std::int32_t median3(std::array<std::int32_t, 3> const& d)
{
  if (d[0] < d[1]) {
    if (d[1] < d[2]) return d[1];
    if (d[0] < d[2]) return d[2];
    return d[0];
  }
  if (d[0] < d[2]) return d[0];
  if (d[1] < d[2]) return d[2];
  return d[1];
}

// ---- point10 ------------------------------------------------------------------------------

/// Version 1: x/y predicted by the median of the last three differences, z by the last z; the
/// other fields only when a 6-bit mask says they changed.
class point10_v1 {
 public:
  void init(std::uint8_t const* raw)
  {
    last_.load(raw);
    dx_diffs_ = {0, 0, 0};
    dy_diffs_ = {0, 0, 0};
    next_diff_ = 0;
    dx_.init();
    dy_.init();
    z_.init();
    intensity_.init();
    scan_angle_.init();
    point_source_.init();
    changed_.reset();
    bit_byte_.reset();
    classification_.reset();
    user_data_.reset();
  }

  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    point10& p = last_;
    std::int32_t const x_diff = dx_.decompress(dec, median3(dx_diffs_));
    p.x = wrap_add(p.x, x_diff);
    std::uint32_t k = dx_.k();
    std::int32_t const y_diff = dy_.decompress(dec, median3(dy_diffs_), k < 19 ? k : 19);
    p.y = wrap_add(p.y, y_diff);
    k = (k + dy_.k()) / 2;
    p.z = z_.decompress(dec, p.z, k < 19 ? k : 19);

    std::uint32_t const changed = dec.decode_symbol(changed_);
    if (changed != 0) {
      if (changed & 32) p.intensity = static_cast<std::uint16_t>(intensity_.decompress(dec, p.intensity));
      if (changed & 16) p.returns = static_cast<std::uint8_t>(dec.decode_symbol(bit_byte_[p.returns]));
      if (changed & 8) {
        p.classification = static_cast<std::uint8_t>(dec.decode_symbol(classification_[p.classification]));
      }
      if (changed & 4) {
        p.scan_angle = static_cast<std::uint8_t>(scan_angle_.decompress(dec, p.scan_angle, k < 3 ? 1 : 0));
      }
      if (changed & 2) p.user_data = static_cast<std::uint8_t>(dec.decode_symbol(user_data_[p.user_data]));
      if (changed & 1) {
        p.point_source = static_cast<std::uint16_t>(point_source_.decompress(dec, p.point_source));
      }
    }
    dx_diffs_[next_diff_] = x_diff;
    dy_diffs_[next_diff_] = y_diff;
    next_diff_ = next_diff_ == 2 ? 0 : next_diff_ + 1;
    p.store(out);
  }

 private:
  point10 last_{};
  std::array<std::int32_t, 3> dx_diffs_{};
  std::array<std::int32_t, 3> dy_diffs_{};
  unsigned next_diff_{0};
  integer_decompressor dx_{32};
  integer_decompressor dy_{32, 20};
  integer_decompressor z_{32, 20};
  integer_decompressor intensity_{16};
  integer_decompressor scan_angle_{8, 2};
  integer_decompressor point_source_{16};
  symbol_model changed_{64};
  lazy_models bit_byte_, classification_, user_data_;
};

/// Context of a (number of returns n, return number r) pair for point10 v2: single returns,
/// first/last of few returns and so on get their own predictions. 15 collects the combinations
/// that valid files do not produce. The z "level" context is |n - r|.
constexpr std::uint8_t return_context[8][8] = {
  {15, 14, 13, 12, 11, 10, 9, 8},  {14, 0, 1, 3, 6, 10, 10, 9},  {13, 1, 2, 4, 7, 11, 11, 10},
  {12, 3, 4, 5, 8, 12, 12, 11},    {11, 6, 7, 8, 9, 13, 13, 12}, {10, 10, 11, 12, 13, 14, 14, 13},
  {9, 10, 11, 12, 13, 14, 15, 14}, {8, 9, 10, 11, 12, 13, 14, 15}};

/// Version 2: changed-field mask first; intensity, x, y, z predicted per return context; the
/// number of corrector bits of x selects y's context, those of x and y select z's.
class point10_v2 {
 public:
  void init(std::uint8_t const* raw)
  {
    for (auto& m : x_median_) m.reset();
    for (auto& m : y_median_) m.reset();
    last_intensity_.fill(0);
    last_height_.fill(0);
    changed_.reset();
    intensity_.init();
    scan_angle_[0].reset();
    scan_angle_[1].reset();
    point_source_.init();
    bit_byte_.reset();
    classification_.reset();
    user_data_.reset();
    dx_.init();
    dy_.init();
    z_.init();
    last_.load(raw);
    last_.intensity = 0;  // the coder starts intensity predictions from 0, not the first point
  }

  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    point10& p = last_;
    std::uint32_t const changed = dec.decode_symbol(changed_);
    unsigned r, n, m;
    if (changed != 0) {
      if (changed & 32) p.returns = static_cast<std::uint8_t>(dec.decode_symbol(bit_byte_[p.returns]));
      r = p.returns & 7u;
      n = (p.returns >> 3) & 7u;
      m = return_context[n][r];
      if (changed & 16) {
        p.intensity = static_cast<std::uint16_t>(
          intensity_.decompress(dec, last_intensity_[m], m < 3 ? m : 3));
        last_intensity_[m] = p.intensity;
      } else {
        p.intensity = last_intensity_[m];
      }
      if (changed & 8) {
        p.classification = static_cast<std::uint8_t>(dec.decode_symbol(classification_[p.classification]));
      }
      if (changed & 4) {
        std::uint32_t const delta = dec.decode_symbol(scan_angle_[(p.returns >> 6) & 1u]);
        p.scan_angle = static_cast<std::uint8_t>(delta + p.scan_angle);
      }
      if (changed & 2) p.user_data = static_cast<std::uint8_t>(dec.decode_symbol(user_data_[p.user_data]));
      if (changed & 1) {
        p.point_source = static_cast<std::uint16_t>(point_source_.decompress(dec, p.point_source));
      }
    } else {
      r = p.returns & 7u;
      n = (p.returns >> 3) & 7u;
      m = return_context[n][r];
    }
    unsigned const level = n > r ? n - r : r - n;
    std::uint32_t const single = n == 1 ? 1 : 0;

    std::int32_t diff = dx_.decompress(dec, x_median_[m].get(), single);
    p.x = wrap_add(p.x, diff);
    x_median_[m].add(diff);

    std::uint32_t k = dx_.k();
    diff = dy_.decompress(dec, y_median_[m].get(), single + (k < 20 ? (k & ~1u) : 20));
    p.y = wrap_add(p.y, diff);
    y_median_[m].add(diff);

    k = (dx_.k() + dy_.k()) / 2;
    p.z = z_.decompress(dec, last_height_[level], single + (k < 18 ? (k & ~1u) : 18));
    last_height_[level] = p.z;
    p.store(out);
  }

 private:
  point10 last_{};
  std::array<median_of_five, 16> x_median_;
  std::array<median_of_five, 16> y_median_;
  std::array<std::uint16_t, 16> last_intensity_{};
  std::array<std::int32_t, 8> last_height_{};
  symbol_model changed_{64};
  integer_decompressor intensity_{16, 4};
  std::array<symbol_model, 2> scan_angle_{symbol_model(256), symbol_model(256)};
  integer_decompressor point_source_{16};
  lazy_models bit_byte_, classification_, user_data_;
  integer_decompressor dx_{32, 2};
  integer_decompressor dy_{32, 22};
  integer_decompressor z_{32, 20};
};

// ---- gpstime11 ----------------------------------------------------------------------------

/// Version 1: the time difference is predicted as a multiple of the last one (symbol "multi");
/// 510 and 511 escape to a raw 64-bit time.
class gpstime11_v1 {
 public:
  void init(std::uint8_t const* raw)
  {
    time_ = load_le<std::int64_t>(raw);
    last_diff_ = 0;
    extremes_ = 0;
    multi_.reset();
    zero_diff_.reset();
    ic_.init();
  }

  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    constexpr std::uint32_t multi_max = 512;
    if (last_diff_ == 0) {
      std::uint32_t const s = dec.decode_symbol(zero_diff_);
      if (s == 1) {
        last_diff_ = ic_.decompress(dec, 0, 0);
        time_ = static_cast<std::int64_t>(static_cast<std::uint64_t>(time_) + static_cast<std::uint64_t>(std::int64_t{last_diff_}));
      } else if (s == 2) {
        time_ = static_cast<std::int64_t>(dec.read_int64());
      }
    } else {
      std::uint32_t const multi = dec.decode_symbol(multi_);
      if (multi < multi_max - 2) {
        std::int32_t diff;
        auto const scaled = wrap_mul(static_cast<std::int32_t>(multi), last_diff_);
        if (multi == 1) {
          diff = ic_.decompress(dec, last_diff_, 1);
          last_diff_ = diff;
          extremes_ = 0;
        } else if (multi == 0) {
          diff = ic_.decompress(dec, last_diff_ / 4, 2);
          note_extreme(diff);
        } else if (multi < 10) {
          diff = ic_.decompress(dec, scaled, 3);
        } else if (multi < 50) {
          diff = ic_.decompress(dec, scaled, 4);
        } else {
          diff = ic_.decompress(dec, scaled, 5);
          if (multi == multi_max - 3) note_extreme(diff);
        }
        time_ = static_cast<std::int64_t>(static_cast<std::uint64_t>(time_) + static_cast<std::uint64_t>(std::int64_t{diff}));
      } else if (multi < multi_max - 1) {
        time_ = static_cast<std::int64_t>(dec.read_int64());
      }
    }
    store_le(out, time_);
  }

 private:
  /// After more than three differences far off the prediction, adopt the latest as the new one.
  void note_extreme(std::int32_t diff)
  {
    if (++extremes_ > 3) {
      last_diff_ = diff;
      extremes_ = 0;
    }
  }

  std::int64_t time_{0};
  std::int32_t last_diff_{0};
  std::int32_t extremes_{0};
  symbol_model multi_{512};
  symbol_model zero_diff_{3};
  integer_decompressor ic_{32, 6};
};

/// Version 2: like version 1 but keeps four time sequences (interleaved flight lines), switching
/// between them with escape symbols, and codes large jumps as 32 high bits + 32 raw low bits.
class gpstime11_v2 {
 public:
  void init(std::uint8_t const* raw)
  {
    current_ = 0;
    newest_ = 0;
    last_diff_.fill(0);
    extremes_.fill(0);
    times_ = {load_le<std::uint64_t>(raw), 0, 0, 0};
    multi_.reset();
    zero_diff_.reset();
    ic_.init();
  }

  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    constexpr std::uint32_t multi = 500;
    constexpr std::int32_t multi_minus = -10;
    constexpr std::uint32_t unchanged = multi - multi_minus + 1;  // 511
    constexpr std::uint32_t code_full = multi - multi_minus + 2;  // 512
    // A valid stream switches sequence at most once per point (the encoder switches only to a
    // sequence that codes the point); the bound keeps corrupt data from looping.
    for (int switches = 0;; ++switches) {
      if (switches > 4) throw decode_error("gpstime11: more than 4 time sequence switches for one point");
      std::uint32_t const c = current_;
      if (last_diff_[c] == 0) {
        std::uint32_t const s = dec.decode_symbol(zero_diff_);
        if (s == 0) break;
        if (s == 1) {
          last_diff_[c] = ic_.decompress(dec, 0, 0);
          times_[c] += static_cast<std::uint64_t>(std::int64_t{last_diff_[c]});
          extremes_[c] = 0;
          break;
        }
        if (s == 2) {
          start_sequence(dec);
          break;
        }
        current_ = (c + s - 2) & 3u;
        continue;
      }
      std::uint32_t const s = dec.decode_symbol(multi_);
      if (s == 1) {
        times_[c] += static_cast<std::uint64_t>(std::int64_t{ic_.decompress(dec, last_diff_[c], 1)});
        extremes_[c] = 0;
        break;
      }
      if (s < unchanged) {
        std::int32_t diff;
        if (s == 0) {
          diff = ic_.decompress(dec, 0, 7);
          note_extreme(c, diff);
        } else if (s < multi) {
          diff = ic_.decompress(dec, wrap_mul(static_cast<std::int32_t>(s), last_diff_[c]), s < 10 ? 2 : 3);
        } else if (s == multi) {
          diff = ic_.decompress(dec, wrap_mul(static_cast<std::int32_t>(multi), last_diff_[c]), 4);
          note_extreme(c, diff);
        } else {
          std::int32_t const negative = static_cast<std::int32_t>(multi) - static_cast<std::int32_t>(s);
          if (negative > multi_minus) {
            diff = ic_.decompress(dec, wrap_mul(negative, last_diff_[c]), 5);
          } else {
            diff = ic_.decompress(dec, wrap_mul(multi_minus, last_diff_[c]), 6);
            note_extreme(c, diff);
          }
        }
        times_[c] += static_cast<std::uint64_t>(std::int64_t{diff});
        break;
      }
      if (s == unchanged) break;
      if (s == code_full) {
        start_sequence(dec);
        break;
      }
      current_ = (c + s - code_full) & 3u;
    }
    store_le(out, times_[current_]);
  }

 private:
  void note_extreme(std::uint32_t c, std::int32_t diff)
  {
    if (++extremes_[c] > 3) {
      last_diff_[c] = diff;
      extremes_[c] = 0;
    }
  }
  /// A jump too large for 32 bits: a new sequence whose high word is predicted from the current
  /// one and whose low word is raw.
  void start_sequence(arithmetic_decoder& dec)
  {
    newest_ = (newest_ + 1) & 3u;
    auto const high = static_cast<std::uint32_t>(
      ic_.decompress(dec, static_cast<std::int32_t>(times_[current_] >> 32), 8));
    times_[newest_] = (std::uint64_t{high} << 32) | dec.read_int();
    current_ = newest_;
    last_diff_[current_] = 0;
    extremes_[current_] = 0;
  }

  std::uint32_t current_{0};
  std::uint32_t newest_{0};
  std::array<std::uint64_t, 4> times_{};
  std::array<std::int32_t, 4> last_diff_{};
  std::array<std::int32_t, 4> extremes_{};
  symbol_model multi_{516};
  symbol_model zero_diff_{6};
  integer_decompressor ic_{32, 9};
};

// ---- rgb12 --------------------------------------------------------------------------------

/// Version 1: a 6-bit mask of the changed bytes, each changed byte coded against its last value.
class rgb12_v1 {
 public:
  void init(std::uint8_t const* raw)
  {
    std::memcpy(last_.data(), raw, 6);
    used_.reset();
    ic_.init();
  }
  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    std::uint32_t const mask = dec.decode_symbol(used_);
    // Bytes in record order: red low, red high, green low, ...; bit b of the mask = byte b.
    for (unsigned b = 0; b < 6; ++b) {
      if (mask & (1u << b)) {
        last_[b] = static_cast<std::uint8_t>(ic_.decompress(dec, last_[b], b));
      }
    }
    std::memcpy(out, last_.data(), 6);
  }

 private:
  std::array<std::uint8_t, 6> last_{};
  symbol_model used_{64};
  integer_decompressor ic_{8, 6};
};

/// Version 2: red is coded against the last red; green and blue against the last value plus
/// red's (and green's) change, which captures brightness changes. Bit 6 of the mask says the
/// colour is not a grey level (green and blue equal red otherwise).
class rgb12_v2 {
 public:
  void init(std::uint8_t const* raw)
  {
    for (unsigned c = 0; c < 3; ++c) last_[c] = load_le<std::uint16_t>(raw + 2 * c);
    used_.reset();
    for (auto& m : diff_) m.reset();
  }
  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    std::uint32_t const mask = dec.decode_symbol(used_);
    std::array<std::uint16_t, 3> now{};
    auto lo = [](std::uint16_t v) { return static_cast<std::int32_t>(v & 0xFFu); };
    auto hi = [](std::uint16_t v) { return static_cast<std::int32_t>(v >> 8); };
    auto folded = [&](unsigned model, std::int32_t base) {
      return static_cast<std::uint16_t>((dec.decode_symbol(diff_[model]) + static_cast<std::uint32_t>(base)) & 0xFFu);
    };

    now[0] = (mask & 1u) ? folded(0, lo(last_[0])) : static_cast<std::uint16_t>(lo(last_[0]));
    now[0] |= (mask & 2u) ? static_cast<std::uint16_t>(folded(1, hi(last_[0])) << 8)
                          : static_cast<std::uint16_t>(last_[0] & 0xFF00u);
    if (mask & 64u) {
      std::int32_t d = lo(now[0]) - lo(last_[0]);
      now[1] = (mask & 4u) ? folded(2, clamp_u8(d + lo(last_[1]))) : static_cast<std::uint16_t>(lo(last_[1]));
      if (mask & 16u) {
        d = (d + (lo(now[1]) - lo(last_[1]))) / 2;
        now[2] = folded(4, clamp_u8(d + lo(last_[2])));
      } else {
        now[2] = static_cast<std::uint16_t>(lo(last_[2]));
      }
      d = hi(now[0]) - hi(last_[0]);
      now[1] |= (mask & 8u) ? static_cast<std::uint16_t>(folded(3, clamp_u8(d + hi(last_[1]))) << 8)
                            : static_cast<std::uint16_t>(last_[1] & 0xFF00u);
      if (mask & 32u) {
        d = (d + (hi(now[1]) - hi(last_[1]))) / 2;
        now[2] |= static_cast<std::uint16_t>(folded(5, clamp_u8(d + hi(last_[2]))) << 8);
      } else {
        now[2] |= static_cast<std::uint16_t>(last_[2] & 0xFF00u);
      }
    } else {
      now[1] = now[0];
      now[2] = now[0];
    }
    last_ = now;
    for (unsigned c = 0; c < 3; ++c) store_le(out + 2 * c, now[c]);
  }

 private:
  std::array<std::uint16_t, 3> last_{};
  symbol_model used_{128};
  std::array<symbol_model, 6> diff_{symbol_model(256), symbol_model(256), symbol_model(256),
                                    symbol_model(256), symbol_model(256), symbol_model(256)};
};

// ---- extra bytes --------------------------------------------------------------------------

/// Version 1: every byte through an 8-bit integer decompressor with one context per byte.
class bytes_v1 {
 public:
  explicit bytes_v1(std::size_t count)
    : last_(count), ic_(8, static_cast<std::uint32_t>(count))
  {
  }
  void init(std::uint8_t const* raw)
  {
    std::memcpy(last_.data(), raw, last_.size());
    ic_.init();
  }
  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    for (std::size_t i = 0; i < last_.size(); ++i) {
      last_[i] = static_cast<std::uint8_t>(ic_.decompress(dec, last_[i], static_cast<std::uint32_t>(i)));
    }
    std::memcpy(out, last_.data(), last_.size());
  }

 private:
  std::vector<std::uint8_t> last_;
  integer_decompressor ic_;
};

/// Version 2: every byte's difference to its last value through its own 256-symbol model.
class bytes_v2 {
 public:
  explicit bytes_v2(std::size_t count) : last_(count), models_(count, symbol_model(256)) {}
  void init(std::uint8_t const* raw)
  {
    std::memcpy(last_.data(), raw, last_.size());
    for (auto& m : models_) m.reset();
  }
  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    for (std::size_t i = 0; i < last_.size(); ++i) {
      last_[i] = static_cast<std::uint8_t>(last_[i] + dec.decode_symbol(models_[i]));
    }
    std::memcpy(out, last_.data(), last_.size());
  }

 private:
  std::vector<std::uint8_t> last_;
  std::vector<symbol_model> models_;
};

// ---- wavepacket13 -------------------------------------------------------------------------

/// Version 1 (the only one): descriptor index as a symbol; the waveform offset as "same",
/// "right after the last packet", a 32-bit difference or raw; the rest against the last values.
class wavepacket13_v1 {
 public:
  void init(std::uint8_t const* raw)
  {
    load(raw + 1);  // the descriptor index is not predicted
    offset_case_ = 0;
    last_offset_diff_ = 0;
    index_.reset();
    for (auto& m : offset_kind_) m.reset();
    offset_diff_.init();
    packet_size_.init();
    return_point_.init();
    xyz_.init();
  }
  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    out[0] = static_cast<std::uint8_t>(dec.decode_symbol(index_));
    offset_case_ = dec.decode_symbol(offset_kind_[offset_case_ & 3u]);
    switch (offset_case_) {
      case 0: break;
      case 1: offset_ += packet_size_value_; break;
      case 2:
        last_offset_diff_ = offset_diff_.decompress(dec, last_offset_diff_);
        offset_ += static_cast<std::uint64_t>(std::int64_t{last_offset_diff_});
        break;
      default: offset_ = dec.read_int64(); break;
    }
    packet_size_value_ = static_cast<std::uint32_t>(
      packet_size_.decompress(dec, static_cast<std::int32_t>(packet_size_value_)));
    return_point_value_ = return_point_.decompress(dec, return_point_value_);
    for (unsigned a = 0; a < 3; ++a) xyz_value_[a] = xyz_.decompress(dec, xyz_value_[a], a);
    std::uint8_t* p = out + 1;
    store_le(p, offset_);
    store_le(p + 8, packet_size_value_);
    store_le(p + 12, return_point_value_);
    for (unsigned a = 0; a < 3; ++a) store_le(p + 16 + 4 * a, xyz_value_[a]);
  }

 private:
  // Floats (return point, x/y/z(t)) are predicted through their bit patterns as integers.
  void load(std::uint8_t const* p)
  {
    offset_ = load_le<std::uint64_t>(p);
    packet_size_value_ = load_le<std::uint32_t>(p + 8);
    return_point_value_ = load_le<std::int32_t>(p + 12);
    for (unsigned a = 0; a < 3; ++a) xyz_value_[a] = load_le<std::int32_t>(p + 16 + 4 * a);
  }

  std::uint64_t offset_{0};
  std::uint32_t packet_size_value_{0};
  std::int32_t return_point_value_{0};
  std::array<std::int32_t, 3> xyz_value_{};
  std::uint32_t offset_case_{0};
  std::int32_t last_offset_diff_{0};
  symbol_model index_{256};
  std::array<symbol_model, 4> offset_kind_{symbol_model(4), symbol_model(4), symbol_model(4),
                                           symbol_model(4)};
  integer_decompressor offset_diff_{32};
  integer_decompressor packet_size_{32};
  integer_decompressor return_point_{32};
  integer_decompressor xyz_{32, 3};
};

enum class slot_kind : std::uint8_t {
  point10_v1, point10_v2, gpstime11_v1, gpstime11_v2, rgb12_v1, rgb12_v2, bytes_v1, bytes_v2,
  wavepacket13_v1
};

struct slot {
  slot_kind kind;
  std::size_t offset;  // within the record
  std::size_t index;   // into the decoder vector of its kind
};

}  // namespace

/// The item decoders of one record layout, in record order. A switch per item and point (well
/// predicted: the same sequence every point) instead of virtual calls, so that the compiler can
/// inline each item's decode into the loop.
struct pointwise_decoder::items {
  std::vector<slot> slots;
  std::vector<point10_v1> p10v1;
  std::vector<point10_v2> p10v2;
  std::vector<gpstime11_v1> gt1;
  std::vector<gpstime11_v2> gt2;
  std::vector<rgb12_v1> rgb1;
  std::vector<rgb12_v2> rgb2;
  std::vector<bytes_v1> b1;
  std::vector<bytes_v2> b2;
  std::vector<wavepacket13_v1> wp1;

  void init(std::uint8_t const* record)
  {
    for (auto const& s : slots) {
      std::uint8_t const* p = record + s.offset;
      switch (s.kind) {
        case slot_kind::point10_v1: p10v1[s.index].init(p); break;
        case slot_kind::point10_v2: p10v2[s.index].init(p); break;
        case slot_kind::gpstime11_v1: gt1[s.index].init(p); break;
        case slot_kind::gpstime11_v2: gt2[s.index].init(p); break;
        case slot_kind::rgb12_v1: rgb1[s.index].init(p); break;
        case slot_kind::rgb12_v2: rgb2[s.index].init(p); break;
        case slot_kind::bytes_v1: b1[s.index].init(p); break;
        case slot_kind::bytes_v2: b2[s.index].init(p); break;
        case slot_kind::wavepacket13_v1: wp1[s.index].init(p); break;
      }
    }
  }

  void decode(arithmetic_decoder& dec, std::uint8_t* record)
  {
    for (auto const& s : slots) {
      std::uint8_t* p = record + s.offset;
      switch (s.kind) {
        case slot_kind::point10_v1: p10v1[s.index].decode(dec, p); break;
        case slot_kind::point10_v2: p10v2[s.index].decode(dec, p); break;
        case slot_kind::gpstime11_v1: gt1[s.index].decode(dec, p); break;
        case slot_kind::gpstime11_v2: gt2[s.index].decode(dec, p); break;
        case slot_kind::rgb12_v1: rgb1[s.index].decode(dec, p); break;
        case slot_kind::rgb12_v2: rgb2[s.index].decode(dec, p); break;
        case slot_kind::bytes_v1: b1[s.index].decode(dec, p); break;
        case slot_kind::bytes_v2: b2[s.index].decode(dec, p); break;
        case slot_kind::wavepacket13_v1: wp1[s.index].decode(dec, p); break;
      }
    }
  }
};

pointwise_decoder::pointwise_decoder(laz_vlr_info const& vlr) : items_(std::make_unique<items>())
{
  items& it = *items_;
  std::size_t offset = 0;
  for (auto const& item : vlr.items) {
    auto add = [&](slot_kind kind, auto& decoders, auto&&... args) {
      it.slots.push_back({kind, offset, decoders.size()});
      decoders.emplace_back(std::forward<decltype(args)>(args)...);
    };
    std::uint16_t const v = item.version;
    switch (item.type) {
      case item_type::point10:
        if (v == 1) add(slot_kind::point10_v1, it.p10v1);
        else if (v == 2) add(slot_kind::point10_v2, it.p10v2);
        break;
      case item_type::gpstime11:
        if (v == 1) add(slot_kind::gpstime11_v1, it.gt1);
        else if (v == 2) add(slot_kind::gpstime11_v2, it.gt2);
        break;
      case item_type::rgb12:
        if (v == 1) add(slot_kind::rgb12_v1, it.rgb1);
        else if (v == 2) add(slot_kind::rgb12_v2, it.rgb2);
        break;
      case item_type::byte:
        if (v == 1) add(slot_kind::bytes_v1, it.b1, std::size_t{item.size});
        else if (v == 2) add(slot_kind::bytes_v2, it.b2, std::size_t{item.size});
        break;
      case item_type::wavepacket13:  // one coding under both labels (see laz_vlr.cpp)
        if (v == 1 || v == 2) add(slot_kind::wavepacket13_v1, it.wp1);
        break;
      default: break;
    }
    if (it.slots.empty() || it.slots.back().offset != offset) {
      throw decode_error("item " + item_type_name(item.type) + " v" + std::to_string(v) +
                         " is not a pointwise LAZ item (compressors 1 and 2)");
    }
    offset += item.size;
  }
  record_length_ = offset;
  if (record_length_ == 0) throw decode_error("LASzip VLR lists no items");
}

pointwise_decoder::~pointwise_decoder() = default;
pointwise_decoder::pointwise_decoder(pointwise_decoder&&) noexcept = default;
pointwise_decoder& pointwise_decoder::operator=(pointwise_decoder&&) noexcept = default;

void pointwise_decoder::start(std::uint8_t const* data, std::size_t size)
{
  data_ = data;
  size_ = size;
  first_pending_ = true;
}

void pointwise_decoder::decode(std::size_t points, std::uint8_t* records)
{
  if (points == 0) return;
  if (first_pending_) {
    // The first point of a chunk is stored raw; it seeds every item's predictions, and the
    // arithmetic-coded stream follows it.
    if (size_ < record_length_) {
      throw decode_error("the chunk is " + std::to_string(size_) +
                         " bytes, shorter than its first (raw) point of " +
                         std::to_string(record_length_) + " bytes");
    }
    std::memcpy(records, data_, record_length_);
    items_->init(records);
    dec_.init(data_ + record_length_, size_ - record_length_);
    first_pending_ = false;
    records += record_length_;
    --points;
  }
  items& it = *items_;
  for (std::size_t i = 0; i < points; ++i) {
    it.decode(dec_, records);
    records += record_length_;
  }
  if (dec_.overrun() > 0) {
    throw decode_error("arithmetic decoder ran " + std::to_string(dec_.overrun()) +
                       " bytes past the end of the chunk (truncated or corrupt data)");
  }
}

std::size_t pointwise_decoder::consumed() const
{
  if (first_pending_) return 0;
  return record_length_ + dec_.position();
}

std::size_t decode_pointwise_chunk(laz_vlr_info const& vlr, std::uint8_t const* data,
                                   std::size_t size, std::size_t points, std::uint8_t* records)
{
  pointwise_decoder decoder(vlr);
  decoder.start(data, size);
  decoder.decode(points, records);
  return decoder.consumed();
}

}  // namespace heightgrid::io::laz
