#pragma once
// gpu_binner's state (gpu_binner.hpp's pimpl), shared by gpu_binner.cu (set-up, batches, folds) and
// gpu_binner_results.cu (windows finalized and downloaded, counts, reset, times).

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/device_context.cuh"
#include "detail/binner/grid_accumulate.cuh"
#include "detail/csr/csr_runs.cuh"
#include "detail/infra/impl.cuh"
#include "detail/infra/key_bits.hpp"
#include "detail/infra/pinned_staging.cuh"
#include "detail/order/order_stats.cuh"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"
#include "heightgrid/core/order_store.hpp"


#include <algorithm>
#include <array>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace heightgrid {
namespace detail {

/// How many event pairs are kept to time batches: older pairs are read (and their batches long done)
/// before reuse, so the timing never stalls the pipeline.
inline constexpr std::size_t timing_ring = 64;

/// Points the device's free memory can keep beside what is allocated (a fifth left to others).
inline std::uint64_t order_fit(std::uint64_t wanted)
{
  std::size_t free_bytes = 0, total_bytes = 0;
  HG_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  return std::min<std::uint64_t>(wanted, free_bytes / 5 * 4 / gpu_binner::order_bytes_per_point());
}

}  // namespace detail

struct gpu_binner::impl {
  int device{-1};
  grid_band band;
  gpu_binner_options options;
  cudaStream_t copy{nullptr};
  cudaStream_t compute{nullptr};

  detail::device_buffer<std::uint64_t> lo, hi;
  detail::device_buffer<std::uint32_t> count;
  detail::device_buffer<double> sum, m2;
  detail::device_buffer<detail::batch_counters> counters;
  /// Tagged counts (options.request.tags): band k's cells at tags + k * band.cells().
  detail::device_buffer<std::uint32_t> tags;

  [[nodiscard]] detail::tag_counts tag_view() noexcept { return {tags.empty() ? nullptr : tags.data(), band.cells()}; }

  /// Adds a tagged batch of columns (its tags uploaded beside them) to the tagged counts.
  void launch_tags(void const* data, point_batch const& b)
  {
    if (!b.tagged || tags.empty() || b.size == 0) { return; }
    auto const blocks = detail::grid_blocks(b.size, detail::batch_policy::block_threads);
    auto const* tag = static_cast<std::uint8_t const*>(data) + tags_offset(b.capacity);
    if (b.encoding == coord_encoding::float64) {
      detail::batch_columns<coord_encoding::float64> const cols{data, b.capacity, b.transform};
      detail::count_tags_thread_per_point_kernel<<<blocks, detail::batch_policy::block_threads, 0, compute>>>(
        cols, tag, b.size, band.grid, band.first_cell(), tag_view());
    } else {
      detail::batch_columns<coord_encoding::scaled_int32> const cols{data, b.capacity, b.transform};
      detail::count_tags_thread_per_point_kernel<<<blocks, detail::batch_policy::block_threads, 0, compute>>>(
        cols, tag, b.size, band.grid, band.first_cell(), tag_view());
    }
    HG_CUDA_CHECK_LAUNCH();
  }

  struct device_slot {
    detail::device_buffer<std::byte> data;
    detail::cuda_event uploaded;  // copy stream: the batch is on the device
    detail::cuda_event binned;    // compute stream: the device copy may be overwritten
    bool used{false};
  };
  std::vector<device_slot> slots;
  std::uint64_t next{0};

  // The sorted reduction's CSR of each batch's non-empty cells (one: the compute stream runs one
  // batch at a time).
  detail::run_csr runs;

  struct timing_pair {
    detail::cuda_event h2d_start, h2d_stop, bin_start, bin_stop;
    bool pending{false};
  };
  std::array<timing_pair, detail::timing_ring> timing;
  gpu_binner_times totals;

  std::vector<void*> registered;

  // Uploads whose host memory is not yet handed back, oldest first: an event recorded on the copy
  // stream after each upload, polled by reclaim(). (A cudaLaunchHostFunc per batch blocked the copy
  // stream until CUDA's callback thread ran; on a host whose cores all read, that took longer than
  // the copies: measured in docs/benchmarks.md, "LAS on the device".)
  struct pending_upload {
    cudaEvent_t done;
    std::function<void()> released;
  };
  mutable std::mutex pending_mutex;
  std::deque<pending_upload> pending;
  std::vector<cudaEvent_t> spare_events;

