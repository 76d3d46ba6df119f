#pragma once
// The pointwise LAZ items of LAS point formats 0-3 (LASzip compressor 2), version 2: point10,
// gpstime11 and rgb12, each as its models and its state, decoded by the same code on the CPU
// (io/src/laz/laz_pointwise*.hpp, chunk after chunk) and on the GPU (kernels/src/detail/laz/
// pointwise.hpp, a chunk a block).
//
// Models live in storage the caller lays out (lay_out(), an arena of 16-bit words) and are reset
// lazily per chunk (stamps, coder.hpp's use()): a chunk touches a few dozen of point10's 768
// byte-keyed models. An item's state is the caller's (the GPU keeps the dynamically indexed parts in
// shared memory); `Decoder` is coder.hpp's basic_range_decoder with the caller's choices.

#include "heightgrid/core/laz/bytes.hpp"
#include "heightgrid/core/laz/coder.hpp"
#include "heightgrid/core/laz/hd.hpp"
#include "heightgrid/core/laz/tables.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace heightgrid::detail::laz {

/// Bytes of the point10 record (X, Y, Z, intensity, returns, classification, scan angle, user
/// data, point source).
inline constexpr std::uint32_t point10_bytes = 20;

// ------------------------------------------------------------------------------------------
// Models
// ------------------------------------------------------------------------------------------

/// point10 v2's models.
struct point10_v2_models {
  symbol_model changed;  // 64
  integer_decompressor<4, 16> intensity;
  symbol_model scan_angle[2];  // 256
  integer_decompressor<1, 16> point_source;
  symbol_model returns[256];         // 256, by the last returns byte
  symbol_model classification[256];  // 256, by the last classification
  symbol_model user_data[256];       // 256, by the last user data
  integer_decompressor<2, 32> dx;
  integer_decompressor<22, 32> dy;
  integer_decompressor<20, 32> z;

  /// Gives the models of `m` (nullptr: none, only counts) storage at arena + used; advances `used`.
  HG_LAZ_HD static void lay_out(point10_v2_models* m, std::uint16_t* arena, std::size_t& used)
  {
    bool const real = m != nullptr;
    place(real ? &m->changed : nullptr, 64, arena, used);
    integer_decompressor<4, 16>::lay_out(real ? &m->intensity : nullptr, arena, used);
    for (int i = 0; i < 2; ++i) { place(real ? m->scan_angle + i : nullptr, 256, arena, used); }
    integer_decompressor<1, 16>::lay_out(real ? &m->point_source : nullptr, arena, used);
    for (int i = 0; i < 256; ++i) { place(real ? m->returns + i : nullptr, 256, arena, used); }
    for (int i = 0; i < 256; ++i) { place(real ? m->classification + i : nullptr, 256, arena, used); }
    for (int i = 0; i < 256; ++i) { place(real ? m->user_data + i : nullptr, 256, arena, used); }
    integer_decompressor<2, 32>::lay_out(real ? &m->dx : nullptr, arena, used);
    integer_decompressor<22, 32>::lay_out(real ? &m->dy : nullptr, arena, used);
    integer_decompressor<20, 32>::lay_out(real ? &m->z : nullptr, arena, used);
  }
};

/// gpstime11 v2's models.
struct gpstime11_v2_models {
  symbol_model multi;      // 516
  symbol_model zero_diff;  // 6
  integer_decompressor<9, 32> diff;

  HG_LAZ_HD static void lay_out(gpstime11_v2_models* m, std::uint16_t* arena, std::size_t& used)
  {
    bool const real = m != nullptr;
    place(real ? &m->multi : nullptr, 516, arena, used);
    place(real ? &m->zero_diff : nullptr, 6, arena, used);
    integer_decompressor<9, 32>::lay_out(real ? &m->diff : nullptr, arena, used);
  }
};

/// rgb12 v2's models.
struct rgb12_v2_models {
  symbol_model used;     // 128
  symbol_model diff[6];  // 256

  HG_LAZ_HD static void lay_out(rgb12_v2_models* m, std::uint16_t* arena, std::size_t& used_words)
  {
    bool const real = m != nullptr;
    place(real ? &m->used : nullptr, 128, arena, used_words);
    for (int i = 0; i < 6; ++i) { place(real ? m->diff + i : nullptr, 256, arena, used_words); }
  }
};

// ------------------------------------------------------------------------------------------
// Fields and items
// ------------------------------------------------------------------------------------------

/// point10's fields.
struct point10 {
  std::int32_t x, y, z;
  std::uint16_t intensity;
  std::uint8_t returns;  ///< return number (3 bits), number of returns (3), scan direction, edge
  std::uint8_t classification;
  std::uint8_t scan_angle;
  std::uint8_t user_data;
  std::uint16_t point_source;

