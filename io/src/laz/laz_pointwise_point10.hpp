#pragma once
// The pointwise decoders of point10 (the LAS 1.0-1.3 base record) and gpstime11, versions 1 and 2.
// Part of laz_pointwise.cpp's translation unit, included by it alone: the decoders keep internal
// linkage (an anonymous namespace), so the compiler sees and inlines the pointwise decoder as one file.

#include "laz_pointwise_support.hpp"

namespace heightgrid::io::laz {
namespace {

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

}  // namespace
}  // namespace heightgrid::io::laz
