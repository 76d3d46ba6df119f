#pragma once
// What the reduction-ladder kernels share: operators and their identities, the accumulator type,
// block and warp combining steps, the vectorized grid-stride load loop of kernels 7, 8 and kahan,
// and the sizing of their grids. Each kernel lives in its family's detail/ladder_*.cuh.

#include "detail/infra/device_buffer.cuh"
#include "detail/infra/launch.cuh"

#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda/std/limits>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <type_traits>

namespace heightgrid::detail {

/// The ladder's operators are CCCL's, so that cub::DeviceReduce gets exactly what the hand-written
/// kernels use. maximum is (a < b) ? b : a, std::max's rule (the CPU reference's).
using ladder_sum = ::cuda::std::plus<>;
using ladder_max = ::cuda::maximum<>;

/// Accumulator of `In` under `Op`: int32 sums widen to int64 (exact, no wrap-around); everything
/// else reduces in its own type, so float sums show float rounding. Applied to itself it is a
/// fixed point (ladder_acc_t<int64, sum> = int64), which is what later passes read.
template <typename In, typename Op>
using ladder_acc_t =
  std::conditional_t<std::is_same_v<In, std::int32_t> && std::is_same_v<Op, ladder_sum>, std::int64_t, In>;

/// The identity of Op for Acc: 0 for sums, the lowest value (-inf for floating point) for max.
template <typename Acc, typename Op>
__host__ __device__ constexpr Acc ladder_identity() noexcept
{
  if constexpr (std::is_same_v<Op, ladder_max>) {
    if constexpr (::cuda::std::numeric_limits<Acc>::has_infinity) {
      return -::cuda::std::numeric_limits<Acc>::infinity();
    } else {
      return ::cuda::std::numeric_limits<Acc>::lowest();
    }
  } else {
    return Acc{0};
  }
}

/// Policy of kernels 1-6: one element (1-3) or two (4-6) per thread, one partial per block.
struct ladder_block_policy {
  static constexpr int block_threads = 256;
};
static_assert(ladder_block_policy::block_threads >= 2 * warp_size &&
                (ladder_block_policy::block_threads & (ladder_block_policy::block_threads - 1)) == 0,
              "the shared-memory trees need a power-of-two block of at least 64 threads");

/// Policy of the grid-stride kernels (7, 8, kahan): a grid of resident blocks only, each thread with
/// `loads_in_flight` independent 16-byte loads per iteration (64 bytes in flight per thread covers
/// HBM latency at half occupancy), at least `min_items_per_thread` elements per thread (so that
/// small inputs use few blocks and the second pass is one block).
struct ladder_grid_stride_policy {
  static constexpr int block_threads = 256;
  static constexpr int min_blocks_per_sm = 4;  ///< __launch_bounds__: at most 64 registers per thread
  static constexpr int loads_in_flight = 4;
  static constexpr std::uint64_t min_items_per_thread = 16;
};

/// The device facts a launcher sizes its grid from, read once per run_ladder call.
struct ladder_device {
  int sm_count{1};
};

/// `buffer` holding at least `count` elements (reallocated, stream-ordered, when it is smaller).
/// The ladder's drivers call this in the untimed warm-up run first, so timed runs never allocate.
template <typename T>
T* ensure_size(device_buffer<T>& buffer, std::uint64_t count, cudaStream_t stream)
{
  if (buffer.size() < count) { buffer = device_buffer<T>(count, stream); }
  return buffer.data();
}

/// Blocks of a one-block-per-tile kernel (1-6): ceil(n / items_per_block), at least 1 (n = 0 still
/// writes the identity). Such grids cannot loop, so a grid past max_grid_blocks is refused (it
/// would take more than 2^39 elements: more memory than any GPU has).
inline unsigned int tile_blocks(std::uint64_t n, std::uint64_t items_per_block)
{
  std::uint64_t const blocks = n == 0 ? 1 : (n - 1) / items_per_block + 1;
  HG_EXPECTS(blocks <= max_grid_blocks, error_kind::usage,
          "reduction ladder: " + std::to_string(n) + " elements need more blocks than a grid can have");
  return static_cast<unsigned int>(blocks);
}

/// Blocks of a grid-stride kernel: every SM filled with as many blocks as can be resident (the
/// occupancy API, asked once per kernel instantiation: `Kernel` is the kernel itself, not its
/// type, which kernels 7 and 8 share), but no more than the input needs at min_items_per_thread
/// each. At least 1.
template <auto Kernel>
unsigned int grid_stride_blocks(std::uint64_t n, ladder_device const& device)
{
  using policy = ladder_grid_stride_policy;
  static int const per_sm = [] {
    int blocks = 0;
    HG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, policy::block_threads, 0));
    return blocks > 0 ? blocks : 1;
  }();
  std::uint64_t const resident = static_cast<std::uint64_t>(device.sm_count) * static_cast<std::uint64_t>(per_sm);
  std::uint64_t const wanted = grid_blocks(n, policy::block_threads * policy::min_items_per_thread);
  return static_cast<unsigned int>(wanted < resident ? wanted : resident);
}

