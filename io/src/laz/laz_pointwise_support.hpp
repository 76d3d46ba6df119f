#pragma once
// What the pointwise (LAS 1.0-1.3 items, point formats 0-5) decoders share: byte access,
// wrapping arithmetic, lazily created models, the median predictor and the point10 fields.
// Part of laz_pointwise.cpp's translation unit, included by it alone: the decoders keep internal
// linkage (an anonymous namespace), so the compiler sees and inlines the pointwise decoder as one file.

#include "laz_pointwise.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::io::laz {
namespace {

template <class T>
T load_le(std::uint8_t const* p)
{
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

template <class T>
void store_le(std::uint8_t* p, T value)
{
  std::memcpy(p, &value, sizeof value);
}

/// Wrapping 32-bit arithmetic: LASzip's predictions rely on two's-complement overflow.
inline std::int32_t wrap_add(std::int32_t a, std::int32_t b)
{
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}
inline std::int32_t wrap_mul(std::int32_t a, std::int32_t b)
{
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
}

inline std::uint8_t clamp_u8(std::int32_t v)
{
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

/// Symbol models created on first use, one per value of a byte that selects them (the previous
/// classification, say). Kept across chunks and reset at each chunk start: a reset model is
/// indistinguishable from a new one.
class lazy_models {
 public:
  symbol_model& operator[](std::uint8_t key)
  {
    auto& slot = models_[key];
    if (!slot) slot = std::make_unique<symbol_model>(256);
    return *slot;
  }
  void reset()
  {
    for (auto& m : models_) {
      if (m) m->reset();
    }
  }

 private:
  std::array<std::unique_ptr<symbol_model>, 256> models_;
};

/// The point10 fields, unpacked from the 20 bytes of a LAS 1.0-1.3 base record.
struct point10 {
  std::int32_t x, y, z;
  std::uint16_t intensity;
  std::uint8_t returns;  // return number (3 bits), number of returns (3), scan direction, edge
  std::uint8_t classification;
  std::uint8_t scan_angle;
  std::uint8_t user_data;
  std::uint16_t point_source;

  void load(std::uint8_t const* p)
  {
    x = load_le<std::int32_t>(p);
    y = load_le<std::int32_t>(p + 4);
    z = load_le<std::int32_t>(p + 8);
    intensity = load_le<std::uint16_t>(p + 12);
    returns = p[14];
    classification = p[15];
    scan_angle = p[16];
    user_data = p[17];
    point_source = load_le<std::uint16_t>(p + 18);
  }
  void store(std::uint8_t* p) const
  {
    store_le(p, x);
    store_le(p + 4, y);
    store_le(p + 8, z);
    store_le(p + 12, intensity);
    p[14] = returns;
    p[15] = classification;
    p[16] = scan_angle;
    p[17] = user_data;
    store_le(p + 18, point_source);
  }
};

/// Median of three, LASzip point10 v1's x/y predictor.
inline std::int32_t median3(std::array<std::int32_t, 3> const& d)
{
  if (d[0] < d[1]) {
    if (d[1] < d[2]) return d[1];
    if (d[0] < d[2]) return d[2];
    return d[0];
  }
  if (d[0] < d[2]) return d[0];
  if (d[1] < d[2]) return d[2];
  return d[1];
}

}  // namespace
}  // namespace heightgrid::io::laz
