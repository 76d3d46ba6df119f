#pragma once
// Ladder kernels 3-6: sequential addressing in shared memory (step s combines sdata[tid] and
// sdata[tid + s] for tid < s, s = B/2 ... 1), then each rung removes one more overhead: idle
// threads at load time (4), the loop and barriers of the last warp (5), all loop overhead (6).
// One partial per block.

#include "ladder_common.cuh"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace heightgrid::detail {

/// Ladder kernel 3: sequential addressing.
/// Mapping: one element per thread (block b loads in[b*B, b*B + B), B = blockDim.x), one partial per
///   block. At step s = B/2, B/4, ..., 1 the threads tid < s combine sdata[tid + s] into sdata[tid]:
///   active threads are contiguous (no divergence inside a full warp) and a warp touches consecutive
///   words (no bank conflicts). Half the threads are idle from the first step on.
/// Preconditions: blockDim.x == ladder_block_policy::block_threads (a power of two);
///   gridDim.x == tile_blocks(n, B); out has gridDim.x entries.
/// Result: out[b] = Op over in[b*B, min(n, b*B + B)), or the identity for a block past n (n = 0);
///   valid once the kernel has completed.
/// Example (sum, B = 4 for brevity, n = 6): in=[3,1,4,1,5,9]; block 0 sdata=[3,1,4,1] -> s=2:
///   [7,2,4,1] -> s=1: [9,...] -> out[0]=9; block 1 [5,9,0,0] -> out[1]=14.
template <typename Op, typename In, typename Acc>
static __global__ void __launch_bounds__(ladder_block_policy::block_threads)
  reduce_sequential_kernel(In const* __restrict__ in, std::uint64_t n, Acc* __restrict__ out)
{
  __shared__ Acc sdata[ladder_block_policy::block_threads];
  Op const op{};
  unsigned int const tid = threadIdx.x;
  std::uint64_t const i = global_thread_index();
  sdata[tid] = i < n ? static_cast<Acc>(in[i]) : ladder_identity<Acc, Op>();
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) { sdata[tid] = op(sdata[tid], sdata[tid + s]); }
    __syncthreads();
  }
  if (tid == 0) { out[blockIdx.x] = sdata[0]; }
}

/// The load of kernels 4-6: thread tid of block b combines in[b*2B + tid] and in[b*2B + B + tid]
/// (each guarded; the identity where past n).
template <typename Op, typename In, typename Acc>
__device__ Acc load_two(In const* __restrict__ in, std::uint64_t n, unsigned int block_threads)
{
  std::uint64_t const i = static_cast<std::uint64_t>(blockIdx.x) * (2ULL * block_threads) + threadIdx.x;
  Acc v = i < n ? static_cast<Acc>(in[i]) : ladder_identity<Acc, Op>();
  if (i + block_threads < n) { v = Op{}(v, static_cast<Acc>(in[i + block_threads])); }
  return v;
}

/// Ladder kernel 4: first add during the global load.
/// Mapping: two elements per thread: block b covers in[b*2B, b*2B + 2B) and each thread adds its
///   two elements (B apart, so both loads stay coalesced) before the tree of kernel 3. Half the
///   blocks of kernel 3, and no thread idles in the first step.
/// Preconditions: as reduce_sequential_kernel, with gridDim.x == tile_blocks(n, 2B).
/// Result: out[b] = Op over in[b*2B, min(n, b*2B + 2B)); valid once the kernel has completed.
/// Example (sum, B = 2, n = 6): in=[3,1,4,1,5,9]; block 0: thread 0 3+4, thread 1 1+1 -> [7,2] ->
///   out[0]=9; block 1: [5+0, 9+0] -> out[1]=14.
template <typename Op, typename In, typename Acc>
static __global__ void __launch_bounds__(ladder_block_policy::block_threads)
  reduce_first_add_kernel(In const* __restrict__ in, std::uint64_t n, Acc* __restrict__ out)
{
  __shared__ Acc sdata[ladder_block_policy::block_threads];
  Op const op{};
  unsigned int const tid = threadIdx.x;
  sdata[tid] = load_two<Op, In, Acc>(in, n, blockDim.x);
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) { sdata[tid] = op(sdata[tid], sdata[tid + s]); }
    __syncthreads();
  }
  if (tid == 0) { out[blockIdx.x] = sdata[0]; }
}