  HG_LAZ_HD_INLINE void load(std::uint8_t const* p)
  {
    x = static_cast<std::int32_t>(load_u32(p));
    y = static_cast<std::int32_t>(load_u32(p + 4));
    z = static_cast<std::int32_t>(load_u32(p + 8));
    intensity = static_cast<std::uint16_t>(load_u16(p + 12));
    returns = p[14];
    classification = p[15];
    scan_angle = p[16];
    user_data = p[17];
    point_source = static_cast<std::uint16_t>(load_u16(p + 18));
  }
  /// The 20 bytes at `p`, which is 4-byte aligned (records are 20 bytes apart): five 32-bit
  /// stores on the device.
  HG_LAZ_HD_INLINE void store(std::uint8_t* p) const
  {
    std::uint32_t const w[5] = {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y),
                                static_cast<std::uint32_t>(z),
                                std::uint32_t{intensity} | (std::uint32_t{returns} << 16) |
                                  (std::uint32_t{classification} << 24),
                                std::uint32_t{scan_angle} | (std::uint32_t{user_data} << 8) |
                                  (std::uint32_t{point_source} << 16)};
#if defined(__CUDA_ARCH__)
    auto* const q = reinterpret_cast<std::uint32_t*>(p);
    for (int k = 0; k < 5; ++k) { q[k] = w[k]; }
#else
    std::memcpy(p, w, sizeof w);  // little-endian hosts, as the CPU decoder assumes
#endif
  }
  /// The 20 bytes at `p`, any alignment.
  HG_LAZ_HD_INLINE void store_bytes(std::uint8_t* p) const
  {
    store_u16(p, static_cast<std::uint32_t>(x));
    store_u16(p + 2, static_cast<std::uint32_t>(x) >> 16);
    store_u16(p + 4, static_cast<std::uint32_t>(y));
    store_u16(p + 6, static_cast<std::uint32_t>(y) >> 16);
    store_u16(p + 8, static_cast<std::uint32_t>(z));
    store_u16(p + 10, static_cast<std::uint32_t>(z) >> 16);
    store_u16(p + 12, intensity);
    p[14] = returns;
    p[15] = classification;
    p[16] = scan_angle;
    p[17] = user_data;
    store_u16(p + 18, point_source);
  }
};

