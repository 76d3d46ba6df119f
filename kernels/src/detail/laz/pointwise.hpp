#pragma once
// Pointwise LAZ chunks (LASzip compressor 2) of LAS point formats 0-3 as the GPU decodes them (the
// host tests run the same function): items point10 v2, then optionally gpstime11 v2, rgb12 v2 and
// byte v2, every point coded item after item through one range decoder. The items are
// core/laz/pointwise_items.hpp's, which the CPU decoder runs too.
//
// Where the state lives: a slot's models (~1.4 MiB, most of it the 768 byte-keyed models of the
// returns, classification and user data fields) in memory the caller provides, laid out once by
// lay_out_pointwise() and reset lazily per chunk (stamps); the coder and the last point in
// registers; the X/Y medians, the per-context last values and the GPS sequences in a
// pointwise_scratch (the kernel's in shared memory).
//
// A chunk: its first point raw (the whole record), then the arithmetic-coded rest; its point count
// comes from the chunk table.

#include "heightgrid/core/laz/bytes.hpp"
#include "heightgrid/core/laz/coder.hpp"
#include "heightgrid/core/laz/hd.hpp"
#include "heightgrid/core/laz/pointwise_items.hpp"
#include "heightgrid/core/laz/tables.hpp"
#include "heightgrid/kernels/laz_gpu.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace heightgrid::detail::laz {

/// Points between two looks at the coder's overrun (it only grows, so stopping early changes no
/// result; it only spares decoding the rest of a truncated chunk).
inline constexpr std::uint32_t pointwise_overrun_check_interval = 1024;

/// The items after point10 v2, each version 2, in record order.
struct pointwise_items {
  bool gps_time{false};          ///< gpstime11: 8 bytes
  bool rgb{false};               ///< rgb12: 6 bytes
  std::uint32_t extra_bytes{0};  ///< byte: this many bytes
  HG_LAZ_HD constexpr std::uint32_t record_length() const
  {
    return point10_bytes + (gps_time ? 8u : 0u) + (rgb ? 6u : 0u) + extra_bytes;
  }
};

/// A slot's models: one chunk at a time. Followed in the slot's memory by `extra_bytes` symbol
/// models (byte v2) and the arena their storage is in (lay_out_pointwise()).
struct pointwise_models {
  std::uint32_t epoch;        ///< the stamp of the last chunk started
  std::uint32_t extra_bytes;  ///< byte models laid out
  symbol_model* bytes;        ///< byte v2: a model per byte (256 symbols)
  std::uint8_t* bytes_last;   ///< byte v2: the last value of each byte
  point10_v2_models p10;
  gpstime11_v2_models gps;
  rgb12_v2_models rgb;
};

/// Gives every model of `m` and its `bytes` (nullptr: only counts) storage in `arena`; returns the
/// 16-bit words used. Host and device walk the models in the same order.
HG_LAZ_HD inline std::size_t lay_out_pointwise_models(pointwise_models* m, symbol_model* bytes,
                                                      std::uint32_t extra_bytes, std::uint16_t* arena)
{
  std::size_t used = 0;
  bool const real = m != nullptr;
  // Member addresses only of a real slot: counting walks the same models with nullptr.
  point10_v2_models::lay_out(real ? &m->p10 : nullptr, arena, used);
  gpstime11_v2_models::lay_out(real ? &m->gps : nullptr, arena, used);
  rgb12_v2_models::lay_out(real ? &m->rgb : nullptr, arena, used);
  for (std::uint32_t i = 0; i < extra_bytes; ++i) { place(real ? bytes + i : nullptr, 256, arena, used); }
  if (real) {
    m->epoch = 0;
    m->extra_bytes = extra_bytes;
    m->bytes = bytes;
    m->bytes_last = reinterpret_cast<std::uint8_t*>(arena + used);
  }
  used += (extra_bytes + 1) / 2;
  return used;
}

HG_LAZ_HD constexpr std::size_t round_up_32(std::size_t bytes) { return (bytes + 31) / 32 * 32; }

/// Bytes of a slot's memory (models, byte models, arena) for records with `extra_bytes`; a
/// multiple of 32, so that slots side by side stay aligned.
HG_LAZ_HD inline std::size_t pointwise_slot_bytes(std::uint32_t extra_bytes)
{
  return round_up_32(sizeof(pointwise_models) + std::size_t{extra_bytes} * sizeof(symbol_model)) +
         round_up_32(lay_out_pointwise_models(nullptr, nullptr, extra_bytes, nullptr) * sizeof(std::uint16_t));
}

/// Lays out a slot in `slot` (pointwise_slot_bytes(extra_bytes) bytes, 32-byte aligned); returns
/// its models. Its first chunk finds every model unused.
HG_LAZ_HD inline pointwise_models* lay_out_pointwise(void* slot, std::uint32_t extra_bytes)
{
  auto* const base = static_cast<unsigned char*>(slot);
  auto* const m = reinterpret_cast<pointwise_models*>(base);
  auto* const bytes = reinterpret_cast<symbol_model*>(base + sizeof(pointwise_models));
  auto* const arena = reinterpret_cast<std::uint16_t*>(
    base + round_up_32(sizeof(pointwise_models) + std::size_t{extra_bytes} * sizeof(symbol_model)));
  lay_out_pointwise_models(m, bytes, extra_bytes, arena);
  return m;
}

// ------------------------------------------------------------------------------------------
// The chunk
// ------------------------------------------------------------------------------------------

