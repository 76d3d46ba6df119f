#pragma once
// reduce_mode::hybrid for min/max/range/count (no sums): tiles of 32 cells whose *points* are split
// evenly over the lanes, so that no lane waits for its neighbour's big cell.
//
// Two kernels:
//  1. reduce_balanced_tile_kernel: warp w owns tiles of 32 consecutive cells (lane l: cell 32 t + l).
//     - every cell of the tile has at most lane_max points: each lane reduces its own cell (the
//       thread mapping: nothing is cheaper on an even grid);
//     - otherwise, when the tile holds at most warp_max points: the tile's points, a contiguous
//       CSR range, are cut into 32 equal shares, one per lane; a lane folds its share cell by cell
//       into the tile's per-cell slots in shared memory (atomicMin/atomicMax on ordered bits), then
//       each lane stores its own cell from the slots;
//     - otherwise the tile is queued, cut into chunks of split_chunk_points points.
//  2. reduce_balanced_chunk_kernel: one warp per queued chunk: the same even split over the chunk's
//     points, each cell's part merged into the tile's slots in global memory with atomicMin/
//     atomicMax on order-preserving bits; the
//     warp that finishes the tile's last chunk stores its 32 cells.
// Every cell is stored exactly once. min/max/range/count equal reduce_cells_cpu's bit for bit: min
// and max are exact whatever the order in which partial results merge (z holds no NaN, and no
// -0.0: point_filter turns it into +0.0, so ties are between equal bit patterns).

#include "detail/cell_store.cuh"
#include "detail/cuda_check.cuh"
#include "detail/device_buffer.cuh"
#include "detail/launch.cuh"
#include "detail/ordered_bits.cuh"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/hybrid_tuning.hpp"

#include <cuda/std/limits>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

