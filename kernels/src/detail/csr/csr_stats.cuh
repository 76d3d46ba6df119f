#pragma once
// What binning learns about a CSR besides the CSR itself: the most points in one cell, which tells
// reduce modes which of their paths no cell can take (see hybrid_plan.hpp).

#include "detail/infra/launch.cuh"
#include "heightgrid/core/binning.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

namespace heightgrid::detail {

/// Mapping: one thread per cell, grid-stride; each warp reduces its lanes' maxima with shuffles
///   and lane 0 merges them into *most with atomicMax.
/// Preconditions: offsets has num_cells + 1 non-decreasing entries; *most was 0 before the launch.
/// Result: *most = max over c of offsets[c + 1] - offsets[c], once the kernel has completed.
/// Example: offsets=[0,3,3,7] -> *most = 4.
static __global__ void __launch_bounds__(item_policy::block_threads)
  max_cell_points_kernel(point_offset const* __restrict__ offsets, std::uint64_t num_cells,
                         unsigned long long* most)
{
  unsigned long long local = 0;
  // Every lane runs the same number of iterations (the bound rounds up to whole warps), so that
  // the shuffles below see all 32 lanes.
  std::uint64_t const stride = grid_threads();
  std::uint64_t const rounds_end = (num_cells + stride - 1) / stride * stride;
  for (std::uint64_t c = global_thread_index(); c < rounds_end; c += stride) {
    if (c < num_cells) {
      unsigned long long const n = offsets[c + 1] - offsets[c];
      local = n > local ? n : local;
    }
  }
  for (int delta = warp_size / 2; delta > 0; delta /= 2) {
    unsigned long long const other = __shfl_down_sync(full_warp_mask, local, delta);
    local = other > local ? other : local;
  }
  if (threadIdx.x % warp_size == 0 && local > 0) { atomicMax(most, local); }
}

/// Zeroes *most and launches max_cell_points_kernel (stream-ordered).
inline void launch_max_cell_points(point_offset const* offsets, std::uint64_t num_cells, unsigned long long* most,
                                   cudaStream_t stream)
{
  HG_CUDA_TRY(cudaMemsetAsync(most, 0, sizeof(*most), stream));
  if (num_cells == 0) { return; }
  int device = 0;
  int sms = 0;
  HG_CUDA_TRY(cudaGetDevice(&device));
  HG_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // A few waves of blocks stream the offsets at the bandwidth; more would only add atomics.
  auto const blocks = std::min<unsigned int>(grid_blocks(num_cells, item_policy::block_threads),
                                             static_cast<unsigned int>(sms) * 8U);
  max_cell_points_kernel<<<blocks, item_policy::block_threads, 0, stream>>>(offsets, num_cells, most);
  HG_CUDA_CHECK_LAUNCH();
}

}  // namespace heightgrid::detail
