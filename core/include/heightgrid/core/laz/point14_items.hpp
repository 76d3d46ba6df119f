#pragma once
// The point14 item of layered LAZ (LASzip compressor 3, LAS 1.4 point formats 6-10): the models of
// a scanner channel's channel/returns/XY, Z, classification and flags layers, and the step that
// decodes each field of a point, run by the CPU decoder (io/src/laz/laz_layered_point14.hpp, a
// point at a time through every layer) and the GPU decoder (kernels/src/detail/laz/point14.cuh, a
// lane a layer). The callers keep the state (last point, medians, last heights) where it suits
// them; the steps here are what the format says.
//
// Models live in storage the caller lays out (lay_out()) and are reset lazily when a channel
// starts in a chunk (stamps, coder.hpp's use()).

#include "heightgrid/core/laz/coder.hpp"
#include "heightgrid/core/laz/hd.hpp"
#include "heightgrid/core/laz/tables.hpp"

#include <cstddef>
#include <cstdint>

namespace heightgrid::detail::laz {

// Bits of the per-point "what changed" symbol of the XY layer.
inline constexpr unsigned changed_channel = 1u << 6;
inline constexpr unsigned changed_point_source = 1u << 5;
inline constexpr unsigned changed_gps_time = 1u << 4;
inline constexpr unsigned changed_scan_angle = 1u << 3;
inline constexpr unsigned changed_number_of_returns = 1u << 2;
inline constexpr unsigned changed_return_number_mask = 3u;  // 0 same, 1 +1, 2 -1, 3 coded

/// A scanner channel's models of the layers both decoders read.
struct point14_models {
  symbol_model changed[8];             // 128, by first (1) | last (2) return | GPS changed (4)
  symbol_model channel_step;           // 3: new channel = old + 1 + symbol (mod 4)
  symbol_model number_of_returns[16];  // 16, by the previous number of returns
  symbol_model return_number[16];      // 16, by the previous return number (GPS time changed)
  symbol_model return_step;            // 13: return number + 2 + symbol (GPS time the same)
  integer_decompressor<2, 32> dx;
  integer_decompressor<22, 32> dy;
  integer_decompressor<20, 32> z;
  symbol_model classification[64];  // 256, by (previous class & 31) << 1 | single return
  symbol_model flags[64];           // 64, by the previous flags symbol

