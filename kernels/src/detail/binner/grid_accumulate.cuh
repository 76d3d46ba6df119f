#pragma once
// The kernels of the streaming grid (gpu_binner): batches of points folded into per-cell
// accumulators (core/include/heightgrid/core/cell_accumulator.hpp), and accumulators turned into bands.

#include "detail/infra/launch.cuh"
#include "detail/infra/warp_group.cuh"
#include "heightgrid/core/cell_accumulator.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/las_record.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_batch.hpp"

#include <cuda_runtime_api.h>

#include <climits>
#include <cstddef>
#include <cstdint>

namespace heightgrid::detail {

struct batch_policy {
  static constexpr int block_threads = 256;
};

/// Counters a batch kernel adds to (device memory, zeroed once per binner).
struct batch_counters {
  unsigned long long outside;  ///< points in no cell of the whole grid
  unsigned long long binned;   ///< points that landed in the band
};

/// The tagged counts of a band (metric_request::tags): band k's count of cell c at count[k * cells + c];
/// count null when the job has no tagged count band.
struct tag_counts {
  std::uint32_t* count;
  std::uint64_t cells;
};

/// Adds a kept point of band-local cell `key` (< cells) with tag `tag` to the bands its bits name.
__device__ inline void add_tag(tag_counts const& tags, std::uint64_t key, unsigned tag) noexcept
{
  while (tag != 0) {
    auto const bit = static_cast<unsigned>(__ffs(static_cast<int>(tag)) - 1);
    atomicAdd(tags.count + bit * tags.cells + key, 1U);
    tag &= tag - 1;
  }
}

/// Coordinates of point i of a batch laid out as point_batch describes (columns at multiples of the
/// capacity), decoded with the host's rule (scaled_coords::apply) for scaled integers.
template <coord_encoding E>
struct batch_columns {
  void const* data;
  std::uint64_t capacity;
  scaled_coords transform;

