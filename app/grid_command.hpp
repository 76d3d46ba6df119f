#pragma once
// `heightgrid grid`: read points, bin them into a grid, reduce every cell, write a GeoTIFF.

#include "inputs.hpp"

#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_filter.hpp"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::app {

/// Every option of `grid`, as parsed; checked together in validate().
struct grid_options {
  std::vector<std::string> inputs;
  std::string output;
  std::vector<double> res;  ///< --res R (empty when not given)
  std::vector<double> tr;  ///< --tr XRES YRES
  std::vector<double> te;  ///< --te XMIN YMIN XMAX YMAX
  std::string metrics{"range"};
  std::string nodata{"nan"};
  std::string a_srs;
  std::string output_format{"GTiff"};
  std::vector<std::string> creation_options;
  bool overwrite{false};
  std::string device{"auto"};
  std::string mode{"auto"};
  std::string csr{"radix_sort"};
  int threads{0};
  int repeat{1};  ///< timed GPU runs after a warm-up (medians reported) when > 1
  bool progress{false};

  input_options input;
  std::string input_format{"auto"};
  // filters
  std::vector<int> classes;
  std::vector<int> drop_classes;
  bool keep_all{false};
  std::string returns{"all"};
  std::optional<double> z_min;
  std::optional<double> z_max;
  // synthetic input instead of files
  std::string synth;
  synth_params synthetic;
};

/// The cell size from `--res R` or `--tr XRES YRES` (one must be given), checked to be finite and
/// > 0; throws error_kind::usage otherwise.
[[nodiscard]] std::pair<double, double> cell_size(std::vector<double> const& res, std::vector<double> const& tr);

/// Adds the reader and filter options shared by `grid` and `info`.
void add_input_options(CLI::App& cmd, grid_options& o);
/// Builds the filter stage from the parsed options (throws error_kind::usage on bad values).
[[nodiscard]] filter_options make_filter(grid_options const& o);
/// Opens the inputs named by the options (files, directories, globs or --synth). A synthetic
/// skewed cloud ranks cells of `cell_size_hint` (the grid's resolution) unless --cell-size is given.
[[nodiscard]] std::vector<std::unique_ptr<point_source>> open_inputs(grid_options const& o,
                                                                      std::vector<std::string>& paths,
                                                                      std::optional<double> cell_size_hint = {});

CLI::App* add_grid_command(CLI::App& app, grid_options& o);
int run_grid(grid_options const& o);

}  // namespace heightgrid::app
