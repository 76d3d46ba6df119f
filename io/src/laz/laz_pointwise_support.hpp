#pragma once
// What the pointwise (LAS 1.0-1.3 items, point formats 0-5) decoders share: byte access,
// wrapping arithmetic, lazily created models, the median predictor and the point10 fields.
// Part of laz_pointwise.cpp's translation unit, included by it alone: the decoders keep internal
// linkage (an anonymous namespace), so the compiler sees and inlines the pointwise decoder as one file.

#include "laz_pointwise.hpp"

#include "heightgrid/core/laz/pointwise_items.hpp"

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
using codec::wrap_mul;

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
using point10 = codec::point10;

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
