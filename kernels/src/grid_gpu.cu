// The whole device pipeline (grid_points_gpu) and the host-CSR reduce (reduce_csr_gpu), composed
// from device_csr and reduce().

#include "detail/cuda_check.cuh"
#include "detail/cuda_event.cuh"
#include "detail/device_context.cuh"
#include "heightgrid/kernels/grid_gpu.hpp"

#include <string>

namespace heightgrid {

gpu_grid_result grid_points_gpu(grid_spec const& grid, point_chunk const& points, metric_request const& request,
                                float nodata, reduce_mode mode, csr_method method, cudaStream_t stream)
{
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
