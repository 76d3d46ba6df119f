// Order statistics of the streaming grid on the device (see detail/order_stats.cuh).

#include "detail/infra/key_bits.hpp"
#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/launch.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/order/order_stats.cuh"
#include "detail/infra/pinned_staging.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <vector>

#include "heightgrid/core/order_store.hpp"
#include "heightgrid/core/shape_metrics.hpp"

namespace heightgrid::detail {
namespace {

/// A cell's sorted ordered keys read as the doubles they order (percentile_of_sorted and
/// shape_of_sorted index it).
struct sorted_values {
  std::uint64_t const* k;
  __host__ __device__ double operator[](std::uint64_t i) const noexcept { return from_ordered_key(k[i]); }
};

/// Percentiles a launch can take by value (the CLI has no limit: more are done in several launches).
constexpr int max_percentiles_per_launch = 16;

struct percentile_set {
  double p[max_percentiles_per_launch];
  float* column[max_percentiles_per_launch];
  int n;
  float* prange;  ///< null unless asked
  double lo, hi;
};

/// Mapping: one thread per cell, grid-stride.
/// Preconditions: offsets has cells + 1 entries; keys holds each cell's ordered keys sorted
///   increasingly at [offsets[c], offsets[c + 1]).
/// Result: column k of cell c = float(percentile_of_sorted(values, n, p[k])), prange = float(P(hi) -
///   P(lo)); nodata for empty cells. Valid once the kernel has completed.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  percentiles_thread_per_cell_kernel(std::uint64_t const* __restrict__ keys, std::uint64_t const* __restrict__ offsets,
                                     std::uint64_t cells, percentile_set set, float nodata)
{
  for (std::uint64_t c = global_thread_index(); c < cells; c += grid_threads()) {
    std::uint64_t const begin = offsets[c];
    std::uint64_t const n = offsets[c + 1] - begin;
    sorted_values const v{keys + begin};
    for (int k = 0; k < set.n; ++k) {
      set.column[k][c] = n == 0 ? nodata : static_cast<float>(percentile_of_sorted(v, n, set.p[k]));
    }
    if (set.prange != nullptr) {
      set.prange[c] = n == 0 ? nodata
                             : static_cast<float>(percentile_of_sorted(v, n, set.hi) -
                                                  percentile_of_sorted(v, n, set.lo));
    }
  }
}

/// Shape metrics a launch can take by value (more are done in several launches).
constexpr int max_shapes_per_launch = 16;

struct shape_set {
  metric m[max_shapes_per_launch];
  float* column[max_shapes_per_launch];
  int n;
};

/// Mapping: one thread per cell, grid-stride.
/// Preconditions: as percentiles_thread_per_cell_kernel.
/// Result: column k of cell c = float(shape_of_sorted(values, n, m[k])); nodata for empty cells and
///   where the metric has none. Valid once the kernel has completed.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  shapes_thread_per_cell_kernel(std::uint64_t const* __restrict__ keys, std::uint64_t const* __restrict__ offsets,
                                std::uint64_t cells, shape_set set, float nodata)
{
  for (std::uint64_t c = global_thread_index(); c < cells; c += grid_threads()) {
    std::uint64_t const begin = offsets[c];
    std::uint64_t const n = offsets[c + 1] - begin;
    sorted_values const v{keys + begin};
    for (int k = 0; k < set.n; ++k) {
      double const value = n == 0 ? NAN : shape_of_sorted(v, n, set.m[k]);
      set.column[k][c] = isnan(value) ? nodata : static_cast<float>(value);
    }
  }
}

/// Mapping: one thread per cell (cells + 1 entries). Result: wide[c] = count[c], wide[cells] = 0.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  widen_counts_kernel(std::uint32_t const* __restrict__ count, std::uint64_t cells, std::uint64_t* __restrict__ wide)
{
  for (std::uint64_t c = global_thread_index(); c <= cells; c += grid_threads()) { wide[c] = c < cells ? count[c] : 0; }
}

/// Mapping: one thread per kept point. Result: the keys of points inside the band placed at their
///   cell's next free slot (any order within a cell); cursor advanced.
static __global__ void __launch_bounds__(batch_policy::block_threads)
  scatter_by_cell_kernel(cell_id const* __restrict__ keys, std::uint64_t const* __restrict__ z, std::uint64_t n,
                         std::uint64_t cells, unsigned long long* __restrict__ cursor, std::uint64_t* __restrict__ out)
{
  for (std::uint64_t i = global_thread_index(); i < n; i += grid_threads()) {
    cell_id const c = keys[i];
    if (c < cells) { out[atomicAdd(cursor + c, 1ULL)] = z[i]; }
  }
}

}  // namespace

