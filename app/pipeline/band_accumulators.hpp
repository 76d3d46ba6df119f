#pragma once
// A band's accumulators after its binning pass, wherever they are: on the host (host_grid), on the
// device (gpu_binner), or on both (a job whose CPU binned while CUDA started, or whose GPU failed
// mid-pass), and how they become output windows: finalized on their side, or the device's rows
// downloaded and the host's merged into them window by window.

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/host_grid.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"

#include <cstdint>

namespace heightgrid::app {

/// Cells per window the host finalizes: 2^24 (64 MiB per float band), whole rows. The host's
/// finalize and GDAL's compression would compete for the same cores: one window after the other.
inline constexpr std::uint64_t window_cells = std::uint64_t{1} << 24;

/// Cells per window the device finalizes, rounded to whole blocks of the file: the next window's
/// download (the device's work, the copy engine, a short copy out on one host thread) overlaps
/// GDAL's compression of this one (measured: docs/benchmarks.md, "Shape metrics").
inline constexpr std::uint64_t device_window_cells = std::uint64_t{1} << 21;

/// Rows a finalized window holds: `cells` cells of `cols` columns, at least one row; where the file
/// has blocks of `block_rows` rows (0: none), a whole number of them.
[[nodiscard]] std::uint32_t window_rows(std::uint64_t cells, std::uint32_t cols, std::uint32_t block_rows) noexcept;

/// One output window: its bands and the counts of its cells.
struct finalized_window {
  cell_results bands;
  window_counts counts;
};

class band_accumulators {
 public:
  /// `host`: the host grid of the band, or null; `gpu`: the binner that binned points of the band,
  /// or null (at least one of the two).
  band_accumulators(grid_band const& band, host_grid const* host, gpu_binner* gpu) noexcept
    : band_(band), host_(host), gpu_(gpu)
  {
  }

  /// Whether both sides binned points of the band (their windows are merged on the host).
  [[nodiscard]] bool both_sides() const noexcept { return host_ != nullptr && gpu_ != nullptr; }

  /// The largest count of a cell: exact on one side; where both binned, the sum of the two sides'
  /// largest, or the exact merged largest where that sum exceeds what Float32 holds exactly (2^24).
  [[nodiscard]] std::uint64_t max_count();

  /// Output window of band rows [row0, row0 + rows), columns [col0, col0 + cols), for `request`
  /// (count kept only when asked; the counts of the window always).
  [[nodiscard]] finalized_window finalize(std::uint32_t row0, std::uint32_t rows, std::uint32_t cols,
                                          metric_request const& request, float nodata, std::uint32_t col0 = 0);

 private:
  /// The merged window's accumulators: columns left uninitialized (the download writes every cell;
  /// zeroing them first, on one thread, took most of a merged band's finalize).
  struct scratch {
    column<std::uint64_t> lo, hi;
    column<std::uint32_t> count;
  };
  /// The device's rows downloaded, the host's merged into them.
  accumulator_view merged(std::uint32_t row0, std::uint32_t rows, scratch& w);
  std::uint64_t exact_merged_max();

  grid_band band_;
  host_grid const* host_;
  gpu_binner* gpu_;
  scratch scratch_;
};

}  // namespace heightgrid::app
