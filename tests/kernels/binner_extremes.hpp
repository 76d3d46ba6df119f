#pragma once
// What a gpu_binner holds after binning, downloaded for comparison (the records tests).

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"

#include <cstdint>
#include <vector>

namespace heightgrid::test {

/// A binner's raw accumulators of the whole grid and its point counters.
struct binner_extremes {
  std::vector<std::uint64_t> lo, hi;
  std::vector<std::uint32_t> count;
  std::uint64_t binned{0}, outside{0};
};

inline binner_extremes download_extremes(gpu_binner& b, grid_spec const& g)
{
  binner_extremes e;
  e.lo.resize(g.num_cells());
  e.hi.resize(g.num_cells());
  e.count.resize(g.num_cells());
  b.download_extremes(0, g.rows, e.lo.data(), e.hi.data(), e.count.data());
  e.binned = b.points_binned();
  e.outside = b.points_outside();
  return e;
}

}  // namespace heightgrid::test