void order_finalize(cell_id* keys, std::uint64_t* z, std::uint64_t n, std::uint32_t const* count, std::uint64_t cells,
                    metric_request const& request, float nodata, order_sort method, float* bands,
                    cudaStream_t stream, cudaEvent_t sorted_event)
{
  if (cells == 0) { return; }
  auto const block = batch_policy::block_threads;
  // Offsets of each cell's values, from the counts.
  device_buffer<std::uint64_t> wide(cells + 1, stream);
  device_buffer<std::uint64_t> offsets(cells + 1, stream);
  widen_counts_kernel<<<grid_blocks(cells + 1, block), block, 0, stream>>>(count, cells, wide.data());
  HG_CUDA_CHECK_LAUNCH();
  std::size_t temp_bytes = 0;
  HG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, wide.data(), offsets.data(), cells + 1, stream));
  {
    device_buffer<std::byte> temp(temp_bytes, stream);
    HG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, wide.data(), offsets.data(), cells + 1, stream));
  }
  std::uint64_t total = 0;
  HG_CUDA_TRY(cudaMemcpyAsync(&total, offsets.data() + cells, sizeof total, cudaMemcpyDeviceToHost, stream));
  HG_CUDA_TRY(cudaStreamSynchronize(stream));
  HG_EXPECTS(total <= n, error_kind::internal,
          "order_finalize: the counts (" + std::to_string(total) + ") exceed the kept points (" + std::to_string(n) + ")");

  // `sorted`: every cell's ordered keys, increasing, at [offsets[c], offsets[c + 1]).
  std::uint64_t* sorted = nullptr;
  device_buffer<std::uint64_t> scratch;
  if (method == order_sort::segmented) {
    scratch = device_buffer<std::uint64_t>(total, stream);
    HG_CUDA_TRY(cudaMemcpyAsync(wide.data(), offsets.data(), cells * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice, stream));
    scatter_by_cell_kernel<<<grid_blocks(n, block), block, 0, stream>>>(
      keys, z, n, cells, reinterpret_cast<unsigned long long*>(wide.data()), scratch.data());
    HG_CUDA_CHECK_LAUNCH();
    // z is free now: the sorted keys go there.
    temp_bytes = 0;
    HG_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(nullptr, temp_bytes, scratch.data(), z, static_cast<std::int64_t>(total),
                                                static_cast<std::int64_t>(cells), offsets.data(), offsets.data() + 1,
                                                stream));
    device_buffer<std::byte> temp(temp_bytes, stream);
    HG_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(temp.data(), temp_bytes, scratch.data(), z,
                                                static_cast<std::int64_t>(total), static_cast<std::int64_t>(cells),
                                                offsets.data(), offsets.data() + 1, stream));
    sorted = z;
  } else {
    // By z first, then stably by cell: each cell's values end up in increasing order. Points
    // outside the band have key == cells and sort after every cell.
    device_buffer<std::uint64_t> z_alt(n, stream);
    device_buffer<cell_id> keys_alt(n, stream);
    cub::DoubleBuffer<std::uint64_t> zb(z, z_alt.data());
    cub::DoubleBuffer<cell_id> kb(keys, keys_alt.data());
    temp_bytes = 0;
    HG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, zb, kb, static_cast<std::int64_t>(n), 0, 64, stream));
    std::size_t second = 0;
    HG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, second, kb, zb, static_cast<std::int64_t>(n), 0,
                                             key_bits(cells), stream));
    device_buffer<std::byte> temp(std::max(temp_bytes, second), stream);
    temp_bytes = temp.size();
    HG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, zb, kb, static_cast<std::int64_t>(n), 0, 64, stream));
    temp_bytes = temp.size();
    HG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, kb, zb, static_cast<std::int64_t>(n), 0,
                                             key_bits(cells), stream));
    if (zb.Current() != z) {
      HG_CUDA_TRY(cudaMemcpyAsync(z, zb.Current(), total * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice, stream));
    }
    sorted = z;
    // The temporaries are freed stream-ordered, after the copy.
  }
  if (sorted_event != nullptr) { HG_CUDA_TRY(cudaEventRecord(sorted_event, stream)); }

  // Percentile columns, in launches of up to max_percentiles_per_launch; prange with the first.
  std::size_t const k = request.percentiles.size();
  std::size_t done = 0;
  if (k > 0 || request.prange) {
    do {
      percentile_set set{};
      set.n = static_cast<int>(std::min<std::size_t>(max_percentiles_per_launch, k - done));
      for (int j = 0; j < set.n; ++j) {
        set.p[j] = request.percentiles[done + static_cast<std::size_t>(j)];
        set.column[j] = bands + (done + static_cast<std::size_t>(j)) * cells;
      }
      if (done == 0 && request.prange) {
        set.prange = bands + k * cells;
        set.lo = request.prange_lo;
        set.hi = request.prange_hi;
      }
      percentiles_thread_per_cell_kernel<<<grid_blocks(cells, block), block, 0, stream>>>(sorted, offsets.data(), cells,
                                                                                           set, nodata);
      HG_CUDA_CHECK_LAUNCH();
      done += static_cast<std::size_t>(set.n);
    } while (done < k);
  }
  // Shape columns after them, in launches of up to max_shapes_per_launch.
  std::size_t const first = k + (request.prange ? 1 : 0);
  for (std::size_t s = 0; s < request.shapes.size(); s += max_shapes_per_launch) {
    shape_set set{};
    set.n = static_cast<int>(std::min<std::size_t>(max_shapes_per_launch, request.shapes.size() - s));
    for (int j = 0; j < set.n; ++j) {
      set.m[j] = request.shapes[s + static_cast<std::size_t>(j)];
      set.column[j] = bands + (first + s + static_cast<std::size_t>(j)) * cells;
    }
    shapes_thread_per_cell_kernel<<<grid_blocks(cells, block), block, 0, stream>>>(sorted, offsets.data(), cells, set,
                                                                                   nodata);
    HG_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace heightgrid::detail

namespace heightgrid {
namespace {

/// Mapping: one thread per point. Result: keys[i] = the cell whose [offsets[c], offsets[c + 1])
///   holds i (binary search), z[i] = ordered_key(values[i]).
static __global__ void __launch_bounds__(detail::batch_policy::block_threads)
  csr_points_kernel(point_offset const* __restrict__ offsets, std::uint64_t cells, double const* __restrict__ values,
                    std::uint64_t n, cell_id* __restrict__ keys, std::uint64_t* __restrict__ z)
{
  for (std::uint64_t i = detail::global_thread_index(); i < n; i += detail::grid_threads()) {
    std::uint64_t lo = 0, hi = cells;  // the last c with offsets[c] <= i
    while (hi - lo > 1) {
      std::uint64_t const mid = lo + (hi - lo) / 2;
      if (offsets[mid] <= i) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    keys[i] = static_cast<cell_id>(lo);
    z[i] = ordered_key(values[i]);
  }
}

/// Mapping: one thread per cell. Result: count[c] = offsets[c + 1] - offsets[c].
static __global__ void __launch_bounds__(detail::batch_policy::block_threads)
  csr_counts_kernel(point_offset const* __restrict__ offsets, std::uint64_t cells, std::uint32_t* __restrict__ count)
{
  for (std::uint64_t c = detail::global_thread_index(); c < cells; c += detail::grid_threads()) {
    count[c] = static_cast<std::uint32_t>(offsets[c + 1] - offsets[c]);
  }
}

}  // namespace

order_stats_run order_stats_of_csr(device_csr const& csr, metric_request const& request, float nodata, order_sort method)
{
  auto const v = csr.view();
  cudaStream_t const st = nullptr;
  auto const block = detail::batch_policy::block_threads;
  std::uint64_t const cells = v.num_cells;
  std::uint64_t const n = v.num_points;
  detail::device_buffer<cell_id> keys(n, st);
  detail::device_buffer<std::uint64_t> z(n, st);
  detail::device_buffer<std::uint32_t> count(cells, st);
  if (n > 0) {
    csr_points_kernel<<<detail::grid_blocks(n, block), block, 0, st>>>(v.offsets, cells, v.z, n, keys.data(), z.data());
    HG_CUDA_CHECK_LAUNCH();
  }
  if (cells > 0) {
    csr_counts_kernel<<<detail::grid_blocks(cells, block), block, 0, st>>>(v.offsets, cells, count.data());
    HG_CUDA_CHECK_LAUNCH();
  }
  std::size_t const columns = detail::order_columns(request);
  detail::device_buffer<float> bands(columns * cells, st);
  HG_CUDA_TRY(cudaStreamSynchronize(st));
  detail::cuda_event start, stop;
  start.record(st);
  detail::order_finalize(keys.data(), z.data(), n, count.data(), cells, request, nodata, method, bands.data(), st);
  stop.record(st);
  HG_CUDA_TRY(cudaStreamSynchronize(st));
  order_stats_run run;
  run.kernel_ms = detail::elapsed_ms(start, stop);
  size_order_columns(run.bands, request, cells);
  auto const download = [&](std::size_t k, column<float>& host) {
    if (cells > 0) {
      HG_CUDA_TRY(cudaMemcpy(host.data(), bands.data() + k * cells, cells * sizeof(float), cudaMemcpyDeviceToHost));
    }
  };
  for (std::size_t k = 0; k < request.percentiles.size(); ++k) { download(k, run.bands.percentile[k]); }
  if (request.prange) { download(request.percentiles.size(), run.bands.prange); }
  std::size_t const first = request.percentiles.size() + (request.prange ? 1 : 0);
  for (std::size_t k = 0; k < request.shapes.size(); ++k) { download(first + k, run.bands.shape[k]); }
  return run;
}

}  // namespace heightgrid
