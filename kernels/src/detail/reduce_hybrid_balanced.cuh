#pragma once
// reduce_mode::hybrid for min/max/range/count (no sums): tiles of 32 cells, each cell reduced by its
// own lane when it is small and by the whole warp with coalesced loads when it is not; tiles too big
// for one warp are queued and cut into chunks that many warps share.
//
// Which kernels run is chosen on the host from the grid's shape (launch_balanced):
//  - no cell above balanced_policy::thread_max_cell_points (1) points: the thread-per-cell kernel
//    (with cells_per_lane 0, i.e. auto, as the sparse rule below);
//  - a small grid (at most hybrid_thresholds::warp_grid_max_cells cells, none above
//    hybrid_warp_grid_max_cell_points): the warp-per-cell kernel alone; tiles of 32 cells would
//    leave most of the GPU idle (real LAS files of a few thousand cells);
//  - a sparse grid (under balanced_policy::sparse_mean_points points per cell) with no cell above
//    balanced_policy::sparse_thread_max_cell_points (64): the thread-per-cell kernel alone (real LAS
//    files gridded into millions of nearly empty cells);
//  - otherwise the two kernels below; on sparse grids with some bigger cell, kernel 1 gives each lane
//    a run of 2 consecutive cells (hybrid_thresholds::cells_per_lane).
// Two kernels:
//  1. reduce_balanced_tile_kernel: each warp owns a tile of 32 consecutive cells (lane l: cell 32 t + l)
//     (reduce_balanced_run_kernel: K consecutive cells per lane, see cells_per_lane).
//     - every cell of the tile has at most lane_max points: each lane reduces its own cell (the
//       thread mapping: nothing is cheaper on an even grid);
//     - otherwise, when the tile holds at most warp_max points: cells of at most lane_max points are
//       still reduced by their lane; then the warp reduces each bigger cell in turn, lane l loading
//       points l, l + 32, ... (coalesced, 4 loads in flight per lane), and shuffles the result to
//       the cell's lane;
//     - otherwise the tile is queued, cut into chunks of split_chunk_points points (at most 256 on
//       grids under 2^22 points, or under 4 points per cell without a cell above 65,536 points:
//       balanced_policy::small_grid_chunk_points, thin_chunk_points; warp_max is
//       hybrid_thresholds::warp_max_points, or queued_warp_max_points on grids of at least 4 points
//       per cell that hold a bigger cell than warp_max_points: launch_balanced).
//  2. reduce_balanced_chunk_kernel: one warp per queued chunk: the warp reduces the part of each of
//     the tile's cells that lies in the chunk (on thin grids a lane folds its own small cell's part
//     itself), and the cell's lane merges it into the tile's slots in global memory with native
//     64-bit atomicMin/atomicMax on order-preserving bits; the warp that finishes the tile's last
//     chunk stores its 32 cells.
// Kernel 1 stores the range band alone through its own instantiation (band_set::range: no tests of
// the other bands' pointers), every other request without sums as band_set::extremes.
// Every cell is stored exactly once. min/max/range/count equal reduce_cells_cpu's bit for bit: min
// and max are exact whatever the order in which partial results merge (z holds no NaN, and no
// -0.0: point_filter turns it into +0.0, so ties are between equal bit patterns).
//
// Measured on an H100 (docs/benchmarks.md, "Hybrid mode"), and why the code looks as it does:
//  - the tile kernel is latency-bound on sparse grids (skewed: 2 points per cell); it must stay at
//    32 registers (full occupancy: 64 warps per SM): a 38-register build was 3-21 %
//    slower on skewed, clustered and hot;
//  - a lane's run is folded in steps of 4 loads with the loop not unrolled, and its last 1-3 points
//    are loaded together under predicates: skewed 0.73 ms instead of 0.88 with the compiler's
//    unrolled loop and one-by-one remainder (lidar 0.38 vs 0.36 at lane_max 128, which is why
//    lane_max is 32: lidar's 33-77-point cells then go to the warp);
//  - warp-per-cell with coalesced loads and native global atomics replaced an even split of the
//    tile's points over the lanes merged with shared-memory atomics (64-bit atomicMin/Max on shared
//    memory compile to compare-and-swap loops): clustered 0.39 ms instead of 0.47.
//  Measured and dropped: staging a tile's points in shared memory with coalesced loads (skewed
//  0.87-0.89 ms vs 0.73-0.76), a resident-blocks grid-stride launch (5-21 % slower on every kind),
//  choosing an unrolled fold per tile by the tile's largest cell (skewed 0.79 vs 0.73), 8 loads per
//  step (skewed 0.76), rounds of 8 predicated loads (uniform 0.37 vs 0.34), queueing only tiles
//  that hold a cell above 128 points (clustered 0.43 vs 0.40), and runs of 2, 4 or 8 cells per
//  lane on denser grids (skewed 0.79 / 0.81 / 1.04 ms vs 0.73, uniform 0.44 / 0.51 / 1.07 vs 0.35;
//  a first version that stored each cell as the run passed it, from diverged lanes and 2-8 cells
//  apart, was 1.4-4x slower still: hence the shared-memory stage of run_stage), and warps taking
//  2 or 4 tiles with the next tile's bounds prefetched (skewed 0.64 / 0.63 ms vs 0.67, lidar 0.37 /
//  0.40 vs 0.35).
//  Also dropped (docs/benchmarks.md, "Sixth round"; skewed ms at the time 0.658-0.623): a warp
//  walking 2-16 consecutive tiles with the next tile's bounds in registers (0.76-0.79: spills at 32
//  registers; 0.68 at 40) or prefetched into L1 (0.69), with the next tile's points guessed and
//  prefetched into L1 or L2 (0.69-0.85), and a store that tests the requested bands as one mask
//  (skewed 0.586 vs 0.599, but uniform 0.395 vs 0.321).
//  Kept: prefetching each tile's points into L1 (prefetch_l1: skewed 0.66 ms vs 0.69, uniform 0.32
//  vs 0.34, lidar 0.35 vs 0.36).
//  Seventh round (docs/benchmarks.md; skewed / clustered ms at the time 0.583 / 0.365 on one
//  machine): kept the range-only store (skewed 0.567 vs 0.575 on another) and kernel 2's 32-bit
//  positions and lane path (reduce_balanced_chunk_kernel). Dropped: a programmatic dependent launch
//  of kernel 2 (griddepcontrol.launch_dependents in each of skewed's 781,000 blocks of kernel 1:
//  0.972 ms instead of 0.567); prefetching into L2 the bounds of the tile one resident wave ahead
//  (skewed 0.578 vs 0.582, clustered 0.359 vs 0.362, but uniform 0.335 vs 0.321 and lidar 0.380 vs
//  0.352), with its points too (0.60-0.72 on skewed); prefetching a whole chunk into L2 in kernel 2
//  (clustered 0.400 vs 0.365: more DRAM traffic, the prefetched lines evicted before use), or a
//  rolling window ahead of its fold into L1 or L2 (clustered +0.2 to +8.7 %); kernel 2 at 32 or 40
//  registers (clustered 0.383 / 0.373 vs 0.362).

