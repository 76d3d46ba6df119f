#pragma once
// reduce_mode::hybrid for min/max/range/count (no sums), route hybrid_route::tiles of plan_hybrid
// (heightgrid/kernels/hybrid_plan.hpp, which also picks the thread- and warp-per-cell routes and
// every number below): tiles of 32 cells, each cell reduced by its own lane when it is small and by
// the whole warp with coalesced loads when it is not; tiles too big for one warp are queued and cut
// into chunks that many warps share.
// Two kernels:
//  1. reduce_balanced_tile_kernel: each warp owns a tile of 32 consecutive cells (lane l: cell 32 t + l)
//     (reduce_balanced_run_kernel: K consecutive cells per lane, hybrid_plan::cells_per_lane).
//     - every cell of the tile has at most lane_max points: each lane reduces its own cell (the
//       thread mapping: nothing is cheaper on an even grid);
//     - otherwise, when the tile holds at most warp_max points: cells of at most lane_max points are
//       still reduced by their lane; then the warp reduces each bigger cell in turn, lane l loading
//       points l, l + 32, ... (coalesced, 4 loads in flight per lane), and shuffles the result to
//       the cell's lane;
//     - otherwise the tile is queued, cut into chunks of hybrid_plan::chunk_points points.
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
// Why the code looks as it does (the measurements, and what was tried and dropped, are in
// docs/benchmarks-history.md, "Hybrid mode"): kernel 1 stays at 32 registers (full occupancy: it
// is latency-bound on sparse grids); a lane folds in steps of 4 loads, not unrolled, with a
// predicated 1-3-point tail; big cells get the whole warp with coalesced loads and native global
// atomics; each tile's points are prefetched into L1.

#include "detail/reduce/cell_store.cuh"
#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/launch.cuh"
#include "detail/infra/ordered_bits.cuh"
#include "detail/infra/warp_reduce.cuh"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/hybrid_plan.hpp"

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
  /// it at 32 registers (a 38-register build was 3-21 % slower).
  static constexpr int resident_warps_per_sm = 64;
  /// Warps per block of the tile kernel (hybrid_plan::tile_warps_per_block takes one of the two):
  /// on thin grids a few tiles with a bigger cell hold up a block's SM slot.
  static constexpr int tile_warps_per_block = hybrid_plan_policy::tile_warps_per_block;
  static constexpr int sparse_tile_warps_per_block = hybrid_plan_policy::thin_tile_warps_per_block;
  /// Blocks of the run kernel (K > 1 cells per lane, 40 registers) that must fit on one SM.
  static constexpr int run_tile_min_blocks_per_sm = 6;
  /// Independent loads in flight per lane, in a lane's run and in the warp's coalesced loop.
  static constexpr int loads_in_flight = 4;
  /// Kernel 2's grid: one warp per possible chunk, capped at this many times the blocks the device
  /// holds at once (queried): more waves left warps idle, fewer left the last wave unbalanced.
  static constexpr unsigned int chunk_grid_waves = 4;
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
/// lane_max points, which plan_hybrid caps at max_lane_points): fewer instructions than 64-bit.
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
    warp_min_max(wlo, whi);
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
/// waiting on memory once per step (faster on every kind but clustered, which it leaves as is).
/// Lane l takes the l-th line from the one holding b, if it starts before e (addresses, not line
/// numbers: fewer shifts).
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
  // left neighbour's end by a shuffle, which waits for the load (faster on nearly empty grids).
  // A whole tile (all but the last) loads them without clamping each index to num_cells.
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
///   per warp without a grid-stride loop measured faster, and so did blocks of 2 warps on thin
///   grids (hybrid_plan::tile_warps_per_block).
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
///   the queue sized as in launch_tiles.
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
///   32-bit positions are faster than 64-bit; small cells by their lane pay only on thin grids
///   (hybrid_plan::chunk_lane_max); capping it below 48 registers was slower.
/// Preconditions: kernel 1 has completed with this queue (stream order); blockDim.x ==
///   balanced_policy::block_threads; queue.chunk_points <= hybrid_plan_policy::max_chunk_points.
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
    // The chunk's first 512 points (32 lines) into L1 while its cells' bounds load (more was slower).
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

/// Blocks of kernel 2 that the current device holds at once (SMs x resident blocks per SM), looked
/// up once per device: the queries would otherwise sit between the two launches on every call.
inline unsigned int resident_chunk_blocks()
{
  int device = 0;
  HG_CUDA_TRY(cudaGetDevice(&device));
  static std::array<std::atomic<unsigned int>, 64> cache{};
  bool const cached = device >= 0 && device < static_cast<int>(cache.size());
  if (cached) {
    if (unsigned int const known = cache[static_cast<std::size_t>(device)].load(std::memory_order_relaxed)) {
      return known;
    }
  }
  int sms = 0;
  int per_sm = 0;
  HG_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  HG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_balanced_chunk_kernel,
                                                         balanced_policy::block_threads, 0));
  auto const blocks = static_cast<unsigned int>(std::max(sms, 1) * std::max(per_sm, 1));
  if (cached) { cache[static_cast<std::size_t>(device)].store(blocks, std::memory_order_relaxed); }
  return blocks;
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