/// state = op(state, x) with x converted to the accumulator first (int32 -> int64 for sums).
template <typename Acc, typename Op>
struct fold_with {
  template <typename X>
  __device__ Acc operator()(Acc state, X x) const
  {
    return Op{}(state, static_cast<Acc>(x));
  }
};

// ---------------------------------------------------------------------------------------------
// Combining within a block.

/// The last warp of a shared-memory tree, as in the classic kernel 5 but correct since Volta:
/// there, `volatile` and implicit warp lock-step made `sdata[tid] += sdata[tid + s]` safe; with
/// independent thread scheduling a lane may read sdata[tid + s] after its owner overwrote it, so each
/// step reads into a register, __syncwarp()s, writes, and __syncwarp()s again.
/// Preconditions: called by all 32 lanes of warp 0 (tid = lane); sdata[0..63] hold the values to
///   combine (so the block has at least 64 threads and the tree above stopped at s = 32).
/// Result: sdata[0] (and the return value of lane 0) is the combination of sdata[0..63]. Lanes >= s
///   sit the step out (the classic code let them add stale values) but reach every __syncwarp.
/// Example (sum): sdata[0..63] = 1 -> s=32: sdata[0..31] = 2, ..., s=1: sdata[0] = 64.
template <typename Acc, typename Op>
__device__ Acc last_warp_syncwarp(Acc* sdata, int tid, Op op)
{
  Acc v = sdata[tid];
#pragma unroll
  for (int s = warp_size; s > 0; s /= 2) {
    if (tid < s) { v = op(v, sdata[tid + s]); }
    __syncwarp();  // every lane has read sdata[tid + s] before any lane overwrites it
    if (tid < s) { sdata[tid] = v; }
    __syncwarp();  // the writes are visible before the next step reads
  }
  return v;
}

/// Sequential-addressing tree over sdata[0 .. BlockThreads), unrolled completely: the trip count is
/// the compile-time constant log2(BlockThreads / 64), so `#pragma unroll` leaves straight-line code
/// with no loop counter, and warp 0 finishes with last_warp_syncwarp.
/// Preconditions: every thread of a block of BlockThreads threads calls it after writing sdata[tid]
///   and a __syncthreads().
/// Result: the block's value, returned in thread 0 (and left in sdata[0]); other threads get a
///   value of no meaning.
/// Example (max, 256 threads): s = 128, 64 under __syncthreads, then 32 ... 1 in warp 0 -> sdata[0].
template <int BlockThreads, typename Acc, typename Op>
__device__ Acc block_tree_unrolled(Acc* sdata, int tid, Op op)
{
  static_assert(BlockThreads >= 2 * warp_size && (BlockThreads & (BlockThreads - 1)) == 0,
                "a power-of-two block of at least 64 threads");
#pragma unroll
  for (int s = BlockThreads / 2; s > warp_size; s /= 2) {
    if (tid < s) { sdata[tid] = op(sdata[tid], sdata[tid + s]); }
    __syncthreads();
  }
  // Only warp 0 touches sdata from here on: the other warps must not even read sdata[0], which
  // warp 0 is about to overwrite.
  if (tid < warp_size) { return last_warp_syncwarp(sdata, tid, op); }
  return ladder_identity<Acc, Op>();
}

