#include "cli.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/quote.hpp"

#include <spdlog/spdlog.h>

#include <new>
#include <system_error>

namespace heightgrid::app {

command_line::command_line(std::string const& invocation)
  : app{"heightgrid: grid point clouds (LAS, XYZ/CSV, GDAL rasters and vector points) into GeoTIFFs of "
        "per-cell statistics such as the height range, on the GPU or the CPU"}
{
  app.set_version_flag("--version", "heightgrid 0.1.0");
  app.add_flag("-v,--verbose", verbosity, "More detail: phase timings (-v), everything (-vv)");
  app.add_flag("-q,--quiet", quiet, "Only warnings and errors");
  app.require_subcommand(1);
  app.fallthrough();  // -v and -q may also follow the subcommand

  grid_cmd = add_grid_command(app, grid);
  info_cmd = add_info_command(app, info);
  synth_cmd = add_synth_command(app, synth);
  compare_cmd = add_compare_command(app, compare);
  compare.command_line = invocation;
  bench_reduce_cmd = add_bench_reduce_command(app, bench_reduce);
  bench_reduce.command_line = invocation;
  limits_cmd = add_limits_command(app, limits);
}

std::string join_arguments(int argc, char const* const* argv)
{
  std::string joined;
  for (int i = 0; i < argc; ++i) { joined += (i == 0 ? "" : " ") + std::string(argv[i]); }
  return joined;
}

int report_failure(std::exception_ptr failure)
{
  try {
    std::rethrow_exception(failure);
  } catch (error const& e) {
    spdlog::error("{}", printable(e.what()));
    return exit_code(e.kind());
  } catch (std::system_error const& e) {
    // std::thread's "Resource temporarily unavailable": the system would not start another thread.
    if (e.code() == std::errc::resource_unavailable_try_again) {
      spdlog::error("cannot start another thread ({}); use fewer --threads", e.what());
      return exit_code(error_kind::resource);
    }
    spdlog::error("unexpected failure: {}", printable(e.what()));
    return exit_code(error_kind::internal);
  } catch (std::bad_alloc const&) {
    spdlog::error("out of host memory; try a coarser resolution (--res) or fewer inputs");
    return exit_code(error_kind::resource);
  } catch (std::exception const& e) {
    spdlog::error("unexpected failure: {}", printable(e.what()));
    return exit_code(error_kind::internal);
  } catch (...) {
    spdlog::error("unexpected failure");
    return exit_code(error_kind::internal);
  }
}

}  // namespace heightgrid::app