  __device__ double operator()(int axis, std::uint64_t i) const noexcept
  {
    if constexpr (E == coord_encoding::float64) {
      return static_cast<double const*>(data)[static_cast<std::uint64_t>(axis) * capacity + i];
    } else {
      std::int32_t const v = static_cast<std::int32_t const*>(data)[static_cast<std::uint64_t>(axis) * capacity + i];
      return scaled_coords::apply(v, transform.scale[axis], transform.offset[axis]);
    }
  }
};

/// The band-local cell of (x, y): grid.cell_of on the whole grid, minus the band's first cell;
/// band_cells for a point outside the band, band_cells + 1 for a point in no cell at all.
__device__ inline std::uint64_t band_key(grid_spec const& grid, std::uint64_t first_cell, std::uint64_t band_cells,
                                         double x, double y) noexcept
{
  cell_id const c = grid.cell_of(x, y);
  if (c == no_cell) { return band_cells + 1; }
  std::uint64_t const local = static_cast<std::uint64_t>(c) - first_cell;  // wraps below the band
  return local < band_cells ? local : band_cells;
}

/// One warp step of the atomic fold into the cells: every lane of the warp calls it (full mask)
/// with its point's band-local key and ordered z, `valid` false for a lane without a point (past
/// the batch, or filtered out). Lanes of one cell (__match_any_sync) combine their keys and the
/// lowest of them does one atomicMax on lo, one on hi and one atomicAdd on count. Every lane gets
/// the warp's points outside the grid and in the band added to `outside` and `binned` (the
/// caller adds them to the batch counters: per step, or once a kernel's steps are done).
__device__ inline void fold_atomic_warp_cells(bool valid, std::uint64_t key, unsigned long long enc,
                                              std::uint64_t band_cells, accumulator_view const& acc,
                                              unsigned long long& outside, unsigned long long& binned)
{
  unsigned int const lane = threadIdx.x % warp_size;
  // Keys fit in 32 bits (grids have fewer than 2^32 cells); band_cells and band_cells + 1 too.
  unsigned int const group = __match_any_sync(full_warp_mask, static_cast<unsigned int>(key));
  unsigned long long const lowest = group_min(group, enc);
  unsigned long long const highest = ~group_min(group, valid ? ~enc : ~0ULL);
  auto const leader = static_cast<unsigned int>(__ffs(static_cast<int>(group)) - 1);
  if (valid && key < band_cells && lane == leader) {
    atomicMax(reinterpret_cast<unsigned long long*>(&acc.lo_of(key)), ~lowest);
    atomicMax(reinterpret_cast<unsigned long long*>(&acc.hi_of(key)), highest);
    atomicAdd(acc.count + key, static_cast<std::uint32_t>(__popc(group)));
  }
  outside += static_cast<unsigned>(__popc(__ballot_sync(full_warp_mask, valid && key == band_cells + 1)));
  binned += static_cast<unsigned>(__popc(__ballot_sync(full_warp_mask, valid && key < band_cells)));
}

/// Lane 0 adds a warp's `outside` and `binned` points (fold_atomic_warp_cells) to the counters.
__device__ inline void add_warp_counters(unsigned long long outside, unsigned long long binned,
                                         batch_counters* __restrict__ counters, unsigned int lane)
{
  if (lane == 0) {
    if (outside != 0) { atomicAdd(&counters->outside, outside); }
    if (binned != 0) { atomicAdd(&counters->binned, binned); }
  }
}

/// One warp step of the atomic fold (fold_atomic_warp_cells), its counts added to the counters.
__device__ inline void fold_atomic_warp(bool valid, std::uint64_t key, unsigned long long enc, std::uint64_t band_cells,
                                        accumulator_view const& acc, batch_counters* __restrict__ counters,
                                        unsigned int lane)
{
  unsigned long long outside = 0, binned = 0;
  fold_atomic_warp_cells(valid, key, enc, band_cells, acc, outside, binned);
  add_warp_counters(outside, binned, counters, lane);
}

/// Mapping: one thread per point, grid-stride in whole-warp steps (every lane runs every iteration).
///   Each lane finds its point's band-local cell and folds it with fold_atomic_warp: per warp and
///   cell one atomic per field, per warp one atomic per counter.
/// Preconditions: the batch's n points in `cols`; acc has band_cells cells; coordinates finite.
/// Result: once the kernel has completed, every point in the band is folded into its cell (the same
///   fields a host_grid::add_batch gives, whatever the order), counters increased.
/// Example: band = whole 2 x 1 grid of 1 m at (0, 1); points (0.5,0.5,z=3) (0.7,0.5,z=1) (1.5,0.5,z=2)
///   (9,0.5,z=5): lanes 0-1 -> cell 0: lo = lo_key(1), hi = hi_key(3), count 2; lane 2 -> cell 1;
///   lane 3 -> outside = 1.
template <coord_encoding E>
static __global__ void __launch_bounds__(batch_policy::block_threads)
  accumulate_atomic_thread_per_point_kernel(batch_columns<E> cols, std::uint64_t n, grid_spec grid,
                                            std::uint64_t first_cell, accumulator_view acc,
                                            batch_counters* __restrict__ counters)
{
  auto const lane = static_cast<unsigned int>(threadIdx.x % warp_size);
  std::uint64_t const band_cells = acc.cells;
  for (std::uint64_t i = global_thread_index(); i - lane < n; i += grid_threads()) {
    bool const valid = i < n;
    std::uint64_t const key = valid ? band_key(grid, first_cell, band_cells, cols(0, i), cols(1, i)) : band_cells;
    unsigned long long const enc = valid ? ordered_key(cols(2, i)) : ~0ULL;
    fold_atomic_warp(valid, key, enc, band_cells, acc, counters, lane);
  }
}

/// Raw LAS records of a batch (coord_encoding::las_records): `stride` bytes each from `data`, the
/// attributes in the layout of formats 6-10 when `extended`; coordinates by scaled_coords' rule.
struct batch_records {
  std::uint8_t const* data;
  std::uint32_t stride;
  bool extended;
  scaled_coords transform;
};

/// A run of records in device memory that share a file's transform and a source's statistics:
/// records [first, first + count) of the buffer (gpu_binner::fold_device_records).
struct record_run {
  std::uint64_t first;
  std::uint64_t count;
  scaled_coords transform;
  std::uint64_t source;  ///< its entry in the statistics
};

/// Records of a larger length are read straight from global memory (a block's tile and its 16 bytes
/// of alignment slack would not fit the 48 KiB of shared memory a launch gets without opting in).
inline constexpr std::uint32_t max_staged_record_length = 191;

/// Shared memory of one block of accumulate_atomic_records_kernel<true>: a tile of records, and 16
/// bytes so that a tile that starts off a 16-byte boundary in global memory keeps its alignment.
inline constexpr std::size_t records_tile_bytes(std::uint32_t stride) noexcept
{
  return static_cast<std::size_t>(batch_policy::block_threads) * stride + 16;
}

/// Mapping: a block takes a tile of block_threads consecutive records (grid-stride over tiles), one
///   thread per record. Staged: the block first copies the tile's bytes into shared memory with
///   16-byte loads (records are packed at odd lengths — 20 to 67 bytes and more — so a thread
///   reading its own record from global memory would issue a dozen byte loads over a strided
///   pattern; measured 2.5x slower than the column kernel, docs/benchmarks.md). Each thread then
///   decodes its record (X, Y, Z and the attributes the filters look at, by core/las_record.hpp),
///   judges it with `filter` (the host's filter_table: the same verdicts) and a kept point is
///   folded with fold_atomic_warp. Each thread counts the points each rule removed and the
///   stored-integer bounds of those it kept, and adds a kept point in the band to the tagged counts its
///   tag (filter.tags) names, when `tags` has counts; at the end the warp combines them (shuffles) and lane 0
///   adds them to *stats (atomics: a handful per warp).
///   With `runs` (records decoded on the device, gpu_binner::fold_device_records), block row
///   blockIdx.y takes run runs[blockIdx.y] instead: its records of rec.data, its transform, its
///   statistics entry stats[run.source]; n and rec.transform are then ignored.
/// Preconditions: n records at rec.data (any alignment); acc has band_cells cells; *stats holds
///   valid bounds (starts as las_record_stats{}); Staged: records_tile_bytes(rec.stride) bytes of
///   dynamic shared memory, rec.stride <= max_staged_record_length; runs: gridDim.y runs.
/// Result: once the kernel has completed, every kept point in the band is folded into its cell,
///   counters increased, and *stats holds what decode_las_records would have added for the batch:
///   the same accumulators as decoding the records on the CPU and binning the columns.
/// Example: PDRF 1 records (X,Y,Z,class) = (5,5,30,2) (7,5,10,7) (15,5,20,2), scale 0.1, band = the
///   whole 2 x 1 grid of 1 m at (0, 1), default filter (classes 7 and 18 dropped): record 1 ->
///   by_class; cell 0: lo = lo_key(3), hi = hi_key(3), count 1; cell 1: z 2, count 1; stats lo =
///   (5, 5, 20), hi = (15, 5, 30), by_class 1.
template <bool Staged>
static __global__ void __launch_bounds__(batch_policy::block_threads)
  accumulate_atomic_records_kernel(batch_records rec, std::uint64_t n, grid_spec grid, std::uint64_t first_cell,
                                   accumulator_view acc, batch_counters* __restrict__ counters,
                                   filter_table const filter, las_record_stats* __restrict__ stats,
                                   record_run const* __restrict__ runs, tag_counts tags)
{
  extern __shared__ uint4 tile_words[];
  auto const lane = static_cast<unsigned int>(threadIdx.x % warp_size);
  std::uint64_t const band_cells = acc.cells;
  if (runs != nullptr) {
    // A run a row of blocks: its records, its file's transform, its source's statistics.
    record_run const run = runs[blockIdx.y];
    rec.data += run.first * rec.stride;
    rec.transform = run.transform;
    n = run.count;
    stats += run.source;
  }
  scaled_coords const& t = rec.transform;
  std::uint32_t non_finite = 0, by_class = 0, withheld = 0, by_return = 0, by_z = 0;
  unsigned long long outside = 0, binned = 0;  // the warp's, added once its tiles are done
  std::int32_t lo0 = INT_MAX, lo1 = INT_MAX, lo2 = INT_MAX;
  std::int32_t hi0 = INT_MIN, hi1 = INT_MIN, hi2 = INT_MIN;
  constexpr std::uint64_t tile_records = batch_policy::block_threads;
  for (std::uint64_t first = std::uint64_t{blockIdx.x} * tile_records; first < n;
       first += std::uint64_t{gridDim.x} * tile_records) {
    std::uint64_t const in_tile = n - first < tile_records ? n - first : tile_records;
    std::uint8_t const* record = nullptr;
    if constexpr (Staged) {
      // The tile's bytes go to shared memory at the same offset from a 16-byte boundary as in
      // global memory (a batch's tiles start on one; a run's may not): the bytes up to the first
      // boundary and after the last one singly, the rest by 16-byte loads.
      std::uint8_t const* from = rec.data + first * rec.stride;
      std::uint64_t const bytes = in_tile * rec.stride;
      auto const skew = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(from) % sizeof(uint4));
      auto* tile = reinterpret_cast<std::uint8_t*>(tile_words) + skew;
      std::uint64_t const head = skew == 0 ? 0 : (sizeof(uint4) - skew < bytes ? sizeof(uint4) - skew : bytes);
      std::uint64_t const words = (bytes - head) / sizeof(uint4);
      auto const* aligned = reinterpret_cast<uint4 const*>(from + head);
      auto* aligned_tile = reinterpret_cast<uint4*>(tile + head);
      for (std::uint64_t w = threadIdx.x; w < words; w += blockDim.x) { aligned_tile[w] = __ldg(aligned + w); }
      if (threadIdx.x < head) { tile[threadIdx.x] = from[threadIdx.x]; }
      for (std::uint64_t b = head + words * sizeof(uint4) + threadIdx.x; b < bytes; b += blockDim.x) {
        tile[b] = from[b];
      }
      __syncthreads();
      record = tile + std::uint64_t{threadIdx.x} * rec.stride;
    } else {
      record = rec.data + (first + threadIdx.x) * rec.stride;
    }
    bool kept = false;
    std::uint64_t key = band_cells;
    unsigned long long enc = ~0ULL;
    if (threadIdx.x < in_tile) {
      std::uint8_t const* p = record;
      std::int32_t const xi = las_load_i32(p + las_point_at::x);
      std::int32_t const yi = las_load_i32(p + las_point_at::y);
      std::int32_t const zi = las_load_i32(p + las_point_at::z);
      las_record_attributes const a = las_attributes(p, rec.extended);
      double const x = scaled_coords::apply(xi, t.scale[0], t.offset[0]);
      double const y = scaled_coords::apply(yi, t.scale[1], t.offset[1]);
      double const z = scaled_coords::apply(zi, t.scale[2], t.offset[2]);
      switch (filter.judge(x, y, z, true, a.classification, true, a.flags, true, a.return_number, a.number_of_returns)) {
        case filter_verdict::keep:
          kept = true;
          key = band_key(grid, first_cell, band_cells, x, y);
          enc = ordered_key(z);
          if (tags.count != nullptr && key < band_cells) {
            add_tag(tags, key, filter.tags.tag(true, a.classification, true, a.return_number, a.number_of_returns));
          }
          lo0 = min(lo0, xi);
          hi0 = max(hi0, xi);
          lo1 = min(lo1, yi);
          hi1 = max(hi1, yi);
          lo2 = min(lo2, zi);
          hi2 = max(hi2, zi);
          break;
        case filter_verdict::non_finite: ++non_finite; break;
        case filter_verdict::by_class: ++by_class; break;
        case filter_verdict::withheld: ++withheld; break;
        case filter_verdict::by_return: ++by_return; break;
        case filter_verdict::by_z: ++by_z; break;
      }
    }
    fold_atomic_warp_cells(kept, key, enc, band_cells, acc, outside, binned);
    if constexpr (Staged) { __syncthreads(); }  // the tile is overwritten next
  }
  add_warp_counters(outside, binned, counters, lane);
  for (int offset = warp_size / 2; offset > 0; offset /= 2) {
    non_finite += __shfl_down_sync(full_warp_mask, non_finite, offset);
    by_class += __shfl_down_sync(full_warp_mask, by_class, offset);
    withheld += __shfl_down_sync(full_warp_mask, withheld, offset);
    by_return += __shfl_down_sync(full_warp_mask, by_return, offset);
    by_z += __shfl_down_sync(full_warp_mask, by_z, offset);
    lo0 = min(lo0, __shfl_down_sync(full_warp_mask, lo0, offset));
    lo1 = min(lo1, __shfl_down_sync(full_warp_mask, lo1, offset));
    lo2 = min(lo2, __shfl_down_sync(full_warp_mask, lo2, offset));
    hi0 = max(hi0, __shfl_down_sync(full_warp_mask, hi0, offset));
    hi1 = max(hi1, __shfl_down_sync(full_warp_mask, hi1, offset));
    hi2 = max(hi2, __shfl_down_sync(full_warp_mask, hi2, offset));
  }
  if (lane == 0) {  // lane 0 holds the warp's totals
    if (non_finite != 0) { atomicAdd(&stats->non_finite, static_cast<unsigned long long>(non_finite)); }
    if (by_class != 0) { atomicAdd(&stats->by_class, static_cast<unsigned long long>(by_class)); }
    if (withheld != 0) { atomicAdd(&stats->withheld, static_cast<unsigned long long>(withheld)); }
    if (by_return != 0) { atomicAdd(&stats->by_return, static_cast<unsigned long long>(by_return)); }
    if (by_z != 0) { atomicAdd(&stats->by_z, static_cast<unsigned long long>(by_z)); }
    if (lo0 <= hi0) {
      atomicMin(&stats->lo[0], lo0);
      atomicMin(&stats->lo[1], lo1);
      atomicMin(&stats->lo[2], lo2);
      atomicMax(&stats->hi[0], hi0);
      atomicMax(&stats->hi[1], hi1);
      atomicMax(&stats->hi[2], hi2);
    }
  }
}

