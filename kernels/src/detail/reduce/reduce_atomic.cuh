#pragma once
// reduce_mode::atomic: no CSR at all. Every point finds its cell (grid_spec::cell_of) and updates
// the cell's min and max with 64-bit atomicMin on order-preserving encodings of the doubles, and its
// count with atomicAdd; neighbouring points of one warp that share a cell combine first (one atomic
// per cell and warp). A finalize pass turns the encodings into bands. Range, min, max and count only:
// the mean and stddev need every point of a cell together.

#include "detail/reduce/cell_store.cuh"
#include "detail/infra/ordered_bits.cuh"
#include "detail/infra/warp_group.cuh"
#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/launch.cuh"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace heightgrid::detail {

struct atomic_policy {
  static constexpr int block_threads = 256;
};

/// A cell's running min and max, both kept with atomicMin: `lo` holds ordered_bits(min), `hi_inverted`
/// holds ~ordered_bits(max). Both start as all ones (one memset): an empty cell keeps lo == all ones.
struct alignas(16) atomic_cell {
  unsigned long long lo;
  unsigned long long hi_inverted;
};

/// Mapping: one thread per point, grid-stride in whole-warp steps (the loop bound is the warp's
///   first index, so all 32 lanes run every iteration). Each lane computes its point's cell with
///   grid.cell_of (the host rule: the ids of compute_cell_ids). Lanes of the same cell
///   (__match_any_sync) combine their encoded z with group_min, and the lowest of them does the
///   atomics: atomicMin on lo and on hi_inverted, atomicAdd of the group's size on the count.
///   Lanes past n take part with key no_cell. Points outside the grid are counted, one atomic per
///   warp.
/// Preconditions: x, y, z have n entries, z NaN-free; cells has grid.num_cells() entries set to all
///   ones; counts is null or has grid.num_cells() zeroed entries; *outside is 0.
/// Result: once the kernel has completed, cells[c] holds the encoded min and max of cell c (all ones
///   when it is empty), counts[c] its number of points, *outside the number of points in no cell.
/// Example: grid 2 x 1 of 1 m at (0, 1); x=[0.5, 0.7, 1.5, 9] y=[0.5, 0.5, 0.5, 0.5] z=[3, 1, 2, 5]:
///   lanes 0 and 1 share cell 0 -> one atomicMin(lo, enc(1)), one atomicMin(hi_inverted, ~enc(3)),
///   count += 2; lane 2 -> cell 1; lane 3 is outside -> *outside = 1.
static __global__ void __launch_bounds__(atomic_policy::block_threads)
  reduce_atomic_thread_per_point_kernel(double const* __restrict__ x, double const* __restrict__ y,
                                        double const* __restrict__ z, std::uint64_t n, grid_spec grid,
                                        atomic_cell* __restrict__ cells, std::uint32_t* __restrict__ counts,
                                        unsigned long long* __restrict__ outside)
{
  auto const lane = static_cast<unsigned int>(threadIdx.x % warp_size);
  for (std::uint64_t i = global_thread_index(); i - lane < n; i += grid_threads()) {
    bool const valid = i < n;
    cell_id const key = valid ? grid.cell_of(x[i], y[i]) : no_cell;
    unsigned long long const enc =
      valid ? ordered_bits_of(static_cast<unsigned long long>(__double_as_longlong(z[i]))) : ~0ULL;
    unsigned int const group = __match_any_sync(full_warp_mask, key);
    unsigned long long const lo = group_min(group, enc);
    unsigned long long const hi_inverted = group_min(group, valid ? ~enc : ~0ULL);
    auto const leader = static_cast<unsigned int>(__ffs(static_cast<int>(group)) - 1);
    if (key != no_cell && lane == leader) {
      atomicMin(&cells[key].lo, lo);
      atomicMin(&cells[key].hi_inverted, hi_inverted);
      if (counts != nullptr) { atomicAdd(counts + key, static_cast<std::uint32_t>(__popc(group))); }
    }
    unsigned int const out_of_grid = __ballot_sync(full_warp_mask, valid && key == no_cell);
    if (lane == 0 && out_of_grid != 0) { atomicAdd(outside, static_cast<unsigned long long>(__popc(out_of_grid))); }
  }
}

/// Mapping: one thread per cell, grid-stride. Decodes cells[c] and writes the requested bands with
///   store_cell (so rounding and nodata are those of every other mode).
/// Preconditions: cells (and counts, when non-null) as left by reduce_atomic_thread_per_point_kernel;
///   counts is non-null whenever the count band is requested.
/// Result: every requested band of every cell, once the kernel has completed. Without counts, a
///   non-empty cell is stored with n = 1: only the empty test and no band read n then.
/// Example: cells=[{enc(1), ~enc(3)}, {all ones, all ones}] counts=[2, 0] -> min=[1, nodata],
///   max=[3, nodata], range=[2, nodata], count=[2, 0].
static __global__ void __launch_bounds__(item_policy::block_threads)
  finalize_atomic_thread_per_cell_kernel(atomic_cell const* __restrict__ cells,
                                         std::uint32_t const* __restrict__ counts, std::uint64_t num_cells,
                                         output_bands out, float nodata)
{
  for (std::uint64_t c = global_thread_index(); c < num_cells; c += grid_threads()) {
    atomic_cell const a = cells[c];
    bool const empty = a.lo == ~0ULL;
    std::uint64_t const n = counts != nullptr ? counts[c] : (empty ? 0 : 1);
    double const lo = empty ? 0.0 : __longlong_as_double(static_cast<long long>(bits_of_ordered(a.lo)));
    double const hi = empty ? 0.0 : __longlong_as_double(static_cast<long long>(bits_of_ordered(~a.hi_inverted)));
    store_cell(out, c, cell_moments{n, lo, hi, 0.0, 0.0}, nodata);
  }
}

/// Reduces the n points (x, y, z in device memory) into the bands of `request` over `grid`, adding
/// the number of points outside the grid to *outside (device memory). Allocates the per-cell state
/// (16 bytes a cell, plus 4 for the count when requested) on `stream`. Asynchronous.
/// Precondition: mode_supports(reduce_mode::atomic, request) (the caller checks).
inline void launch_atomic_thread_per_point(double const* x, double const* y, double const* z, std::uint64_t n,
                                    grid_spec const& grid, metric_request const& request, output_bands const& out,
                                    float nodata, unsigned long long* outside, cudaStream_t stream)
{
  auto const cells = grid.num_cells();
  device_buffer<atomic_cell> state(cells, stream);
  state.fill_bytes(0xff, stream);
  device_buffer<std::uint32_t> counts(request.count ? cells : 0, stream);
  counts.fill_bytes(0, stream);
  if (n > 0) {
    auto const blocks = grid_blocks(n, atomic_policy::block_threads);
    reduce_atomic_thread_per_point_kernel<<<blocks, atomic_policy::block_threads, 0, stream>>>(
      x, y, z, n, grid, state.data(), counts.data(), outside);
    HG_CUDA_CHECK_LAUNCH();
  }
  if (cells > 0) {
    auto const blocks = grid_blocks(cells, item_policy::block_threads);
    finalize_atomic_thread_per_cell_kernel<<<blocks, item_policy::block_threads, 0, stream>>>(
      state.data(), counts.data(), cells, out, nodata);
    HG_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace heightgrid::detail
