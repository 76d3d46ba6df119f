#pragma once
// The CPU side of order statistics (percentiles, median, prange) in the streaming pipeline.
//
// A percentile needs every point of its cell at once, so a band that asks for one keeps its points:
// each batch appends its (band-local cell, z) pairs as a chunk; at the end the chunks are scattered
// into cell order (offsets from the accumulators' counts), each cell's values are sorted and the
// percentiles read off (metrics.hpp's percentile_of_sorted, numpy's rule). The order of points
// inside a cell does not matter once sorted, so the result does not depend on the thread count or
// the batch order.
//
// The store holds at most `capacity` points; past it, append throws order_store_full and the
// pipeline splits the band into smaller bands (one more pass each).

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/metrics.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace heightgrid {

/// The points of a band do not fit its store.
class order_store_full : public error {
 public:
  explicit order_store_full(std::string const& message) : error(error_kind::resource, message) {}
};

/// Host bytes a kept point costs at the peak of finalize: its chunk entry (cell + z, 12 bytes) and
/// its place in the cell-ordered copy (8 bytes).
inline constexpr std::size_t host_order_bytes_per_point = 20;

/// Sorts `z[0, n)` in increasing order with -0.0 before +0.0 (the order of the GPU's radix sort, so
/// both backends pick the same zero).
void sort_values(double* z, std::size_t n);

/// Order-statistic bands of one cell whose `n` values are sorted: writes percentile columns and
/// prange of output cell `o` (nodata when n == 0). The columns of `out` must be sized.
void finalize_order_cell(double const* sorted, std::uint64_t n, metric_request const& request, cell_results& out,
                         std::size_t o, float nodata);

/// Sizes the order-statistic columns of `out` (percentile per request slot, prange) to `cells`.
void size_order_columns(cell_results& out, metric_request const& request, std::size_t cells);

class order_store {
 public:
  explicit order_store(std::uint64_t capacity_points) : capacity_(capacity_points) {}

  /// Appends a batch's points (cells band-local; cells.size() == z.size()). Thread-safe. Throws
  /// order_store_full when the store would pass its capacity.
  void append(std::vector<std::uint32_t>&& cells, std::vector<double>&& z);

  [[nodiscard]] std::uint64_t size() const noexcept { return size_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] bool finalized() const noexcept { return finalized_; }

  /// Computes the order statistics of every cell of the band (`count[c]` points in cell c, the
  /// accumulators' counts, which must equal the appended points per cell) and frees the chunks.
  /// OpenMP-parallel.
  void finalize(std::uint32_t const* count, std::uint64_t cells, metric_request const& request, float nodata);

  /// Copies the computed bands of `rows` rows of `cols` cells (of rows `band_cols` wide) starting at
  /// band cell `first` into `out` (whose columns are sized here).
  void copy_window(std::uint64_t first, std::uint32_t band_cols, std::uint32_t rows, std::uint32_t cols,
                   metric_request const& request, cell_results& out) const;

 private:
  struct chunk {
    std::vector<std::uint32_t> cells;
    std::vector<double> z;
  };
  std::uint64_t capacity_;
  std::atomic<std::uint64_t> size_{0};
  std::mutex mutex_;
  std::vector<chunk> chunks_;
  bool finalized_{false};
  cell_results bands_;  ///< the band's order-statistic columns, once finalized
};

}  // namespace heightgrid
