#pragma once
// reduce_mode::hybrid for requests with sums (mean/stddev), route hybrid_route::sums_tiles of
// plan_hybrid (heightgrid/kernels/hybrid_plan.hpp): one lane per small cell, the whole warp for
// bigger cells, many warps for the biggest. No pass over the data before the reduce.
// Two kernels:
//  1. reduce_warp_per_tile_kernel: warp w owns tiles of 32 consecutive cells, one per lane. Lanes
//     reduce their own cells up to lane_max_points; the warp reduces the bigger ones together while
//     their running total in the tile stays within warp_max_points; the remaining cells are queued,
//     cut into chunks of split_chunk_points.
//  2. reduce_warp_per_chunk_kernel: one warp per queued chunk; the last warp to finish a cell merges
//     its chunks' partials in chunk order and stores it. With nothing queued its warps read one
//     counter and exit. stddev runs it twice: the m2 pass needs the mean of the whole cell.
// Every cell is stored exactly once, by kernel 1 or by the last warp of its chunks in kernel 2.

#include "detail/reduce/cell_store.cuh"
#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/launch.cuh"
#include "detail/infra/warp_reduce.cuh"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/hybrid_plan.hpp"

#include <cuda/std/limits>
#include <cuda_runtime_api.h>
#include <vector_types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace heightgrid::detail {

/// Launch shapes (compile time: they feed __launch_bounds__ and <<< >>>).
struct hybrid_policy {
  static constexpr int warps_per_block = 8;
  static constexpr int block_threads = warps_per_block * warp_size;
  /// 16-byte loads in flight per lane when the warp reduces a range of global memory (8 doubles).
  static constexpr int vector_loads_per_lane = 4;
  /// 8-byte loads in flight per lane while a tile is staged into shared memory.
  static constexpr int stage_loads_per_lane = 8;
  /// Independent loads per step when a lane reduces its own cell.
  static constexpr int lane_loads_in_flight = 4;
  /// Blocks per SM of the split kernel: enough warps to stream a single huge cell at the full
  /// bandwidth, few enough that the launch with an empty queue costs next to nothing.
  static constexpr int split_blocks_per_sm = 4;
};

/// The thresholds as kernel 1 uses them.
struct hybrid_params {
  std::uint64_t lane_max;        ///< hybrid_thresholds::lane_max_points
  std::uint64_t warp_max;        ///< hybrid_thresholds::warp_max_points
  std::uint64_t stage_capacity;  ///< points of one warp's stage: 32 x stage_points_per_lane
};

/// A cell that kernel 1 handed to kernel 2. Plain aggregate (written whole by kernel 1).
struct split_cell {
  std::uint64_t cell;
  std::uint64_t begin;        ///< its points are z[begin, begin + n)
  std::uint64_t n;
  std::uint64_t first_chunk;  ///< its chunks: first_chunk .. first_chunk + ceil(n / chunk_points) - 1
  unsigned long long done;    ///< chunks finished in this pass (atomic; 0 when queued, reset for the m2 pass)
};

/// One chunk's lane-combined result (lo, hi, sum), or a split cell's merged one. In the m2 pass a
/// chunk's `sum` holds its sum of squared deviations.
struct chunk_partial {
  double lo;
  double hi;
  double sum;
};

/// Device pointers of the queue between the two kernels, sized for the most cells and chunks
/// kernel 1 can queue (hybrid_plan::max_split_cells, max_split_chunks).
struct split_queue {
  unsigned long long* counters;      ///< [0] cells queued, [1] chunks queued; zeroed before kernel 1
  split_cell* cells;                 ///< queued cells, in queue order
  unsigned long long* chunk_owner;   ///< chunk -> index into cells
  chunk_partial* partials;           ///< chunk -> its partial
  chunk_partial* merged;             ///< queued cell -> its first-pass result, for the m2 pass (stddev only)
  std::uint64_t chunk_points;        ///< hybrid_thresholds::split_chunk_points
};

/// z in global memory, read through the read-only path; indices are CSR positions.
struct global_points {
  double const* z;
  __device__ double operator[](std::uint64_t i) const { return __ldg(z + i); }
};

/// A tile's z staged in shared memory: CSR position i lives at stage[i - first].
struct staged_points {
  double const* stage;
  std::uint64_t first;
  __device__ double operator[](std::uint64_t i) const { return stage[i - first]; }
};

