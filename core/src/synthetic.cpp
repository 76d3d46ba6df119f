#include "heightgrid/core/synthetic.hpp"

#include "heightgrid/core/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace heightgrid {
namespace {

// splitmix64: a well-mixed 64-bit hash of a counter, the standard seeding function for the
// xoshiro family. One call per random number keeps points independent of chunking.
std::uint64_t mix(std::uint64_t v) noexcept
{
  v += 0x9e3779b97f4a7c15ULL;
  v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
  v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
  return v ^ (v >> 31);
}

/// Uniform double in [0, 1) from the top 53 bits.
double unit(std::uint64_t bits) noexcept { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace

std::string_view synth_kind_name(synth_kind k) noexcept
{
  switch (k) {
    case synth_kind::uniform: return "uniform";
  }
  return "?";
}

std::optional<synth_kind> parse_synth_kind(std::string_view name) noexcept
{
  if (name == "uniform") { return synth_kind::uniform; }
  return std::nullopt;
}

synthetic_source::synthetic_source(synth_options const& options) : options_(options)
{
  expects(options.xmin < options.xmax && options.ymin < options.ymax, error_kind::usage,
          "synthetic extent must have xmin < xmax and ymin < ymax");
  info_.path = "synthetic:" + std::string(synth_kind_name(options.kind));
  info_.format = "synthetic " + std::string(synth_kind_name(options.kind)) + " (seed " +
                 std::to_string(options.seed) + ")";
  info_.point_count = options.points;
}

bool synthetic_source::read(point_chunk& chunk, std::size_t max_points)
{
  chunk.clear();
  auto const n = static_cast<std::size_t>(std::min<std::uint64_t>(max_points, options_.points - next_));
  if (n == 0) { return false; }
  chunk.x.resize(n);
  chunk.y.resize(n);
  chunk.z.resize(n);
  double const w = options_.xmax - options_.xmin;
  double const h = options_.ymax - options_.ymin;
  std::uint64_t const base = next_;
  std::uint64_t const stream = mix(options_.seed);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) {
    std::uint64_t const id = (base + static_cast<std::uint64_t>(i)) * 3 + stream;
    double const u = unit(mix(id));
    double const v = unit(mix(id + 1));
    double const e = unit(mix(id + 2));
    double const x = options_.xmin + u * w;
    double const y = options_.ymin + v * h;
    // gentle hills (tens of metres over kilometres) plus half a metre of noise
    double const terrain = 100.0 + 20.0 * std::sin(x * 2e-3) * std::cos(y * 3e-3);
    chunk.x[static_cast<std::size_t>(i)] = x;
    chunk.y[static_cast<std::size_t>(i)] = y;
    chunk.z[static_cast<std::size_t>(i)] = terrain + (e - 0.5);
  }
  next_ += n;
  return true;
}

}  // namespace heightgrid
