#pragma once
// LAZ layered point14 chunks (LASzip compressor 3) on the device: a scanner channel's state, the
// chunk's header, and the layer decoders the kernel (laz_decode.cu) runs, one lane a layer or one
// lane for all. The coder and the field steps are core/laz's (coder.hpp, point14_items.hpp), which
// the CPU decoder (io/src/laz/laz_layered_point14.hpp) runs too, so the records are the same bytes.
// What differs is where the state lives: a chunk's models are in device memory (a slot of four
// scanner channels, ~1 MiB), its coder state in registers, a channel's hot state in registers and
// shared memory. Models are reset on first use after a channel starts (a stamp per model).
// Included by laz_decode.cu alone.

#include "heightgrid/core/laz/bytes.hpp"
#include "heightgrid/core/laz/coder.hpp"
#include "heightgrid/core/laz/point14_items.hpp"
#include "heightgrid/core/laz/tables.hpp"
#include "heightgrid/kernels/laz_gpu.hpp"

#include <cuda/atomic>

#include <cstddef>
#include <cstdint>

namespace heightgrid::detail::laz {

/// Bytes a layer decoder may read past its layer before the chunk is rejected (the CPU's rule).
inline constexpr std::uint32_t overrun_tolerance = 4;
inline constexpr std::uint32_t overrun_check_interval = 1024;

/// The layers' coder: counts loaded and stored, small models bisected. Four lanes of a warp issue
/// in turn here, so instructions, not latency, bound it, and the pointwise kernel's reduction and
/// wide search cost more than they save (docs/benchmarks-history.md, "LAZ on the device before one
/// codec for CPU and GPU").
using point14_decoder = basic_range_decoder<false, false>;

// ------------------------------------------------------------------------------------------
// point14: one scanner channel's state
// ------------------------------------------------------------------------------------------

struct point14_last {
  std::int32_t x, y, z;
  std::uint8_t return_number, number_of_returns, flags, channel, classification;
};

/// The roles of the lanes of a layer-per-lane block (laz_gpu_mapping::layer_per_lane).
enum point14_role : unsigned { role_xy, role_z, role_classification, role_flags, roles };

struct point14_channel {
  std::uint32_t role_stamp[roles];  // the stamp of each layer's models (the lane that decodes it)
  // The last Z, classification and flags of the channel, each kept by its lane.
  std::int32_t z_last;
  std::uint8_t classification_last, flags_last;
  bool last_gps_changed;
  point14_last last;
  median5 dx_median[12], dy_median[12];
  std::int32_t last_z[8];
  point14_models models;
};

/// Gives every model of `c` its storage in `arena` (c == nullptr: only counts); returns the
/// 16-bit words used. Host and device walk the models in the same order.
HG_LAZ_HD inline std::size_t lay_out_point14_channel(point14_channel* c, std::uint16_t* arena)
{
  std::size_t used = 0;
  point14_models::lay_out(c != nullptr ? &c->models : nullptr, arena, used);
  if (c != nullptr) {
    for (auto& r : c->role_stamp) { r = 0; }
  }
  return used;
}

/// Scanner channels a slot holds (point14 has four).
inline constexpr int channels_per_slot = 4;

// ------------------------------------------------------------------------------------------
// The chunk
// ------------------------------------------------------------------------------------------

/// core/laz/tables.hpp's table, in constant memory.
static __constant__ laz_xy_predictor_table const xy_predictor = laz_xy_predictor;

enum : unsigned { layer_xy, layer_z, layer_classification, layer_flags, point14_layers = 9 };

/// The first 18 bytes of `p`'s record (intensity and user data zero), in 16-bit stores: records
/// are 18 bytes apart, so 2-byte aligned.
__device__ __forceinline__ void store_point14_record(point14_last const& p, std::uint8_t* record)
{
  auto* const h = reinterpret_cast<std::uint16_t*>(record);
  auto const x = static_cast<std::uint32_t>(p.x);
  auto const y = static_cast<std::uint32_t>(p.y);
  auto const z = static_cast<std::uint32_t>(p.z);
  unsigned const returns = p.return_number | (p.number_of_returns << 4);
  unsigned const flags = (p.flags & 0x0Fu) | (unsigned{p.channel} << 4) | ((p.flags & 0x30u) << 2);
  h[0] = static_cast<std::uint16_t>(x);
  h[1] = static_cast<std::uint16_t>(x >> 16);
  h[2] = static_cast<std::uint16_t>(y);
  h[3] = static_cast<std::uint16_t>(y >> 16);
  h[4] = static_cast<std::uint16_t>(z);
  h[5] = static_cast<std::uint16_t>(z >> 16);
  h[6] = 0;  // intensity
  h[7] = static_cast<std::uint16_t>((returns & 0xFFu) | ((flags & 0xFFu) << 8));
  h[8] = p.classification;  // user data 0
}

struct point14_params {
  std::uint8_t const* compressed;
  laz_gpu_chunk const* chunks;
  std::size_t chunk_count;
  std::uint8_t* records;
  laz_gpu_status* status;
  point14_channel* channels;  // channels_per_slot a slot
  std::uint32_t* epochs;    // a slot's last stamp
  unsigned long long* next_chunk;
  std::uint32_t record_length;
  std::uint32_t layer_count;
  bool z, classification, flags;
};

// ------------------------------------------------------------------------------------------
// layer_per_lane: the layers of a chunk decoded side by side
// ------------------------------------------------------------------------------------------
//
// A block of one warp takes a chunk; lane 0 decodes the channel/returns/XY layer and lanes 1-3 the
// Z, classification and flags layers, each with its own coder and models (the other lanes idle).
// Lanes of one warp diverge here on purpose: independent thread scheduling (sm_70 on) interleaves
// their paths, and a lane may spin on another. The warp still issues one lane's instruction at a
// time (ncu: 1.0 active threads a warp), so the lanes fill each other's latency gaps rather than
// run at once. The XY lane runs ahead: it writes X, Y, the returns byte, the channel (in the flags
// byte) and the Z context k (in the Z slot) of each point into the record and publishes how many
// records hold them in shared memory; the others follow, read what they need from the record and
// write their own bytes (Z 8-11, flags 15, classification and user data 16-17). A chunk takes about
// as long as its XY layer, and the XY lane alone in a warp of its own (followers in a second warp)
// decodes a round of chunks no faster while fitting fewer at once. Its models sit in L1: the bound
// is the lanes' instructions, not memory; models copied into shared memory made it slower
// (docs/benchmarks-history.md, "The GPU LAZ decoder, 2026-11-26"). Each lane tracks
// the scanner channels itself (they switch on the XY lane's word) and keeps its own per-channel
// state and stamps.

struct point14_chunk {
  unsigned long long chunk;
  laz_gpu_status status;
  std::uint32_t points;
  std::uint8_t const* layer_data[4];
  std::uint32_t layer_size[4];
  point14_last first;
  std::uint32_t progress;  // records [0, progress) hold the XY lane's bytes
  std::uint32_t abort;     // the XY layer failed: the others stop
  std::uint32_t overrun[roles];
};

/// Checks the chunk header and fills `sh` (layers, first point); writes record 0.
__device__ inline laz_gpu_status start_point14_chunk(point14_params const& p, laz_gpu_chunk const& chunk, point14_chunk& sh)
{
  std::uint8_t const* const data = p.compressed + chunk.source;
  std::uint64_t const size = chunk.source_bytes;
  std::uint64_t const header = p.record_length + 4ull + 4ull * p.layer_count;
  if (size < header) { return laz_gpu_status::short_header; }
  std::uint32_t const points = load_u32(data + p.record_length);
  if (points == 0 || points != chunk.points) { return laz_gpu_status::bad_point_count; }
  std::uint64_t position = header;
  for (std::uint32_t l = 0; l < p.layer_count; ++l) {
    std::uint32_t const bytes = load_u32(data + p.record_length + 4 + 4 * l);
    if (bytes > size - position) { return laz_gpu_status::layer_past_end; }
    if (l < 4) {
      sh.layer_data[l] = data + position;
      sh.layer_size[l] = bytes;
    }
    position += bytes;
  }
  if (points > 1 && sh.layer_size[layer_xy] == 0) { return laz_gpu_status::empty_xy_layer; }
  sh.points = points;
  point14_last& first = sh.first;
  first.x = static_cast<std::int32_t>(load_u32(data));
  first.y = static_cast<std::int32_t>(load_u32(data + 4));
  first.z = p.z ? static_cast<std::int32_t>(load_u32(data + 8)) : 0;
  first.return_number = data[14] & 0x0F;
  first.number_of_returns = data[14] >> 4;
  first.flags = p.flags ? static_cast<std::uint8_t>((data[15] & 0x0F) | ((data[15] >> 2) & 0x30)) : 0;
  first.channel = (data[15] >> 4) & 3;
  first.classification = p.classification ? data[16] : 0;
  store_point14_record(first, p.records + chunk.first_record * laz_gpu_record_bytes);
  return laz_gpu_status::ok;
}

/// The XY lane's part: channel, returns, X and Y of points 1.. ; returns false when its layer ran
/// past its end (the chunk is then rejected). The current channel's last point is kept in
/// registers and its X/Y step medians in shared memory, saved to its point14_channel only when
/// another channel takes over: device-memory round trips on the lane's critical path otherwise.
__device__ inline bool decode_xy_layer(point14_chunk& sh, std::uint8_t* out, point14_channel* slot, std::uint32_t& epoch)
{
  __shared__ median5 medians[2][12];  // [x or y][predictor << 1 | GPS changed] of the current channel
  point14_decoder xy;
  xy.init(sh.layer_data[layer_xy], sh.layer_size[layer_xy]);
  point14_last const first = sh.first;
  std::int32_t x = first.x, y = first.y;
  unsigned r = first.return_number, n = first.number_of_returns;
  bool gps_last = false;
  unsigned active = 0;
  unsigned current = first.channel;
  point14_channel* ch = slot + current;
  std::uint32_t stamp = 0;
  auto start_channel = [&](unsigned channel) {  // its first use in the chunk, from the registers
    active |= 1u << channel;
    stamp = ++epoch;
    slot[channel].role_stamp[role_xy] = stamp;
    gps_last = false;
    for (auto& m : medians[0]) { m.reset(); }
    for (auto& m : medians[1]) { m.reset(); }
  };
  start_channel(current);
  std::uint32_t const points = sh.points;
  // Publishes records to the other lanes: a release store, read with acquire loads (wait_for_xy).
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_block> const progress(sh.progress);
  for (std::uint32_t i = 1; i < points; ++i) {
    if (i % overrun_check_interval == 0 && xy.overrun > overrun_tolerance) { return false; }
    unsigned const changed = xy.decode_symbol(use(ch->models.changed[point14_changed_context(r, n, gps_last)], stamp));
    if (changed & changed_channel) {
      unsigned const step = xy.decode_symbol(use(ch->models.channel_step, stamp));
      unsigned const next = (current + step + 1) & 3u;
      // The channel going out keeps its state; the next one starts from the last point (its first
      // use) or takes its own back.
      ch->last.x = x;
      ch->last.y = y;
      ch->last.return_number = static_cast<std::uint8_t>(r);
      ch->last.number_of_returns = static_cast<std::uint8_t>(n);
      ch->last_gps_changed = gps_last;
      for (int k = 0; k < 12; ++k) {
        ch->dx_median[k] = medians[0][k];
        ch->dy_median[k] = medians[1][k];
      }
      current = next;
      ch = slot + next;
      if ((active & (1u << next)) == 0) {
        start_channel(next);
      } else {
        x = ch->last.x;
        y = ch->last.y;
        r = ch->last.return_number;
        n = ch->last.number_of_returns;
        gps_last = ch->last_gps_changed;
        stamp = ch->role_stamp[role_xy];
        for (int k = 0; k < 12; ++k) {
          medians[0][k] = ch->dx_median[k];
          medians[1][k] = ch->dy_median[k];
        }
      }
    }
    decode_point14_returns(xy, ch->models, stamp, changed, n, r);
    unsigned k = 0;
    decode_point14_xy(xy, ch->models, stamp, xy_predictor, medians[0], medians[1], changed, n, r, x, y, k);
    gps_last = (changed & changed_gps_time) != 0;

    std::uint8_t* const rec = out + std::size_t{i} * laz_gpu_record_bytes;
    auto* const h = reinterpret_cast<std::uint16_t*>(rec);
    h[0] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(x));
    h[1] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(x) >> 16);
    h[2] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(y));
    h[3] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(y) >> 16);
    h[6] = 0;  // intensity
    rec[8] = static_cast<std::uint8_t>(k);  // for the Z lane, which overwrites it
    rec[14] = static_cast<std::uint8_t>(r | (n << 4));
    rec[15] = static_cast<std::uint8_t>(current << 4);  // for the flags lane, which completes it
    if ((i & 31) == 31) { progress.store(i + 1, cuda::memory_order_release); }
  }
  progress.store(points, cuda::memory_order_release);
  return xy.overrun <= overrun_tolerance;
}

