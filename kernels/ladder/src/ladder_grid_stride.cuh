#pragma once
// Ladder kernels 7 and 8: a grid of resident blocks only (sized from the SM count), each thread
// folding many elements with 16-byte loads, several in flight; then one partial per block, by a
// shared-memory tree (7) or by warp shuffles (8). Two passes for any n above a few thousand: the
// second is one block over the first's partials.

#include "ladder_common.cuh"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace heightgrid::detail {

/// Ladder kernel 7: multiple elements per thread.
/// Mapping: grid-stride over the whole input (fold_grid_stride: 16-byte vectors, loads_in_flight
///   of them per thread per iteration, head/tail elements one each), the gridDim.x blocks being
///   those the SMs hold at once; then each block combines its threads' values with the shared-memory
///   tree of kernel 6 (block_tree_unrolled). One partial per block.
/// Preconditions: blockDim.x == ladder_grid_stride_policy::block_threads; out has gridDim.x
///   entries; `in` aligned to sizeof(In).
/// Result: out[b] = Op over the elements block b's threads folded (together, over all b: the whole
///   input); the identity for a block that got none. Valid once the kernel has completed.
/// Example (sum, n = 10, one block of 4 threads for brevity, float so 4-wide vectors): thread 0
///   folds in[0..3], thread 1 in[4..7], the tail in[8], in[9] goes to threads 0 and 1; the tree
///   then sums the 4 thread values into out[0].
template <typename Op, typename In, typename Acc>
static __global__ void __launch_bounds__(ladder_grid_stride_policy::block_threads,
                                         ladder_grid_stride_policy::min_blocks_per_sm)
  reduce_multiple_elements_kernel(In const* __restrict__ in, std::uint64_t n, Acc* __restrict__ out)
{
  using policy = ladder_grid_stride_policy;
  __shared__ Acc sdata[policy::block_threads];
  int const tid = static_cast<int>(threadIdx.x);
  sdata[tid] = fold_grid_stride<policy::loads_in_flight>(in, n, ladder_identity<Acc, Op>(), fold_with<Acc, Op>{});
  __syncthreads();
  Acc const v = block_tree_unrolled<policy::block_threads>(sdata, tid, Op{});
  if (tid == 0) { out[blockIdx.x] = v; }
}

/// Ladder kernel 8: warp-shuffle reduction.
/// Mapping: the loads of kernel 7; then each warp reduces its lanes with __shfl_down_sync
///   (warp_reduce_shfl, no shared memory, no barrier), lane 0 of each warp writes one shared slot,
///   and after one __syncthreads warp 0 reduces the slots (identity in lanes past the warp count)
///   the same way. One partial per block.
/// Preconditions, Result: as reduce_multiple_elements_kernel (blockDim.x a multiple of 32, at most
///   32 warps).
/// Example (max, one block of 64 threads): warp 0's lanes fold to 7, warp 1's to 9; slots [7, 9];
///   warp 0 lanes hold [7, 9, -inf, ...] -> out[0] = 9.
template <typename Op, typename In, typename Acc>
static __global__ void __launch_bounds__(ladder_grid_stride_policy::block_threads,
                                         ladder_grid_stride_policy::min_blocks_per_sm)
  reduce_warp_shuffle_kernel(In const* __restrict__ in, std::uint64_t n, Acc* __restrict__ out)
{
  using policy = ladder_grid_stride_policy;
  constexpr int warps = policy::block_threads / warp_size;
  static_assert(policy::block_threads % warp_size == 0 && warps <= warp_size, "whole warps, at most 32");
  __shared__ Acc warp_partials[warps];
  Op const op{};
  int const warp = static_cast<int>(threadIdx.x) / warp_size;
  int const lane = static_cast<int>(threadIdx.x) % warp_size;

  Acc v = fold_grid_stride<policy::loads_in_flight>(in, n, ladder_identity<Acc, Op>(), fold_with<Acc, Op>{});
  v = warp_reduce_shfl(v, op);
  if (lane == 0) { warp_partials[warp] = v; }
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? warp_partials[lane] : ladder_identity<Acc, Op>();
    v = warp_reduce_shfl(v, op);
    if (lane == 0) { out[blockIdx.x] = v; }
  }
}

/// One pass of kernel 7 over in[0, n): returns the number of partials written to `out` (grown if
/// needed).
template <typename Op, typename In, typename Acc>
std::uint64_t launch_multiple_elements(In const* in, std::uint64_t n, device_buffer<Acc>& out,
                                       ladder_device const& device, cudaStream_t stream)
{
  using policy = ladder_grid_stride_policy;
  auto const blocks = grid_stride_blocks<reduce_multiple_elements_kernel<Op, In, Acc>>(n, device);
  reduce_multiple_elements_kernel<Op>
    <<<blocks, policy::block_threads, 0, stream>>>(in, n, ensure_size(out, blocks, stream));
  HG_CUDA_CHECK_LAUNCH();
  return blocks;
}

/// One pass of kernel 8 over in[0, n): returns the number of partials written to `out`.
template <typename Op, typename In, typename Acc>
std::uint64_t launch_warp_shuffle(In const* in, std::uint64_t n, device_buffer<Acc>& out, ladder_device const& device,
                                  cudaStream_t stream)
{
  using policy = ladder_grid_stride_policy;
  auto const blocks = grid_stride_blocks<reduce_warp_shuffle_kernel<Op, In, Acc>>(n, device);
  reduce_warp_shuffle_kernel<Op><<<blocks, policy::block_threads, 0, stream>>>(in, n, ensure_size(out, blocks, stream));
  HG_CUDA_CHECK_LAUNCH();
  return blocks;
}

}  // namespace heightgrid::detail
