#pragma once
// The options several commands share, each declared once (with its help text and default) and
// checked in one place: which inputs and how to read and filter them, the grid's geometry, the
// output metrics, and how a job runs (device, threads, memory).

#include "inputs.hpp"
#include "pipeline/grid_job.hpp"

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_filter.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::app {

/// Which points: files (or --synth), the reader's options and the filters.
struct input_selection {
  std::vector<std::string> inputs;
  std::string input_format{"auto"};
  input_options reader;  ///< --band, --layer, --z-field, --chunk-points (points per part)
  std::vector<int> classes;
  std::vector<int> drop_classes;
  bool keep_all{false};
  std::string returns{"all"};
  std::optional<double> z_min;
  std::optional<double> z_max;
  std::string synth;  ///< --synth KIND instead of files
  synth_params synthetic;
};

/// Adds the input options (positional inputs excluded) and the filters to `cmd`.
void add_input_options(CLI::App& cmd, input_selection& o);
/// The filter stage from the parsed options; throws error_kind::usage on bad values.
[[nodiscard]] filter_options make_filter(input_selection const& o);

/// The grid: --res or --tr, and --te (with --tap, snapped outwards to the cell size).
struct grid_geometry {
  std::vector<double> res;
  std::vector<double> tr;
  std::vector<double> te;
  bool tap{false};
  std::string edge_rule{"gdal"};  ///< --edge-rule gdal|pdal
};

/// Adds --res, --tr (exclusive), --te, --tap and --edge-rule.
void add_geometry_options(CLI::App& cmd, grid_geometry& g);
/// The cell size from --res R or --tr XRES YRES (one must be given), finite and > 0.
[[nodiscard]] std::pair<double, double> cell_size(grid_geometry const& g);
/// --edge-rule's value; throws error_kind::usage naming a bad one.
[[nodiscard]] edge_rule cell_edge_rule(grid_geometry const& g);
/// The grid --te fixes, if given (with --edge-rule's rule). With --tap its edges move outwards to multiples of the cell
/// size, as gdalwarp -tap does.
[[nodiscard]] std::optional<grid_spec> fixed_grid(grid_geometry const& g);

/// Adds --metrics (default "range") with the list of metrics in its help.
void add_metrics_option(CLI::App& cmd, std::string& metrics, std::string const& what);
/// --prange LO,HI (default 5,95).
void add_prange_option(CLI::App& cmd, std::string& prange);

/// The bands of --metrics, in order, and what they ask of a reduction (with --prange's percentiles).
struct metric_selection {
  std::vector<metric> bands;
  metric_request request;
};
/// Throws error_kind::usage naming the bad value. `cover_above`: the height of the cover metric.
[[nodiscard]] metric_selection parse_metrics(std::string const& metrics, std::string const& prange,
                                             double cover_above = 2.0);
/// --cover-above H (default 2).
void add_cover_option(CLI::App& cmd, double& cover_above);

/// How a job runs: where (--device), on how many threads, within how much memory.
struct run_options {
  std::string device{"auto"};
  int threads{0};
  std::string memory;  ///< --memory SIZE, empty: a safe share of the host's and the device's memory
  bool progress{false};
};

void add_run_options(CLI::App& cmd, run_options& r);
/// A size option's value (--memory, 4G, 512M) in bytes (0 when not given); throws error_kind::usage naming
/// `option` on a bad size.
[[nodiscard]] std::uint64_t parse_memory(std::string const& text, std::string const& option = "--memory");
/// --threads checked (0: every core) and applied to OpenMP; returns the worker threads to use.
unsigned apply_threads(int threads);

/// --device's value; throws error_kind::usage naming `option` otherwise.
[[nodiscard]] device_choice parse_device(std::string const& text, std::string const& option = "--device");

/// The grid job's options that both front ends take (the grid command and the Python module): cell
/// size, --te/-tap grid and edge rule from `geometry`, the bands, nodata, filters, device and threads
/// (applied to OpenMP). Throws error_kind::usage naming the option (`device_option`: its name there).
[[nodiscard]] grid_job_options base_job_options(grid_geometry const& geometry, metric_request const& request,
                                                float nodata, filter_options const& filter, std::string const& device,
                                                int threads, std::string const& device_option = "--device");

}  // namespace heightgrid::app
