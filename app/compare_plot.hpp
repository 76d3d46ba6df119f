#pragma once
// compare's --plot: a PNG of the time per mode and the points-per-cell histogram, drawn by
// gnuplot (a script and its data in a temporary directory; no drawing code here).

#include "heightgrid/core/cell_stats.hpp"

#include <string>
#include <vector>

namespace heightgrid::app {

struct plotted_mode {
  std::string name;
  double median_ms{0.0};
  double min_ms{0.0};
  double max_ms{0.0};
};

/// Draws `path` (PNG, written atomically). Without gnuplot on PATH, or when it fails, logs a
/// warning saying so and returns false: the plot is optional, the caller's other outputs stand.
bool plot_compare(std::string const& path, std::string const& title, std::vector<plotted_mode> const& modes,
                  cell_count_stats const& stats, int repeat);

}  // namespace heightgrid::app