/// One lane visits [begin, end) in CSR order, `lane_loads_in_flight` independent loads per step;
/// f sees the values in order, so sums match reduce_cells_cpu's bit for bit.
template <typename Points, typename F>
__device__ void lane_for_each(Points const& src, std::uint64_t begin, std::uint64_t end, F&& f)
{
  constexpr int step = hybrid_policy::lane_loads_in_flight;
  std::uint64_t i = begin;
  for (; i + step <= end; i += step) {
    double v[step];
#pragma unroll
    for (int k = 0; k < step; ++k) { v[k] = src[i + k]; }
#pragma unroll
    for (int k = 0; k < step; ++k) { f(v[k]); }
  }
  for (; i < end; ++i) { f(src[i]); }
}

/// The whole warp visits [b, e) of a staged tile: lane l sees b + l, b + l + 32, ... (consecutive
/// lanes, consecutive words: no bank conflict beyond the two phases of a 64-bit access).
template <typename F>
__device__ void warp_for_each(staged_points const& src, std::uint64_t b, std::uint64_t e, int lane, F&& f)
{
  for (std::uint64_t i = b + static_cast<std::uint64_t>(lane); i < e; i += warp_size) { f(src[i]); }
}

/// The whole warp visits [b, e) of global memory with 16-byte loads, vector_loads_per_lane of them
/// in flight per lane: lane 0 takes z[b] alone when b is odd (so that the pairs start 16-byte
/// aligned; z itself is), lane 1 the last point when an odd number remains, and lane l the pairs
/// l, l + 32, ... of the rest. Every lane must call it with the same b and e.
/// Example: b=3 e=10: lane 0 takes z[3]; pairs (4,5) (6,7) (8,9) go to lanes 0, 1, 2.
template <typename F>
__device__ void warp_for_each(global_points const& src, std::uint64_t b, std::uint64_t e, int lane, F&& f)
{
  constexpr int loads = hybrid_policy::vector_loads_per_lane;
  constexpr std::uint64_t stride = warp_size;
  if (b >= e) { return; }
  std::uint64_t a = b;
  if ((b & 1U) != 0) {
    if (lane == 0) { f(src[b]); }
    a = b + 1;
  }
  if (((e - a) & 1U) != 0 && lane == 1) { f(src[e - 1]); }
  std::uint64_t const pairs = (e - a) / 2;
  auto const* const p = reinterpret_cast<double2 const*>(src.z + a);
  std::uint64_t j = static_cast<std::uint64_t>(lane);
  for (; j + (loads - 1) * stride < pairs; j += loads * stride) {
    double2 v[loads];
#pragma unroll
    for (int u = 0; u < loads; ++u) { v[u] = __ldg(p + j + static_cast<std::uint64_t>(u) * stride); }
#pragma unroll
    for (int u = 0; u < loads; ++u) {
      f(v[u].x);
      f(v[u].y);
    }
  }
  for (; j < pairs; j += stride) {
    double2 const v = __ldg(p + j);
    f(v.x);
    f(v.y);
  }
}

/// A lane reduces its own cell [begin, end) into m (whose n is set), in CSR order: min/max/range/
/// count and the sums are those of reduce_cells_cpu bit for bit. The m2 pass reads the cell again.
template <typename Points>
__device__ void lane_reduce(Points const& src, std::uint64_t begin, std::uint64_t end, bool want_m2,
                            cell_moments& m)
{
  lane_for_each(src, begin, end, [&](double v) {
    m.lo = min_of(m.lo, v);
    m.hi = max_of(m.hi, v);
    m.sum += v;
  });
  if (want_m2 && m.n > 0) {
    double const mean = cell_mean(m.sum, m.n);
    lane_for_each(src, begin, end, [&](double v) {
      double const d = v - mean;
      m.m2 += d * d;
    });
  }
}

/// The whole warp reduces the non-empty cell [b, e); every lane calls it with the same b and e.
/// Result: the cell's moments, valid in every lane (lane 0's sums are broadcast). Sums are lane partials
/// combined by warp_sum's fixed tree: deterministic, within an ulp of the CPU after rounding.
template <typename Points>
__device__ cell_moments warp_reduce_cell(Points const& src, std::uint64_t b, std::uint64_t e, bool want_m2, int lane)
{
  double lo = ::cuda::std::numeric_limits<double>::infinity();
  double hi = -::cuda::std::numeric_limits<double>::infinity();
  double sum = 0.0;
  warp_for_each(src, b, e, lane, [&](double v) {
    lo = min_of(lo, v);
    hi = max_of(hi, v);
    sum += v;
  });
  warp_min_max(lo, hi);
  double m2 = 0.0;
  sum = __shfl_sync(full_warp_mask, warp_sum(sum), 0);
  if (want_m2) {  // uniform over the grid
    double const mean = cell_mean(sum, e - b);
    warp_for_each(src, b, e, lane, [&](double v) {
      double const d = v - mean;
      m2 += d * d;
    });
    m2 = warp_sum(m2);
  }
  return cell_moments{e - b, lo, hi, sum, __shfl_sync(full_warp_mask, m2, 0)};
}

