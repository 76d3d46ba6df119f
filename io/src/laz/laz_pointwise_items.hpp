#pragma once
// The pointwise decoders of rgb12, extra bytes and wavepacket13.
// Part of laz_pointwise.cpp's translation unit, included by it alone: the decoders keep internal
// linkage (an anonymous namespace), so the compiler sees and inlines the pointwise decoder as one file.

#include "laz_pointwise_support.hpp"

namespace heightgrid::io::laz {
namespace {

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

/// Version 2 (core/laz/pointwise_items.hpp's, the GPU decoder's code): red is coded against the
/// last red; green and blue against the last value plus red's (and green's) change, which captures
/// brightness changes. Bit 6 of the mask says the colour is not a grey level (green and blue equal
/// red otherwise).
class rgb12_v2 {
 public:
  void init(std::uint8_t const* raw)
  {
    models_.next_chunk();
    state_.init(raw);
  }
  void decode(arithmetic_decoder& dec, std::uint8_t* out)
  {
    state_.decode(dec.state(), models_.get(), models_.stamp());
    for (unsigned c = 0; c < 3; ++c) { codec::store_u16(out + 2 * c, state_.last[c]); }
  }

 private:
  codec::rgb12_v2_state state_{};
  item_models<codec::rgb12_v2_models> models_;
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

}  // namespace
}  // namespace heightgrid::io::laz