/// The item state a chunk indexes dynamically (by return context, by GPS time sequence): local
/// memory if it were a thread's, so the kernel gives each block one in shared memory.
struct pointwise_scratch {
  point10_v2_state p10;
  gpstime11_v2_state gps;
};

/// Decodes a pointwise chunk of `points` points from [data, data + size) with the slot's models
/// `md` (laid out for at least items.extra_bytes bytes): the point10 part (20 bytes) of record i
/// to out + 20 i (4-byte aligned), and, when `WholeRecords`, the whole record (every item) to
/// whole + items.record_length() i. Every item is decoded either way: they share the coder.
///
/// Statuses, so that it rejects exactly the chunks the CPU decoder (laz_pointwise.cpp) rejects:
/// bad_point_count for 0 points (the CPU decodes nothing; conservatively rejected), short_header
/// when the chunk is shorter than the raw first point and the coder's 4 initial bytes (the CPU
/// decoder rejects those too: below the raw point itself, above it by the bytes its coder reads
/// past the end, even for a single point), overrun when the coder read past the chunk's end or a
/// GPS time switched sequence more than 4 times for one point. Records of a chunk that is not ok
/// are undefined.
///
/// Example: a chunk of 3 points whose first 34 bytes are a point format 3 record (items.gps_time,
/// items.rgb) → out[0..20) = those bytes' first 20, out[20..60) = the next two points' point10.
///
/// `scratch` holds the item state while the chunk decodes (the kernel's is in shared memory).
template <bool WholeRecords = false>
HG_LAZ_HD_INLINE laz_gpu_status decode_pointwise_chunk_hd(pointwise_models& md, pointwise_scratch& scratch,
                                                          pointwise_items const& items,
                                                          laz_point10_context_table const& contexts,
                                                          std::uint8_t const* data, std::uint64_t size,
                                                          std::uint32_t points, std::uint8_t* out,
                                                          std::uint8_t* whole = nullptr)
{
  std::uint32_t const record_length = items.record_length();
  if (points == 0) { return laz_gpu_status::bad_point_count; }
  if (size < record_length + 4ull) { return laz_gpu_status::short_header; }
  std::uint32_t stamp = ++md.epoch;
  if (stamp == 0) { stamp = md.epoch = 1; }  // 0 marks models never used

  std::uint32_t const gps_at = point10_bytes;
  std::uint32_t const rgb_at = gps_at + (items.gps_time ? 8u : 0u);
  std::uint32_t const bytes_at = rgb_at + (items.rgb ? 6u : 0u);
  point10_v2_state& p10 = scratch.p10;
  gpstime11_v2_state& gps = scratch.gps;
  rgb12_v2_state rgb;
  point10 last;
  p10.init(last, data);
  if (items.gps_time) { gps.init(data + gps_at); }
  if (items.rgb) { rgb.init(data + rgb_at); }
  for (std::uint32_t b = 0; b < items.extra_bytes; ++b) { md.bytes_last[b] = data[bytes_at + b]; }
  // Record 0 is the raw first point (its intensity included, which the predictions start from 0).
  point10 first;
  first.load(data);
  first.store(out);
  if constexpr (WholeRecords) {
    for (std::uint32_t b = 0; b < record_length; ++b) { whole[b] = data[b]; }
  }

  range_decoder dec;
  dec.init(data + record_length, size - record_length);
  for (std::uint32_t i = 1; i < points; ++i) {
    if (i % pointwise_overrun_check_interval == 0 && dec.overrun != 0) { return laz_gpu_status::overrun; }
    p10.decode(dec, md.p10, stamp, contexts, last);
    if (items.gps_time && !gps.decode(dec, md.gps, stamp)) { return laz_gpu_status::overrun; }
    if (items.rgb) { rgb.decode(dec, md.rgb, stamp); }
    for (std::uint32_t b = 0; b < items.extra_bytes; ++b) {
      md.bytes_last[b] = static_cast<std::uint8_t>(md.bytes_last[b] + dec.decode_symbol(use(md.bytes[b], stamp)));
    }
    last.store(out + std::size_t{i} * point10_bytes);
    if constexpr (WholeRecords) {
      std::uint8_t* const w = whole + std::size_t{i} * record_length;
      last.store_bytes(w);
      if (items.gps_time) { store_u64(w + gps_at, gps.times[gps.current]); }
      if (items.rgb) {
        for (int c = 0; c < 3; ++c) { store_u16(w + rgb_at + 2 * c, rgb.last[c]); }
      }
      for (std::uint32_t b = 0; b < items.extra_bytes; ++b) { w[bytes_at + b] = md.bytes_last[b]; }
    }
  }
  return dec.overrun != 0 ? laz_gpu_status::overrun : laz_gpu_status::ok;
}

/// The same with the item state in the caller's frame (the host's).
template <bool WholeRecords = false>
HG_LAZ_HD laz_gpu_status decode_pointwise_chunk_hd(pointwise_models& md, pointwise_items const& items,
                                                   laz_point10_context_table const& contexts,
                                                   std::uint8_t const* data, std::uint64_t size,
                                                   std::uint32_t points, std::uint8_t* out,
                                                   std::uint8_t* whole = nullptr)
{
  pointwise_scratch scratch;
  return decode_pointwise_chunk_hd<WholeRecords>(md, scratch, items, contexts, data, size, points, out, whole);
}

}  // namespace heightgrid::detail::laz