/// Lanes whose cell is `own` reduce it alone; then the warp reduces each cell of `by_warp` (a
/// warp-uniform lane mask) together and its owner lane keeps the result. Every lane calls it.
template <typename Points>
__device__ void reduce_tile_cells(Points const& src, std::uint64_t begin, std::uint64_t end, bool own,
                                  unsigned int by_warp, bool want_m2, int lane, cell_moments& m)
{
  if (own) { lane_reduce(src, begin, end, want_m2, m); }
  for (unsigned int rest = by_warp; rest != 0; rest &= rest - 1) {
    int const owner = __ffs(static_cast<int>(rest)) - 1;
    std::uint64_t const b = __shfl_sync(full_warp_mask, begin, owner);
    std::uint64_t const e = __shfl_sync(full_warp_mask, end, owner);
    cell_moments const w = warp_reduce_cell(src, b, e, want_m2, lane);
    if (lane == owner) { m = w; }
  }
}

/// The warp copies z[first, first + count) into its stage with coalesced loads, stage_loads_per_lane
/// of them in flight per lane. The caller synchronizes the warp before and after.
__device__ inline void stage_tile(double const* __restrict__ z, std::uint64_t first, std::uint64_t count,
                                  double* stage, int lane)
{
  constexpr int loads = hybrid_policy::stage_loads_per_lane;
  constexpr std::uint64_t stride = warp_size;
  for (std::uint64_t base = 0; base < count; base += loads * stride) {
    double v[loads];
#pragma unroll
    for (int u = 0; u < loads; ++u) {
      std::uint64_t const i = base + static_cast<std::uint64_t>(u) * stride + static_cast<std::uint64_t>(lane);
      v[u] = i < count ? __ldg(z + first + i) : 0.0;
    }
#pragma unroll
    for (int u = 0; u < loads; ++u) {
      std::uint64_t const i = base + static_cast<std::uint64_t>(u) * stride + static_cast<std::uint64_t>(lane);
      if (i < count) { stage[i] = v[u]; }
    }
  }
}

/// Queues the cells of `split` (a warp-uniform lane mask; lane l's cell is first + l with
/// `begin`/`n`): one slot in queue.cells each and ceil(n / chunk_points) consecutive chunks, whose
/// owner entries the whole warp writes. Every lane calls it.
__device__ inline void queue_split_cells(split_queue const& queue, unsigned int split, std::uint64_t first,
                                         std::uint64_t begin, std::uint64_t n, int lane)
{
  for (unsigned int rest = split; rest != 0; rest &= rest - 1) {
    int const owner = __ffs(static_cast<int>(rest)) - 1;
    std::uint64_t const b = __shfl_sync(full_warp_mask, begin, owner);
    std::uint64_t const count = __shfl_sync(full_warp_mask, n, owner);
    std::uint64_t const chunks = (count + queue.chunk_points - 1) / queue.chunk_points;
    unsigned long long slot = 0;
    unsigned long long first_chunk = 0;
    if (lane == 0) {
      slot = atomicAdd(queue.counters, 1ULL);
      first_chunk = atomicAdd(queue.counters + 1, static_cast<unsigned long long>(chunks));
      queue.cells[slot] =
        split_cell{first + static_cast<std::uint64_t>(owner), b, count, first_chunk, 0ULL};
    }
    slot = __shfl_sync(full_warp_mask, slot, 0);
    first_chunk = __shfl_sync(full_warp_mask, first_chunk, 0);
    for (std::uint64_t k = static_cast<std::uint64_t>(lane); k < chunks; k += warp_size) {
      queue.chunk_owner[first_chunk + k] = slot;
    }
  }
}

