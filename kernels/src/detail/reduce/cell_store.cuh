#pragma once
// The output convention of metrics.hpp on the device, shared by every reduce mode so that their
// bands agree bit for bit: each mode reduces a cell to (n, min, max, sum, m2) in double and hands
// them to store_cell, which rounds to float once and writes only the requested bands.

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/cell_accumulator.hpp"
#include "heightgrid/core/metrics.hpp"

#include <cstdint>

namespace heightgrid::detail {

/// Where the cells of a CSR go when the CSR is one batch of a streamed grid (gpu_binner's sorted
/// reduction): cell c of the CSR is grid cell cells[c] of the accumulators `acc`, and its moments are
/// merged there (cell_accumulator.hpp) instead of being written to bands. Inactive when acc.lo is null.
/// Every cell of a CSR is stored exactly once and a batch's cells are distinct, so no two threads
/// merge into one grid cell; batches are merged one after the other in stream order.
struct grid_merge {
  accumulator_view acc;
  cell_id const* cells{nullptr};
};

/// Device pointers of the output bands, one entry per cell; null for bands not requested. With
/// `merge` active, store_cell merges instead and the band pointers are unused.
struct output_bands {
  float* min{nullptr};
  float* max{nullptr};
  float* range{nullptr};
  std::uint32_t* count{nullptr};
  float* mean{nullptr};
  float* stddev{nullptr};
  grid_merge merge{};
};

/// One cell reduced in double: its point count, min, max, sum and m2 (the sum of squared deviations
/// from the mean in double). Modes not asked for sums leave sum and m2 at 0. A plain aggregate (no
/// member initializers) so that it can live in __shared__ memory.
struct cell_moments {
  std::uint64_t n;
  double lo;
  double hi;
  double sum;
  double m2;
};

/// The mean in double, as the stddev pass and the mean band need it: sum / n.
__host__ __device__ inline double cell_mean(double sum, std::uint64_t n) noexcept
{
  return sum / static_cast<double>(n);
}

/// Merges cell `c`'s moments into grid cell merge.cells[c]. Empty cells, and cells whose key is past
/// the accumulators (the batch's points outside the grid band sort there), change nothing.
__device__ inline void merge_cell(grid_merge const& merge, std::uint64_t c, cell_moments const& m) noexcept
{
  if (m.n == 0) { return; }
  std::uint64_t const g = merge.cells[c];
  if (g >= merge.acc.cells) { return; }
  accumulator_view const& a = merge.acc;
  std::uint64_t const lo = lo_key(m.lo);
  std::uint64_t const hi = hi_key(m.hi);
  a.lo_of(g) = lo > a.lo_of(g) ? lo : a.lo_of(g);
  a.hi_of(g) = hi > a.hi_of(g) ? hi : a.hi_of(g);
  if (a.sum != nullptr) {
    double unused_m2 = 0.0;
    merge_moments(a.count[g], a.sum[g], a.m2 != nullptr ? a.m2[g] : unused_m2, m.n, m.sum, m.m2);
  }
  a.count[g] += static_cast<std::uint32_t>(m.n);
}

/// Writes cell `c` of every requested band. Empty cells (n == 0) get `nodata` and count 0.
/// min/max/range are rounded from double once; mean = float(sum / n); stddev = float(sqrt(m2 / n)).
/// With out.merge active the moments are merged into the streamed grid instead (merge_cell).
__device__ inline void store_cell(output_bands const& out, std::uint64_t c, cell_moments const& m,
                                  float nodata) noexcept
{
  if (out.merge.acc.lo != nullptr) {
    merge_cell(out.merge, c, m);
    return;
  }
  bool const empty = m.n == 0;
  if (out.count != nullptr) { out.count[c] = static_cast<std::uint32_t>(m.n); }
  if (out.min != nullptr) { out.min[c] = empty ? nodata : static_cast<float>(m.lo); }
  if (out.max != nullptr) { out.max[c] = empty ? nodata : static_cast<float>(m.hi); }
  if (out.range != nullptr) { out.range[c] = empty ? nodata : static_cast<float>(m.hi - m.lo); }
  if (out.mean != nullptr) { out.mean[c] = empty ? nodata : static_cast<float>(cell_mean(m.sum, m.n)); }
  if (out.stddev != nullptr) {
    out.stddev[c] = empty ? nodata : static_cast<float>(::sqrt(m.m2 / static_cast<double>(m.n)));
  }
}

/// The bands a kernel instantiation for requests without sums is compiled to store, so that a
/// request known on the host does not test every band's pointer for every cell on the device:
///  - extremes: min, max, range and count, each when its pointer is set;
///  - range: the range band alone (out.range set; grid's and compare's default request).
/// The range store of hybrid's one-cell-per-lane tile is about 12 instructions instead of about 40 for the
/// six tests of store_cell (SASS of reduce_balanced_tile_kernel, sm_90). Only that kernel uses it:
/// the thread-per-cell kernel built with it unrolled its cell loop differently and was slower, so
/// thread and warp keep store_cell.
enum class band_set { extremes, range };

/// The narrowest band_set that stores every band of `request`, which must not need sums.
/// Examples: {range} -> range; {range, count} -> extremes.
inline band_set band_set_of(metric_request const& request) noexcept
{
  return request.range && !request.min && !request.max && !request.count ? band_set::range : band_set::extremes;
}

/// store_cell's stores of the bands of `Bands` (see band_set), bit for bit; m.sum and m.m2 unused.
/// Precondition: Bands == range -> out.range is set and out.merge inactive (a merge asks for extremes).
template <band_set Bands>
__device__ __forceinline__ void store_bands(output_bands const& out, std::uint64_t c, cell_moments const& m,
                                            float nodata) noexcept
{
  if constexpr (Bands == band_set::range) {
    out.range[c] = m.n == 0 ? nodata : static_cast<float>(m.hi - m.lo);
  } else {
    if (out.merge.acc.lo != nullptr) {
      merge_cell(out.merge, c, m);
      return;
    }
    bool const empty = m.n == 0;
    if (out.count != nullptr) { out.count[c] = static_cast<std::uint32_t>(m.n); }
    if (out.min != nullptr) { out.min[c] = empty ? nodata : static_cast<float>(m.lo); }
    if (out.max != nullptr) { out.max[c] = empty ? nodata : static_cast<float>(m.hi); }
    if (out.range != nullptr) { out.range[c] = empty ? nodata : static_cast<float>(m.hi - m.lo); }
  }
}

/// min and max as std::min(a, b) / std::max(a, b) do it (the CPU reference): on ties the first
/// argument (the running value) is kept. Written out because fmin/fmax treat NaN and the sign of
/// zero differently.
__host__ __device__ inline double min_of(double running, double v) noexcept { return v < running ? v : running; }
__host__ __device__ inline double max_of(double running, double v) noexcept { return running < v ? v : running; }

}  // namespace heightgrid::detail
