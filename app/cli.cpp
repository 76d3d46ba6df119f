#include "cli.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/quote.hpp"

#include <cpl_conv.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include <new>
#include <system_error>
#include <utility>

namespace heightgrid::app {

command_line::command_line(std::string const& invocation)
  : app{"heightgrid: grid point clouds (LAS, XYZ/CSV, GDAL rasters and vector points) into GeoTIFFs of "
        "per-cell statistics such as the height range, on the GPU or the CPU"}
{
  app.set_version_flag("--version", "heightgrid 0.1.0");
  app.add_flag("-v,--verbose", verbosity, "More detail: phase timings (-v), everything (-vv)");
  app.add_flag("-q,--quiet", quiet, "Only warnings and errors");
  app.require_subcommand(1);
  app.fallthrough();  // -v, -q and --config may also follow the subcommand
  app.add_option("--config", gdal_config, "GDAL configuration option KEY VALUE, as GDAL's tools take it (repeatable)")
    ->expected(2)
    ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);

  grid_cmd = add_grid_command(app, grid);
  info_cmd = add_info_command(app, info);
  synth_cmd = add_synth_command(app, synth);
  compare_cmd = add_compare_command(app, compare);
  compare.command_line = invocation;
  bench_reduce_cmd = add_bench_reduce_command(app, bench_reduce);
  bench_reduce.command_line = invocation;
  limits_cmd = add_limits_command(app, limits);
}

std::vector<gdal_spelling> const& gdal_spelling_table()
{
  // gdalwarp / gdal_translate / gdal_grid spellings; -a_nodata is gdal_translate's --nodata.
  static std::vector<gdal_spelling> const table{
    {"-tr", "--tr"}, {"-te", "--te"},   {"-tap", "--tap"}, {"-a_srs", "--a_srs"}, {"-a_nodata", "--nodata"},
    {"-co", "--co"}, {"-ot", "--ot"},   {"-of", "--of"},
  };
  return table;
}

std::vector<std::string> long_spellings(int argc, char const* const* argv)
{
  std::vector<std::string> out;
  bool positional = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") { positional = true; }
    if (!positional) {
      for (auto const& s : gdal_spelling_table()) {
        if (arg == s.gdal) {
          arg = s.ours;
          break;
        }
      }
    }
    out.push_back(std::move(arg));
  }
  return out;
}

void command_line::parse(int argc, char const* const* argv)
{
  auto args = long_spellings(argc, argv);
  std::vector<char const*> rewritten{argc > 0 ? argv[0] : "heightgrid"};
  for (auto const& a : args) { rewritten.push_back(a.c_str()); }
  app.parse(static_cast<int>(rewritten.size()), rewritten.data());
}

void apply_gdal_config(std::vector<std::string> const& pairs)
{
  // CLI11 lets the last --config of a command line end after its key.
  HG_EXPECTS(pairs.size() % 2 == 0, error_kind::usage,
          "--config: '" + (pairs.empty() ? std::string() : pairs.back()) + "' has no value (give --config KEY VALUE)");
  for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
    HG_EXPECTS(!pairs[i].empty(), error_kind::usage, "--config: empty KEY (give --config KEY VALUE)");
    CPLSetConfigOption(pairs[i].c_str(), pairs[i + 1].c_str());
  }
  // A remote input never hangs a job: a server that accepts and then goes silent (or never accepts)
  // ends the transfer with an error naming the URL. Unless the user (--config, the environment) said
  // otherwise: 30 s to connect, and less than 1 byte/s for 60 s aborts.
  for (auto const& [key, value] : {std::pair<char const*, char const*>{"GDAL_HTTP_CONNECTTIMEOUT", "30"},
                                   {"GDAL_HTTP_LOW_SPEED_TIME", "60"},
                                   {"GDAL_HTTP_LOW_SPEED_LIMIT", "1"}}) {
    if (CPLGetConfigOption(key, nullptr) == nullptr) { CPLSetConfigOption(key, value); }
  }
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