#include "detail/cell_store.cuh"
#include "detail/cuda_check.cuh"
#include "detail/device_buffer.cuh"
#include "detail/launch.cuh"
#include "detail/ordered_bits.cuh"
#include "detail/reduce_thread.cuh"
#include "detail/reduce_warp.cuh"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/hybrid_tuning.hpp"

#include <cuda/std/limits>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace heightgrid::detail {

struct balanced_policy {
  static constexpr int warps_per_block = 8;
  static constexpr int block_threads = warps_per_block * warp_size;
  /// Warps the tile kernel (one cell per lane) must fit on one SM: 64, full occupancy, which caps
  /// it at 32 registers.
  static constexpr int resident_warps_per_sm = 64;
  /// Warps per block of the tile kernel: 8, or 2 on grids of fewer than sparse_tile_mean_points
  /// points per cell on average. Measured on an H100 (compare --repeat 10, 10^8 points, hybrid ms
  /// with blocks of 2 / 4 / 8 warps): skewed (2 points per cell) 0.580 / 0.580 / 0.597; uniform
  /// (10) 0.327 / 0.326 / 0.322, lidar 0.354 / 0.366 / 0.353, clustered 0.384 / 0.383 / 0.387.
  /// Likely why: a block's SM slot frees only when its slowest warp is done, and on a sparse grid
  /// a few tiles with a bigger cell hold up their block; on the denser kinds smaller blocks tied
  /// or lost. The bound of 4 lies between the densities measured, not swept.
  static constexpr int tile_warps_per_block = 8;
  static constexpr int sparse_tile_warps_per_block = 2;
  static constexpr double sparse_tile_mean_points = 4.0;
  /// Blocks of warps_per_block warps of kernel 1 with cells_per_lane > 1 that must fit on one SM
  /// (their runs keep K cell ends in registers: 40 registers).
  static constexpr int run_tile_min_blocks_per_sm = 6;
  /// Independent loads in flight per lane, in a lane's run and in the warp's coalesced loop.
  static constexpr int loads_in_flight = 4;
  /// Grids of fewer points than this cut queued tiles into chunks of at most small_grid_chunk_points
  /// (8 per lane): a whole small file in one cell then spreads over many warps, as `warp` mode
  /// does (real LAS files, docs/benchmarks.md).
  static constexpr std::uint64_t small_grid_points = std::uint64_t{1} << 22;
  static constexpr std::uint64_t small_grid_chunk_points = 256;
  /// Grids of fewer than sparse_tile_mean_points points per cell (thin: launch_balanced) whose
  /// biggest cell holds at most thin_chunk_max_cell_points points cut queued tiles into chunks of
  /// at most thin_chunk_points. Measured on an H100 (compare --repeat 20, 10^8 points, hybrid ms,
  /// two runs each on one machine): skewed (biggest cell 26,367) 0.5525 / 0.5526 with 256 points,
  /// 0.5525 / 0.5524 with 128, 0.5533 / 0.5529 with 384, 0.5585 / 0.5585 with 2,048: shorter
  /// chunks put more warps on its few queued tiles, which kernel 2 walks after kernel 1 (without
  /// kernel 2, i.e. with wrong results, skewed took 0.5439). But hybrid_sweep's hot kind (2 points
  /// per cell and 20 cells of 10^5-10^6 points) took 0.605 ms with 256-point chunks instead of
  /// 0.586: thousands of chunks merging into the same cells. The bound on the biggest cell lies
  /// between the two kinds, not swept; skewed at 10^9 (biggest cell 105,667) measured the same
  /// either way (5.291 vs 5.286 ms).
  static constexpr std::uint64_t thin_chunk_points = 256;
  static constexpr std::uint64_t thin_chunk_max_cell_points = 65536;
  /// Kernel 2 counts within a chunk in 32 bits: chunks are cut at most this long, whatever
  /// hybrid_thresholds::split_chunk_points says (positions + 3 x 32 still fit).
  static constexpr std::uint64_t max_chunk_points = std::uint64_t{1} << 31;
  /// cells_per_lane 0 (auto): grids of fewer points per cell than this on average (the real LAS
  /// files at 1 m: millions of nearly empty cells) run one thread per cell when no cell is above
  /// sparse_thread_max_cell_points, else kernel 1 with sparse_cells_per_lane cells per lane; denser
  /// grids 1 cell per lane. Measured on an H100 (docs/benchmarks.md, "Fourth round"): 10^8 cells holding 10^5
  /// points 0.580 ms with 2 cells per lane, 0.585 with 4, 0.845 with 8, 0.599 with 1, thread mode
  /// 0.587; real files of 0.66 and 15.6 million cells: thread mode 7.2 and 78.3 us, 2 cells per lane
  /// 8.2 and 80.5; on skewed (2 points per cell) 2 and 4 cells per lane lost (0.790 and 0.809 ms
  /// against 0.732), as on every denser kind.
  static constexpr double sparse_mean_points = 0.5;
  static constexpr int sparse_cells_per_lane = 2;
  /// A sparse grid (as above) whose biggest cell holds at most this many points runs the thread
  /// kernel. Measured on an H100 (gated compare, thread / hybrid ms before this rule, when the bound
  /// was lane_max = 32): 10^8 cells holding 3 x 10^7 points (`--synth skewed --zipf-s 0.3
  /// --density 0.3`, biggest cell 56) thread 0.687, 2 cells per lane 0.746; simple1_3.las (52,000
  /// cells, one of 47 points) thread 5.4 us, 2 cells per lane 5.7.
  static constexpr std::uint64_t sparse_thread_max_cell_points = 64;
  /// fold_lane counts in 32 bits: a lane never takes a cell of more points than this, whatever
  /// hybrid_thresholds::lane_max_points says.
  static constexpr std::uint64_t max_lane_points = 0xffffffffULL;
  /// Kernel 2's grid: one warp per possible chunk, capped at this many times the blocks the device
  /// holds at once (the bound on chunks is far above the chunks actually queued; the warps past
  /// them exit at once). Measured on an H100 (compare --repeat 10, 10^8 points, two runs each,
  /// hybrid ms with 1 / 4 / 32 times the resident blocks): clustered 0.404 / 0.389 / 0.394, lidar
  /// 0.352 / 0.354 / 0.360, uniform and skewed unchanged. A resident grid whose warps claimed
  /// chunks from an atomic counter was slower (clustered 0.412-0.425).
  static constexpr unsigned int chunk_grid_waves = 4;
  /// A grid whose biggest cell holds at most this many points runs the thread-per-cell kernel:
  /// nothing to balance, and one load per thread. Measured on an H100 (gated compare, repeat 100):
  /// simple1_4.las (22,826 cells, max 1) thread 4.0 us, tile kernel 4.2; 1.0_0.las (1 cell of 1
  /// point) thread 3.8 us, warp-per-cell 4.2.
  static constexpr std::uint64_t thread_max_cell_points = 1;
};

