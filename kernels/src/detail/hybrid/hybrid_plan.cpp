// plan_hybrid(): which kernels reduce_mode::hybrid runs on a grid, and with which chunking. Host
// code, built with or without CUDA; the launchers of this folder carry its plans out.

#include "heightgrid/kernels/hybrid_plan.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

namespace heightgrid {
namespace {

constexpr std::uint64_t unbounded = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t warp_lanes = 32;

/// The default thresholds; one "why" each (measurements: docs/benchmarks-history.md, "Hybrid mode").
struct hybrid_threshold_defaults {
  /// Cells up to 32 points stay on their lane; lidar's 33-77-point cells were faster on the warp.
  static constexpr std::uint64_t lane_max_points = 32;
  /// Tiles up to 2048 points stay in kernel 1: lower sent lidar's dense overlap tiles to the queue.
  static constexpr std::uint64_t warp_max_points = 2048;
  /// 64 points per lane per chunk: 65536-point chunks were 1.3x slower on a few huge cells.
  static constexpr std::uint64_t split_chunk_points = 2048;
  /// Where a tile must be queued anyway, queue from 512 points (clustered faster, lidar unaffected).
  static constexpr std::uint64_t queued_warp_max_points = 512;
  /// Shared-memory staging never paid (it cost 0-35 % on every kind).
  static constexpr std::uint32_t stage_points_per_lane = 0;
  /// 0: cells per lane chosen from the grid's mean points per cell.
  static constexpr std::uint32_t cells_per_lane = 0;
  /// Grids of up to 64 cells per SM run one warp per cell (64 warps: one full SM's worth each):
  /// tiles of 32 cells would leave most SMs idle.
  static constexpr std::uint64_t warp_grid_cells_per_sm = 64;
  /// Sums: the thresholds their kernels were fastest with (lidar 0.61 ms vs 0.79 with the above).
  static constexpr std::uint64_t sums_lane_max_points = 128;
  static constexpr std::uint64_t sums_warp_max_points = 1024;
  /// Sums on grids with no cell above 128 points: the thread kernel was faster (lidar, uniform).
  static constexpr std::uint64_t sums_thread_max_cell_points = 128;
};

/// Most cells the sums tile kernel can queue for `points` points: a queued cell has more than
/// lane_max points, and it sits in a tile whose bigger cells hold more than warp_max points.
std::uint64_t max_split_cells(std::uint64_t points, hybrid_thresholds const& t) noexcept
{
  std::uint64_t const by_size = t.lane_max_points == unbounded ? 0 : points / (t.lane_max_points + 1);
  std::uint64_t const by_tile = t.warp_max_points == unbounded ? 0 : warp_lanes * (points / (t.warp_max_points + 1));
  return std::min(by_size, by_tile);
}

hybrid_plan plan_sums(hybrid_grid_shape const& g, hybrid_thresholds const& t) noexcept
{
  hybrid_plan p;
  bool const known = g.max_cell_points != hybrid_grid_shape::unknown;
  if (known && g.max_cell_points <= t.sums_thread_max_cell_points) {
    p.route = hybrid_route::thread_per_cell;
    p.why = "sums, no cell above sums_thread_max_cell_points";
    return p;
  }
  p.route = hybrid_route::sums_tiles;
  p.why = "sums, a cell above sums_thread_max_cell_points (or unknown)";
  p.lane_max = t.lane_max_points;
  p.warp_max = t.warp_max_points;
  p.chunk_points = std::max<std::uint64_t>(t.split_chunk_points, 1);
  p.max_split_cells = max_split_cells(g.num_points, t);
  p.max_split_chunks = g.num_points / p.chunk_points + p.max_split_cells;
  return p;
}

hybrid_plan plan_extremes(hybrid_grid_shape const& g, hybrid_thresholds const& t) noexcept
{
  using policy = hybrid_plan_policy;
  hybrid_plan p;
  bool const known = g.max_cell_points != hybrid_grid_shape::unknown;
  if (known && t.cells_per_lane == 0 && g.max_cell_points <= policy::thread_max_cell_points) {
    p.route = hybrid_route::thread_per_cell;
    p.why = "no cell above thread_max_cell_points: nothing to balance";
    return p;
  }
  if (known && g.num_cells <= t.warp_grid_max_cells && g.max_cell_points <= hybrid_warp_grid_max_cell_points) {
    p.route = hybrid_route::warp_per_cell;
    p.why = "a small grid (warp_grid_max_cells): tiles of 32 cells would leave the GPU idle";
    return p;
  }
  auto const mean_below = [&](double points_per_cell) {
    return static_cast<double>(g.num_points) < points_per_cell * static_cast<double>(g.num_cells);
  };
  bool const sparse = mean_below(policy::sparse_mean_points);
  if (known && sparse && t.cells_per_lane == 0 && g.max_cell_points <= policy::sparse_thread_max_cell_points) {
    p.route = hybrid_route::thread_per_cell;
    p.why = "a sparse grid without a big cell (sparse_thread_max_cell_points)";
    return p;
  }
  p.route = hybrid_route::tiles;
  p.why = "tiles of 32 cells, queued when too big for one warp";
  p.cells_per_lane = t.cells_per_lane != 0 ? t.cells_per_lane : (sparse ? policy::sparse_cells_per_lane : 1U);
  p.lane_max = std::min(t.lane_max_points, policy::max_lane_points);
  p.thin = mean_below(policy::thin_mean_points);
  p.tile_warps_per_block = p.thin ? policy::thin_tile_warps_per_block : policy::tile_warps_per_block;
  // When some tile must be queued anyway (a cell above warp_max), queue from queued_warp_max on;
  // not on thin grids (skewed at 10^9 was slower with it).
  std::uint64_t const warp_max = known && !p.thin && g.max_cell_points > t.warp_max_points &&
                                     t.queued_warp_max_points != 0
                                   ? std::min(t.warp_max_points, t.queued_warp_max_points)
                                   : t.warp_max_points;
  // A run of K cells must fit 32-bit positions for kernel 1 to skip its size checks.
  p.all_small = known && g.max_cell_points <= p.lane_max &&
                g.max_cell_points <= 0xffffffffULL / static_cast<std::uint64_t>(p.cells_per_lane);
  // A tile holds at most 32 x the biggest cell.
  bool const no_queue = p.all_small || (known && g.max_cell_points <= warp_max / warp_lanes);
  p.max_queued_tiles = no_queue || warp_max == unbounded ? 0 : g.num_points / (warp_max + 1);
  // Few queued tiles (small grids; thin grids without a huge cell): shorter chunks put more warps on them.
  bool const thin_chunks = p.thin && known && g.max_cell_points <= policy::thin_chunk_max_cell_points;
  std::uint64_t const small_chunk = g.num_points < policy::small_grid_points ? policy::small_grid_chunk_points
                                    : thin_chunks                            ? policy::thin_chunk_points
                                                                             : t.split_chunk_points;
  p.chunk_points = std::max<std::uint64_t>(std::min({t.split_chunk_points, small_chunk, policy::max_chunk_points}), 1);
  p.max_chunks = p.max_queued_tiles == 0 ? 0 : g.num_points / p.chunk_points + p.max_queued_tiles;
  // Without a queue the warp budget is unbounded: kernel 1 never queues.
  p.warp_max = p.max_queued_tiles == 0 ? unbounded : warp_max;
  p.chunk_lane_max = p.thin ? static_cast<std::uint32_t>(p.lane_max) : 0U;
  return p;
}

}  // namespace

hybrid_plan plan_hybrid(hybrid_grid_shape const& shape, metric_request const& request,
                        hybrid_thresholds const& t) noexcept
{
  if (shape.num_cells == 0) {
    hybrid_plan p;
    p.why = "no cell";
    return p;
  }
  return request.needs_sums() ? plan_sums(shape, t) : plan_extremes(shape, t);
}

hybrid_thresholds hybrid_default_thresholds_for(metric_request const& request, unsigned sm_count) noexcept
{
  using d = hybrid_threshold_defaults;
  hybrid_thresholds t{d::lane_max_points, d::warp_max_points, d::split_chunk_points, d::stage_points_per_lane};
  if (request.needs_sums()) {
    t.lane_max_points = d::sums_lane_max_points;
    t.warp_max_points = d::sums_warp_max_points;
    t.sums_thread_max_cell_points = d::sums_thread_max_cell_points;
  } else {
    t.cells_per_lane = d::cells_per_lane;
    t.warp_grid_max_cells = d::warp_grid_cells_per_sm * std::max(1U, sm_count);
    t.queued_warp_max_points = d::queued_warp_max_points;
  }
  return t;
}

char const* hybrid_route_name(hybrid_route route) noexcept
{
  switch (route) {
    case hybrid_route::nothing: return "nothing";
    case hybrid_route::thread_per_cell: return "thread_per_cell";
    case hybrid_route::warp_per_cell: return "warp_per_cell";
    case hybrid_route::tiles: return "tiles";
    case hybrid_route::sums_tiles: return "sums_tiles";
  }
  return "?";
}

std::string describe(hybrid_plan const& p)
{
  std::ostringstream s;
  s << hybrid_route_name(p.route) << " (" << p.why << ")";
  auto const limit = [](std::uint64_t v) { return v == unbounded ? std::string("unbounded") : std::to_string(v); };
  if (p.route == hybrid_route::tiles) {
    s << ": " << p.cells_per_lane << " cell(s) per lane, " << p.tile_warps_per_block << " warps per block"
      << (p.thin ? ", thin" : "") << (p.all_small ? ", all cells small" : "") << ", lane_max " << limit(p.lane_max)
      << ", warp_max " << limit(p.warp_max);
    if (p.max_queued_tiles == 0) {
      s << ", no queue";
    } else {
      s << ", up to " << p.max_queued_tiles << " queued tiles in chunks of " << p.chunk_points << " points (up to "
        << p.max_chunks << " chunks)";
    }
  } else if (p.route == hybrid_route::sums_tiles) {
    s << ": lane_max " << limit(p.lane_max) << ", warp_max " << limit(p.warp_max) << ", up to " << p.max_split_cells
      << " split cells in chunks of " << p.chunk_points << " points";
  }
  return s.str();
}

}  // namespace heightgrid
