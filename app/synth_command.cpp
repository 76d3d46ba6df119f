#include "synth_command.hpp"

#include "output_file.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/core/synthetic.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/las_writer.hpp"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace heightgrid::app {
namespace {

/// LAS stores coordinates as 32-bit integers times a scale: millimetres, unless the extent is
/// too wide for them (then the smallest power of ten that fits).
double coordinate_scale(double span)
{
  double scale = 0.001;
  while (span / scale > 2.0e9) { scale *= 10.0; }
  return scale;
}

bool ends_with_laz(std::string const& path) { return lower_extension(path) == ".laz"; }

}  // namespace

void add_synth_shape_options(CLI::App& cmd, synth_params& p, std::string const& extent_option)
{
  cmd.add_option("--points", p.points,
                 "Points to generate (default 1000000, unless the extent and --density give the number)");
  cmd.add_option(extent_option, p.extent,
                 "Extent XMIN YMIN XMAX YMAX (default: a square at the origin sized by --density)")
    ->expected(4);
  cmd.add_option("--density", p.density,
                 "Average points per square unit (default: 10 points per --cell-size cell; skewed 2). With --points "
                 "it sizes the extent, with the extent it gives --points");
  cmd.add_option("--cell-size", p.cell_size,
                 "The resolution you will grid with: skewed ranks these cells, and the default extent is "
                 "whole cells of it (default: --res where the command has one, else 1)");
  cmd.add_option("--zipf-s", p.zipf_s, "skewed: Zipf exponent s, P(rank k) ~ k^-s (0 = even; larger = heavier tail)")
    ->default_val(0.6);
  cmd.add_option("--hotspots", p.hotspots, "clustered: number of Gaussian hotspots")->default_val(8);
  cmd.add_option("--seed", p.seed, "Seed: the same seed and options give the same cloud, point for point")
    ->default_val(1);
}

std::string synth_kinds_help()
{
  return R"(Kinds (every point a pure function of the seed, the options and its index):
  uniform    constant density; z a smooth terrain (hills of +-20 m over kilometres) +-0.5 m
  lidar      airborne survey: 5 flight strips overlapping by 30 % (twice the pulses there), 50 m lots
             of flat-roofed buildings (class 6), trees (2-4 returns per pulse: canopy 5, 4, 3, last
             on ground 2) and open ground (2); 1 pulse in 10^4 is low noise (7); overlap flag set.
             Density varies about six-fold (open ground under one strip vs trees in an overlap)
  skewed     points per cell follow a Zipf law over the cells of --cell-size: rank k gets ~k^-s;
             with the defaults (s 0.6, 2 points per cell) ~92 % of cells hold 0-4 points and the
             heaviest 10^4 (10^8 points) to 10^5 (10^9 points)
  clustered  half the points uniform, half in --hotspots Gaussian hotspots (sigma 0.3-1 % of the
             extent), 200-2200x the background density at their centres)";
}

CLI::App* add_synth_command(CLI::App& app, synth_command_options& o)
{
  auto* cmd = app.add_subcommand("synth", "Write a seeded synthetic point cloud (" + synth_kind_list() + ") to a LAS file");
  cmd->add_option("kind", o.kind, "What to generate: " + synth_kind_list())->required();
  cmd->add_option("-o,--output", o.output, "Output LAS file")->required();
  add_synth_shape_options(*cmd, o.shape, "--extent");
  cmd->add_option("--las-version", o.las_version, "1.4 (point format 6, overlap flag kept) or 1.2 (point format 1, overlap points as class 12)")
    ->default_val("1.4");
  cmd->add_option("--a_srs", o.a_srs, "CRS to record in the file (EPSG:code, WKT, PROJ string); default none");
  cmd->add_flag("--overwrite", o.overwrite, "Replace an existing output file");
  cmd->add_option("--chunk-points", o.chunk_points, "Points generated and written per chunk")
    ->default_val(default_chunk_points);
  cmd->add_option("--threads", o.threads, "CPU threads generating points (default: all cores)");
  cmd->add_flag("--progress", o.progress, "Show progress even when stderr is not a terminal");
  cmd->footer(synth_kinds_help() + R"(

Examples:
  heightgrid synth lidar --points 10000000 -o lidar.las
  heightgrid synth skewed --points 100000000 --cell-size 0.5 --seed 7 -o skewed.las --overwrite
  heightgrid synth clustered --extent 500000 4100000 502000 4102000 --density 10 -o hot.las --a_srs EPSG:32633)");
  return cmd;
}

