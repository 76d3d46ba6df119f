#pragma once
// The layered decoders of the items after point14: rgb14, rgbnir14, byte14, wavepacket14.
// Part of laz_layered.cpp's translation unit, included by it alone: the decoders keep internal
// linkage (an anonymous namespace), so the compiler sees and inlines the layered decoder as one file.

#include "laz_layered_support.hpp"

namespace heightgrid::io::laz {
namespace {

// ------------------------------------------------------------------------------------------
// Items after point14: rgb14, rgbnir14, byte14, wavepacket14
// ------------------------------------------------------------------------------------------

/// Walks the points of a chunk for an item that follows point14, tracking the "context" that
/// point14 hands to the items after it. For each point it calls activate(context, value_slot)
/// when a context occurs for the first time in the chunk, then decode(record, context,
/// value_slot).
///
/// The context is NOT simply the point's scanner channel: LASzip's point reader starts every
/// point with context 0 and sets it to the channel only on points where the channel switches
/// (and at the chunk's first point). So a run of points on channel 2 is coded with context 2
/// on its first point and context 0 after that. Encoders (LASzip, laz-rs) do the same, so it is
/// the format; a channel switch always changes the channel, so the switch points are exactly
/// those whose channel differs from the previous record's.
///
/// value_slot says whose previous value predicts the point: the context's own, except in item
/// version 3 on a point where the context switches to one already used in the chunk: there
/// LASzip's original reader keeps the previous context's value (and stores the result there).
/// Files written by it depend on that, so version 3 is decoded the same way; version 4 fixed it.
template <class Activate, class Decode>
void walk_channels(std::uint8_t* records, std::size_t stride, std::size_t count,
                   unsigned first_channel, bool version3, std::array<bool, 4>& active,
                   Activate&& activate, Decode&& decode)
{
  active.fill(false);
  unsigned current = first_channel;
  active[current] = true;
  activate(current, current);
  for (std::size_t i = 1; i < count; ++i) {
    std::uint8_t* record = records + i * stride;
    unsigned const channel = channel_of_record(record);
    unsigned const context = channel != channel_of_record(record - stride) ? channel : 0;
    unsigned slot = current;
    if (context != current) {
      current = context;
      if (!active[context]) {
        active[context] = true;
        activate(context, slot);
        slot = context;
      } else if (!version3) {
        slot = context;
      }
    }
    decode(record, current, slot);
  }
}

/// The colour models of one channel (rgb12 v2's scheme: which bytes changed, then each changed
/// byte as a correction of a prediction from the red channel's change).
struct rgb_models {
  rgb_models() : used(128), byte(make_models<6>(256)) {}
  void reset()
  {
    used.reset();
    for (auto& m : byte) { m.reset(); }
  }
  symbol_model used;
  std::array<symbol_model, 6> byte;  // red lo/hi, green lo/hi, blue lo/hi
};

/// Decodes R, G, B predicted from `last`.
void decode_rgb(arithmetic_decoder& dec, rgb_models& m, std::uint16_t const* last,
                std::uint16_t* out)
{
  std::uint32_t const sym = dec.decode_symbol(m.used);
  std::uint8_t r_lo = low_byte(last[0]), r_hi = high_byte(last[0]);
  if (sym & 1) r_lo = add_u8(dec.decode_symbol(m.byte[0]), low_byte(last[0]));
  if (sym & 2) r_hi = add_u8(dec.decode_symbol(m.byte[1]), high_byte(last[0]));
  std::uint16_t const red = static_cast<std::uint16_t>(r_lo | (r_hi << 8));
  if (!(sym & 64)) {
    // Grey: green and blue equal red.
    out[0] = out[1] = out[2] = red;
    return;
  }
  // Green and blue are predicted to change like red did (blue: like red and green on average).
  // The decoding order (green lo, blue lo, green hi, blue hi) is the encoder's.
  std::uint8_t g_lo = low_byte(last[1]), g_hi = high_byte(last[1]);
  std::uint8_t b_lo = low_byte(last[2]), b_hi = high_byte(last[2]);
  std::int32_t diff = std::int32_t{r_lo} - low_byte(last[0]);
  if (sym & 4) g_lo = add_u8(dec.decode_symbol(m.byte[2]), clamp_u8(diff + low_byte(last[1])));
  if (sym & 16) {
    diff = (diff + g_lo - low_byte(last[1])) / 2;
    b_lo = add_u8(dec.decode_symbol(m.byte[4]), clamp_u8(diff + low_byte(last[2])));
  }
  diff = std::int32_t{r_hi} - high_byte(last[0]);
  if (sym & 8) g_hi = add_u8(dec.decode_symbol(m.byte[3]), clamp_u8(diff + high_byte(last[1])));
  if (sym & 32) {
    diff = (diff + g_hi - high_byte(last[1])) / 2;
    b_hi = add_u8(dec.decode_symbol(m.byte[5]), clamp_u8(diff + high_byte(last[2])));
  }
  out[0] = red;
  out[1] = static_cast<std::uint16_t>(g_lo | (g_hi << 8));
  out[2] = static_cast<std::uint16_t>(b_lo | (b_hi << 8));
}

struct nir_models {
  nir_models() : used(4), byte(make_models<2>(256)) {}
  void reset()
  {
    used.reset();
    for (auto& m : byte) { m.reset(); }
  }
  symbol_model used;
  std::array<symbol_model, 2> byte;
};

std::uint16_t decode_nir(arithmetic_decoder& dec, nir_models& m, std::uint16_t last)
{
  std::uint32_t const sym = dec.decode_symbol(m.used);
  std::uint8_t lo = low_byte(last), hi = high_byte(last);
  if (sym & 1) lo = add_u8(dec.decode_symbol(m.byte[0]), low_byte(last));
  if (sym & 2) hi = add_u8(dec.decode_symbol(m.byte[1]), high_byte(last));
  return static_cast<std::uint16_t>(lo | (hi << 8));
}

/// rgb14 (R, G, B: 6 bytes) and rgbnir14 (R, G, B, NIR: 8 bytes).
class rgb_decoder {
 public:
  /// layers: RGB, then NIR for rgbnir14. want_rgb/want_nir: selected by the caller.
  void decode(layer_bytes rgb_layer, layer_bytes const* nir_layer, bool want_rgb, bool want_nir,
              bool version3, std::uint8_t const* raw, std::uint8_t* records, std::size_t offset,
              std::size_t stride, std::size_t count, unsigned first_channel)
  {
    bool const has_nir = nir_layer != nullptr;
    std::size_t const item_size = has_nir ? 8 : 6;
    rgb_live_ = want_rgb && rgb_layer.size != 0;
    nir_live_ = has_nir && want_nir && nir_layer->size != 0;
    rgb_layer_ = rgb_layer;
    nir_layer_ = has_nir ? *nir_layer : layer_bytes{};
    if (rgb_live_) rgb_dec_.init(rgb_layer.data, rgb_layer.size);
    if (nir_live_) nir_dec_.init(nir_layer->data, nir_layer->size);

    // Unselected values read as zero; as with point14, zeroing the first point is enough.
    std::array<std::uint16_t, 4> first{};
    for (std::size_t c = 0; c < item_size / 2; ++c) { first[c] = load_u16(raw + 2 * c); }
    if (!want_rgb) first[0] = first[1] = first[2] = 0;
    if (!want_nir) first[3] = 0;

    auto const write = [&](std::uint8_t* record, std::array<std::uint16_t, 4> const& v) {
      for (std::size_t c = 0; c < item_size / 2; ++c) { store_u16(record + offset + 2 * c, v[c]); }
    };
    write(records, first);
    last_[first_channel] = first;

    auto const activate = [&](unsigned channel, unsigned from) {
      last_[channel] = last_[from];
      if (rgb_live_) rgb_models_[channel].reset();
      if (nir_live_) nir_models_[channel].reset();
    };
    auto const decode_point = [&](std::uint8_t* record, unsigned channel, unsigned slot) {
      std::array<std::uint16_t, 4>& last = last_[slot];
      if (rgb_live_) decode_rgb(rgb_dec_, rgb_models_[channel], last.data(), last.data());
      if (nir_live_) last[3] = decode_nir(nir_dec_, nir_models_[channel], last[3]);
      write(record, last);
    };
    walk_channels(records, stride, count, first_channel, version3, active_, activate, decode_point);
  }