/// A queued tile (written whole by kernel 1) and its slots in global memory.
struct queued_tile {
  std::uint64_t first_cell;
  std::uint64_t begin;        ///< its points are z[begin, begin + n)
  std::uint64_t n;
  std::uint64_t first_chunk;  ///< chunks first_chunk .. first_chunk + ceil(n / chunk_points) - 1
  unsigned long long done;    ///< chunks finished (atomic)
  unsigned long long lo[warp_size];
  unsigned long long hi[warp_size];
};

/// Device pointers of the queue between the kernels.
struct tile_queue {
  unsigned long long* counters;     ///< [0] tiles queued, [1] chunks queued; zeroed before kernel 1
  queued_tile* tiles;
  unsigned long long* chunk_owner;  ///< chunk -> index into tiles
  std::uint64_t chunk_points;
};

/// One lane folds p[0, n) into (lo, hi): steps of loads_in_flight independent loads (the loop is
/// not unrolled: most runs are short, and the unrolled loop's extra branches cost more than its
/// deeper pipelining gains, see the file comment), then the last 1-3 points loaded together, each
/// load predicated on the point existing. The count is 32-bit (a lane's cell never holds more than
/// lane_max points, which launch_balanced caps at max_lane_points): on an H100 (compare --repeat
/// 10, skewed 10^8) 0.638 ms instead of 0.658 with a 64-bit count and end pointer.
/// Example: n = 6: one step of p[0..3], then p[4] and p[5] in one round.
__device__ inline void fold_lane(double const* __restrict__ p, std::uint32_t n, double& lo, double& hi)
{
  constexpr int step = balanced_policy::loads_in_flight;
#pragma unroll 1
  for (; n >= step; n -= step, p += step) {
    double v[step];
#pragma unroll
    for (int k = 0; k < step; ++k) { v[k] = __ldg(p + k); }
#pragma unroll
    for (int k = 0; k < step; ++k) {
      lo = min_of(lo, v[k]);
      hi = max_of(hi, v[k]);
    }
  }
  static_assert(step == 4, "the tail below handles up to 3 points");
  if (n != 0) {
    double const v0 = __ldg(p);
    double const v1 = n > 1 ? __ldg(p + 1) : v0;
    double const v2 = n > 2 ? __ldg(p + 2) : v0;
    lo = min_of(min_of(min_of(lo, v0), v1), v2);
    hi = max_of(max_of(max_of(hi, v0), v1), v2);
  }
}

/// The whole warp folds z[b, e) with coalesced loads: lane l takes b + l, b + l + 32, ...,
/// loads_in_flight of them per step, the last 1-3 together. Each lane's partial lands in (lo, hi);
/// they are not combined over the warp.
/// Index: the positions' type (kernel 2 folds within a chunk in 32 bits).
/// Example: b = 0, e = 40: lane 3 folds z[3] and z[35]; lane 9 folds z[9] only.
template <typename Index>
__device__ inline void fold_strided(double const* __restrict__ z, Index b, Index e, int lane, double& lo, double& hi)
{
  constexpr int step = balanced_policy::loads_in_flight;
  constexpr Index stride = warp_size;
  Index i = b + static_cast<Index>(lane);
#pragma unroll 1
  for (; i + (step - 1) * stride < e; i += step * stride) {
    double v[step];
#pragma unroll
    for (int k = 0; k < step; ++k) { v[k] = __ldg(z + i + k * stride); }
#pragma unroll
    for (int k = 0; k < step; ++k) {
      lo = min_of(lo, v[k]);
      hi = max_of(hi, v[k]);
    }
  }
  if (i < e) {
    double const v0 = __ldg(z + i);
    double const v1 = i + stride < e ? __ldg(z + i + stride) : v0;
    double const v2 = i + 2 * stride < e ? __ldg(z + i + 2 * stride) : v0;
    lo = min_of(min_of(min_of(lo, v0), v1), v2);
    hi = max_of(max_of(max_of(hi, v0), v1), v2);
  }
}

/// min and max over the warp, valid in every lane (xor butterfly). Every lane must call it.
__device__ inline void warp_min_max_all(double& lo, double& hi)
{
#pragma unroll
  for (int d = warp_size / 2; d > 0; d /= 2) {
    lo = min_of(lo, __shfl_xor_sync(full_warp_mask, lo, d));
    hi = max_of(hi, __shfl_xor_sync(full_warp_mask, hi, d));
  }
}

/// The warp reduces, one after the other, the cells of the lanes in `cells` (a warp-uniform lane
/// mask; lane l's cell is z[begin, end) of lane l), each clipped to [b, e), with fold_strided; the
/// cell's own lane receives its min and max in (lo, hi). Every lane must call it. Index: as
/// fold_strided.
/// Example: cells = 0b100, lane 2's cell [10, 200), b = 0, e = 100: the warp folds z[10, 100) and
///   lane 2 gets that part's min and max.
template <typename Index>
__device__ inline void warp_cells(double const* __restrict__ z, unsigned int cells, Index begin, Index end, Index b,
                                  Index e, int lane, double& lo, double& hi)
{
  for (unsigned int rest = cells; rest != 0; rest &= rest - 1) {
    int const owner = __ffs(static_cast<int>(rest)) - 1;
    Index const cb = __shfl_sync(full_warp_mask, begin, owner);
    Index const ce = __shfl_sync(full_warp_mask, end, owner);
    double wlo = ::cuda::std::numeric_limits<double>::infinity();
    double whi = -::cuda::std::numeric_limits<double>::infinity();
    fold_strided(z, cb > b ? cb : b, ce < e ? ce : e, lane, wlo, whi);
    warp_min_max_all(wlo, whi);
    if (lane == owner) {
      lo = wlo;
      hi = whi;
    }
  }
}

/// Runs per tile of kernel 1, as parameters.
struct balanced_params {
  std::uint64_t lane_max;  ///< hybrid_thresholds::lane_max_points
  std::uint64_t warp_max;  ///< hybrid_thresholds::warp_max_points
};