int run_synth(synth_command_options const& o)
{
  stopwatch clock;
  auto const kind = parse_synth_kind_option(o.kind, "synth");
  HG_EXPECTS(o.las_version == "1.4" || o.las_version == "1.2", error_kind::usage,
          "--las-version: '" + o.las_version + "' is not 1.4 or 1.2");
  HG_EXPECTS(o.chunk_points > 0, error_kind::usage, "--chunk-points must be > 0");
  HG_EXPECTS(o.threads >= 0, error_kind::usage, "--threads must be >= 0");
  HG_EXPECTS(!ends_with_laz(o.output), error_kind::usage,
          o.output + ": heightgrid writes uncompressed LAS only; name the output .las");
  auto const options = make_synth_options(kind, o.shape, std::nullopt, "--extent");
  synthetic_source source(options);
  io::las_write_options w;
  w.version_minor = o.las_version == "1.4" ? 4 : 2;
  w.point_format = o.las_version == "1.4" ? 6 : 1;
  double const span = std::max(options.xmax - options.xmin, options.ymax - options.ymin);
  double const scale = coordinate_scale(span);
  w.scale = {scale, scale, 0.001};
  w.offset = {std::floor(options.xmin), std::floor(options.ymin), 0.0};
  if (!o.a_srs.empty()) { w.crs_wkt = io::crs_from_user_input(o.a_srs); }
  check_output_file(o.output, o.overwrite, "-o");
  if (o.threads > 0) { omp_set_num_threads(o.threads); }

  double const area = (options.xmax - options.xmin) * (options.ymax - options.ymin);
  spdlog::debug("{}: {} points over {} {} {} {} ({:.4g} points per square unit)", source.info().format,
                with_commas(options.points), options.xmin, options.ymin, options.xmax, options.ymax,
                static_cast<double>(options.points) / area);
  temporary_file tmp{std::filesystem::path(o.output)};
  {
    io::las_writer writer(tmp.path().string(), w);
    progress_bar bar(o.progress || stderr_is_terminal());
    point_chunk chunk;
    std::uint64_t done = 0;
    // LAS rounds coordinates to the scale. A point rounded onto the right or bottom edge of the
    // extent would open a column or row of its own (cells own their left and top edges only), so
    // the few points within half a step of those edges are stored one step inside.
    double const x_last = options.xmax - scale;
    double const y_first = options.ymin + scale;
    bool const legacy_format = w.point_format < 6;
    while (source.read(chunk, o.chunk_points)) {
      for (std::size_t i = 0; i < chunk.size(); ++i) {
        chunk.x[i] = std::min(chunk.x[i], x_last);
        chunk.y[i] = std::max(chunk.y[i], y_first);
      }
      // Formats 0-5 have no overlap flag: LAS 1.4 says such points are class 12 there. (Kinds
      // without attributes leave the flag and class columns empty.)
      if (legacy_format && chunk.flags.size() == chunk.size() && chunk.classification.size() == chunk.size()) {
        for (std::size_t i = 0; i < chunk.size(); ++i) {
          if ((chunk.flags[i] & point_flag::overlap) != 0) {
            chunk.flags[i] = static_cast<std::uint8_t>(chunk.flags[i] & ~point_flag::overlap);
            chunk.classification[i] = 12;
          }
        }
      }
      writer.write(chunk);
      done += chunk.size();
      if (options.points > 0) { bar.update(static_cast<double>(done) / static_cast<double>(options.points)); }
    }
    writer.close();
    bar.done();
  }
  tmp.commit();
  double const seconds = clock.seconds();
  spdlog::info("wrote {} {} points (seed {}) to {}: LAS {} point format {}, extent {} {} {} {}, {:.4g} points per "
               "square unit, in {} ({:.1f} M points/s)",
               with_commas(options.points), synth_kind_name(kind), options.seed, o.output, o.las_version, w.point_format,
               options.xmin, options.ymin, options.xmax, options.ymax, static_cast<double>(options.points) / area,
               human_seconds(seconds), static_cast<double>(options.points) / std::max(seconds, 1e-9) / 1e6);
  return 0;
}

}  // namespace heightgrid::app
