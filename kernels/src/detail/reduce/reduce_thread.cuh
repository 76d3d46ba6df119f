#pragma once
// reduce_mode::thread: one thread per cell.

#include "detail/reduce/cell_store.cuh"
#include "detail/infra/launch.cuh"
#include "heightgrid/kernels/device_csr.hpp"

#include <cuda/std/limits>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace heightgrid::detail {

struct thread_per_cell_policy {
  static constexpr int block_threads = 256;
};

/// Mapping: one thread per cell, grid-stride over cells. The thread reads its cell's points in CSR
///   order: once for min, max (and the sum when NeedsSums), and once more for m2 when `want_m2`.
///   The range-only instantiation (NeedsSums = false) reads z once and does no double adds.
/// Preconditions: offsets has num_cells + 1 non-decreasing entries, z has offsets[num_cells] NaN-free
///   entries; blockDim.x == thread_per_cell_policy::block_threads; want_m2 only with NeedsSums.
/// Result: every requested band of every cell, once the kernel has completed. The sums run in CSR
///   order from 0.0 as in reduce_cells_cpu, so on the same CSR every band equals the CPU's bit for bit.
/// Example: offsets=[0,3,3,7] z=[8,6,7,5,3,0,9]: thread 0 reads 8,6,7 -> min 6; thread 1 reads nothing
///   -> nodata; thread 2 reads 5,3,0,9 -> min 0. min=[6,nan,0], count=[3,0,4], mean=[7,nan,4.25].
template <bool NeedsSums>
static __global__ void __launch_bounds__(thread_per_cell_policy::block_threads)
  reduce_thread_per_cell_kernel(point_offset const* __restrict__ offsets, double const* __restrict__ z,
                                std::uint64_t num_cells, output_bands out, bool want_m2, float nodata)
{
  for (std::uint64_t c = global_thread_index(); c < num_cells; c += grid_threads()) {
    auto const begin = offsets[c];
    auto const end = offsets[c + 1];
    cell_moments m{end - begin, ::cuda::std::numeric_limits<double>::infinity(), -::cuda::std::numeric_limits<double>::infinity(),
                   0.0, 0.0};
    for (auto i = begin; i < end; ++i) {
      double const v = z[i];
      m.lo = min_of(m.lo, v);
      m.hi = max_of(m.hi, v);
      if constexpr (NeedsSums) { m.sum += v; }
    }
    if constexpr (NeedsSums) {
      if (want_m2 && m.n > 0) {
        double const mean = cell_mean(m.sum, m.n);
        for (auto i = begin; i < end; ++i) {
          double const d = z[i] - mean;
          m.m2 += d * d;
        }
      }
    }
    store_cell(out, c, m, nodata);
  }
}

/// Launches reduce_thread_per_cell_kernel over every cell of `csr` (nothing to do for 0 cells).
inline void launch_thread_per_cell(device_csr_view const& csr, metric_request const& request,
                                   output_bands const& out, float nodata, cudaStream_t stream)
{
  using policy = thread_per_cell_policy;
  if (csr.num_cells == 0) { return; }
  auto const blocks = grid_blocks(csr.num_cells, policy::block_threads);
  if (request.needs_sums()) {
    reduce_thread_per_cell_kernel<true>
      <<<blocks, policy::block_threads, 0, stream>>>(csr.offsets, csr.z, csr.num_cells, out, request.stddev, nodata);
  } else {
    reduce_thread_per_cell_kernel<false>
      <<<blocks, policy::block_threads, 0, stream>>>(csr.offsets, csr.z, csr.num_cells, out, false, nodata);
  }
  HG_CUDA_CHECK_LAUNCH();
}

}  // namespace heightgrid::detail
