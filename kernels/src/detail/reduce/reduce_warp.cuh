#pragma once
// reduce_mode::warp: one warp per cell, the block's results staged in shared memory.

#include "detail/reduce/cell_store.cuh"
#include "detail/infra/launch.cuh"
#include "detail/infra/warp_reduce.cuh"
#include "heightgrid/kernels/device_csr.hpp"

#include <cuda/std/limits>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace heightgrid::detail {

struct warp_per_cell_policy {
  static constexpr int warps_per_block = 8;  ///< = cells per block
  static constexpr int block_threads = warps_per_block * warp_size;
};

/// Mapping: one warp per cell, warp w of block b taking cell b * warps_per_block + w (grid-stride
///   over groups of warps_per_block cells when the grid is capped). Lane 0 reads the cell's offsets
///   and broadcasts begin/count by __shfl_sync; lane l reads points l, l + 32, ... (a cell of up to
///   32 points is one coalesced load); warp_min_max and warp_sum combine the lanes (valid in lane 0). Each warp's
///   lane 0 stages its cell in shared memory; after __syncthreads, lanes 0..warps_per_block-1 of
///   warp 0 store the block's cells, consecutive in every band, in one coalesced store.
/// Preconditions: as reduce_thread_per_cell_kernel; blockDim.x == warp_per_cell_policy::block_threads.
/// Result: every requested band of every cell, once the kernel has completed. Sums are lane partials
///   combined by a tree: mean/stddev may differ from the CPU's sequential sums by rounding (within
///   one float ulp after the final rounding); min/max/range/count are exact.
/// Partial groups: warps whose cell is past num_cells still run every shuffle and barrier with an
///   empty range (identities +inf/-inf/0) and are not stored; no thread returns early.
/// Example: offsets=[0,3,3,7] z=[8,6,7,5,3,0,9], one block: warp 0 lanes 0..2 read 8,6,7 -> lane 0
///   min 6; warp 1 reads nothing -> nodata; warp 2 lanes 0..3 read 5,3,0,9 -> min 0; warps 3..7 idle.
///   Warp 0 lanes 0..2 then store min=[6,nan,0].
template <bool NeedsSums>
static __global__ void __launch_bounds__(warp_per_cell_policy::block_threads)
  reduce_warp_per_cell_kernel(point_offset const* __restrict__ offsets, double const* __restrict__ z,
                              std::uint64_t num_cells, output_bands out, bool want_m2, float nodata)
{
  using policy = warp_per_cell_policy;
  __shared__ cell_moments staged[policy::warps_per_block];

  int const warp = static_cast<int>(threadIdx.x) / warp_size;
  int const lane = static_cast<int>(threadIdx.x) % warp_size;
  std::uint64_t const group_stride = static_cast<std::uint64_t>(gridDim.x) * policy::warps_per_block;

  // The loop bound depends on the block only, so every thread of the block runs the same number
  // of iterations and reaches both barriers.
  for (std::uint64_t first = static_cast<std::uint64_t>(blockIdx.x) * policy::warps_per_block; first < num_cells;
       first += group_stride) {
    std::uint64_t const cell = first + static_cast<std::uint64_t>(warp);
    std::uint64_t begin = 0;
    std::uint64_t n = 0;
    if (lane == 0 && cell < num_cells) {
      begin = offsets[cell];
      n = offsets[cell + 1] - begin;
    }
    begin = __shfl_sync(full_warp_mask, begin, 0);
    n = __shfl_sync(full_warp_mask, n, 0);

    double lo = ::cuda::std::numeric_limits<double>::infinity();
    double hi = -::cuda::std::numeric_limits<double>::infinity();
    double sum = 0.0;
    for (auto i = static_cast<std::uint64_t>(lane); i < n; i += warp_size) {
      double const v = z[begin + i];
      lo = min_of(lo, v);
      hi = max_of(hi, v);
      if constexpr (NeedsSums) { sum += v; }
    }
    warp_min_max(lo, hi);
    double m2 = 0.0;
    if constexpr (NeedsSums) {
      sum = warp_sum(sum);
      if (want_m2) {  // uniform over the grid: every lane takes this branch or none does
        // Lane 0 holds the sum; every lane needs the mean. An empty cell's NaN mean is never used.
        double const mean = __shfl_sync(full_warp_mask, n > 0 ? cell_mean(sum, n) : 0.0, 0);
        for (auto i = static_cast<std::uint64_t>(lane); i < n; i += warp_size) {
          double const d = z[begin + i] - mean;
          m2 += d * d;
        }
        m2 = warp_sum(m2);
      }
    }
    if (lane == 0) { staged[warp] = cell_moments{n, lo, hi, sum, m2}; }
    __syncthreads();  // staged[] complete before warp 0 reads it

    if (warp == 0 && lane < policy::warps_per_block) {
      std::uint64_t const c = first + static_cast<std::uint64_t>(lane);
      if (c < num_cells) { store_cell(out, c, staged[lane], nodata); }
    }
    __syncthreads();  // warp 0 done reading staged[] before the next group overwrites it
  }
}

/// Launches reduce_warp_per_cell_kernel over every cell of `csr` (nothing to do for 0 cells).
inline void launch_warp_per_cell(device_csr_view const& csr, metric_request const& request, output_bands const& out,
                                 float nodata, cudaStream_t stream)
{
  using policy = warp_per_cell_policy;
  if (csr.num_cells == 0) { return; }
  auto const blocks = grid_blocks(csr.num_cells, policy::warps_per_block);
  if (request.needs_sums()) {
    reduce_warp_per_cell_kernel<true>
      <<<blocks, policy::block_threads, 0, stream>>>(csr.offsets, csr.z, csr.num_cells, out, request.stddev, nodata);
  } else {
    reduce_warp_per_cell_kernel<false>
      <<<blocks, policy::block_threads, 0, stream>>>(csr.offsets, csr.z, csr.num_cells, out, false, nodata);
  }
  HG_CUDA_CHECK_LAUNCH();
}

}  // namespace heightgrid::detail