/// Warp-wide reduction by __shfl_down_sync (full mask: every lane must call it, idle lanes with the
/// identity). Result valid in lane 0. Example (sum, lanes hold 0..31): lane 0 -> 496.
template <typename Acc, typename Op>
__device__ Acc warp_reduce_shfl(Acc v, Op op)
{
#pragma unroll
  for (int delta = warp_size / 2; delta > 0; delta /= 2) { v = op(v, __shfl_down_sync(full_warp_mask, v, delta)); }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Loading: 16-byte vectors where the type has one.

/// The 16-byte vector of T (width elements), its load (__ldg: the read-only path, which nvcc does
/// not always pick by itself from __restrict__) and the order its elements are folded in. Types
/// without one (the Kahan pairs of later passes) are read one at a time (width 1).
template <typename T>
struct ladder_vector {
  static constexpr int width = 1;
  using type = T;
  __device__ static type load(type const* p) { return *p; }
  template <typename F>
  __device__ static void for_each(type const& v, F&& f)
  {
    f(v);
  }
};
/// The 16-byte vector V of Width (4: x, y, z, w; 2: x, y) elements of T.
template <typename T, typename V, int Width>
struct ladder_vector16 {
  static_assert(Width == 2 || Width == 4, "16-byte vectors of 2 or 4 elements");
  static constexpr int width = Width;
  using type = V;
  __device__ static type load(type const* p) { return __ldg(p); }
  template <typename F>
  __device__ static void for_each(type const& v, F&& f)
  {
    f(static_cast<T>(v.x));
    f(static_cast<T>(v.y));
    if constexpr (Width == 4) {
      f(static_cast<T>(v.z));
      f(static_cast<T>(v.w));
    }
  }
};
template <>
struct ladder_vector<std::int32_t> : ladder_vector16<std::int32_t, int4, 4> {};
template <>
struct ladder_vector<float> : ladder_vector16<float, float4, 4> {};
template <>
struct ladder_vector<std::int64_t> : ladder_vector16<std::int64_t, longlong2, 2> {};
template <>
struct ladder_vector<double> : ladder_vector16<double, double2, 2> {};

/// Folds this thread's share of in[0, n) into `state` with state = fold(state, element).
/// Mapping: the vectors between the first and the last 16-byte boundary inside the range go
///   grid-stride over every thread of the grid, `Loads` independent vector loads per thread per
///   iteration and then one at a time; the elements before the first boundary (head, when `in`
///   is not 16-byte aligned) and after the last whole vector (tail), fewer than two vectors in
///   all, are strided over the threads the same way (leftover j to thread j mod grid size).
/// Preconditions: `in` is aligned to sizeof(T); n elements readable.
/// Result: the thread's state; over the whole grid every element is folded exactly once.
/// Example (float, `in` 4 bytes past a 16-byte boundary, n = 13, a grid of 2 threads): head =
///   in[0..2], vectors in[3..6] (thread 0) and in[7..10] (thread 1), tail in[11..12]; leftovers
///   in[0], in[1], in[2], in[11], in[12] go to threads 0, 1, 0, 1, 0.
template <int Loads, typename T, typename State, typename Fold>
__device__ State fold_grid_stride(T const* __restrict__ in, std::uint64_t n, State state, Fold const& fold)
{
  using vec = ladder_vector<T>;
  using vec_t = typename vec::type;
  auto const step = [&](auto x) { state = fold(state, x); };
  std::uint64_t const tid = global_thread_index();
  std::uint64_t const stride = grid_threads();

  std::uint64_t head = 0;
  if constexpr (vec::width > 1) {
    auto const misalign = reinterpret_cast<std::uintptr_t>(in) % sizeof(vec_t);
    head = misalign == 0 ? 0 : (sizeof(vec_t) - misalign) / sizeof(T);
    head = head < n ? head : n;
  }
  std::uint64_t const vectors = (n - head) / vec::width;
  auto const* const v = reinterpret_cast<vec_t const*>(in + head);

  std::uint64_t i = tid;
  for (; i + (Loads - 1) * stride < vectors; i += Loads * stride) {
    vec_t buf[Loads];
#pragma unroll
    for (int k = 0; k < Loads; ++k) { buf[k] = vec::load(v + i + static_cast<std::uint64_t>(k) * stride); }
#pragma unroll
    for (int k = 0; k < Loads; ++k) { vec::for_each(buf[k], step); }
  }
  for (; i < vectors; i += stride) { vec::for_each(vec::load(v + i), step); }

  std::uint64_t const tail_begin = head + vectors * vec::width;
  std::uint64_t const leftovers = head + (n - tail_begin);
  for (std::uint64_t j = tid; j < leftovers; j += stride) { step(j < head ? in[j] : in[tail_begin + (j - head)]); }
  return state;
}

}  // namespace heightgrid::detail