/// Mapping: one thread per point, grid-stride.
/// Preconditions: the batch's n points in `cols`, their tags at `tag` (point_batch::tags); tags has
///   counts for the band's cells.
/// Result: once the kernel has completed, every point in the band is added to the tagged counts its
///   tag names (host_grid's add_tag_counts, the same counts whatever the order).
/// Example: band = whole 2 x 1 grid; points (0.5, 0.5) tag 0b01, (0.7, 0.5) tag 0b11, (1.5, 0.5) tag 0:
///   band 0: cell 0 -> 2; band 1: cell 0 -> 1; cell 1 unchanged.
template <coord_encoding E>
static __global__ void __launch_bounds__(batch_policy::block_threads)
  count_tags_thread_per_point_kernel(batch_columns<E> cols, std::uint8_t const* __restrict__ tag, std::uint64_t n,
                                     grid_spec grid, std::uint64_t first_cell, tag_counts tags)
{
  for (std::uint64_t i = global_thread_index(); i < n; i += grid_threads()) {
    unsigned const t = tag[i];
    if (t == 0) { continue; }
    std::uint64_t const key = band_key(grid, first_cell, tags.cells, cols(0, i), cols(1, i));
    if (key < tags.cells) { add_tag(tags, key, t); }
  }
}

/// Mapping: one thread per output cell and tagged band, grid-stride; output cell o of band k is
///   (row o / cols, column o % cols).
/// Preconditions: count and tags hold the band's cells; out has bands * cells entries.
/// Result: out[k * cells + o] = band k's count of accumulator cell first_cell + row * acc_cols + column,
///   tag_empty where that cell's count is 0 (host_grid's finalize_tag_window), once completed.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  finalize_tags_thread_per_cell_kernel(tag_counts tags, std::uint32_t const* __restrict__ count, std::uint64_t first_cell,
                                       std::uint32_t acc_cols, std::uint32_t cols, std::uint64_t cells, unsigned bands,
                                       std::uint32_t* __restrict__ out)
{
  for (std::uint64_t i = global_thread_index(); i < cells * bands; i += grid_threads()) {
    std::uint64_t const k = i / cells;
    std::uint64_t const o = i - k * cells;
    std::uint64_t const row = o / cols;
    std::uint64_t const c = first_cell + row * acc_cols + (o - row * cols);
    out[i] = count[c] == 0 ? tag_empty : tags.count[k * tags.cells + c];
  }
}