HG_LAZ_HD_INLINE std::uint32_t clamp_u8(std::int32_t v) { return static_cast<std::uint32_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

// ------------------------------------------------------------------------------------------
// Items
// ------------------------------------------------------------------------------------------

/// point10 v2: the changed-field mask first; intensity, X, Y and Z predicted per return context;
/// the corrector bits of X select Y's context, those of X and Y Z's.
/// The state indexed by return context (dynamically: the kernel keeps it in shared memory, see
/// pointwise_scratch); the last point itself is the caller's (registers).
struct point10_v2_state {
  median5 x_median[16];
  median5 y_median[16];
  std::uint16_t last_intensity[16];
  std::int32_t last_height[8];

  HG_LAZ_HD_INLINE void init(point10& last, std::uint8_t const* raw)
  {
    for (auto& m : x_median) { m.reset(); }
    for (auto& m : y_median) { m.reset(); }
    for (auto& v : last_intensity) { v = 0; }
    for (auto& v : last_height) { v = 0; }
    last.load(raw);
    last.intensity = 0;  // the coder starts intensity predictions from 0, not the first point
  }

  template <class Decoder>
  HG_LAZ_HD_INLINE void decode(Decoder& dec, point10_v2_models& md, std::uint32_t stamp,
                               laz_point10_context_table const& contexts, point10& p)
  {
    std::uint32_t const changed = dec.decode_symbol(use(md.changed, stamp));
    unsigned r, n, m;
    if (changed != 0) {
      if (changed & 32u) { p.returns = static_cast<std::uint8_t>(dec.decode_symbol(use(md.returns[p.returns], stamp))); }
      r = p.returns & 7u;
      n = (p.returns >> 3) & 7u;
      m = contexts.of_return[n][r];
      if (changed & 16u) {
        p.intensity = static_cast<std::uint16_t>(md.intensity.decompress(dec, last_intensity[m], m < 3 ? m : 3, stamp));
        last_intensity[m] = p.intensity;
      } else {
        p.intensity = last_intensity[m];
      }
      if (changed & 8u) {
        p.classification =
          static_cast<std::uint8_t>(dec.decode_symbol(use(md.classification[p.classification], stamp)));
      }
      if (changed & 4u) {
        std::uint32_t const delta = dec.decode_symbol(use(md.scan_angle[(p.returns >> 6) & 1u], stamp));
        p.scan_angle = static_cast<std::uint8_t>(delta + p.scan_angle);
      }
      if (changed & 2u) {
        p.user_data = static_cast<std::uint8_t>(dec.decode_symbol(use(md.user_data[p.user_data], stamp)));
      }
      if (changed & 1u) {
        p.point_source = static_cast<std::uint16_t>(md.point_source.decompress(dec, p.point_source, 0, stamp));
      }
    } else {
      r = p.returns & 7u;
      n = (p.returns >> 3) & 7u;
      m = contexts.of_return[n][r];
    }
    unsigned const level = n > r ? n - r : r - n;
    std::uint32_t const single = n == 1 ? 1u : 0u;

    std::uint32_t kx = 0, ky = 0, kz = 0;
    std::int32_t diff = md.dx.decompress(dec, x_median[m].get(), single, stamp, kx);
    p.x = static_cast<std::int32_t>(static_cast<std::uint32_t>(p.x) + static_cast<std::uint32_t>(diff));
    x_median[m].add(diff);

    diff = md.dy.decompress(dec, y_median[m].get(), single + (kx < 20 ? (kx & ~1u) : 20u), stamp, ky);
    p.y = static_cast<std::int32_t>(static_cast<std::uint32_t>(p.y) + static_cast<std::uint32_t>(diff));
    y_median[m].add(diff);

    std::uint32_t const k = (kx + ky) / 2;
    p.z = md.z.decompress(dec, last_height[level], single + (k < 18 ? (k & ~1u) : 18u), stamp, kz);
    last_height[level] = p.z;
  }
};

/// gpstime11 v2: the time difference predicted as a
/// multiple of the last one, four time sequences (interleaved flight lines) with escape symbols
/// between them, large jumps as a new sequence of 32 predicted high bits + 32 raw low bits.
struct gpstime11_v2_state {
  std::uint32_t current;
  std::uint32_t newest;
  std::uint64_t times[4];
  std::int32_t last_diff[4];
  std::int32_t extremes[4];

  HG_LAZ_HD_INLINE void init(std::uint8_t const* raw)
  {
    current = 0;
    newest = 0;
    for (int c = 0; c < 4; ++c) {
      times[c] = 0;
      last_diff[c] = 0;
      extremes[c] = 0;
    }
    times[0] = load_u64(raw);
  }

  HG_LAZ_HD_INLINE void note_extreme(std::uint32_t c, std::int32_t diff)
  {
    if (++extremes[c] > 3) {
      last_diff[c] = diff;
      extremes[c] = 0;
    }
  }

  template <class Decoder>
  HG_LAZ_HD_INLINE void start_sequence(Decoder& dec, gpstime11_v2_models& md, std::uint32_t stamp)
  {
    newest = (newest + 1) & 3u;
    auto const high = static_cast<std::uint32_t>(
      md.diff.decompress(dec, static_cast<std::int32_t>(static_cast<std::uint32_t>(times[current] >> 32)), 8, stamp));
    times[newest] = (std::uint64_t{high} << 32) | dec.read_int();
    current = newest;
    last_diff[current] = 0;
    extremes[current] = 0;
  }

  /// False for a point that switches sequence more than 4 times (only corrupt data does: the
  /// chunk is rejected).
  template <class Decoder>
  HG_LAZ_HD_INLINE bool decode(Decoder& dec, gpstime11_v2_models& md, std::uint32_t stamp)
  {
    constexpr std::uint32_t multi = 500;
    constexpr std::int32_t multi_minus = -10;
    constexpr std::uint32_t unchanged = multi + 10 + 1;  // multi - multi_minus + 1
    constexpr std::uint32_t code_full = multi + 10 + 2;  // multi - multi_minus + 2
    for (int switches = 0;; ++switches) {
      if (switches > 4) { return false; }
      std::uint32_t const c = current;
      if (last_diff[c] == 0) {
        std::uint32_t const s = dec.decode_symbol(use(md.zero_diff, stamp));
        if (s == 0) { break; }
        if (s == 1) {
          last_diff[c] = md.diff.decompress(dec, 0, 0, stamp);
          times[c] += static_cast<std::uint64_t>(static_cast<std::int64_t>(last_diff[c]));
          extremes[c] = 0;
          break;
        }
        if (s == 2) {
          start_sequence(dec, md, stamp);
          break;
        }
        current = (c + s - 2) & 3u;
        continue;
      }
      std::uint32_t const s = dec.decode_symbol(use(md.multi, stamp));
      if (s == 1) {
        times[c] += static_cast<std::uint64_t>(static_cast<std::int64_t>(md.diff.decompress(dec, last_diff[c], 1, stamp)));
        extremes[c] = 0;
        break;
      }
      if (s < unchanged) {
        std::int32_t diff;
        if (s == 0) {
          diff = md.diff.decompress(dec, 0, 7, stamp);
          note_extreme(c, diff);
        } else if (s < multi) {
          diff = md.diff.decompress(dec, wrap_mul(static_cast<std::int32_t>(s), last_diff[c]), s < 10 ? 2 : 3, stamp);
        } else if (s == multi) {
          diff = md.diff.decompress(dec, wrap_mul(static_cast<std::int32_t>(multi), last_diff[c]), 4, stamp);
          note_extreme(c, diff);
        } else {
          std::int32_t const negative = static_cast<std::int32_t>(multi) - static_cast<std::int32_t>(s);
          if (negative > multi_minus) {
            diff = md.diff.decompress(dec, wrap_mul(negative, last_diff[c]), 5, stamp);
          } else {
            diff = md.diff.decompress(dec, wrap_mul(multi_minus, last_diff[c]), 6, stamp);
            note_extreme(c, diff);
          }
        }
        times[c] += static_cast<std::uint64_t>(static_cast<std::int64_t>(diff));
        break;
      }
      if (s == unchanged) { break; }
      if (s == code_full) {
        start_sequence(dec, md, stamp);
        break;
      }
      current = (c + s - code_full) & 3u;
    }
    return true;
  }
};

/// rgb12 v2: red against the last red; green and blue against
/// their last values plus red's (and green's) change; bit 6 of the mask: not a grey level.
struct rgb12_v2_state {
  std::uint16_t last[3];

  HG_LAZ_HD_INLINE void init(std::uint8_t const* raw)
  {
    for (int c = 0; c < 3; ++c) { last[c] = static_cast<std::uint16_t>(load_u16(raw + 2 * c)); }
  }

  template <class Decoder>
  HG_LAZ_HD_INLINE static std::uint16_t folded(Decoder& dec, rgb12_v2_models& md, unsigned model, std::uint32_t base,
                                               std::uint32_t stamp)
  {
    return static_cast<std::uint16_t>((dec.decode_symbol(use(md.diff[model], stamp)) + base) & 0xFFu);
  }

  HG_LAZ_HD_INLINE static std::int32_t lo(std::uint32_t v) { return static_cast<std::int32_t>(v & 0xFFu); }
  HG_LAZ_HD_INLINE static std::int32_t hi(std::uint32_t v) { return static_cast<std::int32_t>(v >> 8); }

  template <class Decoder>
  HG_LAZ_HD_INLINE void decode(Decoder& dec, rgb12_v2_models& md, std::uint32_t stamp)
  {
    std::uint32_t const mask = dec.decode_symbol(use(md.used, stamp));
    std::uint16_t now[3];
    now[0] = (mask & 1u) ? folded(dec, md, 0, static_cast<std::uint32_t>(lo(last[0])), stamp)
                         : static_cast<std::uint16_t>(lo(last[0]));
    now[0] |= (mask & 2u) ? static_cast<std::uint16_t>(folded(dec, md, 1, static_cast<std::uint32_t>(hi(last[0])), stamp) << 8)
                          : static_cast<std::uint16_t>(last[0] & 0xFF00u);
    if (mask & 64u) {
      std::int32_t d = lo(now[0]) - lo(last[0]);
      now[1] = (mask & 4u) ? folded(dec, md, 2, clamp_u8(d + lo(last[1])), stamp) : static_cast<std::uint16_t>(lo(last[1]));
      if (mask & 16u) {
        d = (d + (lo(now[1]) - lo(last[1]))) / 2;
        now[2] = folded(dec, md, 4, clamp_u8(d + lo(last[2])), stamp);
      } else {
        now[2] = static_cast<std::uint16_t>(lo(last[2]));
      }
      d = hi(now[0]) - hi(last[0]);
      now[1] |= (mask & 8u) ? static_cast<std::uint16_t>(folded(dec, md, 3, clamp_u8(d + hi(last[1])), stamp) << 8)
                            : static_cast<std::uint16_t>(last[1] & 0xFF00u);
      if (mask & 32u) {
        d = (d + (hi(now[1]) - hi(last[1]))) / 2;
        now[2] |= static_cast<std::uint16_t>(folded(dec, md, 5, clamp_u8(d + hi(last[2])), stamp) << 8);
      } else {
        now[2] |= static_cast<std::uint16_t>(last[2] & 0xFF00u);
      }
    } else {
      now[1] = now[0];
      now[2] = now[0];
    }
    for (int c = 0; c < 3; ++c) { last[c] = now[c]; }
  }
};

}  // namespace heightgrid::detail::laz
