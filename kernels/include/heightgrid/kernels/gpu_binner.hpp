#pragma once
// The GPU side of the streaming pipeline: a band of grid accumulators (cell_accumulator.hpp) in
// device memory, fed batch by batch from page-locked host memory. Each batch is uploaded on a copy
// stream while the previous one is binned on a compute stream (CUDA events order the two), and the
// host memory is handed back (reclaim) once its copy is done. Records the GPU LAZ decoder left in
// device memory are binned where they are (fold_device_records).
// Host-clean: included by app/ through g++.

#include "heightgrid/core/cell_accumulator.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/las_record.hpp"
#include "heightgrid/core/point_batch.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid {

/// How a batch is folded into the grid on the device.
enum class batch_reduction {
  atomic,  ///< every point updates its cell with 64-bit atomics (range, min, max, count only)
  sorted,  ///< the batch is sorted by cell (stable), its cells reduced by a CSR mode and merged in
           ///< stream order: any metric, mean and stddev included
};

[[nodiscard]] std::string_view batch_reduction_name(batch_reduction r) noexcept;

struct gpu_binner_options {
  std::size_t batch_points{0};  ///< capacity of one batch (point_batch::capacity of the host slots)
  int device_batches{3};        ///< device copies of a batch in flight (upload k+1 while k is binned)
  batch_reduction reduction{batch_reduction::atomic};
  reduce_mode mode{reduce_mode::hybrid};  ///< the CSR mode of the sorted reduction
  metric_request request;                 ///< decides whether sums (and m2) are kept
  int device{-1};                         ///< CUDA device ordinal; -1: the creating thread's current device
  /// Order statistics (request.needs_order()): points of the band kept at most; fewer when the
  /// device's free memory holds fewer. Past it, submit throws order_store_full.
  std::uint64_t order_capacity{0};
  /// The filters of batches of raw LAS records (coord_encoding::las_records), which the binner
  /// decodes and filters itself (atomic reduction only). Unset: such batches are refused.
  std::optional<filter_table> record_filter;
};

/// A run of point14 record prefixes already in device memory (the GPU LAZ decoder's output) that
/// share a file: records [first, first + count) of the buffer given to fold_device_records, decoded
/// with `transform`, their filter counts and bounds added to statistics entry `source`.
struct device_record_run {
  std::uint64_t first{0};
  std::uint64_t count{0};
  scaled_coords transform;
  std::size_t source{0};
};

/// Where the device's time went, summed over batches (CUDA events on each stream).
struct gpu_binner_times {
  double h2d_ms{0.0};      ///< copy stream busy uploading batches
  double bin_ms{0.0};      ///< compute stream busy binning batches
  double finalize_ms{0.0}; ///< finalize kernels and band downloads
  double order_sort_ms{0.0};    ///< of which order statistics' offsets, scatter and per-cell sort
  double order_metrics_ms{0.0}; ///< and their per-cell kernels (percentiles, shape metrics)
  double fold_ms{0.0};     ///< compute stream busy folding records decoded on the device
  std::uint64_t batches{0};
  std::uint64_t bytes_uploaded{0};
};

/// A band of grid accumulators on one device (options.device). Not thread-safe: one thread submits.
/// Every member selects the binner's device on the calling thread first, so any thread may call.
class gpu_binner {
 public:
  /// Device bytes the binner allocates for `band` with `options` (accumulators, device batches,
  /// scratch of the sorted reduction).
  [[nodiscard]] static std::size_t device_bytes(grid_band const& band, gpu_binner_options const& options);
  /// Device bytes a point kept for order statistics costs at the peak of their finalize.
  [[nodiscard]] static std::size_t order_bytes_per_point() noexcept;

  /// Allocates and zeroes the accumulators, the device batches and two streams.
  /// Throws error_kind::resource when the device memory does not suffice, error_kind::device
  /// without a usable GPU, error_kind::usage when the sorted mode cannot reduce a CSR (atomic) or
  /// the atomic reduction is asked for sums.
  gpu_binner(grid_band const& band, gpu_binner_options const& options);
  gpu_binner(gpu_binner const&) = delete;
  gpu_binner& operator=(gpu_binner const&) = delete;
  ~gpu_binner();

  /// Page-locks [p, p + bytes) so batches in it upload at full speed (cudaHostRegister); it stays
  /// registered until the binner is destroyed. Throws error_kind::resource or device on failure.
  void register_host_memory(void* p, std::size_t bytes);

  /// Enqueues `batch` (in registered host memory, batch.capacity == options.batch_points).
  /// `released` is called once the batch's host memory may be reused: by reclaim() or
  /// synchronize() on the thread that calls them (no CUDA callback thread: its wake-up latency
  /// stalled the copies), also when the device fails. Returns at once. A las_records batch is
  /// decoded, filtered (options.record_filter) and folded on the device; what the filters removed
  /// and the kept points' bounds add up per batch.source (take_record_stats()).
  void submit(point_batch const& batch, std::function<void()> released);