/// Mapping: one thread per point, grid-stride.
/// Preconditions: keys and z have n entries.
/// Result: keys[i] = the band-local cell of point i, or band_cells for a point outside the band or
///   the grid (it sorts after every cell, and the merge skips it); z[i] its height; counters increased.
///   Valid once the kernel has completed.
/// Example: as above -> keys = [0, 0, 1, 2], z = [3, 1, 2, 5], outside 1, binned 3.
template <coord_encoding E>
static __global__ void __launch_bounds__(batch_policy::block_threads)
  batch_keys_thread_per_point_kernel(batch_columns<E> cols, std::uint64_t n, grid_spec grid, std::uint64_t first_cell,
                                     std::uint64_t band_cells, cell_id* __restrict__ keys, double* __restrict__ z,
                                     batch_counters* __restrict__ counters)
{
  auto const lane = static_cast<unsigned int>(threadIdx.x % warp_size);
  for (std::uint64_t i = global_thread_index(); i - lane < n; i += grid_threads()) {
    bool const valid = i < n;
    std::uint64_t const key = valid ? band_key(grid, first_cell, band_cells, cols(0, i), cols(1, i)) : band_cells;
    if (valid) {
      keys[i] = static_cast<cell_id>(key < band_cells ? key : band_cells);
      z[i] = cols(2, i);
    }
    unsigned int const outside = __ballot_sync(full_warp_mask, valid && key == band_cells + 1);
    unsigned int const binned = __ballot_sync(full_warp_mask, valid && key < band_cells);
    if (lane == 0) {
      if (outside != 0) { atomicAdd(&counters->outside, static_cast<unsigned long long>(__popc(outside))); }
      if (binned != 0) { atomicAdd(&counters->binned, static_cast<unsigned long long>(__popc(binned))); }
    }
  }
}

