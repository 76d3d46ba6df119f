// heightgrid: grid point clouds into GeoTIFFs of per-cell height statistics, on the GPU or CPU.
// main decides what is said (spdlog on stderr) and maps errors to exit codes.

#include "bench_reduce_command.hpp"
#include "compare_command.hpp"
#include "grid_command.hpp"
#include "info_command.hpp"
#include "limits_command.hpp"
#include "synth_command.hpp"

#include "pipeline/gpu_stage.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <new>
#include <string>

namespace {

void setup_logging(int verbosity, bool quiet)
{
  auto logger = spdlog::stderr_color_st("heightgrid");
  logger->set_pattern("heightgrid: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  if (quiet) {
    spdlog::set_level(spdlog::level::warn);
  } else if (verbosity >= 2) {
    spdlog::set_level(spdlog::level::trace);
  } else if (verbosity == 1) {
    spdlog::set_level(spdlog::level::debug);
  } else {
    spdlog::set_level(spdlog::level::info);
  }
}

}  // namespace

namespace {

int run(int argc, char** argv);

}  // namespace

int main(int argc, char** argv)
{
  int const code = run(argc, argv);
  // A GPU that was still starting when the job ended (a small job does not wait for it): CUDA's
  // teardown at exit would race with the context being created, so end here, output complete.
  if (heightgrid::app::gpu_start_in_flight()) {
    spdlog::shutdown();
    std::fflush(nullptr);
    ::_exit(code);
  }
  return code;
}

namespace {

int run(int argc, char** argv)
{
  using namespace heightgrid;
  CLI::App app{"heightgrid: grid point clouds (LAS, XYZ/CSV, GDAL rasters and vector points) into GeoTIFFs of "
               "per-cell statistics such as the height range, on the GPU or the CPU"};
  app.set_version_flag("--version", "heightgrid 0.1.0");
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "More detail: phase timings (-v), everything (-vv)");
  app.add_flag("-q,--quiet", quiet, "Only warnings and errors");
  app.require_subcommand(1);
  app.fallthrough();  // -v and -q may also follow the subcommand

  app::grid_options grid;
  app::info_options info;
  auto* grid_cmd = app::add_grid_command(app, grid);
  auto* info_cmd = app::add_info_command(app, info);
  app::synth_command_options synth;
  app::compare_options compare;
  auto* synth_cmd = app::add_synth_command(app, synth);
  auto* compare_cmd = app::add_compare_command(app, compare);
  for (int i = 0; i < argc; ++i) { compare.command_line += (i == 0 ? "" : " ") + std::string(argv[i]); }
  app::bench_reduce_options bench_reduce;
  auto* bench_reduce_cmd = app::add_bench_reduce_command(app, bench_reduce);
  app::limits_options limits;
  auto* limits_cmd = app::add_limits_command(app, limits);
  for (int i = 0; i < argc; ++i) { bench_reduce.command_line += (i == 0 ? "" : " ") + std::string(argv[i]); }

  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    return app.exit(e);
  }
  setup_logging(verbosity, quiet);
  io::init_gdal([](io::gdal_message_level level, std::string const& msg) {
    switch (level) {
      case io::gdal_message_level::debug: spdlog::trace("GDAL: {}", msg); break;
      case io::gdal_message_level::warning: spdlog::warn("GDAL: {}", msg); break;
      case io::gdal_message_level::error: spdlog::debug("GDAL error: {}", msg); break;
    }
  });

  try {
    if (grid_cmd->parsed()) { return app::run_grid(grid); }
    if (info_cmd->parsed()) { return app::run_info(info); }
    if (synth_cmd->parsed()) { return app::run_synth(synth); }
    if (compare_cmd->parsed()) { return app::run_compare(compare); }
    if (bench_reduce_cmd->parsed()) { return app::run_bench_reduce(bench_reduce); }
    if (limits_cmd->parsed()) { return app::run_limits(limits); }
  } catch (error const& e) {
    spdlog::error("{}", e.what());
    return exit_code(e.kind());
  } catch (std::bad_alloc const&) {
    spdlog::error("out of host memory; try a coarser resolution (--res) or fewer inputs");
    return exit_code(error_kind::resource);
  } catch (std::exception const& e) {
    spdlog::error("unexpected failure: {}", e.what());
    return exit_code(error_kind::internal);
  }
  return 0;
}

}  // namespace
