#pragma once
// The kernels of the streaming grid (gpu_binner): batches of points folded into per-cell
// accumulators (core/include/heightgrid/core/cell_accumulator.hpp), and accumulators turned into bands.

#include "detail/infra/launch.cuh"
#include "detail/infra/warp_group.cuh"
#include "heightgrid/core/cell_accumulator.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/point_batch.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace heightgrid::detail {

struct batch_policy {
  static constexpr int block_threads = 256;
};

/// Counters a batch kernel adds to (device memory, zeroed once per binner).
struct batch_counters {
  unsigned long long outside;  ///< points in no cell of the whole grid
  unsigned long long binned;   ///< points that landed in the band
};

/// Coordinates of point i of a batch laid out as point_batch describes (columns at multiples of the
/// capacity), decoded with the host's rule (scaled_coords::apply) for scaled integers.
template <coord_encoding E>
struct batch_columns {
  void const* data;
  std::uint64_t capacity;
  scaled_coords transform;

  __device__ double operator()(int axis, std::uint64_t i) const noexcept
  {
    if constexpr (E == coord_encoding::float64) {
      return static_cast<double const*>(data)[static_cast<std::uint64_t>(axis) * capacity + i];
    } else {
      std::int32_t const v = static_cast<std::int32_t const*>(data)[static_cast<std::uint64_t>(axis) * capacity + i];
      return scaled_coords::apply(v, transform.scale[axis], transform.offset[axis]);
    }
  }
};

/// The band-local cell of (x, y): grid.cell_of on the whole grid, minus the band's first cell;
/// band_cells for a point outside the band, band_cells + 1 for a point in no cell at all.
__device__ inline std::uint64_t band_key(grid_spec const& grid, std::uint64_t first_cell, std::uint64_t band_cells,
                                         double x, double y) noexcept
{
  cell_id const c = grid.cell_of(x, y);
  if (c == no_cell) { return band_cells + 1; }
  std::uint64_t const local = static_cast<std::uint64_t>(c) - first_cell;  // wraps below the band
  return local < band_cells ? local : band_cells;
}

/// Mapping: one thread per point, grid-stride in whole-warp steps (every lane runs every iteration).
///   Each lane finds its point's band-local cell; lanes of one cell (__match_any_sync) combine their
///   keys, and the lowest of them does one atomicMax on lo, one on hi and one atomicAdd on count.
///   Per warp one atomic per counter.
/// Preconditions: the batch's n points in `cols`; acc has band_cells cells; coordinates finite.
/// Result: once the kernel has completed, every point in the band is folded into its cell (the same
///   fields a host_grid::add_batch gives, whatever the order), counters increased.
/// Example: band = whole 2 x 1 grid of 1 m at (0, 1); points (0.5,0.5,z=3) (0.7,0.5,z=1) (1.5,0.5,z=2)
///   (9,0.5,z=5): lanes 0-1 -> cell 0: lo = lo_key(1), hi = hi_key(3), count 2; lane 2 -> cell 1;
///   lane 3 -> outside = 1.
template <coord_encoding E>
static __global__ void __launch_bounds__(batch_policy::block_threads)
  accumulate_atomic_thread_per_point_kernel(batch_columns<E> cols, std::uint64_t n, grid_spec grid,
                                            std::uint64_t first_cell, accumulator_view acc,
                                            batch_counters* __restrict__ counters)
{
  auto const lane = static_cast<unsigned int>(threadIdx.x % warp_size);
  std::uint64_t const band_cells = acc.cells;
  for (std::uint64_t i = global_thread_index(); i - lane < n; i += grid_threads()) {
    bool const valid = i < n;
    std::uint64_t const key = valid ? band_key(grid, first_cell, band_cells, cols(0, i), cols(1, i)) : band_cells;
    unsigned long long const enc = valid ? ordered_key(cols(2, i)) : ~0ULL;
    // Keys fit in 32 bits (grids have fewer than 2^32 cells); band_cells and band_cells + 1 too.
    unsigned int const group = __match_any_sync(full_warp_mask, static_cast<unsigned int>(key));
    unsigned long long const lowest = group_min(group, enc);
    unsigned long long const highest = ~group_min(group, valid ? ~enc : ~0ULL);
    auto const leader = static_cast<unsigned int>(__ffs(static_cast<int>(group)) - 1);
    if (valid && key < band_cells && lane == leader) {
      atomicMax(reinterpret_cast<unsigned long long*>(&acc.lo_of(key)), ~lowest);
      atomicMax(reinterpret_cast<unsigned long long*>(&acc.hi_of(key)), highest);
      atomicAdd(acc.count + key, static_cast<std::uint32_t>(__popc(group)));
    }
    unsigned int const outside = __ballot_sync(full_warp_mask, valid && key == band_cells + 1);
    unsigned int const binned = __ballot_sync(full_warp_mask, valid && key < band_cells);
    if (lane == 0) {
      if (outside != 0) { atomicAdd(&counters->outside, static_cast<unsigned long long>(__popc(outside))); }
      if (binned != 0) { atomicAdd(&counters->binned, static_cast<unsigned long long>(__popc(binned))); }
    }
  }
}