/// The 128-byte lines of [b, e) into L1, one line per lane, up to 32 lines (4 KiB, 512 points);
/// the prefetches do not wait. The lanes' own folds then find their later steps in L1 instead of
/// waiting on memory once per step. Measured on an H100 (compare, 10^8, hybrid ms without / with):
/// skewed 0.694 / 0.657, uniform 0.335 / 0.321, lidar 0.362 / 0.351, clustered 0.405 / 0.405.
/// Lane l takes the l-th line from the one holding b, if it starts before e (addresses, not line
/// numbers: skewed 0.614 ms instead of 0.623 with the line numbers' extra shifts).
/// Every lane must call it with the same b and e.
/// Example: b .. e spanning 3 lines: lanes 0-2 prefetch one line each.
__device__ inline void prefetch_l1(double const* b, double const* e, int lane)
{
  constexpr std::uintptr_t line_bytes = 128;
  auto const line = (reinterpret_cast<std::uintptr_t>(b) & ~(line_bytes - 1)) +
                    static_cast<std::uintptr_t>(lane) * line_bytes;
  if (b < e && line < reinterpret_cast<std::uintptr_t>(e)) { asm volatile("prefetch.global.L1 [%0];" ::"l"(line)); }
}

/// One tile of 32 consecutive cells from `first` (lane l: cell first + l), reduced lane per cell,
/// lanes plus warp per big cell, or queued (see the file comment); a lane stores its own cell
/// (coalesced over the tile) unless the tile was queued. Every lane must call it with the same first.
///   AllSmall: the caller knows that no cell has more than lane_max points, so the tile takes the
///   lane-per-cell path and the other paths are not compiled in.
///   Bands: the bands it stores (band_set::extremes, or range alone).
/// Partial tiles: lanes past num_cells have begin = end = offsets[num_cells], so n = 0; they take
///   part in every shuffle and ballot, and store nothing.
/// Example (lane_max 2, warp_max 8): offsets=[0,1,6,6,8] z=[4, 8,6,7,5,3, 2,9]: one tile of 8
///   points; cell 1 has 5 > 2 points: lanes 0 and 3 fold their cells, then the warp folds z[1, 6)
///   (lanes 0-4 one point each) and lane 1 gets (3, 8): min=[4,3,nodata,2], range=[0,5,nodata,7].
template <bool AllSmall, band_set Bands>
__device__ __forceinline__ void reduce_tile32(point_offset const* __restrict__ offsets, double const* __restrict__ z,
                                              std::uint64_t num_cells, std::uint64_t first,
                                              balanced_params const& params, tile_queue const& queue,
                                              output_bands const& out, float nodata, int lane)
{
  std::uint64_t const cell = first + static_cast<std::uint64_t>(lane);
  // Both bounds from memory (two overlapping coalesced loads, as the thread mapping does), not the
  // left neighbour's end by a shuffle, which waits for the load. Measured on an H100 (compare,
  // repeat 20): 78-85 us instead of 93 us on the real files gridded into millions of mostly
  // empty cells; 1-3 % slower at 10^8 points (uniform 0.341 vs 0.338 ms, lidar 0.361 vs 0.350).
  // A whole tile (all but the last) loads them without clamping each index to num_cells: skewed
  // 0.651 ms instead of 0.658, and 0.626 together with fold_lane's 32-bit count (H100, compare
  // --repeat 10, 10^8 points; uniform, lidar and clustered unchanged).
  std::uint64_t begin;
  std::uint64_t end;
  if (first + warp_size <= num_cells) {  // warp-uniform
    point_offset const* const bounds = offsets + cell;
    begin = bounds[0];
    end = bounds[1];
  } else {
    begin = offsets[cell < num_cells ? cell : num_cells];
    end = offsets[cell < num_cells ? cell + 1 : num_cells];
  }
  std::uint64_t const n = end - begin;
  bool const own = n <= params.lane_max;
  std::uint64_t const tile_begin = __shfl_sync(full_warp_mask, begin, 0);
  std::uint64_t const tile_end = __shfl_sync(full_warp_mask, end, warp_size - 1);
  prefetch_l1(z + tile_begin, z + tile_end, lane);

  double lo = ::cuda::std::numeric_limits<double>::infinity();
  double hi = -::cuda::std::numeric_limits<double>::infinity();
  if (AllSmall || __all_sync(full_warp_mask, own)) {
    fold_lane(z + begin, static_cast<std::uint32_t>(n), lo, hi);
  } else {
    if (tile_end - tile_begin > params.warp_max) {  // warp-uniform: queue the tile
      std::uint64_t const chunks = (tile_end - tile_begin + queue.chunk_points - 1) / queue.chunk_points;
      unsigned long long slot = 0;
      unsigned long long first_chunk = 0;
      if (lane == 0) {
        slot = atomicAdd(&queue.counters[0], 1ULL);
        first_chunk = atomicAdd(&queue.counters[1], static_cast<unsigned long long>(chunks));
      }
      slot = __shfl_sync(full_warp_mask, slot, 0);
      first_chunk = __shfl_sync(full_warp_mask, first_chunk, 0);
      queued_tile& q = queue.tiles[slot];
      if (lane == 0) {
        q.first_cell = first;
        q.begin = tile_begin;
        q.n = tile_end - tile_begin;
        q.first_chunk = first_chunk;
        q.done = 0;
      }
      q.lo[lane] = ordered_plus_inf;
      q.hi[lane] = ordered_minus_inf;
      for (std::uint64_t k = static_cast<std::uint64_t>(lane); k < chunks; k += warp_size) {
        queue.chunk_owner[first_chunk + k] = slot;
      }
      return;  // warp-uniform: kernel 2 stores this tile
    }
    if (own) { fold_lane(z + begin, static_cast<std::uint32_t>(n), lo, hi); }
    warp_cells(z, __ballot_sync(full_warp_mask, !own), begin, end, std::uint64_t{0},
               ::cuda::std::numeric_limits<std::uint64_t>::max(), lane, lo, hi);
  }
  if (cell < num_cells) { store_bands<Bands>(out, cell, cell_moments{n, lo, hi, 0.0, 0.0}, nodata); }
}

/// A warp's results of a run tile (kernel 1 with K > 1 cells per lane), staged in shared memory so
/// that the stores to the bands are coalesced: lane l writes cells K l .. K l + K - 1 as its run
/// passes them, then lane l stores cells l, l + 32, ... of the tile.
template <int K>
struct run_stage {
  double lo[warp_size * K];
  double hi[warp_size * K];
  std::uint32_t n[warp_size * K];
};

