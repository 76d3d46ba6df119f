#pragma once
// The dense CSR of a grid (csr_method::radix_sort): the (cell, z) pairs sorted by cell
// (sort_by_cell.cuh), then every cell's offset by binary search in the sorted keys. Within a cell
// the points keep their input order: the CSR is the CPU's (bin_points_cpu), bit for bit.

#include "detail/csr/sort_by_cell.cuh"
#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/launch.cuh"
#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/grid_spec.hpp"

#include <cub/util_type.cuh>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace heightgrid::detail {

/// Mapping: one thread per offset entry c in [0, num_cells], grid-stride.
/// Preconditions: sorted_keys has n entries in non-decreasing order; offsets has num_cells + 1.
/// Result: offsets[c] = number of keys < c (lower bound of c), so the points of cell c are
///   [offsets[c], offsets[c + 1]) and offsets[num_cells] counts the keys of inside points (outside
///   points carry key num_cells and sort last). Valid once the kernel has completed.
/// Example: sorted_keys=[0, 0, 2, 3(outside)], num_cells 3 -> offsets=[0, 2, 2, 3].
static __global__ void __launch_bounds__(item_policy::block_threads)
  offsets_thread_per_cell_kernel(cell_id const* __restrict__ sorted_keys, std::uint64_t n, std::uint64_t num_cells,
                                 point_offset* __restrict__ offsets)
{
  for (std::uint64_t c = global_thread_index(); c <= num_cells; c += grid_threads()) {
    std::uint64_t lo = 0;
    std::uint64_t hi = n;
    while (lo < hi) {
      std::uint64_t const mid = lo + (hi - lo) / 2;
      if (static_cast<std::uint64_t>(sorted_keys[mid]) < c) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    offsets[c] = lo;
  }
}

/// Sorts (keys, z) by key in place (the buffers may be swapped with their sorted copies) and builds
/// offsets (num_cells + 1 entries). Afterwards z holds every point, the binned ones first, grouped
/// by cell. Asynchronous on `stream`; num_cells >= 1.
inline void build_csr_radix_sort(device_buffer<cell_id>& keys, device_buffer<double>& z, std::uint64_t num_cells,
                                 device_buffer<point_offset>& offsets, cudaStream_t stream)
{
  auto const n = keys.size();
  if (n > 0) {
    device_buffer<cell_id> keys_alt(n, stream);
    device_buffer<double> z_alt(n, stream);
    // DoubleBuffer lets CUB ping-pong between the two copies instead of allocating a third.
    cub::DoubleBuffer<cell_id> k(keys.data(), keys_alt.data());
    cub::DoubleBuffer<double> v(z.data(), z_alt.data());
    std::size_t temp_bytes = 0;
    sort_pairs_by_cell(nullptr, temp_bytes, k, v, n, num_cells, stream);
    {
      device_buffer<std::byte> temp(temp_bytes, stream);
      sort_pairs_by_cell(temp.data(), temp_bytes, k, v, n, num_cells, stream);
    }
    if (k.Current() != keys.data()) { std::swap(keys, keys_alt); }
    if (v.Current() != z.data()) { std::swap(z, z_alt); }
  }  // the unsorted copies are freed here (stream-ordered: after the sort)

  offsets = device_buffer<point_offset>(num_cells + 1, stream);
  offsets_thread_per_cell_kernel<<<grid_blocks(num_cells + 1, item_policy::block_threads), item_policy::block_threads,
                                   0, stream>>>(keys.data(), n, num_cells, offsets.data());
  HG_CUDA_CHECK_LAUNCH();
}

}  // namespace heightgrid::detail
