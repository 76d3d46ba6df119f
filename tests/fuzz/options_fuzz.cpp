// libFuzzer target for the command line: the input is split at newlines into arguments after
// "heightgrid", parsed by the app's own command_line (app/cli.hpp), and for grid, info, compare
// and synth the checks each command makes before any work are run on what was parsed (cell size,
// --te grid, metrics, filters, --memory, the synthetic cloud). Nothing is read or written.
// Parsing must succeed or throw CLI::Error (main prints it and exits), the checks must pass or
// throw heightgrid::error; anything else (a crash, a sanitizer report, another exception, a leak,
// a hang) is a finding.

#include "cli.hpp"
#include "inputs.hpp"
#include "options.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/metrics.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace heightgrid;
using namespace heightgrid::app;

// More arguments or longer ones add nothing that fewer do not.
constexpr std::size_t max_arguments = 64;

std::vector<std::string> split_arguments(std::uint8_t const* data, std::size_t size)
{
  std::vector<std::string> args{"heightgrid"};
  std::string current;
  for (std::size_t i = 0; i < size && args.size() < max_arguments; ++i) {
    char const c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(current);
      current.clear();
    } else if (c != '\0') {  // argv strings end at NUL
      current.push_back(c);
    }
  }
  if (!current.empty() && args.size() < max_arguments) { args.push_back(current); }
  return args;
}

void check_inputs(input_selection const& in, std::optional<double> cell_size_hint)
{
  (void)make_filter(in);
  if (!in.synth.empty()) {
    auto const kind = parse_synth_kind_option(in.synth, "--synth");
    (void)make_synth_options(kind, in.synthetic, cell_size_hint, "--synth-extent");
  }
}

void check_geometry(grid_geometry const& g)
{
  (void)cell_size(g);
  (void)fixed_grid(g);
}

/// What run_grid, run_info, run_compare and run_synth check before they start work.
void check_parsed(command_line const& cli)
{
  if (cli.grid_cmd->parsed()) {
    check_geometry(cli.grid.geometry);
    (void)parse_metric_list(cli.grid.metrics);
    (void)parse_memory(cli.grid.run.memory);
    check_inputs(cli.grid.in, cell_size(cli.grid.geometry).first);
  } else if (cli.info_cmd->parsed()) {
    check_inputs(cli.info.in, std::nullopt);
  } else if (cli.compare_cmd->parsed()) {
    if (!cli.compare.replot.empty()) { return; }
    check_geometry(cli.compare.geometry);
    (void)parse_metric_list(cli.compare.metrics);
    check_inputs(cli.compare.in, cell_size(cli.compare.geometry).first);
  } else if (cli.synth_cmd->parsed()) {
    auto const kind = parse_synth_kind_option(cli.synth.kind, "synth");
    (void)make_synth_options(kind, cli.synth.shape, std::nullopt, "--extent");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  auto const args = split_arguments(data, size);
  std::vector<char const*> argv;
  for (auto const& a : args) { argv.push_back(a.c_str()); }
  argv.push_back(nullptr);
  int const argc = static_cast<int>(args.size());

  command_line cli(join_arguments(argc, argv.data()));
  try {
    cli.parse(argc, argv.data());
  } catch (CLI::Error const&) {
    return 0;
  }
  try {
    check_parsed(cli);
  } catch (error const&) {
  }
  return 0;
}