/// One lane folds the run p[0, e[K-1]) that holds its K consecutive cells, cell j ending at e[j]
/// (relative to the run's start, non-decreasing), and writes cell j's count, min and max to
/// stage slot first_slot + j as soon as the run passes the cell's end. Steps of loads_in_flight
/// independent loads (not unrolled, as fold_lane), the last 1-3 loaded together under predicates;
/// the point at index i first closes every cell that ends at or before i.
/// Example: K = 4, e = {2, 2, 5, 6}: p[0], p[1] -> slot 0, slot 1 empty, p[2..4] -> slot 2, p[5] ->
///   slot 3.
template <int K>
__device__ __forceinline__ void fold_run(double const* __restrict__ p, std::uint32_t (&e)[K], run_stage<K>& stage,
                                         int first_slot)
{
  constexpr int step = balanced_policy::loads_in_flight;
  std::uint32_t const n = e[K - 1];
  int slot = first_slot;
  int const stop_slot = first_slot + K;
  std::uint32_t cell_begin = 0;
  double lo = ::cuda::std::numeric_limits<double>::infinity();
  double hi = -::cuda::std::numeric_limits<double>::infinity();
  // Closes the current cell (ending at e[0]) and moves to the next: e shifts down by one.
  auto const next_cell = [&] {
    stage.n[slot] = e[0] - cell_begin;
    stage.lo[slot] = lo;
    stage.hi[slot] = hi;
    cell_begin = e[0];
#pragma unroll
    for (int j = 0; j + 1 < K; ++j) { e[j] = e[j + 1]; }
    ++slot;
    lo = ::cuda::std::numeric_limits<double>::infinity();
    hi = -::cuda::std::numeric_limits<double>::infinity();
  };
  auto const take = [&](std::uint32_t i, double v) {
    while (i >= e[0]) { next_cell(); }  // ends: e[K - 1] == n > i, so the shifts stop in time
    lo = min_of(lo, v);
    hi = max_of(hi, v);
  };
  std::uint32_t i = 0;
#pragma unroll 1
  for (; i + step <= n; i += step) {
    double v[step];
#pragma unroll
    for (int k = 0; k < step; ++k) { v[k] = __ldg(p + i + k); }
#pragma unroll
    for (int k = 0; k < step; ++k) { take(i + static_cast<std::uint32_t>(k), v[k]); }
  }
  static_assert(step == 4, "the tail below handles up to 3 points");
  if (i < n) {
    double const v0 = __ldg(p + i);
    double const v1 = i + 1 < n ? __ldg(p + i + 1) : v0;
    double const v2 = i + 2 < n ? __ldg(p + i + 2) : v0;
    take(i, v0);
    if (i + 1 < n) { take(i + 1, v1); }
    if (i + 2 < n) { take(i + 2, v2); }
  }
  while (slot < stop_slot) { next_cell(); }  // the last non-empty cell and the empty ones after it
}

/// Kernel 1, one cell per lane.
/// Mapping: warp w of block b reduces tile t = first_tile + Warps b + w if t < end_tile
///   (reduce_tile32; lane l: cell 32 t + l); no loop: the launches cover the tiles (several past
///   the grid limit, each its own range: a launch's last block may have warps past it). One tile
///   per warp without a grid-stride loop measured faster (skewed 0.602 ms instead of 0.623, H100,
///   compare --repeat 10, 10^8 points), and so did blocks of 2 warps on sparse grids
///   (balanced_policy::sparse_tile_warps_per_block).
/// Preconditions: as reduce_balanced_run_kernel, with blockDim.x == Warps x 32.
/// Result: the requested bands of every cell of every tile it covers that was not queued, once the
///   kernel has completed.
/// Example: 100 cells, Warps 2, first_tile 0, end_tile 4: blocks 0 and 1; warps 0-3 take tiles
///   0-3 (cells 0-31, ..., 96-99 with lanes 4-31 past the grid).
template <bool AllSmall, int Warps, band_set Bands>
static __global__ void __launch_bounds__(Warps * warp_size, balanced_policy::resident_warps_per_sm / Warps)
  reduce_balanced_tile_kernel(point_offset const* __restrict__ offsets, double const* __restrict__ z,
                              std::uint64_t num_cells, balanced_params params, tile_queue queue, output_bands out,
                              float nodata, std::uint64_t first_tile, std::uint64_t end_tile)
{
  unsigned int const warp = threadIdx.x / warp_size;  // unsigned: shifts, not signed division
  int const lane = static_cast<int>(threadIdx.x % warp_size);
  std::uint64_t const tile = first_tile + static_cast<std::uint64_t>(blockIdx.x) * Warps + warp;
  if (tile < end_tile) {
    reduce_tile32<AllSmall, Bands>(offsets, z, num_cells, tile * warp_size, params, queue, out, nodata, lane);
  }
}

