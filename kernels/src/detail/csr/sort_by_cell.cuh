#pragma once
// The one sort of (cell, z) pairs by cell, under both CSR builders: the dense CSR of every cell of
// a grid (csr_radix_sort.cuh, `compare` and the whole-cloud pipeline) and the CSR of a batch's
// non-empty cells (csr_runs.cuh, the streaming grid's sorted reduction).

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/key_bits.hpp"
#include "heightgrid/core/grid_spec.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <cub/util_type.cuh>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace heightgrid::detail {

/// Stable radix sort of n (cell, z) pairs by cell, cells 0..max_key (the bits key_bits names): a
/// cell's points keep their input order, so a CSR built on it is the CPU's (bin_points_cpu) bit for
/// bit. CUB's DoubleBuffer form: the sorted pairs end in keys.Current() / z.Current(), either of the
/// two buffers, and the temporary storage holds no third copy. CUB's two calls: temp == nullptr sets
/// temp_bytes; then the sort, asynchronous on `stream`.
inline void sort_pairs_by_cell(void* temp, std::size_t& temp_bytes, cub::DoubleBuffer<cell_id>& keys,
                               cub::DoubleBuffer<double>& z, std::uint64_t n, std::uint64_t max_key,
                               cudaStream_t stream)
{
  HG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, z, n, 0, key_bits(max_key), stream));
}

}  // namespace heightgrid::detail
