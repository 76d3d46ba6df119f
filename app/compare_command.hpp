#pragma once
// `heightgrid compare`: build the CSR of an input once, reduce it with every mode, check that all
// modes give the same bands, and report their times next to the input's load imbalance.

#include "options.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace heightgrid::app {

struct compare_options {
  input_selection in;
  grid_geometry geometry;
  std::string metrics{"range"};
  std::string prange{"5,95"};
  std::string modes;  ///< comma list; empty: every GPU mode (all_modes()) and cpu
  int repeat{10};
  bool no_gate{false};  ///< time GPU runs without holding the stream (host launch gaps counted)
  std::string json;
  std::string plot;
  bool overwrite{false};
  int threads{0};
  bool list_modes{false};    ///< --list-modes: print the GPU reduce modes, one a line, run nothing
  std::string replot;        ///< --replot FILE.json: draw --plot from an earlier run's --json, run nothing
  std::string command_line;  ///< the invocation, recorded in --json (set by main)
};

CLI::App* add_compare_command(CLI::App& app, compare_options& o);
int run_compare(compare_options const& o);

}  // namespace heightgrid::app