/// Kernel 1, K > 1 cells per lane.
/// Mapping: one warp per tile of 32 x K consecutive cells, grid-stride over tiles.
///   Lane l owns the K cells from 32 K t + K l, reads their K + 1 bounds (independent loads)
///   and, when no cell of the warp's tile has more than lane_max points, folds its K cells as one
///   contiguous run (fold_run): a lane has K times the points in flight of one cell, which is what
///   sparse grids lack. Otherwise the tile is reduced as K tiles of 32 cells by reduce_tile32.
/// Preconditions: offsets has num_cells + 1 non-decreasing entries, z has offsets[num_cells] entries
///   without NaN or -0.0; blockDim.x == balanced_policy::block_threads; queue.counters zeroed and
///   the queue sized as in launch_balanced.
/// Result: the requested bands of every cell of every tile not queued, once the kernel has completed.
/// Example (K = 2, lane_max 3): offsets = [0,2,2,5,6]: lane 0 folds z[0, 2) into cell 0 and stores
///   cell 1 empty; lane 1 folds z[2, 6): z[2..4] -> cell 2, z[5] -> cell 3; lanes 2-31 own cells
///   past num_cells (empty runs) and store nothing.
template <bool AllSmall, int K>
static __global__ void __launch_bounds__(balanced_policy::block_threads, balanced_policy::run_tile_min_blocks_per_sm)
  reduce_balanced_run_kernel(point_offset const* __restrict__ offsets, double const* __restrict__ z,
                             std::uint64_t num_cells, balanced_params params, tile_queue queue, output_bands out,
                             float nodata)
{
  static_assert(K > 1, "one cell per lane is reduce_balanced_tile_kernel");
  using policy = balanced_policy;
  constexpr std::uint64_t tile_cells = std::uint64_t{warp_size} * K;
  constexpr std::uint64_t max_run_points = 0xffffffffULL;  // a run's positions are 32-bit
  int const warp = static_cast<int>(threadIdx.x) / warp_size;
  int const lane = static_cast<int>(threadIdx.x) % warp_size;
  std::uint64_t const tiles = (num_cells + tile_cells - 1) / tile_cells;
  std::uint64_t const warp_stride = static_cast<std::uint64_t>(gridDim.x) * policy::warps_per_block;
  for (std::uint64_t tile = static_cast<std::uint64_t>(blockIdx.x) * policy::warps_per_block +
                            static_cast<std::uint64_t>(warp);
       tile < tiles; tile += warp_stride) {
    std::uint64_t const first = tile * tile_cells;
    __shared__ run_stage<K> stage[policy::warps_per_block];
    std::uint64_t const cell = first + static_cast<std::uint64_t>(lane) * K;
    std::uint64_t const begin = offsets[cell < num_cells ? cell : num_cells];
    std::uint32_t e[K];
    bool small = true;
    std::uint64_t previous = begin;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      std::uint64_t const c = cell + static_cast<std::uint64_t>(j) + 1;
      std::uint64_t const end = offsets[c < num_cells ? c : num_cells];
      small = small && end - previous <= params.lane_max && end - begin <= max_run_points;
      e[j] = static_cast<std::uint32_t>(end - begin);  // exact whenever `small`
      previous = end;
    }
    if (AllSmall || __all_sync(full_warp_mask, small)) {
      run_stage<K>& mine = stage[warp];
      fold_run<K>(z + begin, e, mine, lane * K);
      __syncwarp();
#pragma unroll
      for (int j = 0; j < K; ++j) {
        int const slot = j * warp_size + lane;
        std::uint64_t const c = first + static_cast<std::uint64_t>(slot);
        if (c < num_cells) {
          store_bands<band_set::extremes>(out, c, cell_moments{mine.n[slot], mine.lo[slot], mine.hi[slot], 0.0, 0.0},
                                          nodata);
        }
      }
      __syncwarp();  // the stage is free for the next tile
    } else {
#pragma unroll 1
      for (int s = 0; s < K; ++s) {
        reduce_tile32<false, band_set::extremes>(offsets, z, num_cells,
                                                 first + static_cast<std::uint64_t>(s) * warp_size, params, queue,
                                                 out, nodata, lane);
      }
    }
  }
}

/// Kernel 2.
/// Mapping: one warp per queued chunk, grid-stride over queue.counters[1] chunks. The warp loads
///   its tile's cell bounds and clips them to the chunk, as 32-bit positions from the chunk's first
///   point; a lane whose cell has at most lane_max points folds the cell's part in the chunk itself
///   (fold_lane), and the warp reduces the part of every bigger cell in turn (warp_cells); each
///   cell's lane merges its part into the tile's global slots (atomicMin/atomicMax), fences, and the
///   warp counts the chunk done; the warp that counts the tile's last chunk fences and stores the
///   tile's 32 cells. lane_max 0: the warp reduces every cell.
///   Measured on an H100 (compare --repeat 20, 10^8 points, hybrid ms, one machine): with 64-bit
///   positions and every cell by the warp (the sixth round's kernel) skewed 0.5833 / clustered
///   0.3647; 32-bit positions 0.5810 / 0.3616; and small cells by their lane 0.5738 / 0.3644, hence
///   lane_max only on thin grids (launch_balanced). 32 or 40 registers instead of 48 (full or 75 %
///   occupancy) were slower on clustered: 0.3825 / 0.3727 ms.
/// Preconditions: kernel 1 has completed with this queue (stream order); blockDim.x ==
///   balanced_policy::block_threads; queue.chunk_points <= balanced_policy::max_chunk_points.
/// Result: the requested bands of every cell of every queued tile, once the kernel has completed.
/// Example: a queued tile of 10 points with chunk_points 4 has chunks [0,4) [4,8) [8,10); three
///   warps fold them in any order; the third to finish stores the tile's cells.
static __global__ void __launch_bounds__(balanced_policy::block_threads)
  reduce_balanced_chunk_kernel(point_offset const* __restrict__ offsets, double const* __restrict__ z,
                               std::uint64_t num_cells, tile_queue queue, output_bands out, float nodata,
                               std::uint32_t lane_max)
{
  using policy = balanced_policy;
  unsigned int const warp = threadIdx.x / warp_size;
  int const lane = static_cast<int>(threadIdx.x % warp_size);
  std::uint64_t const chunks = queue.counters[1];
  std::uint64_t const warp_stride = static_cast<std::uint64_t>(gridDim.x) * policy::warps_per_block;
  std::uint64_t const size = queue.chunk_points;

  for (std::uint64_t c = static_cast<std::uint64_t>(blockIdx.x) * policy::warps_per_block + warp; c < chunks;
       c += warp_stride) {
    std::uint64_t const slot = queue.chunk_owner[c];
    queued_tile& q = queue.tiles[slot];
    std::uint64_t const first = q.first_cell;
    std::uint64_t const tile_begin = q.begin;
    std::uint64_t const tile_n = q.n;
    std::uint64_t const first_chunk = q.first_chunk;
    std::uint64_t const b = tile_begin + (c - first_chunk) * size;  // the chunk is z[b, b + n)
    std::uint64_t const left = tile_begin + tile_n - b;
    auto const n = static_cast<std::uint32_t>(left < size ? left : size);
    double const* const zc = z + b;
    // The chunk's first 512 points (32 lines) into L1 while its cells' bounds load (measured on an
    // H100, compare --repeat 10, 10^8 points, two runs: clustered 0.381 ms instead of 0.386;
    // skewed and lidar unchanged; the first 1,024 points: 0.383, 2,048: 0.417).
    prefetch_l1(zc, zc + n, lane);

    std::uint64_t const cell = first + static_cast<std::uint64_t>(lane);
    std::uint64_t const end = offsets[cell < num_cells ? cell + 1 : num_cells];
    std::uint64_t const left_end = __shfl_up_sync(full_warp_mask, end, 1);
    std::uint64_t const begin = lane == 0 ? tile_begin : left_end;
    // The lane's cell within the chunk: [rb, re) from zc.
    auto const clip = [b, n](std::uint64_t p) -> std::uint32_t {
      return p <= b ? 0U : (p - b >= n ? n : static_cast<std::uint32_t>(p - b));
    };
    std::uint32_t const rb = clip(begin);
    std::uint32_t const re = clip(end);
    bool const touches = rb < re;  // this chunk holds points of the lane's cell
    bool const mine = touches && end - begin <= lane_max;
    double lo = ::cuda::std::numeric_limits<double>::infinity();
    double hi = -::cuda::std::numeric_limits<double>::infinity();
    if (mine) { fold_lane(zc + rb, re - rb, lo, hi); }
    warp_cells(zc, __ballot_sync(full_warp_mask, touches && !mine), rb, re, 0U, n, lane, lo, hi);
    if (touches) {
      atomicMin(&q.lo[lane], ordered_bits(lo));
      atomicMax(&q.hi[lane], ordered_bits(hi));
    }
    __threadfence();  // each lane's merges are visible device-wide before the chunk counts as done
    __syncwarp();
    unsigned long long arrived = 0;
    if (lane == 0) { arrived = atomicAdd(&q.done, 1ULL); }
    arrived = __shfl_sync(full_warp_mask, arrived, 0);
    if (arrived + 1 != (tile_n + size - 1) / size) { continue; }  // warp-uniform: not the tile's last chunk

    // The last chunk: every other chunk's merges are fenced before its count.
    __threadfence();
    __syncwarp();
    double const tile_lo = from_ordered_bits(__ldcg(&q.lo[lane]));
    double const tile_hi = from_ordered_bits(__ldcg(&q.hi[lane]));
    if (cell < num_cells) {
      store_bands<band_set::extremes>(out, cell, cell_moments{end - begin, tile_lo, tile_hi, 0.0, 0.0}, nodata);
    }
  }
}

