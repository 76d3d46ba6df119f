// reduce(): the single dispatch from reduce_mode to a detail/ launcher, and device_cell_results.

#include "detail/reduce/cell_store.cuh"
#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_context.cuh"
#include "detail/infra/impl.cuh"
#include "detail/infra/pinned_staging.cuh"
#include "detail/reduce/reduce_cub.cuh"
#include "detail/hybrid/launch_hybrid.cuh"
#include "detail/reduce/reduce_thread.cuh"
#include "detail/reduce/reduce_warp.cuh"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/hybrid_plan.hpp"

#include <algorithm>
#include <string>

namespace heightgrid {
namespace detail {

std::unique_ptr<device_cell_results::impl> make_cell_results(std::uint64_t cells, metric_request const& request,
                                                             reduce_mode mode, cudaStream_t stream)
{
  auto state = std::make_unique<device_cell_results::impl>();
  state->num_cells = cells;
  state->mode = mode;
  auto const band = [&](bool wanted) { return device_buffer<float>(wanted ? cells : 0, stream); };
  state->min = band(request.min);
  state->max = band(request.max);
  state->range = band(request.range);
  state->mean = band(request.mean);
  state->stddev = band(request.stddev);
  state->count = device_buffer<std::uint32_t>(request.count ? cells : 0, stream);

  // Poison: all-ones bytes are a negative NaN as float (never the nodata a user can pass through
  // the CLI bit for bit) and 2^32-1 as count, so a cell a kernel failed to write shows up in tests.
  for (auto* b : {&state->min, &state->max, &state->range, &state->mean, &state->stddev}) { b->fill_bytes(0xff, stream); }
  state->count.fill_bytes(0xff, stream);
  return state;
}

output_bands bands_of(device_cell_results::impl& state) noexcept
{
  return {state.min.data(), state.max.data(), state.range.data(), state.count.data(), state.mean.data(),
          state.stddev.data()};
}

}  // namespace detail

/// A new mode is one case here (and its detail/reduce/reduce_<mode>.cuh, and its row of reduce_modes).
void detail::reduce_view(reduce_mode mode, device_csr_view const& csr, metric_request const& request,
                         detail::output_bands const& out, float nodata, cudaStream_t stream)
{
  switch (mode) {
    case reduce_mode::thread: detail::launch_thread_per_cell(csr, request, out, nodata, stream); return;
    case reduce_mode::warp: detail::launch_warp_per_cell(csr, request, out, nodata, stream); return;
    case reduce_mode::cub: detail::launch_cub_segmented(csr, request, out, nodata, stream); return;
    case reduce_mode::hybrid:
      detail::launch_hybrid(csr, request, out, nodata, hybrid_thresholds_on_device(request), stream);
      return;
    case reduce_mode::atomic: break;  // reduces points, not a CSR: reduce() turns it away first
  }
  throw error(error_kind::internal, "reduce: unknown reduce_mode " + std::to_string(static_cast<int>(mode)));
}

namespace {

/// Allocates and poisons the bands, then runs `launch(out)` between the timing events (unless no
/// band is requested).
template <typename Launch>
device_cell_results run_reduce(std::uint64_t cells, metric_request const& request, reduce_mode mode,
                               cudaStream_t stream, Launch&& launch)
{
  detail::require_device();
  auto state = detail::make_cell_results(cells, request, mode, stream);
  auto const out = detail::bands_of(*state);
  bool const any_band = request.min || request.max || request.range || request.count || request.mean || request.stddev;
  state->start.record(stream);
  if (any_band) { launch(out); }
  state->stop.record(stream);
  return device_cell_results(std::move(state));
}

}  // namespace

device_cell_results reduce(device_csr const& csr, metric_request const& request, float nodata, reduce_mode mode,
                           cudaStream_t stream)
{
  HG_EXPECTS(mode_reduces_csr(mode), error_kind::usage,
          "reduce: mode " + std::string(mode_name(mode)) +
            " reduces the points themselves, not a CSR: run it through grid_points_gpu");
  return run_reduce(csr.num_cells(), request, mode, stream, [&](detail::output_bands const& out) {
    detail::reduce_view(mode, csr.view(), request, out, nodata, stream);
  });
}

hybrid_thresholds hybrid_thresholds_on_device(metric_request const& request)
{
  int device = 0;
  int sms = 0;
  HG_CUDA_TRY(cudaGetDevice(&device));
  HG_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return hybrid_default_thresholds_for(request, static_cast<unsigned>(std::max(sms, 1)));
}

hybrid_thresholds default_hybrid_thresholds()
{
  metric_request no_sums;
  no_sums.range = true;
  return hybrid_thresholds_on_device(no_sums);
}

device_cell_results reduce_hybrid(device_csr const& csr, metric_request const& request, float nodata,
                                  hybrid_thresholds const& thresholds, cudaStream_t stream)
{
  return run_reduce(csr.num_cells(), request, reduce_mode::hybrid, stream, [&](detail::output_bands const& out) {
    detail::launch_hybrid(csr.view(), request, out, nodata, thresholds, stream);
  });
}

device_cell_results::device_cell_results(std::unique_ptr<impl> state) noexcept : impl_(std::move(state)) {}
device_cell_results::device_cell_results(device_cell_results&&) noexcept = default;
device_cell_results& device_cell_results::operator=(device_cell_results&&) noexcept = default;
device_cell_results::~device_cell_results() = default;

std::uint64_t device_cell_results::num_cells() const noexcept { return impl_ ? impl_->num_cells : 0; }
reduce_mode device_cell_results::mode() const noexcept { return impl_ ? impl_->mode : reduce_mode::thread; }

float device_cell_results::kernel_ms() const
{
  HG_EXPECTS(impl_ != nullptr, error_kind::internal, "device_cell_results::kernel_ms on a moved-from object");
  return detail::elapsed_ms(impl_->start, impl_->stop);
}

cell_results device_cell_results::to_host(cudaStream_t stream) const
{
  HG_EXPECTS(impl_ != nullptr, error_kind::internal, "device_cell_results::to_host on a moved-from object");
  auto const cells = impl_->num_cells;
  cell_results r;
  detail::pinned_staging staging(cells * sizeof(float));
  auto const download = [&](auto& host, auto const& device) {
    if (device.empty()) { return; }
    host.resize(cells);
    staging.to_host(host.data(), device.data(), device.bytes(), stream);
  };
  download(r.min, impl_->min);
  download(r.max, impl_->max);
  download(r.range, impl_->range);
  download(r.count, impl_->count);
  download(r.mean, impl_->mean);
  download(r.stddev, impl_->stddev);
  return r;
}

}  // namespace heightgrid
