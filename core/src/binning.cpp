#include "heightgrid/core/binning.hpp"

#include "heightgrid/core/error.hpp"

#include <omp.h>

#include <algorithm>
#include <cstddef>

namespace heightgrid {

void compute_cell_ids(grid_spec const& grid, std::vector<double> const& x, std::vector<double> const& y,
                      std::vector<cell_id>& cells)
{
  HG_EXPECTS(x.size() == y.size(), error_kind::internal, "compute_cell_ids: x and y differ in length");
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
  HG_EXPECTS(cells.size() == z.size(), error_kind::internal, "bin_cells_cpu: cells and z differ in length");
  auto const n = cells.size();
  csr_grid csr;
  csr.offsets.assign(num_cells + 1, 0);

  // Stable parallel counting sort, partitioned by cell: thread t owns the cells [lo_t, hi_t) and
  // scans the whole (4-byte) cell-id array, counting and then placing only its own points, in
  // input order. Every point is placed by one thread in input order, so the CSR is the same
  // whatever the thread count; the extra memory is one cursor per cell (no per-thread
  // histograms), and each thread's writes stay inside its own part of the output.
  int const threads = std::max(1, std::min<int>(omp_get_max_threads(), static_cast<int>(std::max<std::uint64_t>(1, num_cells))));
  auto const range_lo = [&](int t) {
    return num_cells * static_cast<std::uint64_t>(t) / static_cast<std::uint64_t>(threads);
  };
  std::vector<point_offset> range_points(static_cast<std::size_t>(threads) + 1, 0);
  point_offset* const counts = csr.offsets.data() + 1;  // counts[c] lands in offsets[c + 1]

#pragma omp parallel num_threads(threads)
  {
    int const t = omp_get_thread_num();
    std::uint64_t const lo = range_lo(t);
    std::uint64_t const hi = range_lo(t + 1);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t const c = cells[i];  // no_cell (2^32 - 1) is >= every range's hi
      if (c >= lo && c < hi) { ++counts[c]; }
    }
    point_offset sum = 0;
    for (std::uint64_t c = lo; c < hi; ++c) { sum += counts[c]; }
    range_points[static_cast<std::size_t>(t) + 1] = sum;
  }
  for (int t = 0; t < threads; ++t) {
    range_points[static_cast<std::size_t>(t) + 1] += range_points[static_cast<std::size_t>(t)];
  }
  point_offset const binned = range_points[static_cast<std::size_t>(threads)];
  csr.z.resize(binned);
  std::vector<point_offset> cursor(num_cells);

#pragma omp parallel num_threads(threads)
  {
    int const t = omp_get_thread_num();
    std::uint64_t const lo = range_lo(t);
    std::uint64_t const hi = range_lo(t + 1);
    // counts[c] is offsets[c + 1], which the next range's thread overwrites with its first
    // offset: take every count out before any offset is written.
    for (std::uint64_t c = lo; c < hi; ++c) { cursor[c] = counts[c]; }
#pragma omp barrier
    point_offset running = range_points[static_cast<std::size_t>(t)];
    for (std::uint64_t c = lo; c < hi; ++c) {
      point_offset const count = cursor[c];
      csr.offsets[c] = running;
      cursor[c] = running;
      running += count;
    }
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t const c = cells[i];
      if (c >= lo && c < hi) { csr.z[cursor[c]++] = z[i]; }
    }
  }
  csr.offsets[num_cells] = binned;

  stats.points_in += n;
  stats.points_binned += binned;
  stats.points_outside += n - binned;
  return csr;
}

}  // namespace heightgrid