/// Kernel 1.
/// Mapping: one warp per tile of 32 consecutive cells (lane l: cell 32 t + l), grid-stride over
///   tiles. Lane l reads offsets[c + 1]; its begin is lane l-1's end (lane 0 reads offsets[32 t]).
///   A cell of n <= lane_max points is reduced by its lane, in CSR order. The bigger ones are
///   reduced by the whole warp, in lane order, while the running total of their points (an
///   inclusive warp scan) is <= warp_max; the others are split: queued for kernel 2 and not stored
///   here. A tile without split cells whose points fit the warp's stage (tile_end - tile_begin <=
///   stage_capacity) is first copied into shared memory with coalesced loads, and both the lane and
///   the warp paths read it from there; other tiles read global memory (16-byte loads in the warp
///   path). Each lane then stores its own cell (coalesced over the tile).
/// Preconditions: offsets has num_cells + 1 non-decreasing entries, z has offsets[num_cells] NaN-free
///   entries and is 16-byte aligned; blockDim.x == hybrid_policy::block_threads; dynamic shared
///   memory of warps_per_block x stage_capacity doubles; queue.counters zeroed and the queue sized as
///   in launch_sums_tiles.
/// Result: every requested band of every cell that is not split, once the kernel has completed.
///   Lane-path cells equal reduce_cells_cpu bit for bit (mean/stddev included); warp-path cells have
///   exact min/max/range/count and tree sums (mean/stddev within an ulp).
/// Partial tiles: lanes past num_cells read offsets[num_cells] as their end, so n = 0: they own an
///   empty cell, take part in every shuffle and ballot, and store nothing. No lane returns early.
/// Example (lane_max 3, warp_max 4, no staging): offsets=[0,2,7,7,9,15] z=[4,1, 8,6,7,5,3, 2,9,
///   0,1,2,3,4,5]: lanes 0, 2, 3 own cells 0, 2, 3 (2, 0, 2 points) -> min 1, nodata, 2; cells 1 (5
///   points) and 4 (6) are big, running totals 5 and 11 > 4: both split, queued with 2 and 2
///   chunks of 4 points when split_chunk_points = 4; kernel 2 stores min 3 and 0.
static __global__ void __launch_bounds__(hybrid_policy::block_threads)
  reduce_warp_per_tile_kernel(point_offset const* __restrict__ offsets, double const* __restrict__ z,
                              std::uint64_t num_cells, hybrid_params params, split_queue queue, output_bands out,
                              bool want_m2, float nodata)
{
  using policy = hybrid_policy;
  extern __shared__ double stage_memory[];

  int const warp = static_cast<int>(threadIdx.x) / warp_size;
  int const lane = static_cast<int>(threadIdx.x) % warp_size;
  double* const stage = stage_memory + static_cast<std::uint64_t>(warp) * params.stage_capacity;
  std::uint64_t const tiles = (num_cells + warp_size - 1) / warp_size;
  std::uint64_t const warp_stride = static_cast<std::uint64_t>(gridDim.x) * policy::warps_per_block;

  // The loop bound depends on the warp only: all 32 lanes run the same iterations.
  for (std::uint64_t tile = static_cast<std::uint64_t>(blockIdx.x) * policy::warps_per_block +
                            static_cast<std::uint64_t>(warp);
       tile < tiles; tile += warp_stride) {
    std::uint64_t const first = tile * warp_size;
    std::uint64_t const cell = first + static_cast<std::uint64_t>(lane);
    std::uint64_t const end = offsets[cell < num_cells ? cell + 1 : num_cells];
    std::uint64_t const first_begin = lane == 0 ? offsets[first] : 0;
    std::uint64_t const left_end = __shfl_up_sync(full_warp_mask, end, 1);
    std::uint64_t const begin = lane == 0 ? first_begin : left_end;
    std::uint64_t const n = end - begin;

    bool const own = n <= params.lane_max;
    unsigned int const big = __ballot_sync(full_warp_mask, !own);
    unsigned int by_warp = 0;
    if (big != 0) {  // warp-uniform
      std::uint64_t running = own ? 0 : n;
      for (int d = 1; d < warp_size; d *= 2) {
        std::uint64_t const left = __shfl_up_sync(full_warp_mask, running, d);
        if (lane >= d) { running += left; }
      }
      by_warp = __ballot_sync(full_warp_mask, !own && running <= params.warp_max);
    }
    unsigned int const split = big & ~by_warp;
    std::uint64_t const tile_begin = __shfl_sync(full_warp_mask, begin, 0);
    std::uint64_t const tile_end = __shfl_sync(full_warp_mask, end, warp_size - 1);

    cell_moments m{n, ::cuda::std::numeric_limits<double>::infinity(),
                   -::cuda::std::numeric_limits<double>::infinity(), 0.0, 0.0};
    if (split == 0 && tile_end - tile_begin <= params.stage_capacity) {  // warp-uniform
      __syncwarp();  // every lane is done reading the previous tile's stage
      stage_tile(z, tile_begin, tile_end - tile_begin, stage, lane);
      __syncwarp();  // the stage is complete and visible to every lane
      reduce_tile_cells(staged_points{stage, tile_begin}, begin, end, own, by_warp, want_m2, lane, m);
    } else {
      reduce_tile_cells(global_points{z}, begin, end, own, by_warp, want_m2, lane, m);
      queue_split_cells(queue, split, first, begin, n, lane);
    }
    if (cell < num_cells && ((split >> lane) & 1U) == 0) { store_cell(out, cell, m, nodata); }
  }
}

