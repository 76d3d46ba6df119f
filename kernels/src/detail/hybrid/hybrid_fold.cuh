#pragma once
// What the hybrid tile and run kernels (hybrid_tiles.cuh) are made of: their policy, the queue of
// tiles too big for one warp, and the lanes' folds (a lane's own small cell in steps of 4 loads, a
// big cell by the whole warp with coalesced loads, a tile of 32 cells, a run of K cells a lane).

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

}  // namespace heightgrid::detail
