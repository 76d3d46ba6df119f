#pragma once
// The layered decoder of point14, the LAS 1.4 base record: its nine layers and their models.
// Part of laz_layered.cpp's translation unit, included by it alone: the decoders keep internal
// linkage (an anonymous namespace), so the compiler sees and inlines the layered decoder as one file.

#include "laz_layered_support.hpp"

#include "heightgrid/core/laz/point14_items.hpp"

namespace heightgrid::io::laz {
namespace {

// ------------------------------------------------------------------------------------------
// point14: the LAS 1.4 base record (30 bytes)
// ------------------------------------------------------------------------------------------

namespace point14_offset {
constexpr std::size_t x = 0, y = 4, z = 8, intensity = 12, returns = 14, flags = 15,
                      classification = 16, user_data = 17, scan_angle = 18, point_source = 20,
                      gps_time = 22;
}  // namespace point14_offset
constexpr std::size_t point14_size = 30;

/// The fields of a point14 record as the models see them.
struct point14_fields {
  std::int32_t x = 0, y = 0, z = 0;
  std::uint16_t intensity = 0;
  std::uint8_t return_number = 0, number_of_returns = 0;
  /// The flags layer's 6-bit symbol: edge of flight line << 5 | scan direction << 4 |
  /// classification flags (synthetic, key-point, withheld, overlap).
  std::uint8_t flags = 0;
  std::uint8_t channel = 0;
  std::uint8_t classification = 0, user_data = 0;
  std::uint16_t scan_angle = 0;  ///< int16 bits
  std::uint16_t point_source = 0;
  std::uint64_t gps_time = 0;  ///< float64 bits
};

point14_fields unpack_point14(std::uint8_t const* r)
{
  namespace o = point14_offset;
  point14_fields p;
  p.x = static_cast<std::int32_t>(load_u32(r + o::x));
  p.y = static_cast<std::int32_t>(load_u32(r + o::y));
  p.z = static_cast<std::int32_t>(load_u32(r + o::z));
  p.intensity = load_u16(r + o::intensity);
  p.return_number = r[o::returns] & 0x0F;
  p.number_of_returns = r[o::returns] >> 4;
  p.flags = static_cast<std::uint8_t>((r[o::flags] & 0x0F) | ((r[o::flags] >> 2) & 0x30));
  p.channel = (r[o::flags] >> 4) & 3;
  p.classification = r[o::classification];
  p.user_data = r[o::user_data];
  p.scan_angle = load_u16(r + o::scan_angle);
  p.point_source = load_u16(r + o::point_source);
  p.gps_time = load_u64(r + o::gps_time);
  return p;
}

void pack_point14(point14_fields const& p, std::uint8_t* r)
{
  namespace o = point14_offset;
  store_u32(r + o::x, static_cast<std::uint32_t>(p.x));
  store_u32(r + o::y, static_cast<std::uint32_t>(p.y));
  store_u32(r + o::z, static_cast<std::uint32_t>(p.z));
  store_u16(r + o::intensity, p.intensity);
  // Returns, flags, classification and user data: four adjacent bytes, one store.
  static_assert(o::flags == o::returns + 1 && o::classification == o::returns + 2 &&
                o::user_data == o::returns + 3);
  unsigned const returns = p.return_number | (p.number_of_returns << 4);
  unsigned const flags = (p.flags & 0x0Fu) | (unsigned{p.channel} << 4) | ((p.flags & 0x30u) << 2);
  store_u32(r + o::returns, static_cast<std::uint32_t>((returns & 0xFFu) | ((flags & 0xFFu) << 8) |
                                                       (unsigned{p.classification} << 16) |
                                                       (unsigned{p.user_data} << 24)));
  store_u16(r + o::scan_angle, p.scan_angle);
  store_u16(r + o::point_source, p.point_source);
  store_u64(r + o::gps_time, p.gps_time);
}

enum point14_layer : unsigned {
  layer_xy,  // scanner channel, returns, X, Y: always decoded
  layer_z,
  layer_classification,
  layer_flags,
  layer_intensity,
  layer_scan_angle,
  layer_user_data,
  layer_point_source,
  layer_gps_time,
  point14_layer_count
};

constexpr char const* point14_layer_names[point14_layer_count] = {
    "point14 channel/returns/XY", "point14 Z", "point14 classification", "point14 flags",
    "point14 intensity", "point14 scan angle", "point14 user data", "point14 point source ID",
    "point14 GPS time"};

// Bits of the per-point "what changed" symbol of the XY layer.
using codec::changed_channel;
using codec::changed_gps_time;
using codec::changed_point_source;
using codec::changed_scan_angle;

// The GPS time model: a time is coded as a multiple of the previous time step (or a small
// negative multiple, or a full 64-bit value), with up to four time sequences kept so that
// interleaved flight lines do not destroy the prediction.
constexpr std::int32_t gps_multi_max = 500;
constexpr std::int32_t gps_multi_min = -10;
constexpr std::uint32_t gps_code_full = gps_multi_max - gps_multi_min + 1;        // 511
constexpr std::uint32_t gps_code_symbols = gps_multi_max - gps_multi_min + 5;     // 515
/// A valid stream switches GPS time sequence at most once per point; more hops mean garbage.
constexpr int gps_max_sequence_hops = 4;

/// Models and prediction state of one scanner channel for point14.
struct point14_channel {
  point14_channel()
    : user_data(256),
      intensity(16, 4),
      scan_angle(16, 2),
      point_source(16, 1),
      gps_multi(gps_code_symbols),
      gps_zero_step(5),
      gps(32, 9)
  {
  }

