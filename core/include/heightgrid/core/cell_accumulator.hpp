#pragma once
// The per-cell state of a streamed grid and its rules, shared bit for bit by the CPU and the GPU.
//
// A grid that is filled batch by batch (the streaming pipeline) keeps, per cell:
//   lo     ~ordered(min z)   merged with max(): the largest key is the smallest z
//   hi      ordered(max z)   merged with max()
//   count   points           merged with + (a host grid of extremes alone keeps none)
//   sum     sum of z         (only when mean or stddev is requested)
//   m2      sum of squared deviations from the cell's mean (only for stddev)
// Every field is 0 for an empty cell, so zeroed memory is an empty grid (calloc'd host pages stay
// untouched until a point lands there; the device clears with one memset), and min/max merge with
// one kind of atomic (max) on both sides.
//
// This header is host-clean but also compiled by nvcc (kernels/), like grid_spec.hpp.

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace heightgrid {

/// Order-preserving encoding of a double (non-NaN): a < b exactly when ordered_key(a) < ordered_key(b),
/// with -0.0 below +0.0. Every non-NaN value maps above 0.
HG_HOST_DEVICE inline std::uint64_t ordered_key(double v) noexcept
{
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits >> 63) != 0 ? ~bits : (bits | 0x8000000000000000ULL);
}

/// The inverse of ordered_key.
HG_HOST_DEVICE inline double from_ordered_key(std::uint64_t key) noexcept
{
  std::uint64_t const bits = (key >> 63) != 0 ? (key & 0x7fffffffffffffffULL) : ~key;
  double v = 0.0;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

/// The lo field of a cell holding `z` alone; merge with max().
HG_HOST_DEVICE inline std::uint64_t lo_key(double z) noexcept { return ~ordered_key(z); }
/// The hi field of a cell holding `z` alone; merge with max().
HG_HOST_DEVICE inline std::uint64_t hi_key(double z) noexcept { return ordered_key(z); }
HG_HOST_DEVICE inline double min_of_lo_key(std::uint64_t lo) noexcept { return from_ordered_key(~lo); }
HG_HOST_DEVICE inline double max_of_hi_key(std::uint64_t hi) noexcept { return from_ordered_key(hi); }

/// Bytes of accumulator state per cell: 20, plus 8 for the sum and 8 for m2 when requested, and 4 a
/// tagged count band.
[[nodiscard]] inline std::size_t accumulator_bytes_per_cell(metric_request const& request) noexcept
{
  return 2 * sizeof(std::uint64_t) + sizeof(std::uint32_t) + (request.needs_sums() ? sizeof(double) : 0) +
         (request.stddev ? sizeof(double) : 0) + request.tags.size() * sizeof(std::uint32_t);
}

/// Raw pointers to a grid's accumulators (host or device memory), `cells` entries each; sum and m2
/// are null unless the grid keeps sums. Cell c's lo and hi are lo[c * stride] and hi[c * stride]:
/// separate arrays (stride 1, the device's) or one {lo, hi} pair a cell (stride 2, lo + 1 == hi:
/// the host grid's, whose random updates then touch one cache line a point instead of two).
struct accumulator_view {
  std::uint64_t* lo{nullptr};
  std::uint64_t* hi{nullptr};
  std::uint32_t* count{nullptr};  ///< null in a host grid of extremes alone (no count band)
  double* sum{nullptr};
  double* m2{nullptr};
  std::uint64_t cells{0};
  std::uint64_t stride{1};

  HG_HOST_DEVICE [[nodiscard]] std::uint64_t& lo_of(std::uint64_t c) const noexcept { return lo[c * stride]; }
  HG_HOST_DEVICE [[nodiscard]] std::uint64_t& hi_of(std::uint64_t c) const noexcept { return hi[c * stride]; }
};

/// Merges a partial (n_b points with sum_b and m2_b about their own mean) into a running (n_a, sum_a,
/// m2_a) by Chan, Golub and LeVeque's rule: m2 = m2_a + m2_b + d^2 n_a n_b / (n_a + n_b) with
/// d = sum_b / n_b - sum_a / n_a; sum = sum_a + sum_b. Exact order of operations, no FMA, so the
/// host and the device agree bit for bit. A cell whose points all arrive in one partial ends with
/// that partial's sum and m2 unchanged.
HG_HOST_DEVICE inline void merge_moments(std::uint64_t n_a, double& sum_a, double& m2_a, std::uint64_t n_b,
                                         double sum_b, double m2_b) noexcept
{
  if (n_b == 0) { return; }
  if (n_a == 0) {
    sum_a = sum_b;
    m2_a = m2_b;
    return;
  }
  double const d = sum_b / static_cast<double>(n_b) - sum_a / static_cast<double>(n_a);
  double const weight = static_cast<double>(n_a) * static_cast<double>(n_b) / static_cast<double>(n_a + n_b);
  m2_a = m2_a + m2_b + d * d * weight;
  sum_a = sum_a + sum_b;
}

/// The points of cell `c`; for accumulators without counts (extremes alone, host_grid), 1 for a
/// cell that holds any (its hi field is 0 only when empty).
HG_HOST_DEVICE inline std::uint32_t cell_count(accumulator_view const& acc, std::uint64_t c) noexcept
{
  return acc.count != nullptr ? acc.count[c] : (acc.hi_of(c) != 0 ? 1U : 0U);
}

/// Pointers to output bands of a window of cells (null for bands not requested): the same layout
/// as cell_results' columns.
struct band_pointers {
  float* min{nullptr};
  float* max{nullptr};
  float* range{nullptr};
  std::uint32_t* count{nullptr};
  float* mean{nullptr};
  float* stddev{nullptr};
};

/// Writes output cell `o` of every requested band from accumulator cell `c`, under the output
/// convention of metrics.hpp: min/max/range rounded from double once, mean = float(sum / n),
/// stddev = float(sqrt(m2 / n)); an empty cell is nodata (count 0, cell_count).
HG_HOST_DEVICE inline void finalize_cell(accumulator_view const& acc, std::uint64_t c, band_pointers const& out,
                                         std::uint64_t o, float nodata) noexcept
{
  std::uint32_t const n = cell_count(acc, c);
  bool const empty = n == 0;
  double const lo = empty ? 0.0 : min_of_lo_key(acc.lo_of(c));
  double const hi = empty ? 0.0 : max_of_hi_key(acc.hi_of(c));
  if (out.count != nullptr) { out.count[o] = n; }
  if (out.min != nullptr) { out.min[o] = empty ? nodata : static_cast<float>(lo); }
  if (out.max != nullptr) { out.max[o] = empty ? nodata : static_cast<float>(hi); }
  if (out.range != nullptr) { out.range[o] = empty ? nodata : static_cast<float>(hi - lo); }
  if (out.mean != nullptr) { out.mean[o] = empty ? nodata : static_cast<float>(acc.sum[c] / static_cast<double>(n)); }
  if (out.stddev != nullptr) {
    out.stddev[o] = empty ? nodata : static_cast<float>(::sqrt(acc.m2[c] / static_cast<double>(n)));
  }
}

}  // namespace heightgrid
