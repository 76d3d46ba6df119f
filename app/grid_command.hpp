#pragma once
// `heightgrid grid`: stream points from files (or a synthetic cloud) into a grid's per-cell
// accumulators on the CPU and/or the GPU, and write a GeoTIFF of per-cell statistics.

#include "options.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace heightgrid::app {

/// Every option of `grid`, as parsed; checked together in run_grid().
struct grid_options {
  input_selection in;
  grid_geometry geometry;
  run_options run;
  std::string output;
  std::string metrics{"range"};
  std::string nodata{"nan"};
  std::string a_srs;
  std::string output_format{"GTiff"};
  std::vector<std::string> creation_options;
  bool overwrite{false};
  std::string mode{"auto"};
};

CLI::App* add_grid_command(CLI::App& app, grid_options& o);
int run_grid(grid_options const& o);

}  // namespace heightgrid::app
