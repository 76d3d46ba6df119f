// gpu_binner: the streaming grid on the device (see gpu_binner.hpp): set-up, batches uploaded and
// binned, records folded where they were decoded. The windows' results: gpu_binner_results.cu.

#include "detail/binner/gpu_binner_impl.cuh"

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

namespace heightgrid {

std::size_t gpu_binner::device_bytes(grid_band const& band, gpu_binner_options const& o)
{
  std::size_t const cells = band.cells();
  std::size_t const n = o.batch_points;
  std::size_t bytes = cells * accumulator_bytes_per_cell(o.request);  // tagged counts included
  bytes += static_cast<std::size_t>(std::max(1, o.device_batches)) * batch_bytes(n);
  if (o.request.needs_order()) {
    bytes += static_cast<std::size_t>(std::min<std::uint64_t>(o.order_capacity, std::uint64_t{1} << 24)) *
             order_bytes_per_point();
  }
  if (o.reduction == batch_reduction::sorted) {
    // run_csr's scratch: keys x3, z x2, run counts, offsets, and cub's temporary storage (bounded
    // by about 2n words).
    bytes += n * (3 * sizeof(cell_id) + 2 * sizeof(double) + sizeof(std::uint64_t)) + (n + 1) * sizeof(point_offset);
    bytes += 4 * n * sizeof(std::uint64_t) + (std::size_t{1} << 20);
  }
  return bytes;
}

std::size_t gpu_binner::order_bytes_per_point() noexcept
{
  // Kept: cell (4) + ordered z (8); finalize adds the cell-ordered copy (8) and the sort's scratch.
  return 28;
}

gpu_binner::gpu_binner(grid_band const& band, gpu_binner_options const& o)
{
  HG_EXPECTS(o.batch_points > 0 && o.batch_points <= (std::size_t{1} << 30), error_kind::internal,
          "gpu_binner: batch_points " + std::to_string(o.batch_points) + " is not in 1..2^30");
  HG_EXPECTS(o.reduction == batch_reduction::sorted || !o.request.needs_sums(), error_kind::usage,
          "the atomic batch reduction keeps min, max and count only; mean and stddev need the sorted one");
  HG_EXPECTS(o.reduction == batch_reduction::atomic || mode_reduces_csr(o.mode), error_kind::usage,
          "the sorted batch reduction needs a mode that reduces a CSR, not " + std::string(mode_name(o.mode)));
  if (o.device >= 0) {
    int count = 0;
    HG_CUDA_TRY(cudaGetDeviceCount(&count));
    HG_EXPECTS(o.device < count, error_kind::usage,
            "GPU " + std::to_string(o.device) + " asked for, but this machine has " + std::to_string(count));
    HG_CUDA_TRY(cudaSetDevice(o.device));
  }
  detail::require_device();
  impl_ = std::make_unique<impl>();
  auto& s = *impl_;
  s.device = o.device;
  s.band = band;
  s.options = o;
  s.options.device_batches = std::max(1, o.device_batches);
  HG_CUDA_TRY(cudaStreamCreateWithFlags(&s.copy, cudaStreamNonBlocking));
  HG_CUDA_TRY(cudaStreamCreateWithFlags(&s.compute, cudaStreamNonBlocking));
  cudaStream_t const st = s.compute;
  std::uint64_t const cells = band.cells();
  s.lo = detail::device_buffer<std::uint64_t>(cells, st);
  s.hi = detail::device_buffer<std::uint64_t>(cells, st);
  s.count = detail::device_buffer<std::uint32_t>(cells, st);
  if (o.request.needs_sums()) { s.sum = detail::device_buffer<double>(cells, st); }
  if (o.request.stddev) { s.m2 = detail::device_buffer<double>(cells, st); }
  for (auto* b : {&s.lo, &s.hi}) { b->fill_bytes(0, st); }
  s.count.fill_bytes(0, st);
  s.sum.fill_bytes(0, st);
  s.m2.fill_bytes(0, st);
  s.counters = detail::device_buffer<detail::batch_counters>(1, st);
  s.counters.fill_bytes(0, st);
  s.tags = detail::device_buffer<std::uint32_t>(cells * o.request.tags.size(), st);
  s.tags.fill_bytes(0, st);
  s.slots.resize(static_cast<std::size_t>(s.options.device_batches));
  for (auto& slot : s.slots) { slot.data = detail::device_buffer<std::byte>(batch_bytes(o.batch_points), st); }
  if (o.reduction == batch_reduction::sorted) {
    s.runs = detail::run_csr(o.batch_points, st);
  }
  if (o.request.needs_order()) {
    s.order_kept = detail::device_buffer<unsigned long long>(1, st);
    s.order_kept.fill_bytes(0, st);
    s.order_capacity = detail::order_fit(o.order_capacity);
  }
  HG_CUDA_TRY(cudaStreamSynchronize(st));
}

gpu_binner::~gpu_binner() = default;

grid_band const& gpu_binner::band() const noexcept { return impl_->band; }

void gpu_binner::register_host_memory(void* p, std::size_t bytes)
{
  impl_->use_device();
  if (bytes == 0) { return; }
  HG_CUDA_TRY_ALLOC(cudaHostRegister(p, bytes, cudaHostRegisterPortable), bytes, detail::memory_space::pinned_host);
  impl_->registered.push_back(p);
}

void gpu_binner::reserve_kept_points(std::uint64_t points)
{
  impl_->use_device();
  if (impl_->keeps_points()) { impl_->room_for_kept(points); }
}

void gpu_binner::submit(point_batch const& b, std::function<void()> released)
{
  impl_->use_device();
  auto& s = *impl_;
  bool handed_over = false;  // once queued as pending, reclaim() or synchronize() releases the host memory
  try {
    HG_EXPECTS(b.capacity == s.options.batch_points && b.size <= b.capacity, error_kind::internal,
            "gpu_binner::submit: a batch of " + std::to_string(b.size) + " / " + std::to_string(b.capacity) +
              " points for a binner of " + std::to_string(s.options.batch_points));
    bool const records = b.encoding == coord_encoding::las_records;
    HG_EXPECTS(!records || (s.options.record_filter.has_value() && s.options.reduction == batch_reduction::atomic &&
                            !s.keeps_points() && b.payload_bytes() <= batch_bytes(b.capacity)),
               error_kind::internal,
               "gpu_binner::submit: raw LAS records need the atomic reduction, no order statistics, a record filter "
               "and records that fit the batch");
    auto& slot = s.slots[s.next % s.slots.size()];
    auto& t = s.timing[s.next % detail::timing_ring];
    ++s.next;
    s.collect(t);  // a batch timing_ring batches old: long done
    // The device copy may be overwritten once the compute stream has binned its last batch.
    if (slot.used) { HG_CUDA_TRY(cudaStreamWaitEvent(s.copy, slot.binned.get(), 0)); }
    t.h2d_start.record(s.copy);
    std::size_t const column = b.column_bytes();
    if (records || b.size == b.capacity) {
      // Records back to back, or three full columns: one contiguous copy.
      std::size_t const bytes = records ? b.payload_bytes() : 3 * column * b.capacity;
      if (bytes > 0) { HG_CUDA_TRY(cudaMemcpyAsync(slot.data.data(), b.data, bytes, cudaMemcpyHostToDevice, s.copy)); }
    } else if (b.size > 0) {
      for (int axis = 0; axis < 3; ++axis) {
        std::size_t const at = static_cast<std::size_t>(axis) * column * b.capacity;
        HG_CUDA_TRY(cudaMemcpyAsync(slot.data.data() + at, static_cast<std::byte const*>(b.data) + at, column * b.size,
                                 cudaMemcpyHostToDevice, s.copy));
      }
    }
    if (!records && b.tagged && b.size > 0) {
      std::size_t const at = tags_offset(b.capacity);
      HG_CUDA_TRY(cudaMemcpyAsync(slot.data.data() + at, static_cast<std::byte const*>(b.data) + at, b.size,
                                  cudaMemcpyHostToDevice, s.copy));
    }
    t.h2d_stop.record(s.copy);
    slot.uploaded.record(s.copy);
    cudaEvent_t const done = s.take_event();
    if (auto const status = cudaEventRecord(done, s.copy); status != cudaSuccess) {
      {
        std::lock_guard<std::mutex> lock(s.pending_mutex);
        s.spare_events.push_back(done);
      }
      HG_CUDA_TRY(status);
    }
    {
      std::lock_guard<std::mutex> lock(s.pending_mutex);
      s.pending.push_back({done, std::move(released)});
    }
    handed_over = true;
    s.totals.bytes_uploaded += b.payload_bytes();
    ++s.totals.batches;

    HG_CUDA_TRY(cudaStreamWaitEvent(s.compute, slot.uploaded.get(), 0));
    t.bin_start.record(s.compute);
    if (b.size > 0) {
      if (records) {
        s.launch_records(slot.data.data(), b);
      } else if (s.options.reduction == batch_reduction::atomic) {
        s.launch_atomic(slot.data.data(), b);
      } else {
        s.launch_sorted(slot.data.data(), b);
      }
      if (s.keeps_points()) { s.launch_keep(slot.data.data(), b); }
      if (!records) { s.launch_tags(slot.data.data(), b); }
    }
    t.bin_stop.record(s.compute);
    slot.binned.record(s.compute);
    slot.used = true;
    t.pending = true;
  } catch (...) {
    if (!handed_over && released) { released(); }  // the host memory is the caller's again
    throw;
  }
}

std::size_t gpu_binner::reclaim(bool wait)
{
  impl_->use_device();
  auto& s = *impl_;
  std::size_t released = 0;
  for (;;) {
    cudaEvent_t front = nullptr;
    {
      std::lock_guard<std::mutex> lock(s.pending_mutex);
      if (s.pending.empty()) { break; }
      front = s.pending.front().done;
    }
    // A failed device answers with its error: the memory is released all the same (synchronize()
    // reports the error).
    cudaError_t const status = wait && released == 0 ? cudaEventSynchronize(front) : cudaEventQuery(front);
    if (status == cudaErrorNotReady) { break; }
    std::function<void()> f;
    {
      std::lock_guard<std::mutex> lock(s.pending_mutex);
      f = std::move(s.pending.front().released);
      s.spare_events.push_back(front);
      s.pending.pop_front();
    }
    impl::run_released(f);
    ++released;
  }
  return released;
}

void gpu_binner::fold_device_records(void const* records, std::uint32_t stride, bool extended,
                                     std::vector<device_record_run> const& runs)
{
  impl_->use_device();
  auto& s = *impl_;
  HG_EXPECTS(s.options.record_filter.has_value() && s.options.reduction == batch_reduction::atomic &&
               !s.keeps_points() && stride > 0 && (records != nullptr || runs.empty()),
             error_kind::internal,
             "gpu_binner::fold_device_records: records need the atomic reduction, no order statistics and a record "
             "filter");
  // Runs cut into pieces of at most 2^16 records, a row of 64 blocks each (four tiles a block, so
  // that a warp adds its counts and statistics once for 128 records, not for 32): a launch's rows
  // are then all about as long, however long a file's run is.
  constexpr std::uint64_t piece = std::uint64_t{1} << 16;
  constexpr std::uint64_t tiles_per_block = 4;
  std::vector<detail::record_run> pieces;
  std::size_t top = 0;
  for (auto const& r : runs) {
    for (std::uint64_t done = 0; done < r.count; done += piece) {
      pieces.push_back({r.first + done, std::min(piece, r.count - done), r.transform, r.source});
    }
    top = std::max(top, r.source);
  }
  if (pieces.empty()) { return; }
  s.ensure_record_stats(top);
  if (s.fold_runs.size() < pieces.size()) {
    s.fold_runs = detail::device_buffer<detail::record_run>(std::max(pieces.size(), 2 * s.fold_runs.size()), s.compute);
  }
  // Through page-locked memory (fold_table), once the copy of an earlier fold has read it.
  std::size_t const table_bytes = pieces.size() * sizeof(detail::record_run);
  if (s.fold_pending) { HG_CUDA_TRY(cudaEventSynchronize(s.fold_stop.get())); }
  if (s.fold_table.bytes() < table_bytes) { s.fold_table = detail::pinned_buffer(std::max(table_bytes, 2 * s.fold_table.bytes())); }
  std::memcpy(s.fold_table.data(), pieces.data(), table_bytes);
  HG_CUDA_TRY(cudaMemcpyAsync(s.fold_runs.data(), s.fold_table.data(), table_bytes, cudaMemcpyHostToDevice, s.compute));
  if (!s.fold_pending) { s.fold_start.record(s.compute); }
  detail::batch_records const rec{static_cast<std::uint8_t const*>(records), stride, extended, scaled_coords{}};
  constexpr unsigned max_rows = 65535;  // gridDim.y
  auto const columns = static_cast<unsigned>(piece / detail::batch_policy::block_threads / tiles_per_block);
  for (std::size_t first = 0; first < pieces.size(); first += max_rows) {
    dim3 const grid(columns, static_cast<unsigned>(std::min<std::size_t>(max_rows, pieces.size() - first)));
    if (stride <= detail::max_staged_record_length) {
      detail::accumulate_atomic_records_kernel<true>
        <<<grid, detail::batch_policy::block_threads, detail::records_tile_bytes(stride), s.compute>>>(
          rec, 0, s.band.grid, s.band.first_cell(), s.view(), s.counters.data(), *s.options.record_filter,
          s.record_stats.data(), s.fold_runs.data() + first, s.tag_view());
    } else {
      detail::accumulate_atomic_records_kernel<false><<<grid, detail::batch_policy::block_threads, 0, s.compute>>>(
        rec, 0, s.band.grid, s.band.first_cell(), s.view(), s.counters.data(), *s.options.record_filter,
        s.record_stats.data(), s.fold_runs.data() + first, s.tag_view());
    }
    HG_CUDA_CHECK_LAUNCH();
  }
  s.fold_stop.record(s.compute);
  s.fold_pending = true;
}

void gpu_binner::wait_folds()
{
  impl_->use_device();
  auto& s = *impl_;
  if (!s.fold_pending) { return; }
  HG_CUDA_TRY(cudaEventSynchronize(s.fold_stop.get()));
  s.totals.fold_ms += detail::elapsed_ms(s.fold_start, s.fold_stop);
  s.fold_pending = false;
}

std::size_t gpu_binner::in_flight() const
{
  std::lock_guard<std::mutex> lock(impl_->pending_mutex);
  return impl_->pending.size();
}

void gpu_binner::synchronize()
{
  impl_->use_device();
  auto& s = *impl_;
  cudaError_t const copied = cudaStreamSynchronize(s.copy);
  cudaError_t const binned = cudaStreamSynchronize(s.compute);
  s.release_all();
  HG_CUDA_TRY(copied);
  HG_CUDA_TRY(binned);
  for (auto& t : s.timing) { s.collect(t); }
}

std::vector<las_record_stats> gpu_binner::take_record_stats()
{
  synchronize();
  auto& s = *impl_;
  std::vector<las_record_stats> out(s.record_sources);
  if (!out.empty()) {
    HG_CUDA_TRY(cudaMemcpyAsync(out.data(), s.record_stats.data(), out.size() * sizeof(las_record_stats),
                                cudaMemcpyDeviceToHost, s.compute));
    HG_CUDA_TRY(cudaStreamSynchronize(s.compute));
    s.clear_record_stats();
  }
  return out;
}

std::uint64_t gpu_binner::points_outside()
{
  impl_->use_device();
  detail::batch_counters c{};
  HG_CUDA_TRY(cudaMemcpyAsync(&c, impl_->counters.data(), sizeof c, cudaMemcpyDeviceToHost, impl_->compute));
  HG_CUDA_TRY(cudaStreamSynchronize(impl_->compute));
  return c.outside;
}

std::uint64_t gpu_binner::points_binned()
{
  impl_->use_device();
  detail::batch_counters c{};
  HG_CUDA_TRY(cudaMemcpyAsync(&c, impl_->counters.data(), sizeof c, cudaMemcpyDeviceToHost, impl_->compute));
  HG_CUDA_TRY(cudaStreamSynchronize(impl_->compute));
  return c.binned;
}

}  // namespace heightgrid
