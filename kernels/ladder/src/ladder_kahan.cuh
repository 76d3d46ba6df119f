#pragma once
// Ladder kernel `kahan`: a compensated sum. Each thread runs Kahan's algorithm over its
// grid-stride share; the (sum, error) pairs are then combined with TwoSum, which keeps the
// rounding error of every combination, so the result has the accuracy of Kahan's sequential sum
// (error about 2u * sum|x|, nearly independent of n) at the speed of kernel 8.
//
// The arithmetic must not be re-associated or contracted: the build uses --fmad=false and no
// fast-math (heightgrid_options), which is what keeps `y - (t - s)` from being folded to 0.

#include "ladder_common.cuh"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

namespace heightgrid::detail {

/// An unevaluated sum: the value is sum + err, err holding what rounding lost from sum.
template <typename T>
struct kahan_pair {
  T sum;
  T err;
};

/// Kahan's step: adds x to p. y = x + err carries the previous loss; t - s is what the add really
/// added, so y - (t - s) is what it lost. Example (float): (2^24, 0) + 1 -> (2^24, 1).
template <typename T>
__host__ __device__ inline kahan_pair<T> kahan_add(kahan_pair<T> p, T x) noexcept
{
  T const y = x + p.err;
  T const t = p.sum + y;
  return {t, y - (t - p.sum)};
}

/// Combines two pairs: TwoSum (Knuth) gives the exact error e of a.sum + b.sum; the errors are
/// added to it, and Fast2Sum renormalizes so that |err| stays below half an ulp of sum.
/// Example (float): (1, 2^-30) + (1, 2^-30) -> (2, 2^-29): the err halves survive, summed.
template <typename T>
__host__ __device__ inline kahan_pair<T> kahan_combine(kahan_pair<T> a, kahan_pair<T> b) noexcept
{
  T const s = a.sum + b.sum;
  T const bv = s - a.sum;
  T const e = (a.sum - (s - bv)) + (b.sum - bv);
  T const low = e + (a.err + b.err);
  T const t = s + low;
  return {t, low - (t - s)};
}

/// Folds an element (first pass) or a pair (later passes) into a thread's pair.
template <typename T>
struct kahan_fold {
  __device__ kahan_pair<T> operator()(kahan_pair<T> state, T x) const { return kahan_add(state, x); }
  __device__ kahan_pair<T> operator()(kahan_pair<T> state, kahan_pair<T> x) const { return kahan_combine(state, x); }
};

/// kahan_combine across a warp by shuffles (both halves of the pair); valid in lane 0.
template <typename T>
__device__ kahan_pair<T> warp_combine_kahan(kahan_pair<T> p)
{
#pragma unroll
  for (int delta = warp_size / 2; delta > 0; delta /= 2) {
    kahan_pair<T> const other{__shfl_down_sync(full_warp_mask, p.sum, delta),
                              __shfl_down_sync(full_warp_mask, p.err, delta)};
    p = kahan_combine(p, other);
  }
  return p;
}

/// Ladder kernel 10: compensated sum.
/// Mapping: the grid-stride loads of kernels 7 and 8 (fold_grid_stride), each thread running
///   kahan_add over its elements (or kahan_combine over the pairs of an earlier pass); then the
///   block combines pairs like kernel 8 combines values: shuffles in each warp, one shared slot per
///   warp, shuffles in warp 0. One pair per block.
/// Preconditions: In is T (float or double) or kahan_pair<T>; blockDim.x ==
///   ladder_grid_stride_policy::block_threads; out has gridDim.x entries.
/// Result: out[b] = the compensated sum of what block b's threads read, as a pair (value sum + err);
///   (0, 0) for a block that got nothing. Valid once the kernel has completed.
/// Example (float, one thread for brevity): [2^24, 1, 1, 1, 1] -> (2^24 + 4, 0), where the plain
///   float sum stays at 2^24.
template <typename T, typename In>
static __global__ void __launch_bounds__(ladder_grid_stride_policy::block_threads,
                                         ladder_grid_stride_policy::min_blocks_per_sm)
  reduce_kahan_grid_stride_kernel(In const* __restrict__ in, std::uint64_t n, kahan_pair<T>* __restrict__ out)
{
  static_assert(std::is_floating_point_v<T>, "a compensated sum of float or double");
  using policy = ladder_grid_stride_policy;
  constexpr int warps = policy::block_threads / warp_size;
  __shared__ kahan_pair<T> warp_partials[warps];
  int const warp = static_cast<int>(threadIdx.x) / warp_size;
  int const lane = static_cast<int>(threadIdx.x) % warp_size;

  kahan_pair<T> p = fold_grid_stride<policy::loads_in_flight>(in, n, kahan_pair<T>{T{0}, T{0}}, kahan_fold<T>{});
  p = warp_combine_kahan(p);
  if (lane == 0) { warp_partials[warp] = p; }
  __syncthreads();
  if (warp == 0) {
    p = lane < warps ? warp_partials[lane] : kahan_pair<T>{T{0}, T{0}};
    p = warp_combine_kahan(p);
    if (lane == 0) { out[blockIdx.x] = p; }
  }
}

/// One pass of the Kahan kernel over in[0, n) (elements of T or pairs): returns the number of
/// pairs written to `out` (grown if needed).
template <typename T, typename In>
std::uint64_t launch_kahan_grid_stride(In const* in, std::uint64_t n, device_buffer<kahan_pair<T>>& out,
                                       ladder_device const& device, cudaStream_t stream)
{
  using policy = ladder_grid_stride_policy;
  auto const blocks = grid_stride_blocks<reduce_kahan_grid_stride_kernel<T, In>>(n, device);
  reduce_kahan_grid_stride_kernel<T>
    <<<blocks, policy::block_threads, 0, stream>>>(in, n, ensure_size(out, blocks, stream));
  HG_CUDA_CHECK_LAUNCH();
  return blocks;
}

}  // namespace heightgrid::detail
