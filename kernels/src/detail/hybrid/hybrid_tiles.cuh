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

#include "detail/hybrid/hybrid_fold.cuh"
#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace heightgrid::detail {

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
