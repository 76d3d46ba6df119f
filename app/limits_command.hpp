#pragma once
// `heightgrid limits`: the machine's own limits that a grid job is judged against, measured now:
// page-cache reads of the given files (one thread and many), pinned and pageable host<->device
// copies, and the device's read bandwidth.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace heightgrid::app {

struct limits_options {
  std::vector<std::string> files;  ///< read (twice: the first read fills the page cache)
  int threads{0};                  ///< 0: one per core
  std::string copy_size{"256M"};   ///< bytes per timed host<->device copy
};

CLI::App* add_limits_command(CLI::App& app, limits_options& o);
int run_limits(limits_options const& o);

}  // namespace heightgrid::app