/// Most tiles kernel 1 can queue for `points` points: a queued tile holds more than warp_max.
inline std::uint64_t balanced_max_queued_tiles(std::uint64_t points, std::uint64_t warp_max) noexcept
{
  return warp_max == ::cuda::std::numeric_limits<std::uint64_t>::max() ? 0 : points / (warp_max + 1);
}

/// Blocks of kernel 2 that the current device holds at once (SMs x resident blocks per SM), looked
/// up once per device: the queries would otherwise sit between the two launches on every call.
inline unsigned int resident_chunk_blocks()
{
  int device = 0;
  CUDA_TRY(cudaGetDevice(&device));
  static std::array<std::atomic<unsigned int>, 64> cache{};
  bool const cached = device >= 0 && device < static_cast<int>(cache.size());
  if (cached) {
    if (unsigned int const known = cache[static_cast<std::size_t>(device)].load(std::memory_order_relaxed)) {
      return known;
    }
  }
  int sms = 0;
  int per_sm = 0;
  CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_balanced_chunk_kernel,
                                                         balanced_policy::block_threads, 0));
  auto const blocks = static_cast<unsigned int>(std::max(sms, 1) * std::max(per_sm, 1));
  if (cached) { cache[static_cast<std::size_t>(device)].store(blocks, std::memory_order_relaxed); }
  return blocks;
}

/// Cells per lane of kernel 1: t.cells_per_lane, or when 0 (auto) balanced_policy::
/// sparse_cells_per_lane on a sparse grid (fewer than sparse_mean_points points per cell), else 1.
/// Examples: 10^7 cells holding 10^3 points -> 2; skewed (2 points per cell) -> 1.
inline int balanced_cells_per_lane(hybrid_thresholds const& t, bool sparse) noexcept
{
  if (t.cells_per_lane != 0) { return static_cast<int>(t.cells_per_lane); }
  return sparse ? balanced_policy::sparse_cells_per_lane : 1;
}

using balanced_tile_kernel_t = void (*)(point_offset const*, double const*, std::uint64_t, balanced_params, tile_queue,
                                        output_bands, float, std::uint64_t, std::uint64_t);
using balanced_run_kernel_t = void (*)(point_offset const*, double const*, std::uint64_t, balanced_params, tile_queue,
                                       output_bands, float);

/// Kernel 1 with one cell per lane in blocks of `warps` warps (2 or 8), storing `bands` (range
/// alone, or else extremes).
template <bool AllSmall>
balanced_tile_kernel_t balanced_tile_kernel(int warps, band_set bands) noexcept
{
  constexpr int sparse = balanced_policy::sparse_tile_warps_per_block;
  constexpr int dense = balanced_policy::tile_warps_per_block;
  if (bands == band_set::range) {
    return warps == sparse ? reduce_balanced_tile_kernel<AllSmall, sparse, band_set::range>
                           : reduce_balanced_tile_kernel<AllSmall, dense, band_set::range>;
  }
  return warps == sparse ? reduce_balanced_tile_kernel<AllSmall, sparse, band_set::extremes>
                         : reduce_balanced_tile_kernel<AllSmall, dense, band_set::extremes>;
}

/// Kernel 1 with 2, 4 or 8 cells per lane.
template <bool AllSmall>
balanced_run_kernel_t balanced_run_kernel(int cells_per_lane) noexcept
{
  switch (cells_per_lane) {
    case 4: return reduce_balanced_run_kernel<AllSmall, 4>;
    case 8: return reduce_balanced_run_kernel<AllSmall, 8>;
    default: return reduce_balanced_run_kernel<AllSmall, 2>;
  }
}

