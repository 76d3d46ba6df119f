#pragma once
// `heightgrid synth`: write a seeded synthetic point cloud to a LAS file.

#include "inputs.hpp"

#include "heightgrid/core/point_source.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

namespace heightgrid::app {

struct synth_command_options {
  std::string kind;
  std::string output;
  synth_params shape;
  std::string las_version{"1.4"};
  std::string a_srs;
  bool overwrite{false};
  std::size_t chunk_points{default_chunk_points};
  int threads{0};
  bool progress{false};
};

/// Adds --points, the extent option (named `extent_option`: `--extent` for synth,
/// `--synth-extent` where it sits next to --te), --density, --cell-size, --zipf-s, --hotspots
/// and --seed. Shared by synth and the --synth input of grid, info and compare.
void add_synth_shape_options(CLI::App& cmd, synth_params& p, std::string const& extent_option);

/// What each synthetic kind models, for help footers.
[[nodiscard]] std::string synth_kinds_help();

CLI::App* add_synth_command(CLI::App& app, synth_command_options& o);
int run_synth(synth_command_options const& o);

}  // namespace heightgrid::app
