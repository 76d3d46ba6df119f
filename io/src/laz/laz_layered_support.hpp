#pragma once
// What the layered (LAS 1.4, point formats 6-10) item decoders share: byte access, wrapping
// arithmetic, model sets, the median predictor and the layers of a chunk.
// Part of laz_layered.cpp's translation unit, included by it alone: the decoders keep internal
// linkage (an anonymous namespace), so the compiler sees and inlines the layered decoder as one file.

#include "laz_layered.hpp"

#include "heightgrid/core/laz/tables.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the LAZ decoders store fields with memcpy and assume a little-endian host"
#endif

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
// Stores run once per field of every decoded point; on the little-endian hosts heightgrid supports
// (las_layout.hpp) a memcpy is one store, where GCC kept the byte-wise form as separate stores.
void store_u16(std::uint8_t* p, std::uint16_t v) { std::memcpy(p, &v, sizeof v); }
void store_u32(std::uint8_t* p, std::uint32_t v) { std::memcpy(p, &v, sizeof v); }
void store_u64(std::uint8_t* p, std::uint64_t v) { std::memcpy(p, &v, sizeof v); }

/// Two's-complement multiplication without signed overflow (the format wraps around).
using codec::wrap_mul;

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

}  // namespace
}  // namespace heightgrid::io::laz
