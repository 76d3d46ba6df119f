#pragma once
// Ladder kernels 1 and 2: interleaved addressing in shared memory (step s combines sdata[x] and
// sdata[x + s] for x a multiple of 2s). One element per thread, one partial per block.

#include "ladder_common.cuh"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace heightgrid::detail {

/// Ladder kernel 1: interleaved addressing with divergent branching.
/// Mapping: one element per thread (block b loads in[b*B, b*B + B), B = blockDim.x, into sdata),
///   one partial per block. At step s = 1, 2, 4, ... thread tid combines sdata[tid + s] into
///   sdata[tid] when tid % (2s) == 0: the active threads are spread over every warp, so all warps
///   diverge at every step, and the % is an expensive integer instruction.
/// Preconditions: blockDim.x == ladder_block_policy::block_threads; gridDim.x == tile_blocks(n, B);
///   out has gridDim.x entries.
/// Result: out[b] = Op over in[b*B, min(n, b*B + B)), or the identity for a block past n (n = 0);
///   valid once the kernel has completed.
/// Example (sum, B = 4 for brevity, n = 6): in=[3,1,4,1,5,9]; block 0 sdata=[3,1,4,1] -> s=1:
///   [4,1,5,1] -> s=2: [9,...] -> out[0]=9; block 1 sdata=[5,9,0,0] -> out[1]=14.
template <typename Op, typename In, typename Acc>
static __global__ void __launch_bounds__(ladder_block_policy::block_threads)
  reduce_interleaved_divergent_kernel(In const* __restrict__ in, std::uint64_t n, Acc* __restrict__ out)
{
  __shared__ Acc sdata[ladder_block_policy::block_threads];
  Op const op{};
  unsigned int const tid = threadIdx.x;
  std::uint64_t const i = global_thread_index();
  sdata[tid] = i < n ? static_cast<Acc>(in[i]) : ladder_identity<Acc, Op>();
  __syncthreads();
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) { sdata[tid] = op(sdata[tid], sdata[tid + s]); }
    __syncthreads();
  }
  if (tid == 0) { out[blockIdx.x] = sdata[0]; }
}

/// Ladder kernel 2: interleaved addressing with a strided index, no divergence.
/// Mapping: as kernel 1, but at step s thread tid works on index = 2*s*tid while index < B, so the
///   active threads are the first B/(2s), packed into whole warps. The price: the warp's accesses
///   sdata[2*s*tid] are 2s words apart, so they pile onto the same shared-memory banks: for
///   4-byte values 2-way conflicts at s = 1, 4-way at s = 2, 8-way from s = 4 on (256 threads);
///   8-byte values (double, int64 sums) twice as many.
/// Preconditions, Result: as reduce_interleaved_divergent_kernel.
/// Example (sum, B = 4, n = 6): block 0 sdata=[3,1,4,1] -> s=1: threads 0,1 at index 0,2: [4,1,5,1]
///   -> s=2: thread 0 at index 0: [9,...] -> out[0]=9; out[1]=14.
template <typename Op, typename In, typename Acc>
static __global__ void __launch_bounds__(ladder_block_policy::block_threads)
  reduce_interleaved_strided_kernel(In const* __restrict__ in, std::uint64_t n, Acc* __restrict__ out)
{
  __shared__ Acc sdata[ladder_block_policy::block_threads];
  Op const op{};
  unsigned int const tid = threadIdx.x;
  std::uint64_t const i = global_thread_index();
  sdata[tid] = i < n ? static_cast<Acc>(in[i]) : ladder_identity<Acc, Op>();
  __syncthreads();
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    unsigned int const index = 2 * s * tid;
    if (index < blockDim.x) { sdata[index] = op(sdata[index], sdata[index + s]); }
    __syncthreads();
  }
  if (tid == 0) { out[blockIdx.x] = sdata[0]; }
}

/// One pass of kernel 1 over in[0, n): returns the number of partials written to `out` (grown if
/// needed).
template <typename Op, typename In, typename Acc>
std::uint64_t launch_interleaved_divergent(In const* in, std::uint64_t n, device_buffer<Acc>& out, cudaStream_t stream)
{
  using policy = ladder_block_policy;
  auto const blocks = tile_blocks(n, policy::block_threads);
  reduce_interleaved_divergent_kernel<Op>
    <<<blocks, policy::block_threads, 0, stream>>>(in, n, ensure_size(out, blocks, stream));
  HG_CUDA_CHECK_LAUNCH();
  return blocks;
}

/// One pass of kernel 2 over in[0, n): returns the number of partials written to `out`.
template <typename Op, typename In, typename Acc>
std::uint64_t launch_interleaved_strided(In const* in, std::uint64_t n, device_buffer<Acc>& out, cudaStream_t stream)
{
  using policy = ladder_block_policy;
  auto const blocks = tile_blocks(n, policy::block_threads);
  reduce_interleaved_strided_kernel<Op>
    <<<blocks, policy::block_threads, 0, stream>>>(in, n, ensure_size(out, blocks, stream));
  HG_CUDA_CHECK_LAUNCH();
  return blocks;
}

}  // namespace heightgrid::detail