  void check_overrun() const
  {
    if (rgb_live_ && rgb_dec_.overrun() > overrun_tolerance) {
      overrun_error("RGB", rgb_dec_.overrun(), rgb_layer_.size);
    }
    if (nir_live_ && nir_dec_.overrun() > overrun_tolerance) {
      overrun_error("NIR", nir_dec_.overrun(), nir_layer_.size);
    }
  }

 private:
  std::array<rgb_models, 4> rgb_models_;
  std::array<nir_models, 4> nir_models_;
  std::array<std::array<std::uint16_t, 4>, 4> last_{};
  std::array<bool, 4> active_{};
  arithmetic_decoder rgb_dec_, nir_dec_;
  layer_bytes rgb_layer_, nir_layer_;
  bool rgb_live_ = false, nir_live_ = false;
};

/// byte14: extra bytes, each byte its own layer, coded as a difference to the previous value.
class byte_decoder {
 public:
  void decode(layer_bytes const* layers, std::size_t bytes, bool want, bool version3,
              std::uint8_t const* raw, std::uint8_t* records, std::size_t offset,
              std::size_t stride, std::size_t count, unsigned first_channel)
  {
    if (bytes_ != bytes) {
      bytes_ = bytes;
      for (auto& models : models_) { models.clear(); }
      for (auto& last : last_) { last.assign(bytes, 0); }
      dec_.assign(bytes, arithmetic_decoder{});
    }
    layers_.assign(layers, layers + bytes);
    live_.clear();
    live_any_ = false;
    for (std::size_t b = 0; b < bytes; ++b) {
      bool const live = want && layers[b].size != 0;
      live_.push_back(live ? 1 : 0);
      live_any_ = live_any_ || live;
      if (live) dec_[b].init(layers[b].data, layers[b].size);
    }

    std::vector<std::uint8_t>& first = last_[first_channel];
    if (want) {
      std::memcpy(first.data(), raw, bytes);
    } else {
      std::fill(first.begin(), first.end(), std::uint8_t{0});
    }
    std::memcpy(records + offset, first.data(), bytes);
    if (!live_any_) {
      // Nothing changes in this chunk: every point repeats the first one.
      for (std::size_t i = 1; i < count; ++i) {
        std::memcpy(records + i * stride + offset, first.data(), bytes);
      }
      return;
    }

    auto const activate = [&](unsigned channel, unsigned from) {
      if (channel != from) last_[channel] = last_[from];
      std::vector<symbol_model>& models = models_[channel];
      if (models.empty()) {
        models.reserve(bytes);
        for (std::size_t b = 0; b < bytes; ++b) { models.emplace_back(256); }
      } else {
        for (auto& m : models) { m.reset(); }
      }
    };
    auto const decode_point = [&](std::uint8_t* record, unsigned channel, unsigned slot) {
      std::uint8_t* last = last_[slot].data();
      symbol_model* models = models_[channel].data();
      for (std::size_t b = 0; b < bytes_; ++b) {
        if (live_[b]) last[b] = add_u8(dec_[b].decode_symbol(models[b]), last[b]);
      }
      std::memcpy(record + offset, last, bytes_);
    };
    walk_channels(records, stride, count, first_channel, version3, active_, activate, decode_point);
  }