  /// Gives the models of `m` (nullptr: none, only counts) storage at arena + used; advances `used`.
  HG_LAZ_HD static void lay_out(point14_models* m, std::uint16_t* arena, std::size_t& used)
  {
    bool const real = m != nullptr;
    auto models = [&](symbol_model* first, int count, std::uint32_t symbols) {
      for (int i = 0; i < count; ++i) { place(real ? first + i : nullptr, symbols, arena, used); }
    };
    models(real ? m->changed : nullptr, 8, 128);
    models(real ? &m->channel_step : nullptr, 1, 3);
    models(real ? m->number_of_returns : nullptr, 16, 16);
    models(real ? m->return_number : nullptr, 16, 16);
    models(real ? &m->return_step : nullptr, 1, 13);
    integer_decompressor<2, 32>::lay_out(real ? &m->dx : nullptr, arena, used);
    integer_decompressor<22, 32>::lay_out(real ? &m->dy : nullptr, arena, used);
    integer_decompressor<20, 32>::lay_out(real ? &m->z : nullptr, arena, used);
    models(real ? m->classification : nullptr, 64, 256);
    models(real ? m->flags : nullptr, 64, 64);
  }
};

/// The context of the "changed" symbol: first return (1), last return (2), GPS time changed at
/// the previous point (4).
HG_LAZ_HD_INLINE unsigned point14_changed_context(unsigned r, unsigned n, bool gps_changed)
{
  return (r == 1 ? 1u : 0u) | (r >= n ? 2u : 0u) | (gps_changed ? 4u : 0u);
}

/// The number of returns `n` and return number `r` of a point from the previous ones, as
/// `changed` says.
template <class Decoder>
HG_LAZ_HD_INLINE void decode_point14_returns(Decoder& dec, point14_models& md, std::uint32_t stamp, unsigned changed,
                                             unsigned& n, unsigned& r)
{
  if (changed & changed_number_of_returns) { n = dec.decode_symbol(use(md.number_of_returns[n & 15], stamp)) & 15; }
  switch (changed & changed_return_number_mask) {
    case 0: break;
    case 1: r = (r + 1) & 15; break;
    case 2: r = (r + 15) & 15; break;
    default:
      if (changed & changed_gps_time) {
        r = dec.decode_symbol(use(md.return_number[r & 15], stamp)) & 15;
      } else {
        r = (r + dec.decode_symbol(use(md.return_step, stamp)) + 2) & 15;
      }
      break;
  }
}

/// X and Y of a point: steps predicted by the running medians of its predictor (by return, and
/// whether the GPS time changed); X's corrector bits select Y's context. `k` receives the mean of
/// both corrector bits, Z's context.
/// `predictors` is core/laz/tables.hpp's laz_xy_predictor (the GPU's copy in constant memory).
template <class Decoder>
HG_LAZ_HD_INLINE void decode_point14_xy(Decoder& dec, point14_models& md, std::uint32_t stamp,
                                        laz_xy_predictor_table const& predictors, median5* dx_median,
                                        median5* dy_median, unsigned changed, unsigned n, unsigned r, std::int32_t& x,
                                        std::int32_t& y, unsigned& k)
{
  unsigned const single = n == 1 ? 1u : 0u;
  unsigned const m = (unsigned{predictors.of_return[n][r]} << 1) | ((changed & changed_gps_time) ? 1u : 0u);
  std::uint32_t kx = 0, ky = 0;
  std::int32_t const step_x = md.dx.decompress(dec, dx_median[m].get(), single, stamp, kx);
  x = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) + static_cast<std::uint32_t>(step_x));
  dx_median[m].add(step_x);
  std::int32_t const step_y = md.dy.decompress(dec, dy_median[m].get(), single + (kx < 20 ? (kx & ~1u) : 20), stamp, ky);
  y = static_cast<std::int32_t>(static_cast<std::uint32_t>(y) + static_cast<std::uint32_t>(step_y));
  dy_median[m].add(step_y);
  k = (kx + ky) / 2;
}

/// Z of a point, predicted by the last height at its level |n - r| (`last_z`, eight of them);
/// `k` from decode_point14_xy.
template <class Decoder>
HG_LAZ_HD_INLINE std::int32_t decode_point14_z(Decoder& dec, point14_models& md, std::uint32_t stamp, std::int32_t* last_z,
                                               unsigned n, unsigned r, unsigned k)
{
  unsigned const single = n == 1 ? 1u : 0u;
  unsigned const d = n > r ? n - r : r - n;
  unsigned const level = d < 7 ? d : 7;
  std::int32_t const z = md.z.decompress(dec, last_z[level], single + (k < 18 ? (k & ~1u) : 18), stamp);
  last_z[level] = z;
  return z;
}

/// The classification of a point from the previous one's.
template <class Decoder>
HG_LAZ_HD_INLINE unsigned decode_point14_classification(Decoder& dec, point14_models& md, std::uint32_t stamp,
                                                        unsigned last, unsigned n, unsigned r)
{
  unsigned const single_first_last = (r == 1 && r >= n) ? 1u : 0u;
  return dec.decode_symbol(use(md.classification[((last & 0x1Fu) << 1) | single_first_last], stamp));
}

/// The flags layer's 6-bit symbol (edge of flight line << 5 | scan direction << 4 | classification
/// flags) of a point from the previous one's.
template <class Decoder>
HG_LAZ_HD_INLINE unsigned decode_point14_flags(Decoder& dec, point14_models& md, std::uint32_t stamp, unsigned last)
{
  return dec.decode_symbol(use(md.flags[last & 63], stamp)) & 63;
}

}  // namespace heightgrid::detail::laz
