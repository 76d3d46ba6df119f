#pragma once
// `heightgrid grid --tile-size`: the tiled form of grid (pipeline/tiles.hpp), -o naming a directory.

#include "grid_command.hpp"
#include "pipeline/grid_job.hpp"

#include "heightgrid/core/metrics.hpp"
#include "heightgrid/io/geotiff_writer.hpp"

#include <string>
#include <vector>

namespace heightgrid::app {

/// Exit code of a tiled run that finished but left out unreadable inputs (--skip-bad).
inline constexpr int exit_skipped_inputs = 7;

/// Whether the options ask for tiled output.
[[nodiscard]] bool tiled_output_requested(grid_options const& o) noexcept;

/// Runs the tiled job: `job` and `write` are the options run_grid checked, `paths` the inputs.
int run_grid_tiled(grid_options const& o, grid_job_options const& job, std::vector<metric> const& bands,
                   io::raster_write_options const& write, std::vector<std::string> const& paths);

}  // namespace heightgrid::app
