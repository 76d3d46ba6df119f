#pragma once
// Points -> CSR: per-cell offsets into a cell-ordered z array (the CPU backend).

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/point_chunk.hpp"

#include <cstdint>
#include <vector>

namespace heightgrid {

/// Offsets into the cell-ordered z array: the points of cell c are z[offsets[c] .. offsets[c+1]).
using point_offset = std::uint64_t;

/// A grid's points in compressed-sparse-row form.
struct csr_grid {
  std::vector<point_offset> offsets;  ///< num_cells + 1 entries, offsets[0] == 0
  std::vector<double> z;              ///< z of every binned point, grouped by cell

  [[nodiscard]] std::uint64_t num_cells() const noexcept
  {
    return offsets.empty() ? 0 : offsets.size() - 1;
  }
};

/// What happened to the points while binning.
struct binning_stats {
  std::uint64_t points_in{0};       ///< points offered to the binner
  std::uint64_t points_binned{0};   ///< points that landed in a cell
  std::uint64_t points_outside{0};  ///< points outside the grid (only with an explicit extent)
};

/// Cell of every point (no_cell when outside), OpenMP-parallel. `cells` is resized to x.size().
void compute_cell_ids(grid_spec const& grid, std::vector<double> const& x, std::vector<double> const& y,
                      std::vector<cell_id>& cells);

/// Counting sort of the points into cells. Stable: within a cell, points keep input order, so the
/// CSR (and every sum computed from it) is the same whatever the number of threads.
csr_grid bin_points_cpu(grid_spec const& grid, point_chunk const& points, binning_stats& stats);

/// The same from precomputed cell ids (no_cell entries are skipped).
csr_grid bin_cells_cpu(std::uint64_t num_cells, std::vector<cell_id> const& cells,
                       std::vector<double> const& z, binning_stats& stats);

}  // namespace heightgrid