/// Waits until record i holds the XY lane's bytes; false when the XY lane gave up.
__device__ __forceinline__ bool wait_for_xy(point14_chunk& sh, std::uint32_t i, std::uint32_t& seen)
{
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_block> const progress(sh.progress);
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_block> const abort(sh.abort);
  while (seen <= i) {
    if (abort.load(cuda::memory_order_relaxed) != 0) { return false; }
    seen = progress.load(cuda::memory_order_acquire);
    if (seen <= i) { __nanosleep(64); }
  }
  return true;
}

/// One of the Z, classification and flags lanes: follows the XY lane through the chunk.
template <unsigned Role>
__device__ inline bool decode_follower_layer(point14_params const& p, point14_chunk& sh, std::uint8_t* out, point14_channel* slot,
                                      std::uint32_t& epoch)
{
  // The current channel's last value of this lane's field in a register, and (Z) its eight
  // previous heights in shared memory; saved to its point14_channel when another channel takes over.
  __shared__ std::int32_t last_z[8];
  unsigned const layer = Role == role_z ? layer_z : Role == role_classification ? layer_classification : layer_flags;
  bool const selected = Role == role_z ? p.z : Role == role_classification ? p.classification : p.flags;
  bool const live = selected && sh.layer_size[layer] != 0;
  point14_decoder dec;
  if (live) { dec.init(sh.layer_data[layer], sh.layer_size[layer]); }
  point14_last const first = sh.first;
  std::int32_t value = Role == role_z ? first.z : Role == role_classification ? first.classification : first.flags;
  unsigned active = 0;
  unsigned current = first.channel;
  point14_channel* ch = slot + current;
  std::uint32_t stamp = 0;
  auto start_channel = [&](unsigned channel) {  // its first use in the chunk, from `value`
    active |= 1u << channel;
    stamp = ++epoch;
    slot[channel].role_stamp[Role] = stamp;
    if constexpr (Role == role_z) {
      for (auto& v : last_z) { v = value; }
    }
  };
  start_channel(current);
  std::uint32_t seen = 1;
  std::uint32_t const points = sh.points;
  for (std::uint32_t i = 1; i < points; ++i) {
    if (!wait_for_xy(sh, i, seen)) { return true; }  // the XY lane reports the chunk
    std::uint8_t* const rec = out + std::size_t{i} * laz_gpu_record_bytes;
    unsigned const channel = (rec[15] >> 4) & 3u;
    if (channel != current) {
      if constexpr (Role == role_z) {
        ch->z_last = value;
        for (int k = 0; k < 8; ++k) { ch->last_z[k] = last_z[k]; }
      } else if constexpr (Role == role_classification) {
        ch->classification_last = static_cast<std::uint8_t>(value);
      } else {
        ch->flags_last = static_cast<std::uint8_t>(value);
      }
      current = channel;
      ch = slot + channel;
      if ((active & (1u << channel)) == 0) {
        start_channel(channel);
      } else {
        stamp = ch->role_stamp[Role];
        if constexpr (Role == role_z) {
          value = ch->z_last;
          for (int k = 0; k < 8; ++k) { last_z[k] = ch->last_z[k]; }
        } else if constexpr (Role == role_classification) {
          value = ch->classification_last;
        } else {
          value = ch->flags_last;
        }
      }
    }
    unsigned const r = rec[14] & 15u;
    unsigned const n = rec[14] >> 4;
    if constexpr (Role == role_z) {
      if (live) { value = decode_point14_z(dec, ch->models, stamp, last_z, n, r, rec[8]); }
      auto* const h = reinterpret_cast<std::uint16_t*>(rec);
      h[4] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(value));
      h[5] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(value) >> 16);
    } else if constexpr (Role == role_classification) {
      if (live) {
        value = static_cast<std::int32_t>(decode_point14_classification(dec, ch->models, stamp, static_cast<unsigned>(value), n, r));
      }
      reinterpret_cast<std::uint16_t*>(rec)[8] = static_cast<std::uint16_t>(value & 0xFF);  // user data 0
    } else {
      if (live) { value = static_cast<std::int32_t>(decode_point14_flags(dec, ch->models, stamp, static_cast<unsigned>(value))); }
      auto const f = static_cast<unsigned>(value);
      rec[15] = static_cast<std::uint8_t>((f & 0x0Fu) | (current << 4) | ((f & 0x30u) << 2));
    }
  }
  return !live || dec.overrun <= overrun_tolerance;
}

}  // namespace heightgrid::detail::laz