/// Mapping: one thread per point, grid-stride.
/// Preconditions: keys and z have n entries.
/// Result: keys[i] = the band-local cell of point i, or band_cells for a point outside the band or
///   the grid (it sorts after every cell, and the merge skips it); z[i] its height; counters increased.
///   Valid once the kernel has completed.
/// Example: as above -> keys = [0, 0, 1, 2], z = [3, 1, 2, 5], outside 1, binned 3.
template <coord_encoding E>
static __global__ void __launch_bounds__(batch_policy::block_threads)
  batch_keys_thread_per_point_kernel(batch_columns<E> cols, std::uint64_t n, grid_spec grid, std::uint64_t first_cell,
                                     std::uint64_t band_cells, cell_id* __restrict__ keys, double* __restrict__ z,
                                     batch_counters* __restrict__ counters)
{
  auto const lane = static_cast<unsigned int>(threadIdx.x % warp_size);
  for (std::uint64_t i = global_thread_index(); i - lane < n; i += grid_threads()) {
    bool const valid = i < n;
    std::uint64_t const key = valid ? band_key(grid, first_cell, band_cells, cols(0, i), cols(1, i)) : band_cells;
    if (valid) {
      keys[i] = static_cast<cell_id>(key < band_cells ? key : band_cells);
      z[i] = cols(2, i);
    }
    unsigned int const outside = __ballot_sync(full_warp_mask, valid && key == band_cells + 1);
    unsigned int const binned = __ballot_sync(full_warp_mask, valid && key < band_cells);
    if (lane == 0) {
      if (outside != 0) { atomicAdd(&counters->outside, static_cast<unsigned long long>(__popc(outside))); }
      if (binned != 0) { atomicAdd(&counters->binned, static_cast<unsigned long long>(__popc(binned))); }
    }
  }
}

/// Mapping: one thread per output cell, grid-stride; output cell o is (row o / cols, column o % cols).
/// Preconditions: acc holds at least first_cell + rows * acc_cols cells; cols <= acc_cols; each band
///   pointer is null or has rows * cols entries.
/// Result: finalize_cell of accumulator cell first_cell + row * acc_cols + column into output cell o,
///   for every o, once the kernel has completed (the host's finalize_window, bit for bit).
/// Example: acc_cols 3, cols 2, rows 1 -> output cells 0, 1 from accumulator cells first, first + 1.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  finalize_rows_thread_per_cell_kernel(accumulator_view acc, std::uint64_t first_cell, std::uint32_t acc_cols,
                                       std::uint32_t cols, std::uint64_t cells, band_pointers out, float nodata)
{
  for (std::uint64_t o = global_thread_index(); o < cells; o += grid_threads()) {
    std::uint64_t const row = o / cols;
    std::uint64_t const col = o - row * cols;
    finalize_cell(acc, first_cell + row * acc_cols + col, out, o, nodata);
  }
}

/// Mapping: one thread per cell, grid-stride; a warp sums its lanes' totals and lane 0 adds them.
/// Result: *total += the sum of count[0..cells), once the kernel has completed.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  sum_counts_thread_per_cell_kernel(std::uint32_t const* __restrict__ count, std::uint64_t cells,
                                    unsigned long long* __restrict__ total)
{
  unsigned long long mine = 0;
  for (std::uint64_t c = global_thread_index(); c < cells; c += grid_threads()) { mine += count[c]; }
  for (int offset = warp_size / 2; offset > 0; offset /= 2) { mine += __shfl_down_sync(full_warp_mask, mine, offset); }
  if (threadIdx.x % warp_size == 0 && mine != 0) { atomicAdd(total, mine); }
}

/// Mapping: one thread per cell, grid-stride; a warp takes its lanes' largest and lane 0 keeps it.
/// Result: *largest = max(*largest, every count[c]), once the kernel has completed.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  max_count_thread_per_cell_kernel(std::uint32_t const* __restrict__ count, std::uint64_t cells,
                                   unsigned int* __restrict__ largest)
{
  unsigned int mine = 0;
  for (std::uint64_t c = global_thread_index(); c < cells; c += grid_threads()) { mine = max(mine, count[c]); }
  for (int offset = warp_size / 2; offset > 0; offset /= 2) {
    mine = max(mine, __shfl_down_sync(full_warp_mask, mine, offset));
  }
  if (threadIdx.x % warp_size == 0 && mine != 0) { atomicMax(largest, mine); }
}

}  // namespace heightgrid::detail
