#include "cli.hpp"

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

}  // namespace heightgrid::app
