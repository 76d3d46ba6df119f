#pragma once
// reduce_mode::hybrid: the one launcher. plan_hybrid (hybrid_plan.cpp, host code) decides from the
// grid's shape, the request and the thresholds which kernels run and how the work is cut; this
// carries the plan out: the thread- or warp-per-cell kernel alone, the tile kernels without sums
// (hybrid_tiles.cuh) or with them (hybrid_sums.cuh).

#include "detail/hybrid/hybrid_sums.cuh"
#include "detail/hybrid/hybrid_tiles.cuh"
#include "detail/infra/cuda_check.cuh"
#include "detail/reduce/reduce_thread.cuh"
#include "detail/reduce/reduce_warp.cuh"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/hybrid_plan.hpp"

#include <string>

namespace heightgrid::detail {

/// Reduces every cell of `csr` for `request` with thresholds `t`.
/// Throws error_kind::usage for thresholds reduce_hybrid() turns away (hybrid_tuning.hpp).
inline void launch_hybrid(device_csr_view const& csr, metric_request const& request, output_bands const& out,
                          float nodata, hybrid_thresholds const& t, cudaStream_t stream)
{
  HG_EXPECTS(t.split_chunk_points >= 1, error_kind::usage, "hybrid: split_chunk_points must be at least 1");
  HG_EXPECTS(t.stage_points_per_lane <= hybrid_max_stage_points_per_lane, error_kind::usage,
             "hybrid: stage_points_per_lane " + std::to_string(t.stage_points_per_lane) +
               " is above the maximum of " + std::to_string(hybrid_max_stage_points_per_lane));
  HG_EXPECTS(t.cells_per_lane <= hybrid_max_cells_per_lane && (t.cells_per_lane & (t.cells_per_lane - 1)) == 0,
             error_kind::usage,
             "hybrid: cells_per_lane " + std::to_string(t.cells_per_lane) + " is not 0 (auto), 1, 2, 4 or 8");
  hybrid_plan const plan = plan_hybrid({csr.num_cells, csr.num_points, csr.max_cell_points}, request, t);
  switch (plan.route) {
    case hybrid_route::nothing: return;
    case hybrid_route::thread_per_cell: launch_thread_per_cell(csr, request, out, nodata, stream); return;
    case hybrid_route::warp_per_cell: launch_warp_per_cell(csr, request, out, nodata, stream); return;
    case hybrid_route::tiles: launch_tiles(csr, request, out, nodata, plan, t.tiles_per_launch, stream); return;
    case hybrid_route::sums_tiles:
      launch_sums_tiles(csr, request, out, nodata, plan, t.stage_points_per_lane, stream);
      return;
  }
}

}  // namespace heightgrid::detail
