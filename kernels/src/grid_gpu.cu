// The whole device pipeline (grid_points_gpu) and the host-CSR reduce (reduce_csr_gpu), composed
// from device_csr and reduce(); and the pipeline of the atomic mode, which builds no CSR.

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/device_context.cuh"
#include "detail/infra/impl.cuh"
#include "detail/infra/pinned_staging.cuh"
#include "detail/reduce/reduce_atomic.cuh"
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
  detail::device_buffer<unsigned long long> outside(1, stream);
  outside.fill_bytes(0, stream);

  auto state = detail::make_cell_results(cells, request, reduce_mode::atomic, stream);
  start.record(stream);
  {
    detail::pinned_staging staging(n * sizeof(double));
    detail::device_buffer<double> x(n, stream);
    detail::device_buffer<double> y(n, stream);
    detail::device_buffer<double> z(n, stream);
    staging.to_device(x.data(), points.x.data(), x.bytes(), stream);
    staging.to_device(y.data(), points.y.data(), y.bytes(), stream);
    staging.to_device(z.data(), points.z.data(), z.bytes(), stream);
    uploaded.record(stream);

    // Runs even when no band is requested: the points outside the grid are counted on the way.
    state->start.record(stream);
    detail::launch_atomic_thread_per_point(x.data(), y.data(), z.data(), n, grid, request, detail::bands_of(*state),
                                           nodata, outside.data(), stream);
    state->stop.record(stream);
  }  // x, y, z are freed here (stream order: after the kernels)
  device_cell_results const bands(std::move(state));
  reduced.record(stream);
  r.results = bands.to_host(stream);
  downloaded.record(stream);

  unsigned long long dropped = 0;
  HG_CUDA_TRY(cudaMemcpyAsync(&dropped, outside.data(), sizeof(dropped), cudaMemcpyDeviceToHost, stream));
  HG_CUDA_TRY(cudaStreamSynchronize(stream));
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
