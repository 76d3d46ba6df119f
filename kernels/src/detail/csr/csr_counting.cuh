#pragma once
// csr_method::counting: histogram (atomics) -> exclusive scan -> scatter with an atomic cursor per
// cell. Within a cell the points land in whatever order the atomics grant: min/max/count do not
// care; mean/stddev may differ from the CPU's stable order by rounding.

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/launch.cuh"
#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/grid_spec.hpp"

#include <cub/device/device_scan.cuh>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace heightgrid::detail {

static_assert(sizeof(point_offset) == sizeof(unsigned long long), "atomicAdd works on 64-bit counters");

__device__ inline unsigned long long* as_atomic_counter(point_offset* p) noexcept
{
  return reinterpret_cast<unsigned long long*>(p);
}

/// Mapping: one thread per point, grid-stride in whole-warp steps. The lanes of a warp that hold the
///   same key (__match_any_sync: LiDAR points arrive in scan order, so neighbours often share a
///   cell) add their number with one atomic by the lowest such lane.
/// Preconditions: keys has n entries, each < outside_key or == outside_key (outside: not counted);
///   counts has outside_key entries, zeroed; blockDim.x is a multiple of warp_size.
/// Result: counts[c] = number of keys equal to c, once the kernel has completed.
/// Example: keys=[2, 0, 2, 3(outside)], outside_key 3 -> counts=[1, 0, 2].
static __global__ void __launch_bounds__(item_policy::block_threads)
  histogram_thread_per_point_kernel(cell_id const* __restrict__ keys, std::uint64_t n, cell_id outside_key,
                                    point_offset* __restrict__ counts)
{
  auto const lane = static_cast<unsigned int>(threadIdx.x % warp_size);
  // `i - lane` is the warp's first index: the same for all 32 lanes, so the loop is warp-uniform.
  for (std::uint64_t i = global_thread_index(); i - lane < n; i += grid_threads()) {
    cell_id const key = i < n ? keys[i] : outside_key;
    unsigned int const peers = __match_any_sync(full_warp_mask, key);
    auto const leader = static_cast<unsigned int>(__ffs(static_cast<int>(peers)) - 1);
    if (key != outside_key && lane == leader) {
      atomicAdd(as_atomic_counter(counts + key), static_cast<unsigned long long>(__popc(peers)));
    }
  }
}

/// Mapping: one thread per point, grid-stride in whole-warp steps; lanes sharing a key reserve
///   their slots with one atomic on the cell's cursor and take consecutive slots in lane order.
/// Preconditions: as histogram_thread_per_point_kernel; cursor[c] == offsets[c] (the exclusive scan
///   of the counts); z_out has offsets[outside_key] entries.
/// Result: z_out holds every inside point's z inside its cell's range; cursor[c] == offsets[c + 1].
///   Valid once the kernel has completed.
/// Example: keys=[2, 0, 2, 3] z=[5, 6, 7, 8] cursor=[0, 1, 1] -> z_out=[6, 5, 7] (or [6, 7, 5]).
static __global__ void __launch_bounds__(item_policy::block_threads)
  scatter_thread_per_point_kernel(cell_id const* __restrict__ keys, double const* __restrict__ z_in, std::uint64_t n,
                                  cell_id outside_key, point_offset* __restrict__ cursor,
                                  double* __restrict__ z_out)
{
  auto const lane = static_cast<unsigned int>(threadIdx.x % warp_size);
  for (std::uint64_t i = global_thread_index(); i - lane < n; i += grid_threads()) {
    cell_id const key = i < n ? keys[i] : outside_key;
    unsigned int const peers = __match_any_sync(full_warp_mask, key);
    auto const leader = static_cast<int>(__ffs(static_cast<int>(peers)) - 1);
    unsigned long long base = 0;
    if (key != outside_key && lane == static_cast<unsigned int>(leader)) {
      base = atomicAdd(as_atomic_counter(cursor + key), static_cast<unsigned long long>(__popc(peers)));
    }
    // Every lane takes part; each reads the base of its own group from that group's leader.
    base = __shfl_sync(full_warp_mask, base, leader);
    if (key != outside_key) {
      unsigned int const lower_peers = peers & ((1U << lane) - 1U);
      z_out[base + static_cast<unsigned long long>(__popc(lower_peers))] = z_in[i];
    }
  }
}

/// Builds offsets (num_cells + 1 entries) and the cell-ordered z (sized for every point; the first
/// offsets[num_cells] entries are the binned ones) from per-point keys, outside points having key
/// num_cells. Asynchronous on `stream`; num_cells >= 1.
inline void build_csr_counting(device_buffer<cell_id> const& keys, device_buffer<double> const& z,
                               std::uint64_t num_cells, device_buffer<point_offset>& offsets,
                               device_buffer<double>& z_out, cudaStream_t stream)
{
  auto const n = keys.size();
  auto const outside = static_cast<cell_id>(num_cells);
  auto const blocks = grid_blocks(n, item_policy::block_threads);

  // counts has num_cells + 1 entries, the last one staying 0, so that the exclusive scan over all of
  // them ends with offsets[num_cells] = number of binned points.
  device_buffer<point_offset> counts(num_cells + 1, stream);
  counts.fill_bytes(0, stream);
  if (n > 0) {
    histogram_thread_per_point_kernel<<<blocks, item_policy::block_threads, 0, stream>>>(keys.data(), n, outside,
                                                                                         counts.data());
    HG_CUDA_CHECK_LAUNCH();
  }
  offsets = device_buffer<point_offset>(num_cells + 1, stream);
  std::size_t temp_bytes = 0;
  HG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, counts.data(), offsets.data(), num_cells + 1, stream));
  {
    device_buffer<std::byte> temp(temp_bytes, stream);
    HG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, counts.data(), offsets.data(), num_cells + 1,
                                           stream));
  }

  // Sized for every point rather than the binned ones: knowing that number would cost a round trip
  // to the host in the middle of the pipeline.
  z_out = device_buffer<double>(n, stream);
  if (n > 0) {
    // The counts become the write cursors: cursor[c] starts at offsets[c].
    HG_CUDA_TRY(cudaMemcpyAsync(counts.data(), offsets.data(), offsets.bytes(), cudaMemcpyDeviceToDevice, stream));
    scatter_thread_per_point_kernel<<<blocks, item_policy::block_threads, 0, stream>>>(
      keys.data(), z.data(), n, outside, counts.data(), z_out.data());
    HG_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace heightgrid::detail