  cudaEvent_t take_event()
  {
    {
      std::lock_guard<std::mutex> lock(pending_mutex);
      if (!spare_events.empty()) {
        cudaEvent_t e = spare_events.back();
        spare_events.pop_back();
        return e;
      }
    }
    cudaEvent_t e = nullptr;
    HG_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }

  /// Hands back the memory of every upload still pending (the streams are idle, or failed).
  void release_all() noexcept
  {
    std::deque<pending_upload> all;
    {
      std::lock_guard<std::mutex> lock(pending_mutex);
      all.swap(pending);
      for (auto const& p : all) { spare_events.push_back(p.done); }
    }
    for (auto& p : all) { run_released(p.released); }
  }

  static void run_released(std::function<void()>& f) noexcept
  {
    if (!f) { return; }
    try {
      f();
    } catch (...) {  // the release function only queues a slot; nothing to recover here
    }
  }

  // Batches of raw LAS records: per source index, what the filters removed and the kept points'
  // stored-integer bounds (las_record_stats), on the device; entries [0, record_sources) in use.
  detail::device_buffer<las_record_stats> record_stats;
  std::size_t record_sources{0};

  /// Makes record_stats hold entry `source` (stream-ordered growth; new entries start empty).
  void ensure_record_stats(std::size_t source)
  {
    if (source < record_stats.size()) {
      record_sources = std::max(record_sources, source + 1);
      return;
    }
    std::size_t const grown = std::max({source + 1, 2 * record_stats.size(), std::size_t{64}});
    detail::device_buffer<las_record_stats> bigger(grown, compute);
    if (record_sources > 0) {
      HG_CUDA_TRY(cudaMemcpyAsync(bigger.data(), record_stats.data(), record_sources * sizeof(las_record_stats),
                                  cudaMemcpyDeviceToDevice, compute));
    }
    // Pageable source: the copy is staged before the call returns, so the vector may go.
    std::vector<las_record_stats> const empty(grown - record_sources);
    HG_CUDA_TRY(cudaMemcpyAsync(bigger.data() + record_sources, empty.data(), empty.size() * sizeof(las_record_stats),
                                cudaMemcpyHostToDevice, compute));
    record_stats = std::move(bigger);
    record_sources = source + 1;
  }

  /// Empties the entries in use.
  void clear_record_stats()
  {
    if (record_sources == 0) { return; }
    std::vector<las_record_stats> const empty(record_sources);
    HG_CUDA_TRY(cudaMemcpyAsync(record_stats.data(), empty.data(), empty.size() * sizeof(las_record_stats),
                                cudaMemcpyHostToDevice, compute));
    record_sources = 0;
  }

  void launch_records(void const* data, point_batch const& b)
  {
    ensure_record_stats(b.source);
    auto const blocks = detail::grid_blocks(b.size, detail::batch_policy::block_threads);
    detail::batch_records const rec{static_cast<std::uint8_t const*>(data), b.record_length, b.extended_records,
                                    b.transform};
    if (b.record_length <= detail::max_staged_record_length) {
      detail::accumulate_atomic_records_kernel<true>
        <<<blocks, detail::batch_policy::block_threads, detail::records_tile_bytes(b.record_length), compute>>>(
          rec, b.size, band.grid, band.first_cell(), view(), counters.data(), *options.record_filter,
          record_stats.data() + b.source, nullptr, tag_view());
    } else {
      detail::accumulate_atomic_records_kernel<false><<<blocks, detail::batch_policy::block_threads, 0, compute>>>(
        rec, b.size, band.grid, band.first_cell(), view(), counters.data(), *options.record_filter,
        record_stats.data() + b.source, nullptr, tag_view());
    }
    HG_CUDA_CHECK_LAUNCH();
  }

  // Records folded where they were decoded (fold_device_records): the pieces of the runs of the
  // fold in flight, and the events that time it and tell wait_folds when it is done.
  detail::device_buffer<detail::record_run> fold_runs;
  // The runs' table on its way up: page-locked, because a copy from pageable memory waits for the
  // driver's staging, which a pageable copy of another stream holds until that stream's work before
  // it is done (another tile's decode kernel: the fold would wait for it; docs/benchmarks.md, "Tiled
  // jobs on every GPU of a host").
  detail::pinned_buffer fold_table;
  detail::cuda_event fold_start, fold_stop;
  bool fold_pending{false};

