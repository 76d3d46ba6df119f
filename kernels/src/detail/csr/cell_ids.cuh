#pragma once
// Points -> cell ids on the device, with the one cell rule every backend shares.

#include "detail/infra/launch.cuh"
#include "heightgrid/core/grid_spec.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace heightgrid::detail {

/// Mapping: one thread per point, grid-stride.
/// Preconditions: x, y and keys have n entries; outside_key == grid.num_cells() <= max_cells.
/// Result: keys[i] = grid.cell_of(x[i], y[i]) (the host function itself, so ids are bit-identical to
///   compute_cell_ids), or grid.num_cells() for a point outside the grid: that key sorts after every
///   cell and fits in ceil(log2(num_cells + 1)) bits. Valid for every i once the kernel has completed.
/// Example: grid x0=0 y0=1 xres=yres=1 cols=2 rows=1; x=[0.5, 1.0, 2.0] y=[0.5, 0.5, 0.5]
///   -> keys=[0, 1, 2] (x=1.0 is on the left edge of cell 1; x=2.0 is outside: key 2 = num_cells).
static __global__ void __launch_bounds__(item_policy::block_threads)
  cell_ids_thread_per_point_kernel(double const* __restrict__ x, double const* __restrict__ y, std::uint64_t n,
                                   grid_spec grid, cell_id outside_key, cell_id* __restrict__ keys)
{
  for (std::uint64_t i = global_thread_index(); i < n; i += grid_threads()) {
    cell_id const c = grid.cell_of(x[i], y[i]);
    keys[i] = c == no_cell ? outside_key : c;
  }
}

inline void launch_cell_ids_thread_per_point(double const* x, double const* y, std::uint64_t n,
                                             grid_spec const& grid, cell_id* keys, cudaStream_t stream)
{
  if (n == 0) { return; }
  cell_ids_thread_per_point_kernel<<<grid_blocks(n, item_policy::block_threads), item_policy::block_threads, 0,
                                     stream>>>(x, y, n, grid, static_cast<cell_id>(grid.num_cells()), keys);
  HG_CUDA_CHECK_LAUNCH();
}

}  // namespace heightgrid::detail
