// gpu_binner: the streaming grid on the device (see gpu_binner.hpp).

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/device_context.cuh"
#include "detail/csr/grid_accumulate.cuh"
#include "detail/infra/impl.cuh"
#include "detail/infra/pinned_staging.cuh"
#include "detail/order/order_stats.cuh"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"
#include "heightgrid/core/order_store.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <array>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace heightgrid {
namespace {

/// Bits of a sort key that can be set: keys are band-local cells in [0, band_cells].
int key_bits(std::uint64_t band_cells) noexcept
{
  int bits = 1;
  while (bits < 32 && (std::uint64_t{1} << bits) <= band_cells) { ++bits; }
  return bits;
}

/// How many event pairs are kept to time batches: older pairs are read (and their batches long done)
/// before reuse, so the timing never stalls the pipeline.
constexpr std::size_t timing_ring = 64;

}  // namespace

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

  // Scratch of the sorted reduction (one set: the compute stream runs one batch at a time).
  detail::device_buffer<cell_id> keys, keys_sorted, unique;
  detail::device_buffer<double> z, z_sorted;
  detail::device_buffer<std::uint64_t> run_counts;
  detail::device_buffer<point_offset> offsets;
  detail::device_buffer<int> num_runs;
  detail::device_buffer<std::byte> cub_temp;
  std::size_t cub_temp_bytes{0};

  struct timing_pair {
    detail::cuda_event h2d_start, h2d_stop, bin_start, bin_stop;
    bool pending{false};
  };
  std::array<timing_pair, timing_ring> timing;
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
  void reserve_order(std::uint64_t n)
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
    order_reserved = need;
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
    order_bands = detail::device_buffer<float>(detail::order_columns(request) * band.cells(), compute);
    detail::order_finalize(order_keys.data(), order_z.data(), kept, count.data(), band.cells(), request, nodata,
                           order_sort::segmented, order_bands.data(), compute);
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
        cols, n, band.grid, band.first_cell(), band_cells, keys.data(), z.data(), counters.data());
    } else {
      detail::batch_columns<coord_encoding::scaled_int32> const cols{data, b.capacity, b.transform};
      detail::batch_keys_thread_per_point_kernel<<<blocks, detail::batch_policy::block_threads, 0, compute>>>(
        cols, n, band.grid, band.first_cell(), band_cells, keys.data(), z.data(), counters.data());
    }
    HG_CUDA_CHECK_LAUNCH();
    auto const items = static_cast<int>(n);
    // Stable: a cell's points keep their batch order, so the modes reduce them as the CPU does.
    std::size_t temp = cub_temp_bytes;
    HG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(cub_temp.data(), temp, keys.data(), keys_sorted.data(), z.data(),
                                             z_sorted.data(), items, 0, key_bits(band_cells), compute));
    // Counts past the last run stay 0, so the exclusive scan gives empty segments there: the CSR has
    // n segments (no host round trip for the number of runs), the trailing ones empty.
    run_counts.fill_bytes(0, compute);
    temp = cub_temp_bytes;
    HG_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(cub_temp.data(), temp, keys_sorted.data(), unique.data(),
                                                run_counts.data(), num_runs.data(), items, compute));
    temp = cub_temp_bytes;
    HG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(cub_temp.data(), temp, run_counts.data(), offsets.data(), items + 1, compute));
    device_csr_view const csr{offsets.data(), z_sorted.data(), n, n, device_csr_view::unknown};
    // The merge keeps min, max and count always; mean/stddev when asked. Asking for min and max
    // also makes every mode store through store_cell / store_bands<extremes>, where the merge is.
    metric_request r = options.request;
    r.min = r.max = r.count = true;
    detail::output_bands out{};
    out.merge = detail::grid_merge{view(), unique.data()};
    detail::reduce_view(options.mode, csr, r, out, 0.0f, compute);
  }
};

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
    // keys x3, z x2, run counts, offsets, and cub's temporary storage (bounded by about 2n words).
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