/// Kernel 2 (M2Pass = false: min, max, sum; M2Pass = true: the sum of squared deviations).
/// Mapping: one warp per queued chunk, grid-stride over queue.counters[1] chunks. The warp reduces
///   its chunk with 16-byte loads; lane 0 writes the chunk's partial, fences, and counts the chunk
///   done on its cell. The warp that finishes a cell's last chunk fences and merges the cell's
///   partials in chunk order (lane l: chunks l, l + 32, ...; then the warp tree), so the result does
///   not depend on which warp ran which chunk. First pass: it stores the cell, or, when stddev is
///   requested, keeps lo/hi/sum in queue.merged and resets the cell's count for the m2 pass, which
///   stores the cell.
/// Preconditions: kernel 1 has completed (stream order) with this queue; for M2Pass, the first pass
///   has completed; blockDim.x == hybrid_policy::block_threads.
/// Result: every requested band of every split cell, once the kernel (the m2 pass when stddev is
///   requested) has completed. min/max/range/count exact; sums deterministic, within an ulp of the
///   CPU after rounding.
/// Example: a queued cell of 10 points with chunk_points 4 has chunks [0,4) [4,8) [8,10); three
///   warps reduce them in any order; the third to finish merges partials 0, 1, 2 and stores it.
template <bool M2Pass>
static __global__ void __launch_bounds__(hybrid_policy::block_threads)
  reduce_warp_per_chunk_kernel(double const* __restrict__ z, split_queue queue, output_bands out, bool want_m2,
                               float nodata)
{
  using policy = hybrid_policy;
  constexpr double inf = ::cuda::std::numeric_limits<double>::infinity();
  int const lane = static_cast<int>(threadIdx.x) % warp_size;
  std::uint64_t const chunks = queue.counters[1];
  std::uint64_t const warp_stride = static_cast<std::uint64_t>(gridDim.x) * policy::warps_per_block;
  std::uint64_t const size = queue.chunk_points;

  for (std::uint64_t c = static_cast<std::uint64_t>(blockIdx.x) * policy::warps_per_block + threadIdx.x / warp_size;
       c < chunks; c += warp_stride) {
    std::uint64_t const slot = queue.chunk_owner[c];
    split_cell const& s = queue.cells[slot];
    std::uint64_t const n = s.n;
    std::uint64_t const first_chunk = s.first_chunk;
    std::uint64_t const cell_chunks = (n + size - 1) / size;
    std::uint64_t const b = s.begin + (c - first_chunk) * size;
    std::uint64_t const e = b + size < s.begin + n ? b + size : s.begin + n;

    double lo = inf;
    double hi = -inf;
    double acc = 0.0;
    if constexpr (M2Pass) {
      double const mean = cell_mean(queue.merged[slot].sum, n);
      warp_for_each(global_points{z}, b, e, lane, [&](double v) {
        double const d = v - mean;
        acc += d * d;
      });
      acc = warp_sum(acc);
    } else {
      warp_for_each(global_points{z}, b, e, lane, [&](double v) {
        lo = min_of(lo, v);
        hi = max_of(hi, v);
        acc += v;
      });
      warp_min_max(lo, hi);
      acc = warp_sum(acc);
    }

    unsigned long long arrived = 0;
    if (lane == 0) {
      queue.partials[c] = chunk_partial{lo, hi, acc};
      __threadfence();  // the partial is visible device-wide before the count says it is there
      arrived = atomicAdd(&queue.cells[slot].done, 1ULL);
    }
    arrived = __shfl_sync(full_warp_mask, arrived, 0);
    if (arrived + 1 != cell_chunks) { continue; }  // warp-uniform: not the cell's last chunk

    // The last chunk of the cell: every other chunk's partial is written and fenced. Lane 0 saw the
    // count; its fence, then the warp barrier, order every lane's reads after it.
    __threadfence();
    __syncwarp();
    double mlo = inf;
    double mhi = -inf;
    double macc = 0.0;
    for (std::uint64_t k = static_cast<std::uint64_t>(lane); k < cell_chunks; k += warp_size) {
      chunk_partial const* const p = queue.partials + first_chunk + k;
      mlo = min_of(mlo, __ldcg(&p->lo));  // L2: the partials were written by other SMs
      mhi = max_of(mhi, __ldcg(&p->hi));
      macc += __ldcg(&p->sum);
    }
    warp_min_max(mlo, mhi);
    macc = warp_sum(macc);
    if (lane == 0) {
      if constexpr (M2Pass) {
        chunk_partial const m = queue.merged[slot];
        store_cell(out, s.cell, cell_moments{n, m.lo, m.hi, m.sum, macc}, nodata);
      } else if (want_m2) {
        queue.merged[slot] = chunk_partial{mlo, mhi, macc};
        queue.cells[slot].done = 0;  // every chunk has counted itself: the count is free for the m2 pass
      } else {
        store_cell(out, s.cell, cell_moments{n, mlo, mhi, macc, 0.0}, nodata);
      }
    }
  }
}

