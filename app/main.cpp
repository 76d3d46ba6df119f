// heightgrid: grid point clouds into GeoTIFFs of per-cell height statistics, on the GPU or CPU.
// main decides what is said (spdlog on stderr) and maps errors to exit codes.

#include "cli.hpp"

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
  app::command_line cli(app::join_arguments(argc, argv));
  try {
    cli.app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    return cli.app.exit(e);
  }
  setup_logging(cli.verbosity, cli.quiet);
  io::init_gdal([](io::gdal_message_level level, std::string const& msg) {
    switch (level) {
      case io::gdal_message_level::debug: spdlog::trace("GDAL: {}", msg); break;
      case io::gdal_message_level::warning: spdlog::warn("GDAL: {}", msg); break;
      case io::gdal_message_level::error: spdlog::debug("GDAL error: {}", msg); break;
    }
  });

  try {
    if (cli.grid_cmd->parsed()) { return app::run_grid(cli.grid); }
    if (cli.info_cmd->parsed()) { return app::run_info(cli.info); }
    if (cli.synth_cmd->parsed()) { return app::run_synth(cli.synth); }
    if (cli.compare_cmd->parsed()) { return app::run_compare(cli.compare); }
    if (cli.bench_reduce_cmd->parsed()) { return app::run_bench_reduce(cli.bench_reduce); }
    if (cli.limits_cmd->parsed()) { return app::run_limits(cli.limits); }
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