/// Points the device's free memory can keep beside what is allocated (a fifth left to others).
static std::uint64_t order_fit(std::uint64_t wanted)
{
  std::size_t free_bytes = 0, total_bytes = 0;
  HG_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  return std::min<std::uint64_t>(wanted, free_bytes / 5 * 4 / gpu_binner::order_bytes_per_point());
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
    std::size_t const n = o.batch_points;
    s.keys = detail::device_buffer<cell_id>(n, st);
    s.keys_sorted = detail::device_buffer<cell_id>(n, st);
    s.unique = detail::device_buffer<cell_id>(n, st);
    s.z = detail::device_buffer<double>(n, st);
    s.z_sorted = detail::device_buffer<double>(n, st);
    s.run_counts = detail::device_buffer<std::uint64_t>(n + 1, st);
    s.offsets = detail::device_buffer<point_offset>(n + 1, st);
    s.num_runs = detail::device_buffer<int>(1, st);
    auto const items = static_cast<int>(n);
    std::size_t sort_bytes = 0, rle_bytes = 0, scan_bytes = 0;
    HG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, s.keys.data(), s.keys_sorted.data(), s.z.data(),
                                             s.z_sorted.data(), items, 0, 32, st));
    HG_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(nullptr, rle_bytes, s.keys_sorted.data(), s.unique.data(),
                                                s.run_counts.data(), s.num_runs.data(), items, st));
    HG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, s.run_counts.data(), s.offsets.data(), items + 1, st));
    s.cub_temp_bytes = std::max({sort_bytes, rle_bytes, scan_bytes, std::size_t{1}});
    s.cub_temp = detail::device_buffer<std::byte>(s.cub_temp_bytes, st);
  }
  if (o.request.needs_order()) {
    s.order_kept = detail::device_buffer<unsigned long long>(1, st);
    s.order_kept.fill_bytes(0, st);
    s.order_capacity = order_fit(o.order_capacity);
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
    auto& t = s.timing[s.next % timing_ring];
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
  // Runs cut into pieces of at most 2^16 records, a row of 256 blocks each: a launch's rows are
  // then all about as long, however long a file's run is.
  constexpr std::uint64_t piece = std::uint64_t{1} << 16;
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
  // Pageable source: staged before the call returns (the kernels of an earlier fold that read the
  // table ran before this copy: one stream).
  HG_CUDA_TRY(cudaMemcpyAsync(s.fold_runs.data(), pieces.data(), pieces.size() * sizeof(detail::record_run),
                              cudaMemcpyHostToDevice, s.compute));
  if (!s.fold_pending) { s.fold_start.record(s.compute); }
  detail::batch_records const rec{static_cast<std::uint8_t const*>(records), stride, extended, scaled_coords{}};
  constexpr unsigned max_rows = 65535;  // gridDim.y
  auto const columns = static_cast<unsigned>(piece / detail::batch_policy::block_threads);
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

cell_results gpu_binner::finalize_rows(std::uint32_t row0, std::uint32_t rows, std::uint32_t cols,
                                       metric_request const& request, float nodata)
{
  impl_->use_device();
  auto& s = *impl_;
  HG_EXPECTS(std::uint64_t{row0} + rows <= s.band.rows && cols <= s.band.grid.cols, error_kind::internal,
          "gpu_binner::finalize_rows: window outside the band");
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
      s.view(), std::uint64_t{row0} * s.band.grid.cols, s.band.grid.cols, cols, cells, out, nodata);
    HG_CUDA_CHECK_LAUNCH();
  }
  cell_results r;
  detail::pinned_staging& staging = s.download_staging(cells * sizeof(float));
  auto const download = [&](auto& host, auto const& device) {
    if (device.empty()) { return; }
    host.resize(cells);
    // The column is fresh memory: its pages are mapped by the team, not faulted in one by one
    // by the copy below.
    touch_pages(host.data(), device.bytes());
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
      touch_pages(host.data(), host.size() * sizeof(float));
      // Rows of `cols` cells out of the band's rows of band.grid.cols.
      float const* from = s.order_bands.data() + k * s.band.cells() + std::uint64_t{row0} * s.band.grid.cols;
      if (cells > 0) {
        HG_CUDA_TRY(cudaMemcpy2DAsync(host.data(), cols * sizeof(float), from, s.band.grid.cols * sizeof(float),
                                   cols * sizeof(float), rows, cudaMemcpyDeviceToHost, st));
      }
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
        s.tag_view(), s.count.data(), std::uint64_t{row0} * s.band.grid.cols, s.band.grid.cols, cols, cells, bands,
        tag_bands.data());
      HG_CUDA_CHECK_LAUNCH();
    }
    r.size_tag_columns(request, cells);
    for (unsigned k = 0; k < bands; ++k) {
      touch_pages(r.tag[k].data(), cells * sizeof(std::uint32_t));
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
    s.order_capacity = order_fit(s.options.order_capacity);
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