  point14_fields last;
  bool last_gps_changed = false;

  // The channel/returns/XY, Z, classification and flags layers' models (core/laz/
  // point14_items.hpp, the GPU decoder's too), fresh under models.stamp() from the channel's start.
  item_models<codec::point14_models> models;
  std::array<codec::median5, 12> dx_median, dy_median;  // by predictor << 1 | GPS changed
  std::array<std::int32_t, 8> last_z{};                 // by the level |n - r|

  context_models<64> user_data;  // by the previous user data / 4

  integer_decompressor intensity;
  std::array<std::uint16_t, 8> last_intensity{};  // by first/last return << 1 | GPS changed
  integer_decompressor scan_angle;
  integer_decompressor point_source;

  symbol_model gps_multi;      // after a non-zero step
  symbol_model gps_zero_step;  // after a zero step
  integer_decompressor gps;
  std::array<std::uint64_t, 4> gps_sequence{};  // float64 bits of each sequence's last time
  std::array<std::int32_t, 4> gps_step{};       // each sequence's last integer step
  std::array<std::int32_t, 4> gps_outliers{};   // consecutive steps far from the prediction
  unsigned gps_current = 0, gps_newest = 0;
};

/// Decodes the point14 item of a chunk: always its channel/returns/XY layer, the other layers
/// when selected.
class point14_decoder {
 public:
  /// Sets up the layers of a new chunk and writes the first record from the raw one.
  void start(std::array<layer_bytes, point14_layer_count> const& layers, std::uint8_t const* raw,
             field_selection const& fields, std::uint8_t* record, std::size_t points)
  {
    bool const wanted[point14_layer_count] = {true,
                                              fields.z,
                                              fields.classification,
                                              fields.flags,
                                              fields.intensity,
                                              fields.scan_angle,
                                              fields.user_data,
                                              fields.point_source,
                                              fields.gps_time};
    if (points > 1 && layers[layer_xy].size == 0) {
      throw decode_error("LAZ layered chunk: the point14 channel/returns/XY layer is empty but "
                         "the chunk holds " + std::to_string(points) + " points");
    }
    for (unsigned l = 0; l < point14_layer_count; ++l) {
      layers_[l] = layers[l];
      live_[l] = wanted[l] && layers[l].size != 0;
      if (live_[l]) dec_[l].init(layers[l].data, layers[l].size);
    }

    // Fields that are not selected read as zero. Zeroing them in the first point is enough:
    // their layers are never decoded, so every later point inherits the zero.
    point14_fields first = unpack_point14(raw);
    if (!fields.z) first.z = 0;
    if (!fields.classification) first.classification = 0;
    if (!fields.flags) first.flags = 0;
    if (!fields.intensity) first.intensity = 0;
    if (!fields.scan_angle) first.scan_angle = 0;
    if (!fields.user_data) first.user_data = 0;
    if (!fields.point_source) first.point_source = 0;
    if (!fields.gps_time) first.gps_time = 0;
    pack_point14(first, record);

    active_.fill(false);
    current_ = first.channel;
    activate(current_, first);
  }

