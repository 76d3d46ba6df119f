#pragma once
// What reduce_mode::hybrid runs on a grid: a pure host function of the grid's shape, the request and
// the thresholds, so that the choice is tested without a GPU (tests/kernels/hybrid_plan_test.cpp),
// logged by the app at -vv, and made in one place: the launchers (kernels/src/detail/hybrid/) only
// carry a plan out. Host-clean.

#include "heightgrid/core/metrics.hpp"
#include "heightgrid/kernels/hybrid_tuning.hpp"

#include <cstdint>
#include <string>

namespace heightgrid {

/// What the plan reads of a grid. max_cell_points: the most points in one cell, or `unknown`
/// (device_csr_view::unknown) when binning did not say.
struct hybrid_grid_shape {
  std::uint64_t num_cells{0};
  std::uint64_t num_points{0};
  std::uint64_t max_cell_points{unknown};
  static constexpr std::uint64_t unknown = ~std::uint64_t{0};
};

/// The host-side constants of the plan; the kernels' launch shapes stay with the kernels. One "why"
/// each; the measurements behind them are in docs/benchmarks-history.md ("Hybrid mode").
struct hybrid_plan_policy {
  /// No cell above this: one load per thread, nothing to balance (thread-per-cell won on such files).
  static constexpr std::uint64_t thread_max_cell_points = 1;
  /// Under this mean points per cell a grid is sparse: nearly empty cells favour thread-per-cell.
  static constexpr double sparse_mean_points = 0.5;
  /// A sparse grid with no cell above this runs thread-per-cell (2 cells per lane lost there).
  static constexpr std::uint64_t sparse_thread_max_cell_points = 64;
  /// cells_per_lane auto on a sparse grid with a bigger cell: runs of 2 cells per lane.
  static constexpr std::uint32_t sparse_cells_per_lane = 2;
  /// Under this mean points per cell a grid is thin: blocks of 2 warps, no queued_warp_max, and
  /// kernel 2's lanes fold their own small cells (a few tiles with a big cell hold up a block).
  static constexpr double thin_mean_points = 4.0;
  static constexpr int tile_warps_per_block = 8;
  static constexpr int thin_tile_warps_per_block = 2;
  /// Grids of fewer points cut queued tiles into chunks of at most small_grid_chunk_points, so a
  /// whole small file in one cell still spreads over many warps.
  static constexpr std::uint64_t small_grid_points = std::uint64_t{1} << 22;
  static constexpr std::uint64_t small_grid_chunk_points = 256;
  /// Thin grids whose biggest cell is at most thin_chunk_max_cell_points cut chunks at
  /// thin_chunk_points (more warps on few queued tiles, without thousands merging into one cell).
  static constexpr std::uint64_t thin_chunk_points = 256;
  static constexpr std::uint64_t thin_chunk_max_cell_points = 65536;
  /// Kernel 2 counts within a chunk in 32 bits.
  static constexpr std::uint64_t max_chunk_points = std::uint64_t{1} << 31;
  /// A lane counts its cell's points in 32 bits.
  static constexpr std::uint64_t max_lane_points = 0xffffffffULL;
};

/// The kernels hybrid runs on one grid.
enum class hybrid_route {
  nothing,          ///< no cell: no launch
  thread_per_cell,  ///< the `thread` mode's kernel alone
  warp_per_cell,    ///< the `warp` mode's kernel alone
  tiles,            ///< no sums: the tile (or run) kernel, then the chunk kernel when a tile may be queued
  sums_tiles,       ///< sums: the tile kernel, then the chunk kernel (twice for stddev) when a cell may split
};

/// The plan of one reduce. Fields past `why` are set for the routes that read them.
struct hybrid_plan {
  hybrid_route route{hybrid_route::nothing};
  char const* why{""};  ///< the rule that picked the route, for the log

  // tiles
  std::uint32_t cells_per_lane{1};    ///< 1: the tile kernel; 2, 4, 8: the run kernel
  int tile_warps_per_block{hybrid_plan_policy::tile_warps_per_block};
  bool thin{false};                   ///< under thin_mean_points points per cell
  bool all_small{false};              ///< no cell above lane_max: kernel 1's lane path alone is compiled in
  std::uint64_t lane_max{0};          ///< as kernel 1 applies it (capped at max_lane_points)
  std::uint64_t warp_max{0};          ///< as kernel 1 applies it; unbounded (~0) when nothing is queued
  std::uint64_t max_queued_tiles{0};  ///< 0: no queue, no kernel 2
  std::uint64_t chunk_points{0};
  std::uint64_t max_chunks{0};
  std::uint32_t chunk_lane_max{0};    ///< kernel 2's lanes fold their own cells up to this (thin grids), else 0

  // sums_tiles
  std::uint64_t max_split_cells{0};   ///< 0: no cell can split, no kernel 2
  std::uint64_t max_split_chunks{0};
};

/// The plan for `request` on `shape` with thresholds `t`. Pure: the same arguments give the same
/// plan, on any machine. Does not validate `t` (reduce_hybrid does).
/// Examples (default thresholds): 0 cells -> nothing; range on 10^6 cells holding at most 1 point
/// each -> thread_per_cell; range on 10^7 cells, 10^8 points, biggest cell 77 -> tiles, 1 cell per
/// lane, no queue (no tile can exceed warp_max); mean on the same grid -> thread_per_cell (77 <=
/// sums_thread_max_cell_points).
[[nodiscard]] hybrid_plan plan_hybrid(hybrid_grid_shape const& shape, metric_request const& request,
                                      hybrid_thresholds const& t) noexcept;

/// The thresholds hybrid uses for `request` by default: default_hybrid_thresholds() without sums,
/// the sums defaults with them, for a device of `sm_count` multiprocessors (the warp-per-cell path
/// takes grids of up to 64 cells per SM). Host-only, available in builds without CUDA; the device's
/// own thresholds: hybrid_thresholds_on_device() (hybrid_tuning.hpp).
[[nodiscard]] hybrid_thresholds hybrid_default_thresholds_for(metric_request const& request,
                                                              unsigned sm_count) noexcept;

/// Name of a route ("thread_per_cell", ...).
[[nodiscard]] char const* hybrid_route_name(hybrid_route route) noexcept;

/// One line for the log: route, rule and the numbers the launchers use.
[[nodiscard]] std::string describe(hybrid_plan const& plan);

}  // namespace heightgrid