/// Runs kernel 1 and kernel 2 (twice for stddev) over every cell of `csr` as `plan` (route
/// sums_tiles) says. Allocates the queue (stream-ordered, freed after the kernels): 2 counters, a
/// split_cell (40 bytes; + a merged chunk_partial, 24, for stddev) per possible split cell and an
/// owner + partial (32 bytes) per possible chunk (plan.max_split_cells, plan.max_split_chunks).
inline void launch_sums_tiles(device_csr_view const& csr, metric_request const& request, output_bands const& out,
                              float nodata, hybrid_plan const& plan, std::uint32_t stage_points_per_lane,
                              cudaStream_t stream)
{
  using policy = hybrid_policy;
  HG_EXPECTS(reinterpret_cast<std::uintptr_t>(csr.z) % alignof(double2) == 0, error_kind::internal,
             "hybrid: z is not 16-byte aligned");

  std::uint64_t const max_cells = plan.max_split_cells;
  std::uint64_t const max_chunks = plan.max_split_chunks;
  device_buffer<unsigned long long> counters(2, stream);
  counters.fill_bytes(0, stream);
  device_buffer<split_cell> cells(max_cells, stream);
  device_buffer<unsigned long long> owners(max_chunks, stream);
  device_buffer<chunk_partial> partials(max_chunks, stream);
  device_buffer<chunk_partial> merged(request.stddev ? max_cells : 0, stream);
  split_queue const queue{counters.data(), cells.data(),  owners.data(),
                          partials.data(), merged.data(), plan.chunk_points};

  hybrid_params const params{plan.lane_max, plan.warp_max, std::uint64_t{warp_size} * stage_points_per_lane};
  std::size_t const stage_bytes = policy::warps_per_block * params.stage_capacity * sizeof(double);
  auto const tiles = (csr.num_cells + warp_size - 1) / warp_size;
  auto const blocks = grid_blocks(tiles, policy::warps_per_block);
  auto* const tile_kernel = reduce_warp_per_tile_kernel;
  if (stage_bytes > 48 * 1024) {  // above the default limit of dynamic shared memory: opt in
    HG_CUDA_TRY(cudaFuncSetAttribute(tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(stage_bytes)));
  }
  tile_kernel<<<blocks, policy::block_threads, stage_bytes, stream>>>(csr.offsets, csr.z, csr.num_cells, params,
                                                                       queue, out, request.stddev, nodata);
  HG_CUDA_CHECK_LAUNCH();
  if (max_cells == 0) { return; }  // these thresholds cannot split any cell of this grid

  int device = 0;
  int sms = 0;
  HG_CUDA_TRY(cudaGetDevice(&device));
  HG_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  auto const split_blocks = std::min<unsigned int>(grid_blocks(max_chunks, policy::warps_per_block),
                                                   static_cast<unsigned int>(sms * policy::split_blocks_per_sm));
  reduce_warp_per_chunk_kernel<false><<<split_blocks, policy::block_threads, 0, stream>>>(csr.z, queue, out,
                                                                                           request.stddev, nodata);
  HG_CUDA_CHECK_LAUNCH();
  if (request.stddev) {
    reduce_warp_per_chunk_kernel<true><<<split_blocks, policy::block_threads, 0, stream>>>(csr.z, queue, out, true,
                                                                                            nodata);
    HG_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace heightgrid::detail
