#pragma once
// The whole device pipeline in one call, and the CSR reduce used by tests and `compare`.
// Host-clean: included by app/ through g++.

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"

#include <string>

namespace heightgrid {

struct gpu_grid_result {
  cell_results results;
  binning_stats stats;
  gpu_phase_times times;
  std::string csr_method;  ///< csr_method_name() of the method that built the CSR
};

/// Pinned staging + async H2D of x, y, z -> cell ids (grid.cell_of) -> CSR (`method`) -> reduce
/// (`mode`) -> D2H of the requested bands. Results follow the output convention of metrics.hpp
/// and the stats those of bin_points_cpu. Synchronizes `stream`. Errors as device_csr::from_points.
[[nodiscard]] gpu_grid_result grid_points_gpu(grid_spec const& grid, point_chunk const& points,
                                              metric_request const& request, float nodata, reduce_mode mode,
                                              csr_method method, cudaStream_t stream);

/// The same with default_csr_method.
[[nodiscard]] gpu_grid_result grid_points_gpu(grid_spec const& grid, point_chunk const& points,
                                              metric_request const& request, float nodata, reduce_mode mode,
                                              cudaStream_t stream);

/// Uploads `csr`, reduces it with `mode`, downloads the requested bands. When `kernel_ms` is given
/// it receives device_cell_results::kernel_ms() of the reduce. Synchronizes `stream`.
/// (The out-parameter follows the stream, unlike the rest of the API, so that callers without
/// timing can leave it out.)
[[nodiscard]] cell_results reduce_csr_gpu(csr_grid const& csr, metric_request const& request, float nodata,
                                          reduce_mode mode, cudaStream_t stream, float* kernel_ms = nullptr);

}  // namespace heightgrid
