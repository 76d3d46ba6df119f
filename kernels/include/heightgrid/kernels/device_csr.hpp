#pragma once
// Device-resident CSR grids and reduce results: build the CSR once, reduce it with many modes.
// Host-clean: the device buffers live behind opaque implementations.
//
// Objects here own stream-ordered device memory allocated on the stream they were created with,
// and free it on that stream when destroyed. Use them on that stream, or synchronize first; the
// stream must outlive them.

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"

#include <cstdint>
#include <memory>

namespace heightgrid {

/// Raw device pointers of a device_csr, valid while it lives. Same layout as csr_grid: the points
/// of cell c are z[offsets[c] .. offsets[c+1]), offsets has num_cells + 1 entries.
struct device_csr_view {
  point_offset const* offsets{nullptr};  ///< device memory
  double const* z{nullptr};              ///< device memory, num_points entries used
  std::uint64_t num_cells{0};
  std::uint64_t num_points{0};
  /// The most points in one cell, known after binning (from_points, from_host); `unknown` for a
  /// view built by hand. Modes use it to leave out paths no cell can take.
  std::uint64_t max_cell_points{unknown};
  static constexpr std::uint64_t unknown = ~std::uint64_t{0};
};

/// A CSR grid in device memory (RAII, move-only).
class device_csr {
 public:
  /// Uploads x, y, z (pinned staging), computes each point's cell with grid.cell_of, and builds
  /// the CSR with `method`. Points outside the grid are dropped and counted in `stats`, which is
  /// added to like bin_points_cpu does. Fills h2d_ms, cell_ids_ms and csr_ms of `times`.
  /// Synchronizes `stream` (the number of binned points and the most points in one cell are read
  /// back).
  /// Throws error_kind::internal when x, y, z differ in length, error_kind::resource when the
  /// device runs out of memory, error_kind::device on a CUDA failure or without a usable GPU.
  [[nodiscard]] static device_csr from_points(grid_spec const& grid, point_chunk const& points,
                                              csr_method method, binning_stats& stats,
                                              gpu_phase_times& times, cudaStream_t stream);

  /// Uploads an existing CSR. Throws error_kind::internal when its offsets are not a valid CSR
  /// over its z (first 0, non-decreasing, last == z.size()). Synchronizes `stream`.
  [[nodiscard]] static device_csr from_host(csr_grid const& csr, cudaStream_t stream);

  /// Downloads the CSR (offsets and the num_points binned z values). Synchronizes `stream`.
  [[nodiscard]] csr_grid to_host(cudaStream_t stream) const;

  [[nodiscard]] device_csr_view view() const noexcept;
  [[nodiscard]] std::uint64_t num_cells() const noexcept;
  [[nodiscard]] std::uint64_t num_points() const noexcept;
  /// The most points in one cell (0 for an empty grid).
  [[nodiscard]] std::uint64_t max_cell_points() const noexcept;

  struct impl;  ///< defined in kernels/src/detail/ (device buffers)
  explicit device_csr(std::unique_ptr<impl> state) noexcept;
  device_csr(device_csr&&) noexcept;
  device_csr& operator=(device_csr&&) noexcept;
  device_csr(device_csr const&) = delete;
  device_csr& operator=(device_csr const&) = delete;
  ~device_csr();

 private:
  std::unique_ptr<impl> impl_;
};

/// The requested output bands of one reduce, in device memory (RAII, move-only).
class device_cell_results {
 public:
  /// Downloads the requested bands; the others stay empty vectors. Synchronizes `stream`.
  [[nodiscard]] cell_results to_host(cudaStream_t stream) const;

  /// Device time of the reduce that produced these results (CUDA events around all of the
  /// mode's work, its temporary allocations included). Waits for the reduce to finish.
  [[nodiscard]] float kernel_ms() const;

  [[nodiscard]] std::uint64_t num_cells() const noexcept;
  [[nodiscard]] reduce_mode mode() const noexcept;

  struct impl;  ///< defined in kernels/src/detail/ (device buffers, events)
  explicit device_cell_results(std::unique_ptr<impl> state) noexcept;
  device_cell_results(device_cell_results&&) noexcept;
  device_cell_results& operator=(device_cell_results&&) noexcept;
  device_cell_results(device_cell_results const&) = delete;
  device_cell_results& operator=(device_cell_results const&) = delete;
  ~device_cell_results();

 private:
  std::unique_ptr<impl> impl_;
};

/// Reduces every cell of `csr` with `mode` into the bands of `request` (asynchronous on `stream`).
/// Output convention as reduce_cells_cpu (metrics.hpp): empty cells are `nodata`, count 0.
/// Precondition: z holds no NaN (the filter stage removes non-finite points).
/// Throws error_kind::resource when the device runs out of memory, error_kind::device on a CUDA
/// failure or without a usable GPU.
[[nodiscard]] device_cell_results reduce(device_csr const& csr, metric_request const& request, float nodata,
                                         reduce_mode mode, cudaStream_t stream);

}  // namespace heightgrid