/// Mapping: one thread per output cell, grid-stride; output cell o is (row o / cols, column o % cols).
/// Preconditions: acc holds at least first_cell + rows * acc_cols cells; cols <= acc_cols; each band
///   pointer is null or has rows * cols entries.
/// Result: finalize_cell of accumulator cell first_cell + row * acc_cols + column into output cell o,
///   for every o, once the kernel has completed (the host's finalize_window, bit for bit).
/// Example: acc_cols 3, cols 2, rows 1 -> output cells 0, 1 from accumulator cells first, first + 1.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  finalize_rows_thread_per_cell_kernel(accumulator_view acc, std::uint64_t first_cell, std::uint32_t acc_cols,
                                       std::uint32_t cols, std::uint64_t cells, band_pointers out, float nodata)
{
  for (std::uint64_t o = global_thread_index(); o < cells; o += grid_threads()) {
    std::uint64_t const row = o / cols;
    std::uint64_t const col = o - row * cols;
    finalize_cell(acc, first_cell + row * acc_cols + col, out, o, nodata);
  }
}

/// Mapping: one thread per cell, grid-stride; a warp sums its lanes' totals and lane 0 adds them.
/// Result: *total += the sum of count[0..cells), once the kernel has completed.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  sum_counts_thread_per_cell_kernel(std::uint32_t const* __restrict__ count, std::uint64_t cells,
                                    unsigned long long* __restrict__ total)
{
  unsigned long long mine = 0;
  for (std::uint64_t c = global_thread_index(); c < cells; c += grid_threads()) { mine += count[c]; }
  for (int offset = warp_size / 2; offset > 0; offset /= 2) { mine += __shfl_down_sync(full_warp_mask, mine, offset); }
  if (threadIdx.x % warp_size == 0 && mine != 0) { atomicAdd(total, mine); }
}

/// Mapping: one thread per cell, grid-stride; a warp takes its lanes' largest and lane 0 keeps it.
/// Result: *largest = max(*largest, every count[c]), once the kernel has completed.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  max_count_thread_per_cell_kernel(std::uint32_t const* __restrict__ count, std::uint64_t cells,
                                   unsigned int* __restrict__ largest)
{
  unsigned int mine = 0;
  for (std::uint64_t c = global_thread_index(); c < cells; c += grid_threads()) { mine = max(mine, count[c]); }
  for (int offset = warp_size / 2; offset > 0; offset /= 2) {
    mine = max(mine, __shfl_down_sync(full_warp_mask, mine, offset));
  }
  if (threadIdx.x % warp_size == 0 && mine != 0) { atomicMax(largest, mine); }
}

}  // namespace heightgrid::detail
