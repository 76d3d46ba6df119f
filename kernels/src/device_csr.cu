// device_csr: the CSR in device memory, built from points (cell ids + the radix sort of
// csr_radix_sort.cuh) or uploaded from the host.

#include "detail/csr/cell_ids.cuh"
#include "detail/csr/csr_radix_sort.cuh"
#include "detail/csr/csr_stats.cuh"
#include "detail/infra/cuda_check.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/device_context.cuh"
#include "detail/infra/impl.cuh"
#include "detail/infra/pinned_staging.cuh"
#include "heightgrid/kernels/device_csr.hpp"

#include <algorithm>
#include <string>

namespace heightgrid {

device_csr::device_csr(std::unique_ptr<impl> state) noexcept : impl_(std::move(state)) {}
device_csr::device_csr(device_csr&&) noexcept = default;
device_csr& device_csr::operator=(device_csr&&) noexcept = default;
device_csr::~device_csr() = default;

device_csr_view device_csr::view() const noexcept
{
  if (!impl_) { return {}; }
  return {impl_->offsets.data(), impl_->z.data(), impl_->num_cells, impl_->num_points, impl_->max_cell_points};
}
std::uint64_t device_csr::max_cell_points() const noexcept { return impl_ ? impl_->max_cell_points : 0; }
std::uint64_t device_csr::num_cells() const noexcept { return impl_ ? impl_->num_cells : 0; }
std::uint64_t device_csr::num_points() const noexcept { return impl_ ? impl_->num_points : 0; }

device_csr device_csr::from_points(grid_spec const& grid, point_chunk const& points, csr_method method,
                                   binning_stats& stats, gpu_phase_times& times, cudaStream_t stream)
{
  HG_EXPECTS(points.x.size() == points.y.size() && points.x.size() == points.z.size(), error_kind::internal,
          "device_csr::from_points: x, y and z differ in length");
  auto const cells = grid.num_cells();
  HG_EXPECTS(method == csr_method::radix_sort, error_kind::internal,
          "device_csr::from_points: unknown csr_method " + std::to_string(static_cast<int>(method)));
  HG_EXPECTS(cells <= max_cells, error_kind::resource,
          "device_csr::from_points: a grid of " + std::to_string(cells) + " cells exceeds the limit of " +
            std::to_string(max_cells));
  detail::require_device();
  auto const n = static_cast<std::uint64_t>(points.size());

  detail::cuda_event start;
  detail::cuda_event uploaded;
  detail::cuda_event keyed;
  detail::cuda_event built;
  detail::pinned_staging staging(n * sizeof(double));
  auto state = std::make_unique<impl>();
  state->num_cells = cells;

  start.record(stream);
  detail::device_buffer<cell_id> keys;
  {
    detail::device_buffer<double> x(n, stream);
    detail::device_buffer<double> y(n, stream);
    state->z = detail::device_buffer<double>(n, stream);
    staging.to_device(x.data(), points.x.data(), x.bytes(), stream);
    staging.to_device(y.data(), points.y.data(), y.bytes(), stream);
    staging.to_device(state->z.data(), points.z.data(), state->z.bytes(), stream);
    uploaded.record(stream);

    keys = detail::device_buffer<cell_id>(n, stream);
    detail::launch_cell_ids_thread_per_point(x.data(), y.data(), n, grid, keys.data(), stream);
    keyed.record(stream);
  }  // x and y are freed here, after the cell ids (stream order)

  if (cells == 0) {
    // No cell to put anything in: every point is outside.
    state->offsets = detail::device_buffer<point_offset>(1, stream);
    state->offsets.fill_bytes(0, stream);
  } else {
    detail::build_csr_radix_sort(keys, state->z, cells, state->offsets, stream);
  }
  keys.reset();
  built.record(stream);
  detail::device_buffer<unsigned long long> most(1, stream);
  detail::launch_max_cell_points(state->offsets.data(), cells, most.data(), stream);

  point_offset binned = 0;
  unsigned long long max_cell = 0;
  HG_CUDA_TRY(cudaMemcpyAsync(&binned, state->offsets.data() + cells, sizeof(binned), cudaMemcpyDeviceToHost, stream));
  HG_CUDA_TRY(cudaMemcpyAsync(&max_cell, most.data(), sizeof(max_cell), cudaMemcpyDeviceToHost, stream));
  HG_CUDA_TRY(cudaStreamSynchronize(stream));
  state->num_points = binned;
  state->max_cell_points = max_cell;

  times.h2d_ms = detail::elapsed_ms(start, uploaded);
  times.cell_ids_ms = detail::elapsed_ms(uploaded, keyed);
  times.csr_ms = detail::elapsed_ms(keyed, built);
  stats.points_in += n;
  stats.points_binned += binned;
  stats.points_outside += n - binned;
  return device_csr(std::move(state));
}

device_csr device_csr::from_host(csr_grid const& csr, cudaStream_t stream)
{
  // An empty offsets vector is the CSR of a grid without cells.
  bool const valid = csr.offsets.empty() ? csr.z.empty()
                                         : (csr.offsets.front() == 0 && csr.offsets.back() == csr.z.size() &&
                                            std::is_sorted(csr.offsets.begin(), csr.offsets.end()));
  HG_EXPECTS(valid, error_kind::internal,
          "device_csr::from_host: offsets are not a CSR over z (first 0, non-decreasing, last == z.size())");
  detail::require_device();
  auto state = std::make_unique<impl>();
  state->num_cells = csr.num_cells();
  state->num_points = csr.z.size();
  for (std::size_t c = 0; c + 1 < csr.offsets.size(); ++c) {
    state->max_cell_points = std::max<std::uint64_t>(state->max_cell_points, csr.offsets[c + 1] - csr.offsets[c]);
  }
  state->offsets = detail::device_buffer<point_offset>(state->num_cells + 1, stream);
  state->z = detail::device_buffer<double>(csr.z.size(), stream);
  {
    detail::pinned_staging staging(std::max(state->offsets.bytes(), state->z.bytes()));
    if (csr.offsets.empty()) {
      state->offsets.fill_bytes(0, stream);
    } else {
      staging.to_device(state->offsets.data(), csr.offsets.data(), state->offsets.bytes(), stream);
    }
    staging.to_device(state->z.data(), csr.z.data(), state->z.bytes(), stream);
  }  // the staging waits for its copies
  HG_CUDA_TRY(cudaStreamSynchronize(stream));
  return device_csr(std::move(state));
}

csr_grid device_csr::to_host(cudaStream_t stream) const
{
  HG_EXPECTS(impl_ != nullptr, error_kind::internal, "device_csr::to_host on a moved-from object");
  csr_grid csr;
  csr.offsets.resize(impl_->num_cells + 1);
  csr.z.resize(impl_->num_points);
  detail::pinned_staging staging(std::max(csr.offsets.size() * sizeof(point_offset), csr.z.size() * sizeof(double)));
  staging.to_host(csr.offsets.data(), impl_->offsets.data(), csr.offsets.size() * sizeof(point_offset), stream);
  staging.to_host(csr.z.data(), impl_->z.data(), csr.z.size() * sizeof(double), stream);
  return csr;
}

}  // namespace heightgrid