  /// Decodes points 1..count-1 into records (record 0 was written by start()).
  void decode(std::uint8_t* records, std::size_t stride, std::size_t count)
  {
    arithmetic_decoder& xy = dec_[layer_xy];
    bool const live_z = live_[layer_z];
    bool const live_classification = live_[layer_classification];
    bool const live_flags = live_[layer_flags];
    bool const live_intensity = live_[layer_intensity];
    bool const live_scan_angle = live_[layer_scan_angle];
    bool const live_user_data = live_[layer_user_data];
    bool const live_point_source = live_[layer_point_source];
    bool const live_gps_time = live_[layer_gps_time];

    point14_channel* ch = channels_[current_].get();
    for (std::size_t i = 1; i < count; ++i) {
      if (i % overrun_check_interval == 0 && xy.overrun() > overrun_tolerance) {
        overrun_error(point14_layer_names[layer_xy], xy.overrun(), layers_[layer_xy].size);
      }

      unsigned const changed = xy.state().decode_symbol(codec::use(
          ch->models.get().changed[codec::point14_changed_context(ch->last.return_number, ch->last.number_of_returns,
                                                                  ch->last_gps_changed)],
          ch->models.stamp()));
      if (changed & changed_channel) {
        unsigned const step = xy.state().decode_symbol(codec::use(ch->models.get().channel_step, ch->models.stamp()));
        unsigned const next = (current_ + step + 1) & 3u;
        if (!active_[next]) activate(next, ch->last);
        current_ = next;
        ch = channels_[next].get();
        ch->last.channel = static_cast<std::uint8_t>(next);
      }
      point14_fields& p = ch->last;
      codec::point14_models& md = ch->models.get();
      std::uint32_t const stamp = ch->models.stamp();
      unsigned const gps_changed = (changed & changed_gps_time) ? 1u : 0u;

      unsigned n = p.number_of_returns;
      unsigned r = p.return_number;
      codec::decode_point14_returns(xy.state(), md, stamp, changed, n, r);
      p.number_of_returns = static_cast<std::uint8_t>(n);
      p.return_number = static_cast<std::uint8_t>(r);
      // first return (1) | last return (2)
      unsigned const first_last = (r == 1 ? 1u : 0u) | (r >= n ? 2u : 0u);

      unsigned k = 0;
      codec::decode_point14_xy(xy.state(), md, stamp, laz_xy_predictor, ch->dx_median.data(), ch->dy_median.data(),
                               changed, n, r, p.x, p.y, k);
      if (live_z) { p.z = codec::decode_point14_z(dec_[layer_z].state(), md, stamp, ch->last_z.data(), n, r, k); }
      if (live_classification) {
        p.classification = static_cast<std::uint8_t>(
            codec::decode_point14_classification(dec_[layer_classification].state(), md, stamp, p.classification, n, r));
      }
      if (live_flags) {
        p.flags = static_cast<std::uint8_t>(codec::decode_point14_flags(dec_[layer_flags].state(), md, stamp, p.flags));
      }
      if (live_intensity) {
        unsigned const ctx = (first_last << 1) | gps_changed;
        p.intensity = static_cast<std::uint16_t>(
            ch->intensity.decompress(dec_[layer_intensity], ch->last_intensity[ctx], first_last));
        ch->last_intensity[ctx] = p.intensity;
      }
      if (live_scan_angle && (changed & changed_scan_angle)) {
        p.scan_angle = static_cast<std::uint16_t>(ch->scan_angle.decompress(
            dec_[layer_scan_angle], static_cast<std::int16_t>(p.scan_angle), gps_changed));
      }
      if (live_user_data) {
        p.user_data = static_cast<std::uint8_t>(
            dec_[layer_user_data].decode_symbol(ch->user_data[p.user_data >> 2]));
      }
      if (live_point_source && (changed & changed_point_source)) {
        p.point_source = static_cast<std::uint16_t>(
            ch->point_source.decompress(dec_[layer_point_source], p.point_source));
      }
      if (live_gps_time && gps_changed) {
        read_gps_time(*ch);
        p.gps_time = ch->gps_sequence[ch->gps_current];
      }

      pack_point14(p, records + i * stride);
      ch->last_gps_changed = gps_changed != 0;
    }
  }

  void check_overrun() const
  {
    for (unsigned l = 0; l < point14_layer_count; ++l) {
      if (live_[l] && dec_[l].overrun() > overrun_tolerance) {
        overrun_error(point14_layer_names[l], dec_[l].overrun(), layers_[l].size);
      }
    }
  }

 private:
  /// First use of `channel` in this chunk: fresh models, predictions from `from` (the previous
  /// value of the channel in use until now, or the raw first point).
  void activate(unsigned channel, point14_fields const from)
  {
    if (!channels_[channel]) channels_[channel] = std::make_unique<point14_channel>();
    point14_channel& ch = *channels_[channel];
    active_[channel] = true;

    ch.last = from;
    ch.last_gps_changed = false;

    ch.models.next_chunk();
    for (auto& m : ch.dx_median) { m.reset(); }
    for (auto& m : ch.dy_median) { m.reset(); }
    if (live_[layer_z]) { ch.last_z.fill(from.z); }
    if (live_[layer_user_data]) ch.user_data.restart();
    if (live_[layer_intensity]) {
      ch.intensity.init();
      ch.last_intensity.fill(from.intensity);
    }
    if (live_[layer_scan_angle]) ch.scan_angle.init();
    if (live_[layer_point_source]) ch.point_source.init();
    if (live_[layer_gps_time]) {
      ch.gps_multi.reset();
      ch.gps_zero_step.reset();
      ch.gps.init();
      ch.gps_sequence = {from.gps_time, 0, 0, 0};
      ch.gps_step.fill(0);
      ch.gps_outliers.fill(0);
      ch.gps_current = 0;
      ch.gps_newest = 0;
    }
  }

