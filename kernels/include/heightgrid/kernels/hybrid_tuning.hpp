#pragma once
// The run-time thresholds of reduce_mode::hybrid, for the threshold sweep (bench/hybrid_sweep.cpp) and for the tests that put cells exactly at each threshold. Normal use does not
// need this header: reduce(..., reduce_mode::hybrid, ...) runs with default_hybrid_thresholds(),
// plan_hybrid's defaults (kernels/src/detail/hybrid/hybrid_plan.cpp).
// Host-clean.

#include "heightgrid/core/metrics.hpp"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <cstdint>

namespace heightgrid {

/// Where hybrid hands a cell from one lane to the whole warp, and from the warp to many warps.
/// Every warp owns tiles of 32 consecutive cells, one per lane (see kernels/src/detail/hybrid/).
struct hybrid_thresholds {
  /// A cell of at most this many points is reduced by its own lane, sequentially.
  std::uint64_t lane_max_points{0};
  /// Requests without sums: a tile with a bigger cell and more points than this is queued and cut
  /// into chunks that many warps share; otherwise the warp reduces its bigger cells one after the
  /// other. Requests with sums: the tile's bigger cells are reduced by the whole warp while their
  /// running total (in lane order) is at most this; the rest are split. Either way one warp never
  /// reduces more than this many points cooperatively per tile.
  std::uint64_t warp_max_points{0};
  /// A queued tile (no sums) or a split cell (sums) is cut into chunks of this many points, one warp
  /// each, merged afterwards. >= 1. Without sums, grids of under 2^22 points, or of under 4 points
  /// per cell whose biggest cell is known to hold at most 65,536 points, cut them at 256 at most.
  std::uint64_t split_chunk_points{0};
  /// Requests with sums only: a tile whose points number at most 32 x this (and that has no split
  /// cell) is first copied into shared memory with coalesced loads, then reduced from there. 0 turns
  /// staging off; at most hybrid_max_stage_points_per_lane.
  std::uint32_t stage_points_per_lane{0};
  /// Requests without sums: consecutive cells one lane reduces as one run of points when none of
  /// them has more than lane_max points (1, 2, 4 or 8; a tile is then 32 x this many cells). 0:
  /// chosen from the grid's mean points per cell, and a nearly empty grid with no cell above
  /// lane_max then runs one thread per cell instead. Ignored with sums.
  std::uint32_t cells_per_lane{0};
  /// Requests without sums: a grid of at most this many cells whose biggest cell is known and holds
  /// at most hybrid_warp_grid_max_cell_points runs one warp per cell (the `warp` mode's kernel):
  /// tiles of 32 cells would leave most of a GPU idle. 0: never.
  std::uint64_t warp_grid_max_cells{0};
  /// Requests with sums: a grid whose biggest cell is known and holds at most this many points
  /// runs one thread per cell (the `thread` mode's kernel, sums in CSR order). 0: never.
  std::uint64_t sums_thread_max_cell_points{0};
  /// Requests without sums: when the grid's biggest cell is known to hold more than
  /// warp_max_points points (so that tiles are queued and the chunk kernel runs anyway) and the
  /// grid holds at least 4 points per cell on average, a tile with a cell above lane_max is queued
  /// from this many points on instead. 0: warp_max_points.
  std::uint64_t queued_warp_max_points{0};
  /// Requests without sums, one cell per lane: tiles of 32 cells per launch of the tile kernel,
  /// which runs one warp per tile without a loop. 0: as many as one launch holds (2^31 - 1 blocks
  /// of 8 tiles, more than any device's memory can hold); tests set it small to run several.
  std::uint64_t tiles_per_launch{0};
};

/// The biggest cell a grid may hold to take hybrid_thresholds::warp_grid_max_cells's path.
inline constexpr std::uint64_t hybrid_warp_grid_max_cell_points = 8192;

/// Largest hybrid_thresholds::cells_per_lane.
inline constexpr std::uint32_t hybrid_max_cells_per_lane = 8;

/// Upper bound of hybrid_thresholds::stage_points_per_lane (the shared memory of a block).
inline constexpr std::uint32_t hybrid_max_stage_points_per_lane = 64;

/// The thresholds reduce(..., reduce_mode::hybrid, ...) uses for requests without sums:
/// hybrid_default_thresholds_for() of such a request (hybrid_plan.hpp; requests with mean/stddev use
/// their own, 128 / 1024).
/// Throws error_kind::device in a build without CUDA.
[[nodiscard]] hybrid_thresholds default_hybrid_thresholds();

/// hybrid_default_thresholds_for(request, SMs of the current device): what reduce() uses.
/// Throws error_kind::device in a build without CUDA.
[[nodiscard]] hybrid_thresholds hybrid_thresholds_on_device(metric_request const& request);

/// reduce(csr, request, nodata, reduce_mode::hybrid, stream) with other thresholds. Every choice of
/// thresholds gives the same min/max/range/count, bit for bit; they only move the time.
/// Throws error_kind::usage for split_chunk_points == 0 or stage_points_per_lane above
/// hybrid_max_stage_points_per_lane; otherwise as reduce().
[[nodiscard]] device_cell_results reduce_hybrid(device_csr const& csr, metric_request const& request, float nodata,
                                                hybrid_thresholds const& thresholds, cudaStream_t stream);

}  // namespace heightgrid
