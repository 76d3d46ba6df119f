#pragma once
// `heightgrid info`: what an input holds, and how it would grid.

#include "options.hpp"

#include <CLI/CLI.hpp>

namespace heightgrid::app {

struct info_options {
  input_selection in;
  double res{0.0};  ///< resolution for the points-per-cell distribution (default: suggested)
  int threads{0};
  bool headers_only{false};  ///< the catalogue summary from the headers, no point read
  bool json{false};          ///< --json: one JSON document on stdout instead of the text
};

CLI::App* add_info_command(CLI::App& app, info_options& o);
int run_info(info_options const& o);

/// A resolution giving about `points_per_cell` points per cell at the cloud's mean density,
/// rounded to 1, 2 or 5 times a power of ten.
[[nodiscard]] double suggest_resolution(std::uint64_t points, bounds const& extent, double points_per_cell = 8.0);

}  // namespace heightgrid::app
