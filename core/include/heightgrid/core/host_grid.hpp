#pragma once
// The CPU side of the streaming pipeline: a grid of per-cell accumulators (cell_accumulator.hpp)
// in host memory, filled batch by batch from any number of threads, and turned into output bands
// window by window.
//
// Two ways in, as on the GPU:
//  - add_batch(): every point updates its cell with atomics (min/max, and count when kept).
//    Order-free, so threads add their batches as they come; min, max and count are exact whatever
//    the order. Cells come from band_cells.hpp (AVX2 where the CPU has it); a cell's {lo, hi} is one
//    16-byte pair, so a random update touches one cache line.
//    A grid of extremes alone (no count) keeps the stored integer Z of LAS/LAZ batches instead, when
//    they share one z scale and offset: one 8-byte word a cell (32-bit keys of the lowest and the
//    highest integer, updated with one compare-and-swap), half the memory and fewer atomics. The
//    coordinate rule is monotonic in the integer for a positive scale, so the extremes of the
//    integers give the extremes of z exactly; batches with another transform, or doubles, go to the
//    pairs, and a cell's result is the extreme of both.
//  - reduce_batch() + merge(): the batch is sorted by cell (stable) and each cell's points reduced
//    in input order into a partial (n, min, max, sum, m2); partials are merged into the grid one
//    batch at a time, in the order the caller chooses. The pipeline merges in batch order, so the
//    mean and stddev are the same whatever the thread count.

#include "heightgrid/core/cell_accumulator.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/order_store.hpp"
#include "heightgrid/core/point_batch.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

namespace heightgrid {

/// What binning a batch found, to add to the pipeline's totals.
struct batch_binning {
  std::uint64_t binned{0};   ///< points that landed in the band
  std::uint64_t outside{0};  ///< points in no cell of the whole grid
};

/// A batch reduced per cell, sorted by cell: the partial of cell cells[k] is (n[k], lo[k], hi[k],
/// sum[k], m2[k]) (sum and m2 empty unless requested). Reused from batch to batch by one thread.
struct batch_partials {
  std::vector<std::uint64_t> cells;  ///< band-local cell index, increasing
  std::vector<std::uint32_t> n;
  std::vector<double> lo, hi, sum, m2;
  batch_binning binning;
  // scratch of the sort
  std::vector<std::uint32_t> keys, keys_tmp, order, order_tmp;
};

/// The counts of a finalized window of cells, summed in the same pass (finalize_window).
struct window_counts {
  std::uint64_t total{0};      ///< points (non-empty cells, for accumulators without counts)
  std::uint64_t non_empty{0};  ///< cells with a point
  std::uint32_t largest{0};    ///< the largest count (1, for accumulators without counts)
};

/// Whether a grid of `cells` cells that `points` points (the headers' count; 0: unknown) are binned
/// into should have its pages mapped before the binning (host_grid::prefault): where there is a point
/// for every `prefault_cells_per_point` cells or more, two a page of 512 integer words, so that
/// points spread over the grid reach nearly every page (86 %) and each would otherwise take the double
/// fault; below, more and more pages stay unmapped (out of the job's memory) and mapping them all
/// would cost more than it saves. Measured on the CPU route (docs/benchmarks.md, "A sparse grid's
/// pages"). Example: (10^6, 2.56·10^8) -> true; (10^6, 2.57·10^8) -> false; (0, 1) -> false.
inline constexpr std::uint64_t prefault_cells_per_point = 256;
[[nodiscard]] constexpr bool worth_prefaulting(std::uint64_t points, std::uint64_t cells) noexcept
{
  return points > 0 && points >= cells / prefault_cells_per_point;
}

class host_grid {
 public:
  /// Zeroed accumulators for every cell of `band`, with sum (mean or stddev) and m2 (stddev) when
  /// `request` needs them, a count unless `request` asks for extremes alone (min, max, range:
  /// no count band, sums, order statistics or tagged counts), and a count a cell per tagged count
  /// band (request.tags: batches' tags() add to them). A grid without counts bins without a locked add a
  /// point and finalizes (or merges: merge_into) a non-empty cell's count as 1. Pages are mapped lazily: an untouched part of a sparse grid costs no RSS.
  /// Throws error_kind::resource when the memory cannot be mapped.
  /// A request with order statistics (percentiles) also keeps every binned point, at most
  /// `order_capacity` of them (order_store.hpp: past it, binning throws order_store_full).
  host_grid(grid_band const& band, metric_request const& request,
            std::uint64_t order_capacity = std::numeric_limits<std::uint64_t>::max());
  host_grid(host_grid const&) = delete;
  host_grid& operator=(host_grid const&) = delete;
  ~host_grid();

  [[nodiscard]] grid_band const& band() const noexcept { return band_; }
  [[nodiscard]] accumulator_view view() const noexcept { return acc_; }
  [[nodiscard]] bool keeps_sums() const noexcept { return acc_.sum != nullptr; }
  [[nodiscard]] bool keeps_counts() const noexcept { return acc_.count != nullptr; }

  /// Maps every page binning will write (the integer words when `integers`, else the pairs and the
  /// count), on all OpenMP threads, before any batch is added: a lazily mapped page is otherwise
  /// first read (the shared zero page) and then written (a second fault, and every core's TLB
  /// flushed) by the first point that lands there. For a grid most of whose pages the points will
  /// reach (worth_prefaulting).
  void prefault(bool integers);