/// Ladder kernel 5: the last warp unrolled.
/// Mapping: as kernel 4 until s = 64; the last six steps (s = 32 ... 1) are done by warp 0 alone,
///   unrolled, with no __syncthreads and no `if (tid < s)`. The classic version relied on the 32
///   lanes running in lock-step and on `volatile` shared memory; Volta's independent thread
///   scheduling voids that guarantee (a lane may read sdata[tid + s] after its owner wrote it), so
///   this one is the historical variant made correct: last_warp_syncwarp reads into a register and
///   separates the reads from the writes with __syncwarp() at every step.
/// Preconditions: as reduce_first_add_kernel; blockDim.x >= 64.
/// Result: out[b] = Op over in[b*2B, min(n, b*2B + 2B)); valid once the kernel has completed.
/// Example (sum, B = 64, n = 128, in = 1): s = 32 ... 1 by warp 0 -> out[0] = 128.
template <typename Op, typename In, typename Acc>
static __global__ void __launch_bounds__(ladder_block_policy::block_threads)
  reduce_unroll_last_warp_kernel(In const* __restrict__ in, std::uint64_t n, Acc* __restrict__ out)
{
  __shared__ Acc sdata[ladder_block_policy::block_threads];
  Op const op{};
  unsigned int const tid = threadIdx.x;
  sdata[tid] = load_two<Op, In, Acc>(in, n, blockDim.x);
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > warp_size; s >>= 1) {
    if (tid < s) { sdata[tid] = op(sdata[tid], sdata[tid + s]); }
    __syncthreads();
  }
  if (tid < warp_size) {
    Acc const v = last_warp_syncwarp(sdata, static_cast<int>(tid), op);
    if (tid == 0) { out[blockIdx.x] = v; }
  }
}

/// Ladder kernel 6: completely unrolled for a compile-time block size.
/// Mapping: as kernel 5, with the block size a template parameter (BlockThreads, which the launcher
///   takes from the policy): the index arithmetic uses the constant, and block_tree_unrolled's
///   loop has a compile-time trip count, so the whole tree is straight-line code.
/// Preconditions: as reduce_first_add_kernel, with blockDim.x == BlockThreads.
/// Result: out[b] = Op over in[b*2B, min(n, b*2B + 2B)); valid once the kernel has completed.
/// Example (max, B = 256, n = 1000): blocks 0 and 1 cover in[0, 512) and in[512, 1000); out = the
///   two maxima.
template <int BlockThreads, typename Op, typename In, typename Acc>
static __global__ void __launch_bounds__(BlockThreads)
  reduce_complete_unroll_kernel(In const* __restrict__ in, std::uint64_t n, Acc* __restrict__ out)
{
  __shared__ Acc sdata[BlockThreads];
  int const tid = static_cast<int>(threadIdx.x);
  sdata[tid] = load_two<Op, In, Acc>(in, n, BlockThreads);
  __syncthreads();
  Acc const v = block_tree_unrolled<BlockThreads>(sdata, tid, Op{});
  if (tid == 0) { out[blockIdx.x] = v; }
}

/// One pass of kernel 3 over in[0, n): returns the number of partials written to `out` (grown if
/// needed).
template <typename Op, typename In, typename Acc>
std::uint64_t launch_sequential(In const* in, std::uint64_t n, device_buffer<Acc>& out, cudaStream_t stream)
{
  using policy = ladder_block_policy;
  auto const blocks = tile_blocks(n, policy::block_threads);
  reduce_sequential_kernel<Op><<<blocks, policy::block_threads, 0, stream>>>(in, n, ensure_size(out, blocks, stream));
  HG_CUDA_CHECK_LAUNCH();
  return blocks;
}

/// One pass of kernel 4 over in[0, n): returns the number of partials written to `out`.
template <typename Op, typename In, typename Acc>
std::uint64_t launch_first_add(In const* in, std::uint64_t n, device_buffer<Acc>& out, cudaStream_t stream)
{
  using policy = ladder_block_policy;
  auto const blocks = tile_blocks(n, 2 * policy::block_threads);
  reduce_first_add_kernel<Op><<<blocks, policy::block_threads, 0, stream>>>(in, n, ensure_size(out, blocks, stream));
  HG_CUDA_CHECK_LAUNCH();
  return blocks;
}

/// One pass of kernel 5 over in[0, n): returns the number of partials written to `out`.
template <typename Op, typename In, typename Acc>
std::uint64_t launch_unroll_last_warp(In const* in, std::uint64_t n, device_buffer<Acc>& out, cudaStream_t stream)
{
  using policy = ladder_block_policy;
  auto const blocks = tile_blocks(n, 2 * policy::block_threads);
  reduce_unroll_last_warp_kernel<Op>
    <<<blocks, policy::block_threads, 0, stream>>>(in, n, ensure_size(out, blocks, stream));
  HG_CUDA_CHECK_LAUNCH();
  return blocks;
}

/// One pass of kernel 6 over in[0, n): returns the number of partials written to `out`.
template <typename Op, typename In, typename Acc>
std::uint64_t launch_complete_unroll(In const* in, std::uint64_t n, device_buffer<Acc>& out, cudaStream_t stream)
{
  using policy = ladder_block_policy;
  auto const blocks = tile_blocks(n, 2 * policy::block_threads);
  reduce_complete_unroll_kernel<policy::block_threads, Op>
    <<<blocks, policy::block_threads, 0, stream>>>(in, n, ensure_size(out, blocks, stream));
  HG_CUDA_CHECK_LAUNCH();
  return blocks;
}

}  // namespace heightgrid::detail