  /// Where the binner keeps points (order statistics), makes device room for `points` more before
  /// the batch that brings them is submitted; nothing else changes, so a caller may try again
  /// after a device_memory_error (other processes holding the memory). Throws order_store_full
  /// past options.order_capacity. No-op for a binner that keeps no points.
  void reserve_kept_points(std::uint64_t points);

  /// Folds records that are already in device memory on the binner's device (the GPU LAZ
  /// decoder's, `stride` bytes each, in the layout of formats 6-10 when `extended`) into the grid,
  /// run by run, as submit() folds a las_records batch: decoded, filtered (options.record_filter),
  /// their statistics added per run.source. Returns once queued. The records must be complete when
  /// it is called (the decoder's decode() returns once they are) and stay unchanged until
  /// wait_folds() returns. Needs what a las_records batch needs (atomic reduction, no order
  /// statistics, a record filter); throws error_kind::internal otherwise.
  void fold_device_records(void const* records, std::uint32_t stride, bool extended,
                           std::vector<device_record_run> const& runs);
  /// Waits until every fold queued so far has completed (its records may then be overwritten).
  /// Throws a device error the folds met.
  void wait_folds();

  /// Calls `released` of every batch whose upload has completed, oldest first; with `wait`, waits
  /// for the oldest upload in flight first (if any). Returns how many were released. Thread-safe
  /// against submit(); one thread at a time may call it.
  std::size_t reclaim(bool wait);
  /// Uploads in flight whose memory is not yet released.
  [[nodiscard]] std::size_t in_flight() const;

  /// Waits for every submitted batch (releasing them all). Throws a device error that happened
  /// since the last call.
  void synchronize();

  /// What binning las_records batches found per source index since the last call (entries up to
  /// the largest source index seen), then starts over. Synchronizes.
  [[nodiscard]] std::vector<las_record_stats> take_record_stats();

  /// Points of the submitted batches that were in no cell of the whole grid, and that landed in
  /// the band (valid after synchronize()).
  [[nodiscard]] std::uint64_t points_outside();
  [[nodiscard]] std::uint64_t points_binned();

  /// Output bands of band rows [row0, row0 + rows), columns [col0, col0 + cols) of each row (an
  /// output grid that is a window of the band's): finalized on the device, then downloaded. Order
  /// statistics are computed for the whole band at the first call (the kept points freed).
  [[nodiscard]] cell_results finalize_rows(std::uint32_t row0, std::uint32_t rows, std::uint32_t cols,
                                           metric_request const& request, float nodata, std::uint32_t col0 = 0);

  /// Downloads the raw accumulators of band rows [row0, row0 + rows) (whole rows) into host memory
  /// laid out like host_grid's: lo, hi, count of rows * band.grid.cols cells (sums not downloaded:
  /// grids that keep sums are never split between the CPU and the GPU).
  void download_extremes(std::uint32_t row0, std::uint32_t rows, std::uint64_t* lo, std::uint64_t* hi,
                         std::uint32_t* count);
  /// Downloads the tagged counts (request.tags) of band rows [row0, row0 + rows) (whole rows): band
  /// k's cells at out + k * rows * band.grid.cols.
  void download_tags(std::uint32_t row0, std::uint32_t rows, std::uint32_t* out);

  /// Sum of every cell's count (detects a count past 2^32 - 1). Synchronizes.
  [[nodiscard]] std::uint64_t total_count();
  /// The largest count of a cell. Synchronizes.
  [[nodiscard]] std::uint32_t max_count();

  /// Starts over on `band` (another band of the grid, or another grid): accumulators resized and
  /// zeroed, point counters and kept points zeroed; times and registered memory kept. Synchronizes.
  /// `order_capacity` > 0 replaces options.order_capacity.
  void reset(grid_band const& band, std::uint64_t order_capacity = 0);

  [[nodiscard]] gpu_binner_times times();
  [[nodiscard]] grid_band const& band() const noexcept;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

/// Starts CUDA (driver, context, memory pool) on the calling thread and says whether a usable GPU is
/// there (gpu_available()), so that a background thread can pay the start-up while the inputs are
/// opened and read. `device` >= 0 selects that device on the calling thread first. Never throws.
/// `memory_short` (optional) says whether it failed for want of device memory — taken by other
/// processes, so a later call may succeed.
[[nodiscard]] bool start_gpu(std::string* reason = nullptr, int device = -1, bool* memory_short = nullptr) noexcept;

}  // namespace heightgrid
