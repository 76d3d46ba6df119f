#include "info_command.hpp"

#include "report.hpp"

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/cell_stats.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/las_reader.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>

namespace heightgrid::app {

double suggest_resolution(std::uint64_t points, bounds const& extent, double points_per_cell)
{
  if (points == 0 || extent.empty()) { return 1.0; }
  double const area = (extent.xmax - extent.xmin) * (extent.ymax - extent.ymin);
  if (!(area > 0.0)) { return 1.0; }
  double const raw = std::sqrt(points_per_cell * area / static_cast<double>(points));
  double const decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double step : {1.0, 2.0, 5.0}) {
    if (raw <= step * decade * 1.5) { return step * decade; }
  }
  return 10.0 * decade;
}

CLI::App* add_info_command(CLI::App& app, info_options& o)
{
  auto* cmd = app.add_subcommand("info", "Describe inputs: count, bounds, z range, CRS, format, suggested resolution");
  cmd->add_option("inputs", o.input.inputs, "Input files, directories or globs");
  cmd->add_option("--res", o.res, "Resolution for the points-per-cell distribution (default: the suggested one)");
  add_input_options(*cmd, o.input);
  cmd->footer(R"(Examples:
  heightgrid info data/sample.xyz
  heightgrid info tile.las --res 1)");
  return cmd;
}

namespace {

void print_las_header(std::string const& path)
{
  auto const h = io::read_las_header(path);
  std::printf("  LAS %d.%d, point format %d, record length %u bytes%s\n", h.version_major, h.version_minor,
              h.point_format, static_cast<unsigned>(h.record_length), h.compressed ? ", LAZ compressed" : "");
  if (h.laz) { std::printf("  %s\n", h.laz->describe().c_str()); }
  std::printf("  header point count: %s\n", with_commas(h.point_count).c_str());
  std::printf("  scale: %.10g %.10g %.10g   offset: %.10g %.10g %.10g\n", h.scale[0], h.scale[1], h.scale[2],
              h.offset[0], h.offset[1], h.offset[2]);
  std::printf("  header bounds (not trusted): x %.3f .. %.3f, y %.3f .. %.3f, z %.3f .. %.3f\n", h.header_min[0],
              h.header_max[0], h.header_min[1], h.header_max[1], h.header_min[2], h.header_max[2]);
  if (!h.system_id.empty() || !h.generating_software.empty()) {
    std::printf("  system: '%s', software: '%s'\n", h.system_id.c_str(), h.generating_software.c_str());
  }
  std::printf("  VLRs: %zu\n", h.vlrs.size());
  for (auto const& v : h.vlrs) {
    std::printf("    %s%s %u, %s bytes: %s\n", v.extended ? "EVLR " : "", v.user_id.c_str(),
                static_cast<unsigned>(v.record_id), with_commas(v.length).c_str(), v.description.c_str());
  }
  std::printf("  CRS record: %s\n", h.crs_source.c_str());
  if (!h.vertical_units.empty()) { std::printf("  vertical units: %s\n", h.vertical_units.c_str()); }
}

}  // namespace

int run_info(info_options const& o)
{
  auto const filter = make_filter(o.input);
  // LAS headers first: they are worth showing even for a file whose points cannot be read.
  if (o.input.synth.empty()) {
    for (auto const& path : expand_inputs(o.input.inputs)) {
      if (looks_like_las(path)) {
        std::printf("%s:\n", path.c_str());
        print_las_header(path);
      }
    }
  }
  std::vector<std::string> paths;
  auto sources = open_inputs(o.input, paths);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    auto const& info = sources[i]->info();
    std::printf("%s: %s\n", info.path.c_str(), info.format.c_str());
  }
  auto loaded = load_points(sources, filter, o.input.input.chunk_points, false);
  auto const& f = loaded.filtered;
  std::printf("points: %s read, %s kept", with_commas(f.points_in).c_str(), with_commas(loaded.points.size()).c_str());
  if (f.removed() > 0) {
    std::printf(" (%s non-finite, %s by class, %s withheld, %s by return, %s by z)", with_commas(f.non_finite).c_str(),
                with_commas(f.by_class).c_str(), with_commas(f.withheld).c_str(), with_commas(f.by_return).c_str(),
                with_commas(f.by_z).c_str());
  }
  std::printf("\n");
  if (loaded.points.empty()) {
    std::printf("no points: nothing to grid\n");
    return 0;
  }
  auto const& e = loaded.extent;
  std::printf("bounds: x %.6f .. %.6f, y %.6f .. %.6f (from the points)\n", e.xmin, e.xmax, e.ymin, e.ymax);
  std::printf("z range: %.6f .. %.6f\n", loaded.z_min, loaded.z_max);
  std::printf("CRS: %s\n", loaded.crs_wkt.empty() ? "none" : io::crs_name(loaded.crs_wkt).c_str());
  for (auto const& s : loaded.sources) {
    if (!s.vertical_units.empty()) {
      std::printf("vertical units: %s\n", s.vertical_units.c_str());
      break;
    }
  }
  double const suggested = suggest_resolution(loaded.points.size(), e);
  double const area = (e.xmax - e.xmin) * (e.ymax - e.ymin);
  if (area > 0.0) { std::printf("density: %.4g points per square unit\n", static_cast<double>(loaded.points.size()) / area); }
  std::printf("suggested --res: %g (about 8 points per cell)\n", suggested);

  double const res = o.res > 0.0 ? o.res : suggested;
  auto const grid = grid_from_bounds(e, res, res);
  binning_stats stats;
  auto const csr = bin_points_cpu(grid, loaded.points, stats);
  auto const s = describe_cell_counts(csr.offsets);
  std::printf("at --res %g: %u x %u = %s cells, %s non-empty (%.1f%%)\n", res, grid.cols, grid.rows,
              with_commas(s.cells).c_str(), with_commas(s.non_empty_cells).c_str(),
              100.0 * static_cast<double>(s.non_empty_cells) / static_cast<double>(s.cells));
  std::printf("points per cell: mean %.2f (%.2f over non-empty), max %s, p50 %s, p90 %s, p99 %s, CV %.2f, Gini %.3f\n",
              s.mean, s.mean_non_empty, with_commas(s.max_count).c_str(), with_commas(s.p50).c_str(),
              with_commas(s.p90).c_str(), with_commas(s.p99).c_str(), s.cv, s.gini);
  std::printf("one-thread-per-cell lane efficiency (predicted): %.1f%%\n", 100.0 * s.thread_lane_efficiency);
  std::printf("histogram (points per cell: cells):\n");
  for (std::size_t k = 0; k < s.histogram.size(); ++k) {
    if (s.histogram[k] == 0) { continue; }
    auto const lo = histogram_bin_low(k), hi = histogram_bin_high(k);
    std::string const label = lo == hi ? with_commas(lo) : with_commas(lo) + "-" + with_commas(hi);
    std::printf("  %15s: %s\n", label.c_str(), with_commas(s.histogram[k]).c_str());
  }
  return 0;
}

}  // namespace heightgrid::app
