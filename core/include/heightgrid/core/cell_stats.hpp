#pragma once
// Describing the load a grid puts on the reducers: how unevenly points are spread over cells.

#include "heightgrid/core/binning.hpp"

#include <cstdint>
#include <vector>

namespace heightgrid {

/// Points-per-cell distribution of a CSR grid.
struct cell_count_stats {
  std::uint64_t cells{0};
  std::uint64_t non_empty_cells{0};
  std::uint64_t points{0};
  std::uint64_t max_count{0};
  double mean{0.0};  ///< points per cell over all cells
  double mean_non_empty{0.0};
  double cv{0.0};    ///< coefficient of variation (stddev / mean) over all cells
  double gini{0.0};  ///< Gini coefficient of the counts over all cells (0 = even, -> 1 = one cell has all)
  std::uint64_t p50{0}, p90{0}, p99{0}, p999{0};  ///< percentiles of the count over all cells
  /// Log bins: histogram[0] = empty cells, histogram[k] (k >= 1) = cells with count in
  /// [2^(k-1), 2^k - 1], i.e. 1, 2-3, 4-7, 8-15, ...
  std::vector<std::uint64_t> histogram;
  /// Predicted lane efficiency of one-thread-per-cell: sum(count) / sum over warps of
  /// (32 x the largest count in the warp), for warps of 32 consecutive cells (the last warp may be
  /// partial and is charged its own size). The share of lane-iterations that do work.
  double thread_lane_efficiency{1.0};
};

/// Lower bound of log bin k (see cell_count_stats::histogram).
[[nodiscard]] std::uint64_t histogram_bin_low(std::size_t k) noexcept;
/// Upper bound (inclusive) of log bin k.
[[nodiscard]] std::uint64_t histogram_bin_high(std::size_t k) noexcept;

[[nodiscard]] cell_count_stats describe_cell_counts(std::vector<point_offset> const& offsets);

}  // namespace heightgrid
