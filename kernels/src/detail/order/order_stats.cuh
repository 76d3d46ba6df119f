#pragma once
// Order statistics (percentiles, median, prange) and shape metrics (skewness, kurtosis, cover,
// above, zbin, entropy: core/shape_metrics.hpp) of the streaming grid on the device.
//
// A band that asks for them keeps every binned point as (band-local cell, ordered_key(z)) — 12 bytes
// — appended batch by batch (keep_points_thread_per_point_kernel). At the end (order_finalize):
// offsets from the accumulators' counts, the keys scattered into cell order, each cell's keys sorted,
// and a thread per cell reads its percentiles off the sorted values with the host's rule
// (metrics.hpp percentile_of_sorted). Sorting ordered keys, not doubles, orders -0.0 before +0.0
// as the CPU does (CUB sorts the two zeros as equal), so both backends pick the same value.

#include "detail/binner/grid_accumulate.cuh"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/kernels/order_stats.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace heightgrid::detail {

/// Mapping: one thread per point, grid-stride in whole-warp steps; each warp reserves room for its
///   points in the band with one atomicAdd on `kept` and its lanes write at their rank.
/// Preconditions: the batch's n points in `cols`; keys and z have room past *kept for every point of
///   the batch that lands in the band.
/// Result: for every point in the band, (band-local cell, ordered_key(z)) appended at keys/z[*kept...]
///   (any order); *kept increased. Valid once the kernel has completed.
template <coord_encoding E>
static __global__ void __launch_bounds__(batch_policy::block_threads)
  keep_points_thread_per_point_kernel(batch_columns<E> cols, std::uint64_t n, grid_spec grid, std::uint64_t first_cell,
                                      std::uint64_t band_cells, cell_id* __restrict__ keys, std::uint64_t* __restrict__ z,
                                      unsigned long long* __restrict__ kept)
{
  auto const lane = static_cast<unsigned int>(threadIdx.x % warp_size);
  for (std::uint64_t i = global_thread_index(); i - lane < n; i += grid_threads()) {
    bool const valid = i < n;
    std::uint64_t const key = valid ? band_key(grid, first_cell, band_cells, cols(0, i), cols(1, i)) : band_cells;
    bool const keep = valid && key < band_cells;
    unsigned int const mask = __ballot_sync(full_warp_mask, keep);
    if (mask == 0) { continue; }  // warp-uniform
    auto const leader = static_cast<unsigned int>(__ffs(static_cast<int>(mask)) - 1);
    unsigned long long base = 0;
    if (lane == leader) { base = atomicAdd(kept, static_cast<unsigned long long>(__popc(mask))); }
    base = __shfl_sync(full_warp_mask, base, static_cast<int>(leader));
    if (keep) {
      auto const at = base + static_cast<unsigned long long>(__popc(mask & ((1U << lane) - 1U)));
      keys[at] = static_cast<cell_id>(key);
      z[at] = ordered_key(cols(2, i));
    }
  }
}

/// Order-statistic columns of a band on the device: `cells` floats per column, one column per
/// request.percentiles entry, then prange when asked, then one per request.shapes entry.
/// `keys`/`z`: the n kept points (keys[i] == cells for points outside the band); `count`: the
/// accumulators' counts of the band's cells (their sum equals the kept points inside the band).
/// `keys` and `z` are consumed (overwritten). Stream-ordered on `stream`; `bands` holds
/// columns(request) * cells floats. `sorted`, where given, is recorded on `stream` between the
/// sort and the per-cell kernels (to time the two).
void order_finalize(cell_id* keys, std::uint64_t* z, std::uint64_t n, std::uint32_t const* count, std::uint64_t cells,
                    metric_request const& request, float nodata, order_sort method, float* bands,
                    cudaStream_t stream, cudaEvent_t sorted = nullptr);

/// Columns order_finalize writes.
[[nodiscard]] inline std::size_t order_columns(metric_request const& request) noexcept
{
  return request.percentiles.size() + (request.prange ? 1 : 0) + request.shapes.size();
}

}  // namespace heightgrid::detail
