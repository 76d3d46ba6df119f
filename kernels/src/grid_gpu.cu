// The whole device pipeline (grid_points_gpu) and the host-CSR reduce (reduce_csr_gpu), composed
// from device_csr and reduce(); and the pipeline of the atomic mode, which builds no CSR: the
// streaming grid's own fold and finalize (detail/binner/grid_accumulate.cuh), so that what
// `compare --modes atomic` times is what `grid` runs.

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/device_context.cuh"
#include "detail/infra/impl.cuh"
#include "detail/infra/pinned_staging.cuh"
#include "detail/binner/grid_accumulate.cuh"
#include "heightgrid/kernels/grid_gpu.hpp"

#include <string>

namespace heightgrid {
namespace {

/// reduce_mode::atomic: upload x, y, z, then one pass over the points (cell ids and atomics fused)
/// and a finalize pass over the cells. Its time is reported as reduce_ms; cell_ids_ms and csr_ms
/// stay 0, since there is neither a separate cell-id pass nor a CSR.
gpu_grid_result grid_points_atomic(grid_spec const& grid, point_chunk const& points, metric_request const& request,
                                   float nodata, cudaStream_t stream)
{
  HG_EXPECTS(points.x.size() == points.y.size() && points.x.size() == points.z.size(), error_kind::internal,
          "grid_points_gpu: x, y and z differ in length");
  HG_EXPECTS(mode_supports(reduce_mode::atomic, request), error_kind::usage,
          "atomic mode supports range,min,max,count (mean and stddev need --mode hybrid, thread, warp or cub)");
  auto const cells = grid.num_cells();
  HG_EXPECTS(cells <= max_cells, error_kind::resource,
          "grid_points_gpu: a grid of " + std::to_string(cells) + " cells exceeds the limit of " +
            std::to_string(max_cells));
  detail::require_device();
  auto const n = static_cast<std::uint64_t>(points.size());

  gpu_grid_result r;
  r.csr_method = "none";
  detail::cuda_event start;
  detail::cuda_event uploaded;
  detail::cuda_event reduced;
  detail::cuda_event downloaded;
  auto state = detail::make_cell_results(cells, request, reduce_mode::atomic, stream);
  // The accumulators of one band that is the whole grid, as gpu_binner keeps them.
  detail::device_buffer<std::uint64_t> lo(cells, stream);
  detail::device_buffer<std::uint64_t> hi(cells, stream);
  detail::device_buffer<std::uint32_t> count(cells, stream);
  detail::device_buffer<detail::batch_counters> counters(1, stream);
  for (auto* b : {&lo, &hi}) { b->fill_bytes(0, stream); }
  count.fill_bytes(0, stream);
  counters.fill_bytes(0, stream);
  accumulator_view const acc{lo.data(), hi.data(), count.data(), nullptr, nullptr, cells, 1};
  start.record(stream);
  {
    detail::pinned_staging staging(n * sizeof(double));
    // The columns of one point_batch of n points (x, then y, then z).
    detail::device_buffer<double> xyz(3 * n, stream);
    staging.to_device(xyz.data(), points.x.data(), n * sizeof(double), stream);
    staging.to_device(xyz.data() + n, points.y.data(), n * sizeof(double), stream);
    staging.to_device(xyz.data() + 2 * n, points.z.data(), n * sizeof(double), stream);
    uploaded.record(stream);

    // Runs even when no band is requested: the points outside the grid are counted on the way.
    state->start.record(stream);
    if (n > 0) {
      detail::batch_columns<coord_encoding::float64> const cols{xyz.data(), n, scaled_coords{}};
      detail::accumulate_atomic_thread_per_point_kernel<<<detail::grid_blocks(n, detail::batch_policy::block_threads),
                                                          detail::batch_policy::block_threads, 0, stream>>>(
        cols, n, grid, 0, acc, counters.data());
      HG_CUDA_CHECK_LAUNCH();
    }
    if (cells > 0) {
      detail::output_bands const o = detail::bands_of(*state);
      band_pointers const out{o.min, o.max, o.range, o.count, o.mean, o.stddev};
      detail::finalize_rows_thread_per_cell_kernel<<<detail::grid_blocks(cells, detail::batch_policy::block_threads),
                                                     detail::batch_policy::block_threads, 0, stream>>>(
        acc, 0, grid.cols, grid.cols, cells, out, nodata);
      HG_CUDA_CHECK_LAUNCH();
    }
    state->stop.record(stream);
  }  // the columns are freed here (stream order: after the kernels)
  device_cell_results const bands(std::move(state));
  reduced.record(stream);
  r.results = bands.to_host(stream);
  downloaded.record(stream);

  detail::batch_counters tally{};
  HG_CUDA_TRY(cudaMemcpyAsync(&tally, counters.data(), sizeof(tally), cudaMemcpyDeviceToHost, stream));
  HG_CUDA_TRY(cudaStreamSynchronize(stream));
  unsigned long long const dropped = tally.outside;
  r.stats.points_in = n;
  r.stats.points_outside = dropped;
  r.stats.points_binned = n - dropped;
  r.times.h2d_ms = detail::elapsed_ms(start, uploaded);
  r.times.reduce_ms = bands.kernel_ms();
  r.times.d2h_ms = detail::elapsed_ms(reduced, downloaded);
  r.times.total_ms = detail::elapsed_ms(start, downloaded);
  return r;
}

}  // namespace

gpu_grid_result grid_points_gpu(grid_spec const& grid, point_chunk const& points, metric_request const& request,
                                float nodata, reduce_mode mode, csr_method method, cudaStream_t stream)
{
  if (mode == reduce_mode::atomic) { return grid_points_atomic(grid, points, request, nodata, stream); }
  detail::require_device();
  gpu_grid_result r;
  r.csr_method = std::string(csr_method_name(method));
  detail::cuda_event start;
  detail::cuda_event reduced;
  detail::cuda_event downloaded;

  start.record(stream);
  auto const csr = device_csr::from_points(grid, points, method, r.stats, r.times, stream);
  auto const bands = reduce(csr, request, nodata, mode, stream);
  reduced.record(stream);
  r.results = bands.to_host(stream);
  downloaded.record(stream);

  r.times.reduce_ms = bands.kernel_ms();
  r.times.d2h_ms = detail::elapsed_ms(reduced, downloaded);
  r.times.total_ms = detail::elapsed_ms(start, downloaded);
  return r;
}

gpu_grid_result grid_points_gpu(grid_spec const& grid, point_chunk const& points, metric_request const& request,
                                float nodata, reduce_mode mode, cudaStream_t stream)
{
  return grid_points_gpu(grid, points, request, nodata, mode, default_csr_method, stream);
}

cell_results reduce_csr_gpu(csr_grid const& csr, metric_request const& request, float nodata, reduce_mode mode,
                            cudaStream_t stream, float* kernel_ms)
{
  auto const device = device_csr::from_host(csr, stream);
  auto const bands = reduce(device, request, nodata, mode, stream);
  auto results = bands.to_host(stream);
  if (kernel_ms != nullptr) { *kernel_ms = bands.kernel_ms(); }
  return results;
}

}  // namespace heightgrid
