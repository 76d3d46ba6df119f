#include "heightgrid/core/binning.hpp"

#include "heightgrid/core/error.hpp"

#include <omp.h>

#include <algorithm>
#include <cstddef>

namespace heightgrid {

void compute_cell_ids(grid_spec const& grid, std::vector<double> const& x, std::vector<double> const& y,
                      std::vector<cell_id>& cells)
{
  expects(x.size() == y.size(), error_kind::internal, "compute_cell_ids: x and y differ in length");
  cells.resize(x.size());
  auto const n = static_cast<std::ptrdiff_t>(x.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    cells[i] = grid.cell_of(x[i], y[i]);
  }
}

csr_grid bin_points_cpu(grid_spec const& grid, point_chunk const& points, binning_stats& stats)
{
  std::vector<cell_id> cells;
  compute_cell_ids(grid, points.x, points.y, cells);
  return bin_cells_cpu(grid.num_cells(), cells, points.z, stats);
}

csr_grid bin_cells_cpu(std::uint64_t num_cells, std::vector<cell_id> const& cells,
                       std::vector<double> const& z, binning_stats& stats)
{
  expects(cells.size() == z.size(), error_kind::internal, "bin_cells_cpu: cells and z differ in length");
  auto const n = cells.size();
  csr_grid csr;
  csr.offsets.assign(num_cells + 1, 0);

  // Stable parallel counting sort: thread t owns the contiguous slice [lo_t, hi_t) of the input,
  // counts its points per cell, and scatters them after every thread of lower rank in each cell.
  // That needs one histogram per thread; when those would outweigh the points themselves
  // (sparse grids), a single thread does the same work without the extra memory.
  int const max_threads = omp_get_max_threads();
  int const threads =
    (max_threads > 1 && static_cast<std::uint64_t>(max_threads) * num_cells <= n) ? max_threads : 1;
  std::vector<std::vector<point_offset>> hist(static_cast<std::size_t>(threads));
  std::vector<std::size_t> lo(static_cast<std::size_t>(threads) + 1);
  for (int t = 0; t <= threads; ++t) {
    lo[static_cast<std::size_t>(t)] = n * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads);
  }

  std::uint64_t binned = 0;
#pragma omp parallel num_threads(threads) reduction(+ : binned)
  {
    auto const t = static_cast<std::size_t>(omp_get_thread_num());
    auto& h = hist[t];
    h.assign(num_cells, 0);
    for (std::size_t i = lo[t]; i < lo[t + 1]; ++i) {
      if (cells[i] != no_cell) {
        ++h[cells[i]];
        ++binned;
      }
    }
  }

  // offsets[c] = points in cells < c; each thread's histogram becomes its write cursor per cell.
  point_offset running = 0;
  for (std::uint64_t c = 0; c < num_cells; ++c) {
    csr.offsets[c] = running;
    for (auto& h : hist) {
      point_offset const count = h[c];
      h[c] = running;
      running += count;
    }
  }
  csr.offsets[num_cells] = running;

  csr.z.resize(running);
#pragma omp parallel num_threads(threads)
  {
    auto const t = static_cast<std::size_t>(omp_get_thread_num());
    auto& cursor = hist[t];
    for (std::size_t i = lo[t]; i < lo[t + 1]; ++i) {
      if (cells[i] != no_cell) { csr.z[cursor[cells[i]]++] = z[i]; }
    }
  }

  stats.points_in += n;
  stats.points_binned += binned;
  stats.points_outside += n - binned;
  return csr;
}

}  // namespace heightgrid
