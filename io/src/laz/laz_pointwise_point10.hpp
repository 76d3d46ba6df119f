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

/// Version 2 (core/laz/pointwise_items.hpp's, the GPU decoder's code): changed-field mask first;
/// intensity, x, y, z predicted per return context; the number of corrector bits of x selects y's
/// context, those of x and y select z's.
class point10_v2 {
 public:
  void init(std::uint8_t const* raw)
  {
    models_.next_chunk();
    state_.init(last_, raw);
  }

  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    state_.decode(dec.state(), models_.get(), models_.stamp(), laz_point10_context, last_);
    last_.store(out);  // any alignment on the host (a memcpy)
  }

 private:
  codec::point10 last_{};
  codec::point10_v2_state state_{};
  item_models<codec::point10_v2_models> models_;
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

/// Version 2 (core/laz/pointwise_items.hpp's, the GPU decoder's code): like version 1 but keeps
/// four time sequences (interleaved flight lines), switching between them with escape symbols, and
/// codes large jumps as 32 high bits + 32 raw low bits.
class gpstime11_v2 {
 public:
  void init(std::uint8_t const* raw)
  {
    models_.next_chunk();
    state_.init(raw);
  }

  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    // A valid stream switches sequence at most once per point (the encoder switches only to a
    // sequence that codes the point); the bound keeps corrupt data from looping.
    if (!state_.decode(dec.state(), models_.get(), models_.stamp())) {
      throw decode_error("gpstime11: more than 4 time sequence switches for one point");
    }
    codec::store_u64(out, state_.times[state_.current]);
  }

 private:
  codec::gpstime11_v2_state state_{};
  item_models<codec::gpstime11_v2_models> models_;
};

}  // namespace
}  // namespace heightgrid::io::laz