  void check_overrun() const
  {
    for (std::size_t b = 0; b < live_.size(); ++b) {
      if (live_[b] && dec_[b].overrun() > overrun_tolerance) {
        overrun_error(("extra byte " + std::to_string(b)).c_str(), dec_[b].overrun(),
                      layers_[b].size);
      }
    }
  }

 private:
  std::size_t bytes_ = 0;
  std::array<std::vector<symbol_model>, 4> models_;
  std::array<std::vector<std::uint8_t>, 4> last_;
  std::array<bool, 4> active_{};
  std::vector<arithmetic_decoder> dec_;
  std::vector<layer_bytes> layers_;
  std::vector<std::uint8_t> live_;  // per byte: decoded this chunk
  bool live_any_ = false;
};

/// wavepacket14 (29 bytes): descriptor index u8, byte offset u64, packet size u32, return
/// point location f32, x(t), y(t), z(t) f32. The floats are coded as their integer bits.
constexpr std::size_t wavepacket_size = 29;

struct wavepacket_channel {
  wavepacket_channel()
    : descriptor(256),
      offset_kind(make_models<4>(4)),
      offset_step(32),
      packet_size(32),
      return_point(32),
      xyz(32, 3)
  {
  }
  void reset()
  {
    descriptor.reset();
    for (auto& m : offset_kind) { m.reset(); }
    offset_step.init();
    packet_size.init();
    return_point.init();
    xyz.init();
    last_offset_step = 0;
    last_offset_kind = 0;
  }
  symbol_model descriptor;
  /// How the offset follows from the previous packet (by the previous answer): 0 same offset,
  /// 1 right after the previous packet, 2 a coded 32-bit step, 3 a raw 64-bit offset.
  std::array<symbol_model, 4> offset_kind;
  integer_decompressor offset_step, packet_size, return_point, xyz;
  std::int32_t last_offset_step = 0;
  std::uint32_t last_offset_kind = 0;
};

class wavepacket_decoder {
 public:
  void decode(layer_bytes layer, bool want, bool version3, std::uint8_t const* raw,
              std::uint8_t* records, std::size_t offset, std::size_t stride, std::size_t count,
              unsigned first_channel)
  {
    layer_ = layer;
    live_ = want && layer.size != 0;
    std::array<std::uint8_t, wavepacket_size> first{};
    if (want) std::memcpy(first.data(), raw, wavepacket_size);
    std::memcpy(records + offset, first.data(), wavepacket_size);
    if (!live_) {
      for (std::size_t i = 1; i < count; ++i) {
        std::memcpy(records + i * stride + offset, first.data(), wavepacket_size);
      }
      return;
    }
    dec_.init(layer.data, layer.size);
    last_[first_channel] = first;

    auto const activate = [&](unsigned channel, unsigned from) {
      last_[channel] = last_[from];
      if (!channels_[channel]) channels_[channel] = std::make_unique<wavepacket_channel>();
      channels_[channel]->reset();
    };
    auto const decode_point = [&](std::uint8_t* record, unsigned channel, unsigned slot) {
      wavepacket_channel& ch = *channels_[channel];
      std::uint8_t* last = last_[slot].data();
      std::uint8_t next[wavepacket_size];
      next[0] = static_cast<std::uint8_t>(dec_.decode_symbol(ch.descriptor));

      std::uint64_t const last_offset = load_u64(last + 1);
      std::uint32_t const last_size = load_u32(last + 9);
      ch.last_offset_kind = dec_.decode_symbol(ch.offset_kind[ch.last_offset_kind & 3]) & 3;
      std::uint64_t packet_offset;
      switch (ch.last_offset_kind) {
        case 0: packet_offset = last_offset; break;
        case 1: packet_offset = last_offset + last_size; break;
        case 2:
          ch.last_offset_step = ch.offset_step.decompress(dec_, ch.last_offset_step);
          packet_offset = last_offset + static_cast<std::uint64_t>(std::int64_t{ch.last_offset_step});
          break;
        default: packet_offset = dec_.read_int64(); break;
      }
      store_u64(next + 1, packet_offset);
      auto const predict = [&](integer_decompressor& ic, std::size_t at, std::uint32_t context) {
        std::int32_t const prev = static_cast<std::int32_t>(load_u32(last + at));
        store_u32(next + at, static_cast<std::uint32_t>(ic.decompress(dec_, prev, context)));
      };
      predict(ch.packet_size, 9, 0);
      predict(ch.return_point, 13, 0);
      predict(ch.xyz, 17, 0);
      predict(ch.xyz, 21, 1);
      predict(ch.xyz, 25, 2);

      std::memcpy(last, next, wavepacket_size);
      std::memcpy(record + offset, next, wavepacket_size);
    };
    walk_channels(records, stride, count, first_channel, version3, active_, activate, decode_point);
  }

  void check_overrun() const
  {
    if (live_ && dec_.overrun() > overrun_tolerance) {
      overrun_error("wave packet", dec_.overrun(), layer_.size);
    }
  }

 private:
  std::array<std::unique_ptr<wavepacket_channel>, 4> channels_;
  std::array<std::array<std::uint8_t, wavepacket_size>, 4> last_{};
  std::array<bool, 4> active_{};
  arithmetic_decoder dec_;
  layer_bytes layer_;
  bool live_ = false;
};

}  // namespace
}  // namespace heightgrid::io::laz
