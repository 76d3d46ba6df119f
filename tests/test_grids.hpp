#pragma once
// Small grids the tests of several directories build their cases on.

#include "heightgrid/core/grid_spec.hpp"

#include <cstdint>

namespace heightgrid::test {

/// `n` x `n` cells of 1 x 1 from (0, n) down to (n, 0): cell (c, r) covers x in [c, c + 1) and
/// y in (n - r - 1, n - r].
inline grid_spec unit_square_grid(std::uint32_t n)
{
  grid_spec g;
  g.xres = g.yres = 1.0;
  g.cols = g.rows = n;
  g.y0 = static_cast<double>(n);
  return g;
}

}  // namespace heightgrid::test
