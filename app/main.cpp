// heightgrid: grid point clouds into GeoTIFFs of per-cell height statistics, on the GPU or CPU.
// main decides what is said (spdlog on stderr) and maps errors to exit codes.

#include "cli.hpp"

#include "pipeline/driver_helper.hpp"
#include "pipeline/gpu_stage.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/quote.hpp"
#include "heightgrid/core/temp_registry.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <system_error>

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

/// SIGINT, SIGTERM, SIGHUP: remove the temporaries of the outputs being written (README: a failed
/// run leaves nothing behind) and exit as a shell reports a signal, 128 + its number (130, 143,
/// 129). Only async-signal-safe calls: unlink on a fixed table, write, _exit.
extern "C" void stop_on_signal(int sig)
{
  heightgrid::remove_registered_temporaries();
  static constexpr char note[] = "heightgrid: error: stopped by a signal; temporary files removed\n";
  [[maybe_unused]] auto const written = ::write(STDERR_FILENO, note, sizeof note - 1);
  ::_exit(128 + sig);
}

void install_signal_handlers()
{
  struct sigaction action{};
  action.sa_handler = stop_on_signal;
  sigemptyset(&action.sa_mask);
  for (int const sig : {SIGINT, SIGTERM, SIGHUP}) { sigaddset(&action.sa_mask, sig); }
  for (int const sig : {SIGINT, SIGTERM, SIGHUP}) { ::sigaction(sig, &action, nullptr); }
}

}  // namespace

namespace {

int run(int argc, char** argv);

}  // namespace

int main(int argc, char** argv)
{
  install_signal_handlers();
  int const code = run(argc, argv);
  heightgrid::app::trace_moment("exit");
  // A GPU that was still starting when the job ended (a small job does not wait for it): CUDA's
  // teardown at exit would race with the context being created, so end here, output complete. A GPU
  // that started: its teardown costs a tenth of a second the driver does anyway at process end.
  if (heightgrid::app::gpu_start_in_flight() || heightgrid::app::gpu_started_in_process()) {
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
    cli.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    // --help and --version are "errors" of code 0 that CLI11 prints itself; every other parse
    // error is bad usage: exit 2 with the same prefix as every other error (README "Conventions").
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) { return cli.app.exit(e); }
    std::fprintf(stderr, "heightgrid: error: %s\nRun with --help for more information.\n", printable(e.what()).c_str());
    return exit_code(error_kind::usage);
  }
  if (cli.grid_cmd->parsed() && cli.grid.run.device == "gpu" && cli.grid.gpus.empty()) {
    // Before any thread starts: a job the CPU bins alone asks the driver from this helper.
    (void)app::start_driver_helper();
  }
  setup_logging(cli.verbosity, cli.quiet);
  io::init_gdal([](io::gdal_message_level level, std::string const& msg) {
    switch (level) {
      // GDAL quotes file contents (tags, names) as they are: escaped before they reach the terminal.
      case io::gdal_message_level::debug: spdlog::trace("GDAL: {}", printable(msg)); break;
      case io::gdal_message_level::warning: spdlog::warn("GDAL: {}", printable(msg)); break;
      case io::gdal_message_level::error: spdlog::debug("GDAL error: {}", printable(msg)); break;
    }
  });

  try {
    app::apply_gdal_config(cli.gdal_config);
    if (cli.grid_cmd->parsed()) { return app::run_grid(cli.grid); }
    if (cli.info_cmd->parsed()) { return app::run_info(cli.info); }
    if (cli.synth_cmd->parsed()) { return app::run_synth(cli.synth); }
    if (cli.compare_cmd->parsed()) { return app::run_compare(cli.compare); }
    if (cli.bench_reduce_cmd->parsed()) { return app::run_bench_reduce(cli.bench_reduce); }
    if (cli.limits_cmd->parsed()) { return app::run_limits(cli.limits); }
  } catch (...) {
    return app::report_failure(std::current_exception());
  }
  return 0;
}

}  // namespace
