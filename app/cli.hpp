#pragma once
// The command line: every command with its options, built once into one CLI11 app. main parses
// with it and runs the command that was chosen; tests/fuzz/options_fuzz parses with it and runs
// nothing, so what it exercises is exactly what users type into.

#include "bench_reduce_command.hpp"
#include "compare_command.hpp"
#include "grid_command.hpp"
#include "info_command.hpp"
#include "limits_command.hpp"
#include "synth_command.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <string>
#include <vector>

namespace heightgrid::app {

/// The parsed values live in the option structs below, which the CLI11 app writes into: the
/// object is neither copied nor moved.
struct command_line {
  /// `invocation`: the command as typed, recorded by compare and bench-reduce in their JSON.
  explicit command_line(std::string const& invocation);
  command_line(command_line const&) = delete;
  command_line& operator=(command_line const&) = delete;

  /// Parses argv (argv[0] the program) after rewriting GDAL's single-dash spellings
  /// (gdal_spelling_table) to their long forms. Throws CLI::ParseError as CLI::App::parse does.
  void parse(int argc, char const* const* argv);

  CLI::App app;
  int verbosity{0};  ///< -v: 1, -vv: 2
  bool quiet{false};
  /// --config KEY VALUE (repeatable; GDAL's spelling): GDAL configuration options, set before any
  /// file is opened. Flattened pairs: key, value, key, value...
  std::vector<std::string> gdal_config;

  grid_options grid;
  info_options info;
  synth_command_options synth;
  compare_options compare;
  bench_reduce_options bench_reduce;
  limits_options limits;

  CLI::App* grid_cmd{nullptr};
  CLI::App* info_cmd{nullptr};
  CLI::App* synth_cmd{nullptr};
  CLI::App* compare_cmd{nullptr};
  CLI::App* bench_reduce_cmd{nullptr};
  CLI::App* limits_cmd{nullptr};
};

/// GDAL's single-dash spellings of options that heightgrid spells with two dashes: CLI11 would read
/// `-tr` as the short flags -t -r and `-of` as `-o f`. Each is rewritten to its long form before
/// parsing, so both spellings mean exactly the same.
struct gdal_spelling {
  char const* gdal;  ///< "-tr"
  char const* ours;  ///< "--tr"
};
[[nodiscard]] std::vector<gdal_spelling> const& gdal_spelling_table();

/// argv[1..] with every argument equal to a GDAL spelling replaced by its long form (up to a "--",
/// after which arguments are positional and kept as they are).
[[nodiscard]] std::vector<std::string> long_spellings(int argc, char const* const* argv);

/// Sets each --config KEY VALUE pair as a GDAL configuration option (CPLSetConfigOption).
void apply_gdal_config(std::vector<std::string> const& pairs);

/// argv joined by spaces, as command_line's `invocation`.
[[nodiscard]] std::string join_arguments(int argc, char const* const* argv);

/// Says a command's failure on the log as every command does (the error's text, quoted; out of
/// memory, threads that cannot start and unexpected exceptions each with their advice) and returns
/// the exit code it maps to (README "Conventions").
int report_failure(std::exception_ptr failure);

}  // namespace heightgrid::app