  /// Pinned buffers the downloads pass through, kept from one window to the next (pinning tens
  /// of MiB takes milliseconds); made for the largest copy asked for so far, up to one chunk.
  std::unique_ptr<detail::pinned_staging> staging;
  std::size_t staging_for{0};
  detail::pinned_staging& download_staging(std::size_t bytes)
  {
    std::size_t const want = std::min(bytes, detail::pinned_staging::default_chunk_bytes);
    if (!staging || want > staging_for) {
      staging.reset();
      staging = std::make_unique<detail::pinned_staging>(want);
      staging_for = want;
    }
    return *staging;
  }

  // Order statistics: the band's points kept as (cell, ordered z), appended by every batch.
  std::uint64_t order_capacity{0};  ///< points the store may reach (options, clamped to free memory)
  std::uint64_t order_reserved{0};  ///< an upper bound of the kept points (the exact count is on the device)
  detail::device_buffer<cell_id> order_keys;
  detail::device_buffer<std::uint64_t> order_z;
  detail::device_buffer<unsigned long long> order_kept;
  detail::device_buffer<float> order_bands;  ///< the band's order-statistic columns, once finalized
  bool order_done{false};

  bool keeps_points() const noexcept { return options.request.needs_order(); }

  std::uint64_t kept_points()
  {
    unsigned long long kept = 0;
    HG_CUDA_TRY(cudaMemcpyAsync(&kept, order_kept.data(), sizeof kept, cudaMemcpyDeviceToHost, compute));
    HG_CUDA_TRY(cudaStreamSynchronize(compute));
    return kept;
  }

  /// Makes room for `n` more kept points (stream-ordered growth), or throws order_store_full.
  /// Reserves room for n more kept points (the batch's upper bound).
  void reserve_order(std::uint64_t n)
  {
    room_for_kept(n);
    order_reserved += n;
  }

  /// Grows the kept points' store to hold n more than order_reserved; throws (order_store_full, or
  /// device_memory_error from an allocation) with the store as it was.
  void room_for_kept(std::uint64_t n)
  {
    if (order_reserved + n > order_keys.size()) {
      // The bound says it may not fit: learn the exact count first.
      order_reserved = kept_points();
    }
    std::uint64_t const need = order_reserved + n;
    if (need > order_capacity) {
      throw order_store_full("the points of a band (more than " + std::to_string(order_capacity) +
                             ") do not fit the device memory kept for percentiles");
    }
    if (need > order_keys.size()) {
      std::uint64_t const grown = std::min(order_capacity, std::max(need, 2 * static_cast<std::uint64_t>(order_keys.size())));
      detail::device_buffer<cell_id> keys(grown, compute);
      detail::device_buffer<std::uint64_t> z(grown, compute);
      if (order_reserved > 0) {
        HG_CUDA_TRY(cudaMemcpyAsync(keys.data(), order_keys.data(), order_reserved * sizeof(cell_id), cudaMemcpyDeviceToDevice, compute));
        HG_CUDA_TRY(cudaMemcpyAsync(z.data(), order_z.data(), order_reserved * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice, compute));
      }
      order_keys = std::move(keys);
      order_z = std::move(z);
    }
  }

  void launch_keep(void const* data, point_batch const& b)
  {
    reserve_order(b.size);
    auto const blocks = detail::grid_blocks(b.size, detail::batch_policy::block_threads);
    if (b.encoding == coord_encoding::float64) {
      detail::batch_columns<coord_encoding::float64> const cols{data, b.capacity, b.transform};
      detail::keep_points_thread_per_point_kernel<<<blocks, detail::batch_policy::block_threads, 0, compute>>>(
        cols, b.size, band.grid, band.first_cell(), band.cells(), order_keys.data(), order_z.data(), order_kept.data());
    } else {
      detail::batch_columns<coord_encoding::scaled_int32> const cols{data, b.capacity, b.transform};
      detail::keep_points_thread_per_point_kernel<<<blocks, detail::batch_policy::block_threads, 0, compute>>>(
        cols, b.size, band.grid, band.first_cell(), band.cells(), order_keys.data(), order_z.data(), order_kept.data());
    }
    HG_CUDA_CHECK_LAUNCH();
  }

  /// The order-statistic columns of the whole band, computed once (the kept points are freed).
  void finalize_order(metric_request const& request, float nodata)
  {
    if (order_done) { return; }
    std::uint64_t const kept = kept_points();
    detail::cuda_event start, sorted, stop;
    start.record(compute);
    order_bands = detail::device_buffer<float>(detail::order_columns(request) * band.cells(), compute);
    detail::order_finalize(order_keys.data(), order_z.data(), kept, count.data(), band.cells(), request, nodata,
                           order_sort::segmented, order_bands.data(), compute, sorted.get());
    stop.record(compute);
    totals.order_sort_ms += detail::elapsed_ms(start, sorted);
    totals.order_metrics_ms += detail::elapsed_ms(sorted, stop);
    order_keys = {};
    order_z = {};
    order_reserved = 0;
    order_done = true;
  }