namespace heightgrid::detail {

struct balanced_policy {
  static constexpr int warps_per_block = 8;
  static constexpr int block_threads = warps_per_block * warp_size;
  /// Independent loads per step when a lane folds a run of points.
  static constexpr int lane_loads_in_flight = 4;
  /// Blocks per SM of the chunk kernel (see hybrid_policy::split_blocks_per_sm).
  static constexpr int chunk_blocks_per_sm = 4;
  /// Grids of fewer points than this cut queued tiles into chunks of at most small_grid_chunk_points
  /// (8 per lane): a whole small file in one cell then spreads over many warps, as `warp` mode
  /// does (real LAS files, docs/benchmarks.md).
  static constexpr std::uint64_t small_grid_points = std::uint64_t{1} << 22;
  static constexpr std::uint64_t small_grid_chunk_points = 256;
};

/// One warp's tile in shared memory: the end (CSR position) of each of its 32 cells, and each
/// cell's running min and max as ordered bits.
struct tile_slots {
  std::uint64_t end[warp_size];
  unsigned long long lo[warp_size];
  unsigned long long hi[warp_size];
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

/// One lane folds z[i, stop) into (lo, hi), lane_loads_in_flight independent loads per step and
/// the rest one by one. (Measured on an H100: padding the last step with repeated loads instead, so
/// that every step has all its loads in flight, was 7-20 % slower: short runs then issue 4 loads
/// for 1 or 2 points.)
__device__ inline void fold_run(double const* __restrict__ z, std::uint64_t i, std::uint64_t stop, double& lo,
                                double& hi)
{
  constexpr int step = balanced_policy::lane_loads_in_flight;
  for (; i + step <= stop; i += step) {
    double v[step];
#pragma unroll
    for (int k = 0; k < step; ++k) { v[k] = __ldg(z + i + k); }
#pragma unroll
    for (int k = 0; k < step; ++k) {
      lo = min_of(lo, v[k]);
      hi = max_of(hi, v[k]);
    }
  }
  for (; i < stop; ++i) {
    double const v = __ldg(z + i);
    lo = min_of(lo, v);
    hi = max_of(hi, v);
  }
}

/// The warp folds z[b, e) (inside the tile of `s`: s.end[31] >= e) into s.lo / s.hi: lane l takes
/// the l-th of 32 equal shares, finds the cell of its first point by binary search over s.end, and
/// merges one (lo, hi) per cell it touches with shared-memory atomicMin/atomicMax on ordered bits.
/// Every lane calls it; the caller synchronizes the warp before (s.end and the slots are set) and
/// after (the slots are complete). (Measured on an H100: recording each share's partials in
/// per-lane slots and combining them in lane order instead of the atomics was 10-30 % slower.)
/// Example: ends=[3,3,9,...] b=0 e=9: shares of 1 point; lane 0 folds z[0] into cell 0, lane 3
///   z[3] into cell 2 (cell 1 is empty), lanes 9-31 have nothing.
__device__ inline void fold_balanced(double const* __restrict__ z, tile_slots& s, std::uint64_t b, std::uint64_t e,
                                     int lane)
{
  std::uint64_t const total = e - b;
  std::uint64_t const share = (total + warp_size - 1) / warp_size;
  std::uint64_t const first = static_cast<std::uint64_t>(lane) * share;
  std::uint64_t const offset = first < total ? first : total;
  std::uint64_t i = b + offset;
  std::uint64_t const stop = b + (offset + share < total ? offset + share : total);
  if (i >= stop) { return; }
  // The first cell whose end is past i: s.end is non-decreasing and s.end[31] > i.
  int c = 0;
#pragma unroll
  for (int step = warp_size / 2; step > 0; step /= 2) {
    if (s.end[c + step - 1] <= i) { c += step; }
  }
  while (true) {
    std::uint64_t const cell_end = s.end[c];
    std::uint64_t const run_end = cell_end < stop ? cell_end : stop;
    double lo = ::cuda::std::numeric_limits<double>::infinity();
    double hi = -::cuda::std::numeric_limits<double>::infinity();
    fold_run(z, i, run_end, lo, hi);
    atomicMin(&s.lo[c], ordered_bits(lo));
    atomicMax(&s.hi[c], ordered_bits(hi));
    i = run_end;
    if (i >= stop) { break; }
    do { ++c; } while (s.end[c] <= i);  // skip empty cells; bounded: s.end[31] >= stop > i
  }
}

/// Runs per tile of kernel 1 and per chunk of kernel 2, as parameters.
struct balanced_params {
  std::uint64_t lane_max;  ///< hybrid_thresholds::lane_max_points
  std::uint64_t warp_max;  ///< hybrid_thresholds::warp_max_points
};

/// Kernel 1.
/// Mapping: one warp per tile of 32 consecutive cells, grid-stride over tiles. Lane l reads
///   offsets[c] and offsets[c + 1] of its cell c. Then
///   the tile is reduced lane per cell, split evenly over the lanes, or queued (see the file
///   comment); a lane stores its own cell (coalesced over the tile) unless the tile was queued.
///   AllSmall: the caller knows that no cell has more than lane_max points, so every tile takes
///   the lane-per-cell path and the other paths are not compiled in (fewer registers).
/// Preconditions: offsets has num_cells + 1 non-decreasing entries, z has offsets[num_cells] entries
///   without NaN or -0.0; blockDim.x == balanced_policy::block_threads; queue.counters zeroed and
///   the queue sized as in launch_balanced.
/// Result: the requested bands of every cell of every tile not queued, once the kernel has completed.
/// Partial tiles: lanes past num_cells have end = offsets[num_cells], so n = 0; they take part in
///   every shuffle, ballot and share, and store nothing.
/// Example (lane_max 2, warp_max 8): offsets=[0,1,6,6,8] z=[4, 8,6,7,5,3, 2,9]: one tile of 8
///   points, cell 1 has 5 > 2: split evenly, shares of 1 point (lanes 0-7); slots end up
///   lo=[4,3,+inf,2] hi=[4,8,-inf,9]: min=[4,3,nodata,2], range=[0,5,nodata,7].
template <bool AllSmall>
static __global__ void __launch_bounds__(balanced_policy::block_threads)
  reduce_balanced_tile_kernel(point_offset const* __restrict__ offsets, double const* __restrict__ z,
                              std::uint64_t num_cells, balanced_params params, tile_queue queue, output_bands out,
                              float nodata)
{
  using policy = balanced_policy;
  __shared__ tile_slots slots[policy::warps_per_block];
  int const warp = static_cast<int>(threadIdx.x) / warp_size;
  int const lane = static_cast<int>(threadIdx.x) % warp_size;
  tile_slots& s = slots[warp];
  std::uint64_t const tiles = (num_cells + warp_size - 1) / warp_size;
  std::uint64_t const warp_stride = static_cast<std::uint64_t>(gridDim.x) * policy::warps_per_block;

  for (std::uint64_t tile = static_cast<std::uint64_t>(blockIdx.x) * policy::warps_per_block +
                            static_cast<std::uint64_t>(warp);
       tile < tiles; tile += warp_stride) {
    std::uint64_t const first = tile * warp_size;
    std::uint64_t const cell = first + static_cast<std::uint64_t>(lane);
    // Both bounds from memory (two overlapping coalesced loads, as the thread mapping does), not the
    // left neighbour's end by a shuffle, which waits for the load. Measured on an H100 (compare,
    // repeat 20): 78-85 us instead of 93 us on the real files gridded into millions of mostly
    // empty cells; 1-3 % slower at 10^8 points (uniform 0.341 vs 0.338 ms, lidar 0.361 vs 0.350).
    std::uint64_t const begin = offsets[cell < num_cells ? cell : num_cells];
    std::uint64_t const end = offsets[cell < num_cells ? cell + 1 : num_cells];
    std::uint64_t const n = end - begin;

    double lo = ::cuda::std::numeric_limits<double>::infinity();
    double hi = -::cuda::std::numeric_limits<double>::infinity();
    if (AllSmall || __all_sync(full_warp_mask, n <= params.lane_max)) {
      fold_run(z, begin, end, lo, hi);
    } else {
      std::uint64_t const tile_begin = __shfl_sync(full_warp_mask, begin, 0);
      std::uint64_t const tile_end = __shfl_sync(full_warp_mask, end, warp_size - 1);
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
        continue;  // warp-uniform: kernel 2 stores this tile
      }
      s.end[lane] = end;
      s.lo[lane] = ordered_plus_inf;
      s.hi[lane] = ordered_minus_inf;
      __syncwarp();
      fold_balanced(z, s, tile_begin, tile_end, lane);
      __syncwarp();
      lo = from_ordered_bits(s.lo[lane]);
      hi = from_ordered_bits(s.hi[lane]);
      __syncwarp();  // every lane has read its slots before the next tile resets them
    }
    if (cell < num_cells) { store_cell(out, cell, cell_moments{n, lo, hi, 0.0, 0.0}, nodata); }
  }
}

/// Kernel 2.
/// Mapping: one warp per queued chunk, grid-stride over queue.counters[1] chunks. The warp loads
///   its tile's cell ends, folds the chunk's points evenly split over its lanes into shared slots,
///   merges the slots it touched into the tile's global slots (atomicMin/atomicMax), fences, and
///   counts the chunk done; the warp that counts the tile's last chunk fences and stores the
///   tile's 32 cells.
/// Preconditions: kernel 1 has completed with this queue (stream order); blockDim.x ==
///   balanced_policy::block_threads.
/// Result: the requested bands of every cell of every queued tile, once the kernel has completed.
/// Example: a queued tile of 10 points with chunk_points 4 has chunks [0,4) [4,8) [8,10); three
///   warps fold them in any order; the third to finish stores the tile's cells.
static __global__ void __launch_bounds__(balanced_policy::block_threads)
  reduce_balanced_chunk_kernel(point_offset const* __restrict__ offsets, double const* __restrict__ z,
                               std::uint64_t num_cells, tile_queue queue, output_bands out, float nodata)
{
  using policy = balanced_policy;
  __shared__ tile_slots slots[policy::warps_per_block];
  int const warp = static_cast<int>(threadIdx.x) / warp_size;
  int const lane = static_cast<int>(threadIdx.x) % warp_size;
  tile_slots& s = slots[warp];
  std::uint64_t const chunks = queue.counters[1];
  std::uint64_t const warp_stride = static_cast<std::uint64_t>(gridDim.x) * policy::warps_per_block;
  std::uint64_t const size = queue.chunk_points;

  for (std::uint64_t c = static_cast<std::uint64_t>(blockIdx.x) * policy::warps_per_block +
                         static_cast<std::uint64_t>(warp);
       c < chunks; c += warp_stride) {
    std::uint64_t const slot = queue.chunk_owner[c];
    queued_tile& q = queue.tiles[slot];
    std::uint64_t const first = q.first_cell;
    std::uint64_t const tile_begin = q.begin;
    std::uint64_t const tile_n = q.n;
    std::uint64_t const first_chunk = q.first_chunk;
    std::uint64_t const tile_chunks = (tile_n + size - 1) / size;
    std::uint64_t const b = tile_begin + (c - first_chunk) * size;
    std::uint64_t const e = b + size < tile_begin + tile_n ? b + size : tile_begin + tile_n;

    std::uint64_t const cell = first + static_cast<std::uint64_t>(lane);
    std::uint64_t const end = offsets[cell < num_cells ? cell + 1 : num_cells];
    __syncwarp();  // every lane is done with the previous chunk's slots
    s.end[lane] = end;
    s.lo[lane] = ordered_plus_inf;
    s.hi[lane] = ordered_minus_inf;
    __syncwarp();
    fold_balanced(z, s, b, e, lane);
    __syncwarp();
    if (s.lo[lane] != ordered_plus_inf) {  // this chunk has points of the lane's cell
      atomicMin(&q.lo[lane], s.lo[lane]);
      atomicMax(&q.hi[lane], s.hi[lane]);
    }
    __threadfence();  // each lane's merges are visible device-wide before the chunk counts as done
    __syncwarp();
    unsigned long long arrived = 0;
    if (lane == 0) { arrived = atomicAdd(&q.done, 1ULL); }
    arrived = __shfl_sync(full_warp_mask, arrived, 0);
    if (arrived + 1 != tile_chunks) { continue; }  // warp-uniform: not the tile's last chunk

    // The last chunk: every other chunk's merges are fenced before its count.
    __threadfence();
    __syncwarp();
    std::uint64_t const left_end = __shfl_up_sync(full_warp_mask, end, 1);
    std::uint64_t const begin = lane == 0 ? tile_begin : left_end;
    double const lo = from_ordered_bits(__ldcg(&q.lo[lane]));
    double const hi = from_ordered_bits(__ldcg(&q.hi[lane]));
    if (cell < num_cells) { store_cell(out, cell, cell_moments{end - begin, lo, hi, 0.0, 0.0}, nodata); }
  }
}

/// Most tiles kernel 1 can queue for `points` points: a queued tile holds more than warp_max.
inline std::uint64_t balanced_max_queued_tiles(std::uint64_t points, std::uint64_t warp_max) noexcept
{
  return warp_max == ::cuda::std::numeric_limits<std::uint64_t>::max() ? 0 : points / (warp_max + 1);
}

/// Runs kernel 1, and kernel 2 when a tile may be queued, over every cell of `csr` for a request
/// without sums. csr.max_cell_points (when known) leaves out what cannot happen: no cell above
/// lane_max -> the lane-per-cell kernel alone; no tile above warp_max -> no queue and no kernel 2.
/// Allocates the queue (stream-ordered): 2 counters, a queued_tile (552 bytes) per possible tile
/// and an owner (8 bytes) per possible chunk.
inline void launch_balanced(device_csr_view const& csr, output_bands const& out, float nodata,
                            hybrid_thresholds const& t, cudaStream_t stream)
{
  using policy = balanced_policy;
  if (csr.num_cells == 0) { return; }
  bool const known = csr.max_cell_points != device_csr_view::unknown;
  bool const all_small = known && csr.max_cell_points <= t.lane_max_points;
  // A tile holds at most 32 x the biggest cell.
  bool const no_queue = all_small || (known && csr.max_cell_points <= t.warp_max_points / warp_size);
  std::uint64_t const max_tiles = no_queue ? 0 : balanced_max_queued_tiles(csr.num_points, t.warp_max_points);
  // A small grid has few queued tiles: chunks of split_chunk_points would leave most of the GPU
  // idle while a few warps walk 64 points per lane. Smaller chunks put more warps on them.
  std::uint64_t const chunk_points = csr.num_points < policy::small_grid_points
                                       ? std::min<std::uint64_t>(t.split_chunk_points, policy::small_grid_chunk_points)
                                       : t.split_chunk_points;
  std::uint64_t const max_chunks = max_tiles == 0 ? 0 : csr.num_points / chunk_points + max_tiles;

  device_buffer<unsigned long long> counters(max_tiles == 0 ? 0 : 2, stream);
  counters.fill_bytes(0, stream);
  device_buffer<queued_tile> tiles_queued(max_tiles, stream);
  device_buffer<unsigned long long> owners(max_chunks, stream);
  tile_queue const queue{counters.data(), tiles_queued.data(), owners.data(), chunk_points};
  // Without a queue the warp budget is unbounded: kernel 1 never queues (and max_tiles is 0 only
  // when no tile can exceed it).
  balanced_params const params{t.lane_max_points,
                               max_tiles == 0 ? ::cuda::std::numeric_limits<std::uint64_t>::max() : t.warp_max_points};

  auto const tiles = (csr.num_cells + warp_size - 1) / warp_size;
  auto const blocks = grid_blocks(tiles, policy::warps_per_block);
  auto* const tile_kernel = all_small ? reduce_balanced_tile_kernel<true> : reduce_balanced_tile_kernel<false>;
  tile_kernel<<<blocks, policy::block_threads, 0, stream>>>(csr.offsets, csr.z, csr.num_cells, params, queue, out,
                                                             nodata);
  CUDA_CHECK_LAUNCH();
  if (max_tiles == 0) { return; }

  int device = 0;
  int sms = 0;
  CUDA_TRY(cudaGetDevice(&device));
  CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  auto const chunk_blocks = std::min<unsigned int>(grid_blocks(max_chunks, policy::warps_per_block),
                                                   static_cast<unsigned int>(sms * policy::chunk_blocks_per_sm));
  reduce_balanced_chunk_kernel<<<chunk_blocks, policy::block_threads, 0, stream>>>(csr.offsets, csr.z, csr.num_cells,
                                                                                   queue, out, nodata);
  CUDA_CHECK_LAUNCH();
}

}  // namespace heightgrid::detail
