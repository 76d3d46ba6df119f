#pragma once
// Shared launch vocabulary: warp constants, 64-bit thread indices, 1-D grid sizing.

#include "detail/infra/cuda_check.cuh"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace heightgrid::detail {

inline constexpr int warp_size = 32;
/// Every lane of a warp: the mask of shuffles and votes in which all 32 lanes take part.
inline constexpr unsigned int full_warp_mask = 0xffffffffU;
/// Largest gridDim.x; kernels whose natural grid would exceed it loop grid-stride.
inline constexpr std::uint64_t max_grid_blocks = 0x7fffffffULL;

/// Policy of the simple one-thread-per-item kernels (points, cells, finalize).
struct item_policy {
  static constexpr int block_threads = 256;
};

/// Blocks needed for `items` items at `items_per_block` each, capped at max_grid_blocks (kernels
/// launched with it must loop grid-stride). At least 1, so a zero-item launch is still valid.
inline unsigned int grid_blocks(std::uint64_t items, std::uint64_t items_per_block) noexcept
{
  std::uint64_t const blocks = (items + items_per_block - 1) / items_per_block;
  return static_cast<unsigned int>(blocks < 1 ? 1 : (blocks > max_grid_blocks ? max_grid_blocks : blocks));
}

/// 64-bit global index of this thread (a 32-bit product overflows past 2^32 threads).
__device__ inline std::uint64_t global_thread_index() noexcept
{
  return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

/// Threads in the whole grid: the step of a grid-stride loop.
__device__ inline std::uint64_t grid_threads() noexcept
{
  return static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
}

}  // namespace heightgrid::detail

/// After every <<< >>> launch: launch-configuration errors surface here, on the host, at once.
#define HG_CUDA_CHECK_LAUNCH() HG_CUDA_TRY(cudaGetLastError())
