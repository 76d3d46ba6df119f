#include "laz_layered.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// Layout of a layered chunk (all integers little-endian):
//   1. the first point, raw: vlr.record_length() bytes, every item exactly as in the LAS file;
//   2. u32: the number of points in the chunk, the raw first point included;
//   3. for each item in VLR order, the byte size (u32) of each of its layers:
//        point14: 9 layers: channel/returns/XY, Z, classification, flags, intensity,
//                 scan angle, user data, point source ID, GPS time;
//        rgb14: 1 (RGB); rgbnir14: 2 (RGB, NIR); byte14: one per extra byte;
//        wavepacket14: 1;
//   4. the layers' bytes, in the same order.
// Every non-empty layer is read by its own arithmetic decoder. An empty layer means that the
// attribute keeps the first point's value for the whole chunk.
//
// Each item keeps one set of models and one "previous value" per scanner channel (0-3): a
// point is predicted from the previous point of the same channel. The channel comes from the
// point14 channel/returns/XY layer, which is why that layer is always decoded. A channel's
// state is (re)initialised the first time the channel occurs in a chunk, from the previous
// value of the channel in use just before.

namespace heightgrid::io::laz {
namespace {

// ------------------------------------------------------------------------------------------
// Small helpers
// ------------------------------------------------------------------------------------------

/// Bytes a layer decoder may request past the end of its layer before the chunk is rejected.
/// Encoders pad every layer so that a valid stream reads none; the few bytes of slack keep
/// streams from encoders that pad less decodable, while a layer cut short by more than that
/// (a corrupt size, a truncated file) is reported instead of decoded into garbage.
constexpr std::size_t overrun_tolerance = 4;

/// How often (in points) the always-decoded XY layer is checked for running past its end, so
/// that a corrupt chunk claiming many points stops early instead of decoding zeros.
constexpr std::size_t overrun_check_interval = 1024;

std::uint16_t load_u16(std::uint8_t const* p)
{
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
std::uint32_t load_u32(std::uint8_t const* p)
{
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
         (std::uint32_t{p[3]} << 24);
}
std::uint64_t load_u64(std::uint8_t const* p)
{
  return std::uint64_t{load_u32(p)} | (std::uint64_t{load_u32(p + 4)} << 32);
}
void store_u16(std::uint8_t* p, std::uint16_t v)
{
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}
void store_u32(std::uint8_t* p, std::uint32_t v)
{
  for (int i = 0; i < 4; ++i) { p[i] = static_cast<std::uint8_t>(v >> (8 * i)); }
}
void store_u64(std::uint8_t* p, std::uint64_t v)
{
  store_u32(p, static_cast<std::uint32_t>(v));
  store_u32(p + 4, static_cast<std::uint32_t>(v >> 32));
}

/// Two's-complement addition without signed overflow (the format wraps around).
std::int32_t wrap_add(std::int32_t a, std::int32_t b)
{
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}
std::int32_t wrap_mul(std::int32_t a, std::int32_t b)
{
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
}

std::uint8_t low_byte(std::uint16_t v) { return static_cast<std::uint8_t>(v & 0xFF); }
std::uint8_t high_byte(std::uint16_t v) { return static_cast<std::uint8_t>(v >> 8); }
std::uint8_t clamp_u8(std::int32_t v)
{
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}
/// A byte corrector added modulo 256.
std::uint8_t add_u8(std::uint32_t corrector, std::uint32_t base)
{
  return static_cast<std::uint8_t>((corrector + base) & 0xFF);
}

template <std::size_t... I>
std::array<symbol_model, sizeof...(I)> model_array(std::uint32_t symbols,
                                                   std::index_sequence<I...>)
{
  return {{((void)I, symbol_model(symbols))...}};
}
/// N models of `symbols` symbols each (symbol_model has no default constructor).
template <std::size_t N>
std::array<symbol_model, N> make_models(std::uint32_t symbols)
{
  return model_array(symbols, std::make_index_sequence<N>{});
}

/// N symbol models picked by a context value. The format creates such a model only when its
/// context value first occurs after a channel was (re)initialised, so here a model is reset on
/// its first use after restart() (and allocated on its first use ever): resetting all N at every
/// chunk would cost more than decoding small chunks.
template <std::size_t N>
class context_models {
 public:
  explicit context_models(std::uint32_t symbols) : symbols_(symbols) {}
  void restart() { fresh_.reset(); }
  /// index < N (callers mask it).
  symbol_model& operator[](std::size_t index)
  {
    if (!fresh_[index]) {
      if (models_[index]) {
        models_[index]->reset();
      } else {
        models_[index].emplace(symbols_);
      }
      fresh_.set(index);
    }
    return *models_[index];
  }

 private:
  std::array<std::optional<symbol_model>, N> models_;
  std::bitset<N> fresh_;
  std::uint32_t symbols_;
};

/// Streaming approximation of the median of the last five values, the predictor of X and Y
/// steps. The five values are kept sorted; a new value alternately displaces the largest and
/// the smallest one (switching sides when it lands beyond the middle), which is what the
/// encoder does, so it must be reproduced exactly, ties included.
class median_of_five {
 public:
  void clear()
  {
    v_ = {};
    drop_largest_ = true;
  }
  std::int32_t get() const { return v_[2]; }
  void add(std::int32_t x)
  {
    if (drop_largest_) {
      // Insert after every value <= x; the largest value falls off the top.
      int i = 0;
      while (i < 4 && !(x < v_[i])) { ++i; }
      for (int j = 4; j > i; --j) { v_[j] = v_[j - 1]; }
      v_[i] = x;
      if (i > 2) drop_largest_ = false;
    } else {
      // Insert before every value >= x; the smallest value falls off the bottom.
      int i = 4;
      while (i > 0 && !(v_[i] < x)) { --i; }
      for (int j = 0; j < i; ++j) { v_[j] = v_[j + 1]; }
      v_[i] = x;
      if (i < 2) drop_largest_ = true;
    }
  }

 private:
  std::array<std::int32_t, 5> v_{};
  bool drop_largest_ = true;
};

/// Which of six X/Y step predictors a point uses, by [number of returns][return number]:
/// single returns, first/last of few returns and the middle of many returns move differently.
// clang-format off
constexpr std::uint8_t xy_predictor_of_return[16][16] = {
  {0, 1, 2, 3, 4, 5, 3, 4, 4, 5, 5, 5, 5, 5, 5, 5},
  {1, 0, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
  {2, 1, 2, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3},
  {3, 3, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
  {4, 3, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
  {5, 3, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
  {3, 3, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4},
  {4, 3, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4},
  {4, 3, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4},
  {5, 3, 4, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4},
  {5, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4},
  {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 4, 4, 4},
  {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 4, 4},
  {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 4},
  {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5},
  {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5},
};
// clang-format on

/// Which of eight previous Z values predicts a point's Z: how far its return number is from
/// the last return, capped at 7 (returns at the same depth in the pulse have similar heights).
unsigned z_predictor_of_return(unsigned number_of_returns, unsigned return_number)
{
  unsigned const d = number_of_returns > return_number ? number_of_returns - return_number
                                                       : return_number - number_of_returns;
  return d < 7 ? d : 7;
}

/// A layer's bytes inside the chunk.
struct layer_bytes {
  std::uint8_t const* data = nullptr;
  std::uint32_t size = 0;
};

std::string describe(item_type type, std::uint16_t version)
{
  return item_type_name(type) + " v" + std::to_string(version);
}

[[noreturn]] void overrun_error(char const* layer, std::size_t overrun, std::uint32_t size)
{
  throw decode_error("LAZ layered chunk: the " + std::string(layer) + " layer decoder ran " +
                     std::to_string(overrun) + " bytes past the end of its " +
                     std::to_string(size) + "-byte layer (corrupt or truncated chunk)");
}

unsigned channel_of_record(std::uint8_t const* record) { return (record[15] >> 4) & 3u; }

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
  r[o::returns] = static_cast<std::uint8_t>(p.return_number | (p.number_of_returns << 4));
  r[o::flags] = static_cast<std::uint8_t>((p.flags & 0x0F) | (p.channel << 4) | ((p.flags & 0x30) << 2));
  r[o::classification] = p.classification;
  r[o::user_data] = p.user_data;
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
constexpr unsigned changed_channel = 1u << 6;
constexpr unsigned changed_point_source = 1u << 5;
constexpr unsigned changed_gps_time = 1u << 4;
constexpr unsigned changed_scan_angle = 1u << 3;
constexpr unsigned changed_number_of_returns = 1u << 2;
constexpr unsigned changed_return_number_mask = 3u;  // 0 same, 1 +1, 2 -1, 3 coded

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
    : changed(make_models<8>(128)),
      channel_step(3),
      number_of_returns(16),
      return_number(16),
      return_step(13),
      dx(32, 2),
      dy(32, 22),
      z(32, 20),
      classification(256),
      flags(64),
      user_data(256),
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

  // channel/returns/XY layer. "changed" is picked by the previous point: first return (1),
  // last return (2), GPS time changed (4).
  std::array<symbol_model, 8> changed;
  symbol_model channel_step;                // new channel = old + 1 + symbol (mod 4)
  context_models<16> number_of_returns;     // by the previous number of returns
  context_models<16> return_number;         // by the previous return number (GPS time changed)
  symbol_model return_step;                 // return number + 2 + symbol (GPS time same)
  integer_decompressor dx, dy;
  std::array<median_of_five, 12> dx_median, dy_median;  // by predictor << 1 | GPS changed

  integer_decompressor z;
  std::array<std::int32_t, 8> last_z{};  // by z_predictor_of_return

  context_models<64> classification;  // by (previous class & 31) << 1 | single return
  context_models<64> flags;           // by the previous flags symbol
  context_models<64> user_data;       // by the previous user data / 4

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

      unsigned changed;
      {
        point14_fields const& prev = ch->last;
        unsigned const ctx = (prev.return_number == 1 ? 1u : 0u) |
                             (prev.return_number >= prev.number_of_returns ? 2u : 0u) |
                             (ch->last_gps_changed ? 4u : 0u);
        changed = xy.decode_symbol(ch->changed[ctx]);
      }
      if (changed & changed_channel) {
        unsigned const step = xy.decode_symbol(ch->channel_step);
        unsigned const next = (current_ + step + 1) & 3u;
        if (!active_[next]) activate(next, ch->last);
        current_ = next;
        ch = channels_[next].get();
        ch->last.channel = static_cast<std::uint8_t>(next);
      }
      point14_fields& p = ch->last;
      unsigned const gps_changed = (changed & changed_gps_time) ? 1u : 0u;

      unsigned n = p.number_of_returns;
      if (changed & changed_number_of_returns) {
        n = xy.decode_symbol(ch->number_of_returns[n & 15]) & 15;
        p.number_of_returns = static_cast<std::uint8_t>(n);
      }
      unsigned r = p.return_number;
      switch (changed & changed_return_number_mask) {
        case 0: break;
        case 1: r = (r + 1) & 15; break;
        case 2: r = (r + 15) & 15; break;
        default:
          if (gps_changed) {
            r = xy.decode_symbol(ch->return_number[r & 15]) & 15;
          } else {
            r = (r + xy.decode_symbol(ch->return_step) + 2) & 15;
          }
          break;
      }
      p.return_number = static_cast<std::uint8_t>(r);

      unsigned const single = n == 1 ? 1u : 0u;
      // first return (1) | last return (2)
      unsigned const first_last = (r == 1 ? 1u : 0u) | (r >= n ? 2u : 0u);
      unsigned const m = (unsigned{xy_predictor_of_return[n][r]} << 1) | gps_changed;

      std::int32_t const step_x = ch->dx.decompress(xy, ch->dx_median[m].get(), single);
      p.x = wrap_add(p.x, step_x);
      ch->dx_median[m].add(step_x);
      unsigned const kx = ch->dx.k();
      std::int32_t const step_y =
          ch->dy.decompress(xy, ch->dy_median[m].get(), single + (kx < 20 ? (kx & ~1u) : 20));
      p.y = wrap_add(p.y, step_y);
      ch->dy_median[m].add(step_y);

      if (live_z) {
        unsigned const k = (ch->dx.k() + ch->dy.k()) / 2;
        unsigned const level = z_predictor_of_return(n, r);
        p.z = ch->z.decompress(dec_[layer_z], ch->last_z[level], single + (k < 18 ? (k & ~1u) : 18));
        ch->last_z[level] = p.z;
      }
      if (live_classification) {
        unsigned const ctx = ((p.classification & 0x1Fu) << 1) | (first_last == 3 ? 1u : 0u);
        p.classification = static_cast<std::uint8_t>(
            dec_[layer_classification].decode_symbol(ch->classification[ctx]));
      }
      if (live_flags) {
        p.flags = static_cast<std::uint8_t>(dec_[layer_flags].decode_symbol(ch->flags[p.flags & 63]) & 63);
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

    for (auto& m : ch.changed) { m.reset(); }
    ch.channel_step.reset();
    ch.number_of_returns.restart();
    ch.return_number.restart();
    ch.return_step.reset();
    ch.dx.init();
    ch.dy.init();
    for (auto& m : ch.dx_median) { m.clear(); }
    for (auto& m : ch.dy_median) { m.clear(); }

    if (live_[layer_z]) {
      ch.z.init();
      ch.last_z.fill(from.z);
    }
    if (live_[layer_classification]) ch.classification.restart();
    if (live_[layer_flags]) ch.flags.restart();
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

// ------------------------------------------------------------------------------------------
// The chunk
// ------------------------------------------------------------------------------------------

/// One item of the record, where its bytes and layer sizes are.
struct item_plan {
  item_type type;
  bool version3;
  std::size_t offset;       // in the record
  std::size_t size;         // bytes in the record
  std::size_t first_layer;  // index into the chunk's layer list
  std::size_t layers;
};

std::size_t layers_of(laz_item const& item)
{
  switch (item.type) {
    case item_type::point14: return point14_layer_count;
    case item_type::rgb14: return 1;
    case item_type::rgbnir14: return 2;
    case item_type::byte14: return item.size;
    case item_type::wavepacket14: return 1;
    default: return 0;
  }
}

/// Holds every model between chunks (one per thread) so that a chunk resets models instead of
/// allocating them.
class layered_chunk_decoder {
 public:
  std::size_t decode(laz_vlr_info const& vlr, std::uint8_t const* data, std::size_t size,
                     std::size_t expected_points, std::size_t max_points, std::uint8_t* records,
                     field_selection const& fields, std::size_t* consumed)
  {
    plan_items(vlr);
    std::size_t const stride = record_length_;

    // Header: raw first point, point count, layer sizes.
    std::size_t const header = stride + 4 + 4 * layer_count_;
    if (size < header) {
      throw decode_error("LAZ layered chunk: " + std::to_string(size) +
                         " bytes cannot hold the first point, point count and " +
                         std::to_string(layer_count_) + " layer sizes (" +
                         std::to_string(header) + " bytes)");
    }
    std::uint8_t const* raw = data;
    std::uint32_t const points = load_u32(data + stride);
    if (points == 0) {
      throw decode_error("LAZ layered chunk: point count is 0 but the chunk starts with a point");
    }
    if (points > max_points) {
      throw decode_error("LAZ layered chunk: holds " + std::to_string(points) +
                         " points, more than the " + std::to_string(max_points) +
                         " the chunk table allows");
    }
    if (expected_points != 0 && points != expected_points) {
      throw decode_error("LAZ layered chunk: holds " + std::to_string(points) +
                         " points but the chunk table says " + std::to_string(expected_points));
    }
    layers_.resize(layer_count_);
    std::uint64_t position = header;
    for (std::size_t l = 0; l < layer_count_; ++l) {
      std::uint32_t const bytes = load_u32(data + stride + 4 + 4 * l);
      if (bytes > size - position) {
        throw decode_error("LAZ layered chunk: layer " + std::to_string(l) + " of " +
                           std::to_string(bytes) + " bytes at offset " + std::to_string(position) +
                           " runs past the end of the " + std::to_string(size) + "-byte chunk");
      }
      layers_[l] = {data + position, bytes};
      position += bytes;
    }

    // point14 first: it writes the scanner channel that the other items follow.
    item_plan const& base = items_.front();
    std::array<layer_bytes, point14_layer_count> point_layers;
    for (unsigned l = 0; l < point14_layer_count; ++l) { point_layers[l] = layers_[base.first_layer + l]; }
    point_.start(point_layers, raw, fields, records, points);
    point_.decode(records, stride, points);
    point_.check_overrun();
    unsigned const first_channel = channel_of_record(records);

    for (std::size_t k = 1; k < items_.size(); ++k) {
      item_plan const& it = items_[k];
      layer_bytes const* layers = layers_.data() + it.first_layer;
      std::uint8_t const* item_raw = raw + it.offset;
      switch (it.type) {
        case item_type::rgb14:
          rgb_.decode(layers[0], nullptr, fields.rgb, false, it.version3, item_raw, records,
                      it.offset, stride, points, first_channel);
          rgb_.check_overrun();
          break;
        case item_type::rgbnir14:
          rgb_.decode(layers[0], &layers[1], fields.rgb, fields.nir, it.version3, item_raw,
                      records, it.offset, stride, points, first_channel);
          rgb_.check_overrun();
          break;
        case item_type::byte14:
          bytes_.decode(layers, it.size, fields.extra_bytes, it.version3, item_raw, records,
                        it.offset, stride, points, first_channel);
          bytes_.check_overrun();
          break;
        case item_type::wavepacket14:
          wave_.decode(layers[0], fields.wavepacket, it.version3, item_raw, records, it.offset,
                       stride, points, first_channel);
          wave_.check_overrun();
          break;
        default: break;  // plan_items() admits nothing else
      }
    }

    if (consumed) *consumed = static_cast<std::size_t>(position);
    return points;
  }

 private:
  /// Checks the item list and lays the items out in the record.
  void plan_items(laz_vlr_info const& vlr)
  {
    if (vlr.items.empty() || vlr.items.front().type != item_type::point14) {
      throw decode_error("LAZ layered chunk: the first item must be point14, the items are " +
                         (vlr.items.empty() ? std::string("none") : describe_items(vlr)));
    }
    items_.clear();
    std::size_t offset = 0;
    std::size_t layers = 0;
    bool seen_rgb = false, seen_bytes = false, seen_wave = false;
    for (std::size_t k = 0; k < vlr.items.size(); ++k) {
      laz_item const& item = vlr.items[k];
      std::size_t expected_size = 0;
      bool* seen = nullptr;
      switch (item.type) {
        case item_type::point14: expected_size = point14_size; break;
        case item_type::rgb14: expected_size = 6; seen = &seen_rgb; break;
        case item_type::rgbnir14: expected_size = 8; seen = &seen_rgb; break;
        case item_type::wavepacket14: expected_size = wavepacket_size; seen = &seen_wave; break;
        case item_type::byte14: expected_size = item.size; seen = &seen_bytes; break;
        default:
          throw decode_error("LAZ layered chunk: item " + describe(item.type, item.version) +
                             " cannot be part of a layered (compressor 3) record");
      }
      if (item.version != 3 && item.version != 4) {
        throw decode_error("LAZ layered chunk: item " + describe(item.type, item.version) +
                           " is not supported (versions 3 and 4 are)");
      }
      if (item.size != expected_size || item.size == 0) {
        throw decode_error("LAZ layered chunk: item " + describe(item.type, item.version) +
                           " has " + std::to_string(item.size) + " bytes, expected " +
                           std::to_string(expected_size));
      }
      if ((k == 0) != (item.type == item_type::point14) || (seen && *seen)) {
        throw decode_error("LAZ layered chunk: item " + describe(item.type, item.version) +
                           " is out of place in " + describe_items(vlr));
      }
      if (seen) *seen = true;
      items_.push_back({item.type, item.version == 3, offset, item.size, layers, layers_of(item)});
      offset += item.size;
      layers += layers_of(item);
    }
    record_length_ = offset;
    layer_count_ = layers;
  }

  std::vector<item_plan> items_;
  std::size_t record_length_ = 0;
  std::size_t layer_count_ = 0;
  std::vector<layer_bytes> layers_;
  point14_decoder point_;
  rgb_decoder rgb_;
  byte_decoder bytes_;
  wavepacket_decoder wave_;
};

}  // namespace

std::size_t decode_layered_chunk(laz_vlr_info const& vlr, std::uint8_t const* data,
                                 std::size_t size, std::size_t expected_points,
                                 std::size_t max_points, std::uint8_t* records,
                                 field_selection const& fields, std::size_t* consumed)
{
  // One decoder per thread keeps the models' memory from chunk to chunk; every chunk resets
  // what it uses, so nothing carries over between chunks or files.
  thread_local layered_chunk_decoder decoder;
  return decoder.decode(vlr, data, size, expected_points, max_points, records, fields, consumed);
}

}  // namespace heightgrid::io::laz