/// Runs kernel 1, and kernel 2 when a tile may be queued, over every cell of `csr` for `request`
/// (which must not need sums); or the warp-per-cell kernel alone for a small grid
/// (t.warp_grid_max_cells), the thread-per-cell kernel alone for a sparse one (see the file comment).
/// csr.max_cell_points (when known) leaves out what cannot happen: no cell above lane_max -> the
/// lane-per-cell paths alone; no tile above warp_max -> no queue and no kernel 2.
/// Allocates the queue (stream-ordered, one allocation): 2 counters, a queued_tile (552 bytes) per
/// possible tile (points / (warp_max + 1): about 1.1 bytes per point where queued_warp_max_points
/// applies, 0.27 otherwise) and an owner (8 bytes) per possible chunk.
inline void launch_balanced(device_csr_view const& csr, metric_request const& request, output_bands const& out,
                            float nodata, hybrid_thresholds const& t, cudaStream_t stream)
{
  using policy = balanced_policy;
  if (csr.num_cells == 0) { return; }
  bool const known = csr.max_cell_points != device_csr_view::unknown;
  if (known && t.cells_per_lane == 0 && csr.max_cell_points <= policy::thread_max_cell_points) {
    launch_thread_per_cell(csr, request, out, nodata, stream);
    return;
  }
  if (known && csr.num_cells <= t.warp_grid_max_cells && csr.max_cell_points <= hybrid_warp_grid_max_cell_points) {
    launch_warp_per_cell(csr, request, out, nodata, stream);
    return;
  }
  bool const sparse =
    static_cast<double>(csr.num_points) < policy::sparse_mean_points * static_cast<double>(csr.num_cells);
  if (known && sparse && t.cells_per_lane == 0 && csr.max_cell_points <= policy::sparse_thread_max_cell_points) {
    // Nearly empty cells, none big: one thread per cell measured best (see sparse_mean_points and
    // sparse_thread_max_cell_points).
    launch_thread_per_cell(csr, request, out, nodata, stream);
    return;
  }
  int const cells_per_lane = balanced_cells_per_lane(t, sparse);
  // A lane counts its cell's points in 32 bits (fold_lane).
  std::uint64_t const lane_max = std::min(t.lane_max_points, policy::max_lane_points);
  // Under sparse_tile_mean_points points per cell: blocks of 2 warps, and no queued_warp_max.
  bool const thin = static_cast<double>(csr.num_points) <
                    policy::sparse_tile_mean_points * static_cast<double>(csr.num_cells);
  // When some tile must be queued anyway (a cell above warp_max), queue from queued_warp_max on;
  // not on thin grids (skewed at 10^9: 5.41 ms with it, 5.37 without; at 10^8 no difference).
  std::uint64_t const warp_max = known && !thin && csr.max_cell_points > t.warp_max_points &&
                                     t.queued_warp_max_points != 0
                                   ? std::min(t.warp_max_points, t.queued_warp_max_points)
                                   : t.warp_max_points;
  // A run of K cells must fit 32-bit positions for kernel 1 to skip its size checks.
  bool const all_small = known && csr.max_cell_points <= lane_max &&
                         csr.max_cell_points <= 0xffffffffULL / static_cast<std::uint64_t>(cells_per_lane);
  // A tile holds at most 32 x the biggest cell.
  bool const no_queue = all_small || (known && csr.max_cell_points <= warp_max / warp_size);
  std::uint64_t const max_tiles = no_queue ? 0 : balanced_max_queued_tiles(csr.num_points, warp_max);
  // A small grid has few queued tiles: chunks of split_chunk_points would leave most of the GPU
  // idle while a few warps walk 64 points per lane. Smaller chunks put more warps on them; so they
  // do on thin grids without a huge cell (balanced_policy::thin_chunk_points).
  bool const thin_chunks = thin && known && csr.max_cell_points <= policy::thin_chunk_max_cell_points;
  std::uint64_t const small_chunk = csr.num_points < policy::small_grid_points ? policy::small_grid_chunk_points
                                    : thin_chunks                              ? policy::thin_chunk_points
                                                                               : t.split_chunk_points;
  std::uint64_t const chunk_points = std::min({t.split_chunk_points, small_chunk, policy::max_chunk_points});
  std::uint64_t const max_chunks = max_tiles == 0 ? 0 : csr.num_points / chunk_points + max_tiles;

  // One allocation: counters, then the tiles, then the chunk owners (all 8-byte aligned).
  static_assert(sizeof(queued_tile) % sizeof(unsigned long long) == 0);
  std::uint64_t const words = max_tiles == 0 ? 0
                                             : 2 + max_tiles * (sizeof(queued_tile) / sizeof(unsigned long long)) +
                                                 max_chunks;
  device_buffer<unsigned long long> queue_memory(words, stream);
  tile_queue queue{nullptr, nullptr, nullptr, chunk_points};
  if (words > 0) {
    CUDA_TRY(cudaMemsetAsync(queue_memory.data(), 0, 2 * sizeof(unsigned long long), stream));
    queue.counters = queue_memory.data();
    queue.tiles = reinterpret_cast<queued_tile*>(queue_memory.data() + 2);
    queue.chunk_owner = queue_memory.data() + 2 + max_tiles * (sizeof(queued_tile) / sizeof(unsigned long long));
  }
  // Without a queue the warp budget is unbounded: kernel 1 never queues (and max_tiles is 0 only
  // when no tile can exceed it).
  balanced_params const params{lane_max,
                               max_tiles == 0 ? ::cuda::std::numeric_limits<std::uint64_t>::max() : warp_max};

  auto const tile_cells = std::uint64_t{warp_size} * static_cast<std::uint64_t>(cells_per_lane);
  auto const tiles = (csr.num_cells + tile_cells - 1) / tile_cells;
  if (cells_per_lane == 1) {
    int const warps = thin ? policy::sparse_tile_warps_per_block : policy::tile_warps_per_block;
    band_set const bands = band_set_of(request);
    auto* const kernel =
      all_small ? balanced_tile_kernel<true>(warps, bands) : balanced_tile_kernel<false>(warps, bands);
    // One warp per tile: as many launches as the grid limit (or t.tiles_per_launch) needs.
    std::uint64_t const most = max_grid_blocks * static_cast<std::uint64_t>(warps);
    std::uint64_t const per_launch = t.tiles_per_launch == 0 ? most : std::min(t.tiles_per_launch, most);
    for (std::uint64_t first_tile = 0; first_tile < tiles; first_tile += per_launch) {
      std::uint64_t const count = std::min(tiles - first_tile, per_launch);
      kernel<<<grid_blocks(count, static_cast<std::uint64_t>(warps)), static_cast<unsigned int>(warps * warp_size), 0,
               stream>>>(csr.offsets, csr.z, csr.num_cells, params, queue, out, nodata, first_tile,
                         first_tile + count);
      CUDA_CHECK_LAUNCH();
    }
  } else {
    auto* const kernel =
      all_small ? balanced_run_kernel<true>(cells_per_lane) : balanced_run_kernel<false>(cells_per_lane);
    kernel<<<grid_blocks(tiles, policy::warps_per_block), policy::block_threads, 0, stream>>>(
      csr.offsets, csr.z, csr.num_cells, params, queue, out, nodata);
    CUDA_CHECK_LAUNCH();
  }
  if (max_tiles == 0) { return; }

  // One warp per possible chunk, up to chunk_grid_waves times what the device holds at once: warps
  // past the chunks actually queued exit at once, and the block scheduler hands the real ones out
  // as blocks finish (a resident grid-stride loop left its last round of chunks unbalanced).
  auto const chunk_blocks = std::min<unsigned int>(grid_blocks(max_chunks, policy::warps_per_block),
                                                   policy::chunk_grid_waves * resident_chunk_blocks());
  // On thin grids kernel 2's lanes fold their own small cells (see reduce_balanced_chunk_kernel).
  auto const chunk_lane_max = thin ? static_cast<std::uint32_t>(lane_max) : 0U;
  reduce_balanced_chunk_kernel<<<chunk_blocks, policy::block_threads, 0, stream>>>(csr.offsets, csr.z, csr.num_cells,
                                                                                   queue, out, nodata, chunk_lane_max);
  CUDA_CHECK_LAUNCH();
}

}  // namespace heightgrid::detail
