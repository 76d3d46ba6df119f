// gpu_binner's results (see gpu_binner.hpp): a window's bands finalized on the device and
// downloaded, the accumulators' extremes and tags for a merge, counts, a reset for the next band.

#include "detail/binner/gpu_binner_impl.cuh"

#include <algorithm>

namespace heightgrid {

cell_results gpu_binner::finalize_rows(std::uint32_t row0, std::uint32_t rows, std::uint32_t cols,
                                       metric_request const& request, float nodata, std::uint32_t col0)
{
  impl_->use_device();
  auto& s = *impl_;
  HG_EXPECTS(std::uint64_t{row0} + rows <= s.band.rows && std::uint64_t{col0} + cols <= s.band.grid.cols,
             error_kind::internal, "gpu_binner::finalize_rows: window outside the band");
  std::uint64_t const first = std::uint64_t{row0} * s.band.grid.cols + col0;
  detail::cuda_event start, stop;
  cudaStream_t const st = s.compute;
  start.record(st);
  std::uint64_t const cells = std::uint64_t{rows} * cols;
  auto const band = [&](bool wanted) { return detail::device_buffer<float>(wanted ? cells : 0, st); };
  auto min = band(request.min), max = band(request.max), range = band(request.range), mean = band(request.mean),
       stddev = band(request.stddev);
  detail::device_buffer<std::uint32_t> count(request.count ? cells : 0, st);
  band_pointers const out{min.data(), max.data(), range.data(), count.data(), mean.data(), stddev.data()};
  if (cells > 0) {
    detail::finalize_rows_thread_per_cell_kernel<<<detail::grid_blocks(cells, detail::batch_policy::block_threads),
                                                   detail::batch_policy::block_threads, 0, st>>>(
      s.view(), first, s.band.grid.cols, cols, cells, out, nodata);
    HG_CUDA_CHECK_LAUNCH();
  }
  cell_results r;
  detail::pinned_staging& staging = s.download_staging(cells * sizeof(float));
  auto const download = [&](auto& host, auto const& device) {
    if (device.empty()) { return; }
    host.resize(cells);
    // The column is fresh memory: the staging's copies out, on the caller's OpenMP team, map its
    // pages (huge ones for a large column: core/metrics.hpp, huge_column_bytes).
    staging.to_host(host.data(), device.data(), device.bytes(), st);
  };
  download(r.min, min);
  download(r.max, max);
  download(r.range, range);
  download(r.count, count);
  download(r.mean, mean);
  download(r.stddev, stddev);
  if (request.needs_order()) {
    HG_EXPECTS(s.keeps_points(), error_kind::internal, "gpu_binner::finalize_rows: order statistics of a binner that kept no points");
    s.finalize_order(request, nodata);
    size_order_columns(r, request, cells);
    auto const copy_column = [&](std::size_t k, column<float>& host) {
      // Rows of `cols` cells out of the band's rows of band.grid.cols, through the pinned staging
      // like the other bands.
      float const* from = s.order_bands.data() + k * s.band.cells() + first;
      staging.to_host_2d(host.data(), cols * sizeof(float), from, s.band.grid.cols * sizeof(float), cols * sizeof(float),
                         cells > 0 ? rows : 0, st);
    };
    for (std::size_t k = 0; k < request.percentiles.size(); ++k) { copy_column(k, r.percentile[k]); }
    if (request.prange) { copy_column(request.percentiles.size(), r.prange); }
    std::size_t const first_shape = request.percentiles.size() + (request.prange ? 1 : 0);
    for (std::size_t k = 0; k < request.shapes.size(); ++k) { copy_column(first_shape + k, r.shape[k]); }
  }
  if (request.needs_tags()) {
    HG_EXPECTS(s.tags.size() == request.tags.size() * s.band.cells(), error_kind::internal,
               "gpu_binner::finalize_rows: tagged counts of a binner that kept none");
    auto const bands = static_cast<unsigned>(request.tags.size());
    detail::device_buffer<std::uint32_t> tag_bands(cells * bands, st);
    if (cells > 0) {
      detail::finalize_tags_thread_per_cell_kernel<<<detail::grid_blocks(cells * bands, detail::batch_policy::block_threads),
                                                     detail::batch_policy::block_threads, 0, st>>>(
        s.tag_view(), s.count.data(), first, s.band.grid.cols, cols, cells, bands,
        tag_bands.data());
      HG_CUDA_CHECK_LAUNCH();
    }
    r.size_tag_columns(request, cells);
    for (unsigned k = 0; k < bands; ++k) {
      if (cells > 0) { staging.to_host(r.tag[k].data(), tag_bands.data() + k * cells, cells * sizeof(std::uint32_t), st); }
    }
  }
  stop.record(st);
  HG_CUDA_TRY(cudaStreamSynchronize(st));
  s.totals.finalize_ms += detail::elapsed_ms(start, stop);
  return r;
}

void gpu_binner::download_extremes(std::uint32_t row0, std::uint32_t rows, std::uint64_t* lo, std::uint64_t* hi,
                                   std::uint32_t* count)
{
  impl_->use_device();
  auto& s = *impl_;
  HG_EXPECTS(std::uint64_t{row0} + rows <= s.band.rows, error_kind::internal,
          "gpu_binner::download_extremes: window outside the band");
  std::uint64_t const first = std::uint64_t{row0} * s.band.grid.cols;
  std::uint64_t const cells = std::uint64_t{rows} * s.band.grid.cols;
  detail::pinned_staging& staging = s.download_staging(cells * sizeof(std::uint64_t));
  staging.to_host(lo, s.lo.data() + first, cells * sizeof(std::uint64_t), s.compute);
  staging.to_host(hi, s.hi.data() + first, cells * sizeof(std::uint64_t), s.compute);
  staging.to_host(count, s.count.data() + first, cells * sizeof(std::uint32_t), s.compute);
  HG_CUDA_TRY(cudaStreamSynchronize(s.compute));
}

void gpu_binner::download_tags(std::uint32_t row0, std::uint32_t rows, std::uint32_t* out)
{
  impl_->use_device();
  auto& s = *impl_;
  HG_EXPECTS(std::uint64_t{row0} + rows <= s.band.rows, error_kind::internal,
             "gpu_binner::download_tags: window outside the band");
  std::uint64_t const first = std::uint64_t{row0} * s.band.grid.cols;
  std::uint64_t const cells = std::uint64_t{rows} * s.band.grid.cols;
  std::size_t const bands = s.options.request.tags.size();
  if (cells == 0 || bands == 0) { return; }
  detail::pinned_staging& staging = s.download_staging(cells * sizeof(std::uint32_t));
  for (std::size_t k = 0; k < bands; ++k) {
    staging.to_host(out + k * cells, s.tags.data() + k * s.band.cells() + first, cells * sizeof(std::uint32_t),
                    s.compute);
  }
  HG_CUDA_TRY(cudaStreamSynchronize(s.compute));
}

std::uint64_t gpu_binner::total_count()
{
  impl_->use_device();
  auto& s = *impl_;
  detail::device_buffer<unsigned long long> total(1, s.compute);
  total.fill_bytes(0, s.compute);
  std::uint64_t const cells = s.band.cells();
  if (cells > 0) {
    detail::sum_counts_thread_per_cell_kernel<<<detail::grid_blocks(cells, 4 * detail::batch_policy::block_threads),
                                                detail::batch_policy::block_threads, 0, s.compute>>>(
      s.count.data(), cells, total.data());
    HG_CUDA_CHECK_LAUNCH();
  }
  unsigned long long host = 0;
  HG_CUDA_TRY(cudaMemcpyAsync(&host, total.data(), sizeof host, cudaMemcpyDeviceToHost, s.compute));
  HG_CUDA_TRY(cudaStreamSynchronize(s.compute));
  return host;
}

std::uint32_t gpu_binner::max_count()
{
  impl_->use_device();
  auto& s = *impl_;
  detail::device_buffer<unsigned int> largest(1, s.compute);
  largest.fill_bytes(0, s.compute);
  std::uint64_t const cells = s.band.cells();
  if (cells > 0) {
    detail::max_count_thread_per_cell_kernel<<<detail::grid_blocks(cells, 4 * detail::batch_policy::block_threads),
                                               detail::batch_policy::block_threads, 0, s.compute>>>(
      s.count.data(), cells, largest.data());
    HG_CUDA_CHECK_LAUNCH();
  }
  unsigned int host = 0;
  HG_CUDA_TRY(cudaMemcpyAsync(&host, largest.data(), sizeof host, cudaMemcpyDeviceToHost, s.compute));
  HG_CUDA_TRY(cudaStreamSynchronize(s.compute));
  return host;
}

void gpu_binner::reset(grid_band const& band, std::uint64_t order_capacity)
{
  impl_->use_device();
  auto& s = *impl_;
  synchronize();
  cudaStream_t const st = s.compute;
  std::uint64_t const cells = band.cells();
  if (cells != s.band.cells()) {
    s.lo = detail::device_buffer<std::uint64_t>(cells, st);
    s.hi = detail::device_buffer<std::uint64_t>(cells, st);
    s.count = detail::device_buffer<std::uint32_t>(cells, st);
    if (!s.sum.empty()) { s.sum = detail::device_buffer<double>(cells, st); }
    if (!s.m2.empty()) { s.m2 = detail::device_buffer<double>(cells, st); }
    if (!s.tags.empty()) { s.tags = detail::device_buffer<std::uint32_t>(cells * s.options.request.tags.size(), st); }
  }
  s.band = band;
  s.tags.fill_bytes(0, st);
  for (auto* b : {&s.lo, &s.hi}) { b->fill_bytes(0, st); }
  s.count.fill_bytes(0, st);
  s.sum.fill_bytes(0, st);
  s.m2.fill_bytes(0, st);
  s.counters.fill_bytes(0, st);
  s.clear_record_stats();
  if (s.keeps_points()) {
    s.reset_order();
    if (order_capacity > 0) { s.options.order_capacity = order_capacity; }
    HG_CUDA_TRY(cudaStreamSynchronize(st));
    s.order_capacity = detail::order_fit(s.options.order_capacity);
  }
  HG_CUDA_TRY(cudaStreamSynchronize(st));
}

gpu_binner_times gpu_binner::times()
{
  impl_->use_device();
  for (auto& t : impl_->timing) { impl_->collect(t); }
  return impl_->totals;
}

bool start_gpu(std::string* reason, int device, bool* memory_short) noexcept
{
  if (!detail::probe_device(reason, memory_short)) { return false; }
  try {
    if (device >= 0) {
      int count = 0;
      HG_CUDA_TRY(cudaGetDeviceCount(&count));
      HG_EXPECTS(device < count, error_kind::usage,
              "GPU " + std::to_string(device) + " asked for, but this machine has " + std::to_string(count));
      HG_CUDA_TRY(cudaSetDevice(device));
    }
    detail::require_device();
    return true;
  } catch (std::exception const& e) {
    if (memory_short != nullptr) { *memory_short = dynamic_cast<device_memory_error const*>(&e) != nullptr; }
    if (reason != nullptr) {
      try {
        *reason = e.what();
      } catch (...) {
      }
    }
    return false;
  }
}

}  // namespace heightgrid