/// Runs kernel 1, and kernel 2 when a tile may be queued, over every cell of `csr` as `plan`
/// (route tiles) says; `request` must not need sums. tiles_per_launch: hybrid_thresholds'
/// (0: as many as one launch holds).
/// Allocates the queue (stream-ordered, one allocation): 2 counters, a queued_tile (552 bytes) per
/// possible tile (plan.max_queued_tiles) and an owner (8 bytes) per possible chunk (plan.max_chunks).
inline void launch_tiles(device_csr_view const& csr, metric_request const& request, output_bands const& out,
                         float nodata, hybrid_plan const& plan, std::uint64_t tiles_per_launch, cudaStream_t stream)
{
  using policy = balanced_policy;
  int const cells_per_lane = static_cast<int>(plan.cells_per_lane);
  std::uint64_t const max_tiles = plan.max_queued_tiles;
  std::uint64_t const max_chunks = plan.max_chunks;

  // One allocation: counters, then the tiles, then the chunk owners (all 8-byte aligned).
  static_assert(sizeof(queued_tile) % sizeof(unsigned long long) == 0);
  std::uint64_t const words = max_tiles == 0 ? 0
                                             : 2 + max_tiles * (sizeof(queued_tile) / sizeof(unsigned long long)) +
                                                 max_chunks;
  device_buffer<unsigned long long> queue_memory(words, stream);
  tile_queue queue{nullptr, nullptr, nullptr, plan.chunk_points};
  if (words > 0) {
    HG_CUDA_TRY(cudaMemsetAsync(queue_memory.data(), 0, 2 * sizeof(unsigned long long), stream));
    queue.counters = queue_memory.data();
    queue.tiles = reinterpret_cast<queued_tile*>(queue_memory.data() + 2);
    queue.chunk_owner = queue_memory.data() + 2 + max_tiles * (sizeof(queued_tile) / sizeof(unsigned long long));
  }
  balanced_params const params{plan.lane_max, plan.warp_max};

  auto const tile_cells = std::uint64_t{warp_size} * static_cast<std::uint64_t>(cells_per_lane);
  auto const tiles = (csr.num_cells + tile_cells - 1) / tile_cells;
  if (cells_per_lane == 1) {
    int const warps = plan.tile_warps_per_block;
    band_set const bands = band_set_of(request);
    auto* const kernel =
      plan.all_small ? balanced_tile_kernel<true>(warps, bands) : balanced_tile_kernel<false>(warps, bands);
    // One warp per tile: as many launches as the grid limit (or tiles_per_launch) needs.
    std::uint64_t const most = max_grid_blocks * static_cast<std::uint64_t>(warps);
    std::uint64_t const per_launch = tiles_per_launch == 0 ? most : std::min(tiles_per_launch, most);
    for (std::uint64_t first_tile = 0; first_tile < tiles; first_tile += per_launch) {
      std::uint64_t const count = std::min(tiles - first_tile, per_launch);
      kernel<<<grid_blocks(count, static_cast<std::uint64_t>(warps)), static_cast<unsigned int>(warps * warp_size), 0,
               stream>>>(csr.offsets, csr.z, csr.num_cells, params, queue, out, nodata, first_tile,
                         first_tile + count);
      HG_CUDA_CHECK_LAUNCH();
    }
  } else {
    auto* const kernel =
      plan.all_small ? balanced_run_kernel<true>(cells_per_lane) : balanced_run_kernel<false>(cells_per_lane);
    kernel<<<grid_blocks(tiles, policy::warps_per_block), policy::block_threads, 0, stream>>>(
      csr.offsets, csr.z, csr.num_cells, params, queue, out, nodata);
    HG_CUDA_CHECK_LAUNCH();
  }
  if (max_tiles == 0) { return; }

  // One warp per possible chunk, up to chunk_grid_waves times what the device holds at once: warps
  // past the chunks actually queued exit at once, and the block scheduler hands the real ones out
  // as blocks finish.
  auto const chunk_blocks = std::min<unsigned int>(grid_blocks(max_chunks, policy::warps_per_block),
                                                   policy::chunk_grid_waves * resident_chunk_blocks());
  reduce_balanced_chunk_kernel<<<chunk_blocks, policy::block_threads, 0, stream>>>(
    csr.offsets, csr.z, csr.num_cells, queue, out, nodata, plan.chunk_lane_max);
  HG_CUDA_CHECK_LAUNCH();
}

}  // namespace heightgrid::detail