  void reset_order()
  {
    order_keys = {};
    order_z = {};
    order_bands = {};
    order_reserved = 0;
    order_done = false;
    if (!order_kept.empty()) { order_kept.fill_bytes(0, compute); }
  }

  accumulator_view view() noexcept
  {
    return {lo.data(), hi.data(), count.data(), sum.empty() ? nullptr : sum.data(), m2.empty() ? nullptr : m2.data(),
            band.cells()};
  }

  void collect(timing_pair& t)
  {
    if (!t.pending) { return; }
    totals.h2d_ms += detail::elapsed_ms(t.h2d_start, t.h2d_stop);
    totals.bin_ms += detail::elapsed_ms(t.bin_start, t.bin_stop);
    t.pending = false;
  }

  /// Selects the binner's device on the calling thread (the runtime's current device is per thread).
  void use_device() const
  {
    if (device >= 0) { HG_CUDA_TRY(cudaSetDevice(device)); }
  }

  ~impl()
  {
    // The buffers are freed on their own device.
    if (device >= 0) { (void)cudaSetDevice(device); }
    // Everything queued must finish before the buffers are freed and the streams destroyed.
    if (copy != nullptr) { (void)cudaStreamSynchronize(copy); }
    if (compute != nullptr) { (void)cudaStreamSynchronize(compute); }
    release_all();
    for (cudaEvent_t e : spare_events) { (void)cudaEventDestroy(e); }
    for (void* p : registered) { (void)cudaHostUnregister(p); }
    cudaGetLastError();
  }

  void launch_atomic(void const* data, point_batch const& b)
  {
    auto const blocks = detail::grid_blocks(b.size, detail::batch_policy::block_threads);
    auto const acc = view();
    if (b.encoding == coord_encoding::float64) {
      detail::batch_columns<coord_encoding::float64> const cols{data, b.capacity, b.transform};
      detail::accumulate_atomic_thread_per_point_kernel<<<blocks, detail::batch_policy::block_threads, 0, compute>>>(
        cols, b.size, band.grid, band.first_cell(), acc, counters.data());
    } else {
      detail::batch_columns<coord_encoding::scaled_int32> const cols{data, b.capacity, b.transform};
      detail::accumulate_atomic_thread_per_point_kernel<<<blocks, detail::batch_policy::block_threads, 0, compute>>>(
        cols, b.size, band.grid, band.first_cell(), acc, counters.data());
    }
    HG_CUDA_CHECK_LAUNCH();
  }

  void launch_sorted(void const* data, point_batch const& b)
  {
    std::uint64_t const n = b.size;
    std::uint64_t const band_cells = band.cells();
    auto const blocks = detail::grid_blocks(n, detail::batch_policy::block_threads);
    if (b.encoding == coord_encoding::float64) {
      detail::batch_columns<coord_encoding::float64> const cols{data, b.capacity, b.transform};
      detail::batch_keys_thread_per_point_kernel<<<blocks, detail::batch_policy::block_threads, 0, compute>>>(
        cols, n, band.grid, band.first_cell(), band_cells, runs.keys(), runs.z(), counters.data());
    } else {
      detail::batch_columns<coord_encoding::scaled_int32> const cols{data, b.capacity, b.transform};
      detail::batch_keys_thread_per_point_kernel<<<blocks, detail::batch_policy::block_threads, 0, compute>>>(
        cols, n, band.grid, band.first_cell(), band_cells, runs.keys(), runs.z(), counters.data());
    }
    HG_CUDA_CHECK_LAUNCH();
    // Stable: a cell's points keep their batch order, so the modes reduce them as the CPU does.
    device_csr_view const csr = runs.build(n, band_cells, compute);
    // The merge keeps min, max and count always; mean/stddev when asked. Asking for min and max
    // also makes every mode store through store_cell / store_bands<extremes>, where the merge is.
    metric_request r = options.request;
    r.min = r.max = r.count = true;
    detail::output_bands out{};
    out.merge = detail::grid_merge{view(), runs.unique()};
    detail::reduce_view(options.mode, csr, r, out, 0.0f, compute);
  }
};

}  // namespace heightgrid