  /// Starts a new time sequence from a full 64-bit time: the high half predicted from the
  /// current sequence, the low half raw.
  void read_full_gps_time(point14_channel& ch)
  {
    arithmetic_decoder& dec = dec_[layer_gps_time];
    ch.gps_newest = (ch.gps_newest + 1) & 3;
    std::int32_t const high =
        ch.gps.decompress(dec, static_cast<std::int32_t>(ch.gps_sequence[ch.gps_current] >> 32), 8);
    std::uint32_t const low = dec.read_int();
    ch.gps_sequence[ch.gps_newest] =
        (std::uint64_t{static_cast<std::uint32_t>(high)} << 32) | low;
    ch.gps_current = ch.gps_newest;
    ch.gps_step[ch.gps_current] = 0;
    ch.gps_outliers[ch.gps_current] = 0;
  }

  /// A step far from the prediction; after more than three in a row it becomes the new step.
  static void note_outlier(point14_channel& ch, unsigned s, std::int32_t step)
  {
    if (++ch.gps_outliers[s] > 3) {
      ch.gps_step[s] = step;
      ch.gps_outliers[s] = 0;
    }
  }

  void read_gps_time(point14_channel& ch)
  {
    arithmetic_decoder& dec = dec_[layer_gps_time];
    for (int hop = 0; hop < gps_max_sequence_hops; ++hop) {
      unsigned const s = ch.gps_current;
      std::uint64_t& time = ch.gps_sequence[s];
      if (ch.gps_step[s] == 0) {
        // After a zero step: 0 = a new 32-bit step, 1 = a full time, 2..4 = other sequence.
        std::uint32_t const code = dec.decode_symbol(ch.gps_zero_step);
        if (code == 0) {
          std::int32_t const step = ch.gps.decompress(dec, 0, 0);
          ch.gps_step[s] = step;
          time += static_cast<std::uint64_t>(std::int64_t{step});
          ch.gps_outliers[s] = 0;
          return;
        }
        if (code == 1) {
          read_full_gps_time(ch);
          return;
        }
        ch.gps_current = (s + code - 1) & 3;
        continue;
      }
      // After a non-zero step: the code says which multiple of the last step predicts this one.
      std::uint32_t const code = dec.decode_symbol(ch.gps_multi);
      std::int32_t const last_step = ch.gps_step[s];
      if (code == 1) {
        time += static_cast<std::uint64_t>(std::int64_t{ch.gps.decompress(dec, last_step, 1)});
        ch.gps_outliers[s] = 0;
        return;
      }
      if (code < gps_code_full) {
        std::int32_t step;
        if (code == 0) {
          step = ch.gps.decompress(dec, 0, 7);
          note_outlier(ch, s, step);
        } else if (code < static_cast<std::uint32_t>(gps_multi_max)) {
          std::int32_t const multi = static_cast<std::int32_t>(code);
          step = ch.gps.decompress(dec, wrap_mul(multi, last_step), code < 10 ? 2 : 3);
        } else if (code == static_cast<std::uint32_t>(gps_multi_max)) {
          step = ch.gps.decompress(dec, wrap_mul(gps_multi_max, last_step), 4);
          note_outlier(ch, s, step);
        } else {
          std::int32_t const multi = gps_multi_max - static_cast<std::int32_t>(code);  // -1..-10
          if (multi > gps_multi_min) {
            step = ch.gps.decompress(dec, wrap_mul(multi, last_step), 5);
          } else {
            step = ch.gps.decompress(dec, wrap_mul(gps_multi_min, last_step), 6);
            note_outlier(ch, s, step);
          }
        }
        time += static_cast<std::uint64_t>(std::int64_t{step});
        return;
      }
      if (code == gps_code_full) {
        read_full_gps_time(ch);
        return;
      }
      ch.gps_current = (s + code - gps_code_full) & 3;
    }
    throw decode_error("LAZ layered chunk: the point14 GPS time layer switches time sequence " +
                       std::to_string(gps_max_sequence_hops) +
                       " times for one point (corrupt chunk)");
  }

  std::array<std::unique_ptr<point14_channel>, 4> channels_;
  std::array<bool, 4> active_{};
  unsigned current_ = 0;
  std::array<arithmetic_decoder, point14_layer_count> dec_;
  std::array<layer_bytes, point14_layer_count> layers_{};
  std::array<bool, point14_layer_count> live_{};
};

}  // namespace
}  // namespace heightgrid::io::laz