  /// Bins every point of `batch` with atomics (min, max, and count when kept). Thread-safe; the grid must not keep
  /// sums (use reduce_batch + merge). Consecutive points of one cell are combined before the atomics.
  batch_binning add_batch(point_batch const& batch);

  /// Sorts `batch` by cell and reduces each cell's points in input order into `out` (no grid state
  /// is touched: thread-safe, any number of threads).
  void reduce_batch(point_batch const& batch, batch_partials& out) const;

  /// Merges partials into the grid. Not thread-safe: the caller serialises merges (and orders them,
  /// if the mean and stddev are to be reproducible).
  void merge(batch_partials const& partials);
  /// Merges partials [begin, end) alone; merges of disjoint cells may run at once.
  void merge(batch_partials const& partials, std::size_t begin, std::size_t end);

  /// Merges this grid's cells [first, first + window.cells) into `window` (accumulators of the same
  /// cells from elsewhere, e.g. downloaded from the GPU): min, max and count only (sums from two
  /// backends would depend on which batches went where). A grid without counts adds its cells'
  /// extremes and makes an empty window cell it reaches a count of 1 (the window's counts then only
  /// say which cells hold points). Reads this grid only, so untouched pages of a sparse grid stay
  /// unmapped. OpenMP-parallel.
  void merge_into(accumulator_view const& window, std::uint64_t first) const;

  /// Adds this grid's tagged counts of cells [first, first + cells) to `out` (band k's at
  /// out + k * cells): how a window merges with the device's (gpu_binner::download_tags).
  void add_tags_into(std::uint32_t* out, std::uint64_t first, std::uint64_t cells) const;

  /// Output bands of rows [row0, row0 + rows) of the band (band-local rows), cropped to columns
  /// [col0, col0 + cols) (col0 + cols <= grid.cols: an output grid that is a window of this one, e.g.
  /// the kept points' grid inside the one guessed from the headers). OpenMP-parallel. Order
  /// statistics are computed for the whole band at the first call (the kept points freed).
  /// `counts`, when given, receives the window's counts (no count band needed for them).
  [[nodiscard]] cell_results finalize_rows(std::uint32_t row0, std::uint32_t rows, std::uint32_t cols,
                                           metric_request const& request, float nodata,
                                           window_counts* counts = nullptr, std::uint32_t col0 = 0) const;

  /// Sum of every cell's count (to detect a count that overflowed 2^32 - 1). Needs counts.
  [[nodiscard]] std::uint64_t total_count() const;
  /// The largest count of a cell. Needs counts.
  [[nodiscard]] std::uint32_t max_count() const;

 private:
  /// Whether `t`'s z rule is the one of the integer words, adopting it for the first such batch.
  bool z_rule_of_words(scaled_coords const& t);
  [[nodiscard]] cell_results finalize_words(std::uint32_t row0, std::uint32_t rows, std::uint32_t cols,
                                            metric_request const& request, float nodata, window_counts* counts,
                                            std::uint32_t col0) const;

  grid_band band_;
  accumulator_view acc_;
  void* memory_{nullptr};
  std::size_t bytes_{0};
  // The integer words of a grid of extremes alone (null otherwise), mapped lazily as the pairs.
  std::uint64_t* words_{nullptr};
  std::size_t words_bytes_{0};
  std::mutex z_rule_mutex_;
  std::atomic<bool> z_rule_set_{false};  ///< z_scale_/z_offset_ adopted (release/acquire)
  double z_scale_{0.0};
  double z_offset_{0.0};
  std::atomic<bool> pairs_used_{false};  ///< a batch went to the pairs of a grid with words
  std::unique_ptr<order_store> order_;  ///< the kept points, when order statistics are asked
  // Tagged counts (metric_request::tags): cell c's count of band k at tags_[c * tag_bands_ + k] (a
  // run's bands on one cache line), mapped lazily.
  std::uint32_t* tags_{nullptr};
  std::size_t tags_bytes_{0};
  std::size_t tag_bands_{0};
};

/// The tagged count columns (request.tags) of a window of `rows` rows of `cols` cells into `out`
/// (sized here): band k's count of cell c is tags[k * band_stride + c * cell_stride] (a host grid's
/// cell-major counts: 1 and the bands; a device window's band-major ones: its cells and 1),
/// tag_empty where `acc` says the cell is empty. `acc`, `first_cell` and `acc_cols` as for
/// finalize_window.
void finalize_tag_window(std::uint32_t const* tags, std::size_t band_stride, std::size_t cell_stride,
                         accumulator_view const& acc, std::uint64_t first_cell, std::uint32_t acc_cols, std::uint32_t rows,
                         std::uint32_t cols, metric_request const& request, cell_results& out);

/// Output bands of accumulator rows: the finalize_cell loop over a window, shared by host_grid and
/// the app's merge of downloaded device windows. `acc` holds `rows` rows of `acc_cols` cells from
/// `first_cell`; the result has `cols` columns per row. `counts`, when given, receives the window's
/// counts from the same pass.
[[nodiscard]] cell_results finalize_window(accumulator_view const& acc, std::uint64_t first_cell, std::uint32_t acc_cols,
                                           std::uint32_t rows, std::uint32_t cols, metric_request const& request,
                                           float nodata, window_counts* counts = nullptr);

}  // namespace heightgrid
