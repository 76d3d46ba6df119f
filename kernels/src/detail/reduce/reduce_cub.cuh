#pragma once
// reduce_mode::cub: cub::DeviceSegmentedReduce over the CSR (segments = cells), the oracle and the
// baseline the hand-written modes are measured against.

#include "detail/reduce/cell_store.cuh"
#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/launch.cuh"
#include "heightgrid/kernels/device_csr.hpp"

#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/functional>
#include <cuda_runtime_api.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace heightgrid::detail {

/// (z[i] - mean of i's cell)^2 for point i, the input of the stddev pass. The cell of point i is
/// found by binary search: the first c with offsets[c + 1] > i.
/// Example: offsets=[0,3,3,7] sums=[21,0,17] z=[8,6,7,5,3,0,9]: i=4 -> cell 2, mean 4.25 -> 1.5625.
struct squared_deviation {
  point_offset const* offsets;
  double const* z;
  double const* sums;
  std::uint64_t num_cells;

  __host__ __device__ double operator()(std::uint64_t i) const noexcept
  {
    std::uint64_t lo = 0;
    std::uint64_t hi = num_cells;
    while (lo < hi) {
      std::uint64_t const mid = lo + (hi - lo) / 2;
      if (offsets[mid + 1] <= i) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    double const d = z[i] - cell_mean(sums[lo], offsets[lo + 1] - offsets[lo]);
    return d * d;
  }
};

/// Mapping: one thread per cell, grid-stride. Turns the per-cell doubles of the segmented
///   reductions into the output bands through store_cell.
/// Preconditions: offsets has num_cells + 1 entries; each of lo, hi, sum, m2 is null or has
///   num_cells entries, and is non-null whenever a band that needs it is requested.
/// Result: every requested band of every cell, once the kernel has completed.
/// Example: offsets=[0,3,3,7] lo=[6,+inf,0] -> min=[6,nan,0] (cell 1 is empty: nodata).
static __global__ void __launch_bounds__(item_policy::block_threads)
  finalize_thread_per_cell_kernel(point_offset const* __restrict__ offsets, double const* __restrict__ lo,
                                  double const* __restrict__ hi, double const* __restrict__ sum,
                                  double const* __restrict__ m2, std::uint64_t num_cells, output_bands out,
                                  float nodata)
{
  for (std::uint64_t c = global_thread_index(); c < num_cells; c += grid_threads()) {
    cell_moments const m{offsets[c + 1] - offsets[c], lo != nullptr ? lo[c] : 0.0, hi != nullptr ? hi[c] : 0.0,
                         sum != nullptr ? sum[c] : 0.0, m2 != nullptr ? m2[c] : 0.0};
    store_cell(out, c, m, nodata);
  }
}

/// Runs a CUB device algorithm the CUB way: query the temporary storage, allocate it (stream-
/// ordered), run. `call(d_temp, bytes)` returns the algorithm's cudaError_t.
template <typename Call>
void run_cub(char const* what, Call&& call, cudaStream_t stream)
{
  std::size_t bytes = 0;
  check_cuda(call(nullptr, bytes), what, __FILE__, __LINE__);
  device_buffer<std::byte> temp(bytes, stream);
  check_cuda(call(temp.data(), bytes), what, __FILE__, __LINE__);
}

/// Reduces every cell of `csr` with cub::DeviceSegmentedReduce: min and max with ±inf identities,
/// sum for the mean, and the sum of squared_deviation for stddev; only those the request needs.
/// Then finalize_thread_per_cell_kernel writes the bands.
inline void launch_cub_segmented(device_csr_view const& csr, metric_request const& request, output_bands const& out,
                                 float nodata, cudaStream_t stream)
{
  auto const cells = csr.num_cells;
  if (cells == 0) { return; }
  auto const num_segments = static_cast<std::int64_t>(cells);
  bool const need_lo = request.min || request.range;
  bool const need_hi = request.max || request.range;
  bool const need_sum = request.needs_sums();
  bool const need_m2 = request.stddev;
  device_buffer<double> lo(need_lo ? cells : 0, stream);
  device_buffer<double> hi(need_hi ? cells : 0, stream);
  device_buffer<double> sum(need_sum ? cells : 0, stream);
  device_buffer<double> m2(need_m2 ? cells : 0, stream);
  point_offset const* const begins = csr.offsets;
  point_offset const* const ends = csr.offsets + 1;

  if (need_lo) {
    run_cub(
      "cub::DeviceSegmentedReduce::Reduce(min)",
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceSegmentedReduce::Reduce(temp, bytes, csr.z, lo.data(), num_segments, begins, ends,
                                                  ::cuda::minimum<>{}, std::numeric_limits<double>::infinity(),
                                                  stream);
      },
      stream);
  }
  if (need_hi) {
    run_cub(
      "cub::DeviceSegmentedReduce::Reduce(max)",
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceSegmentedReduce::Reduce(temp, bytes, csr.z, hi.data(), num_segments, begins, ends,
                                                  ::cuda::maximum<>{}, -std::numeric_limits<double>::infinity(),
                                                  stream);
      },
      stream);
  }
  if (need_sum) {
    run_cub(
      "cub::DeviceSegmentedReduce::Sum",
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceSegmentedReduce::Sum(temp, bytes, csr.z, sum.data(), num_segments, begins, ends, stream);
      },
      stream);
  }
  if (need_m2) {
    auto const deviations = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0),
                                                            squared_deviation{csr.offsets, csr.z, sum.data(), cells});
    run_cub(
      "cub::DeviceSegmentedReduce::Sum(squared deviations)",
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceSegmentedReduce::Sum(temp, bytes, deviations, m2.data(), num_segments, begins, ends,
                                               stream);
      },
      stream);
  }
  finalize_thread_per_cell_kernel<<<grid_blocks(cells, item_policy::block_threads), item_policy::block_threads, 0,
                                    stream>>>(csr.offsets, lo.data(), hi.data(), sum.data(), m2.data(), cells, out,
                                              nodata);
  HG_CUDA_CHECK_LAUNCH();
}

}  // namespace heightgrid::detail
