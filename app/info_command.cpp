#include "info_command.hpp"

#include "pipeline/scheduler.hpp"
#include "pipeline/sinks.hpp"
#include "pipeline/sources.hpp"
#include "report.hpp"

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/cell_stats.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/quote.hpp"
#include "heightgrid/core/host_grid.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/ept.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "heightgrid/io/remote.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <exception>

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <optional>
#include <map>
#include <vector>

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
  cmd->add_option("inputs", o.in.inputs, "Input files, directories or globs");
  cmd->add_option("--res", o.res, "Resolution for the points-per-cell distribution (default: the suggested one)");
  cmd->add_option("--threads", o.threads, "Threads reading (default: all cores)");
  cmd->add_flag("--json", o.json, "Print one JSON document (per file, and the catalogue of several) instead of text");
  cmd->add_flag("--headers-only", o.headers_only,
                "Summarise the inputs from their headers only (a catalogue of thousands of tiles in seconds)");
  add_input_options(*cmd, o.in);
  cmd->footer(R"(Examples:
  heightgrid info data/sample.xyz
  heightgrid info tile.las --res 1
  heightgrid info tiles/ --headers-only   # a catalogue: files, points, extent, CRS, density, odd headers
  heightgrid info tiles/ --headers-only --json | jq .catalogue.points)");
  return cmd;
}

namespace {

using json = nlohmann::ordered_json;

/// The text report: printf to stdout, or nothing when --json prints the document instead.
bool text_wanted = true;

__attribute__((format(printf, 1, 2))) void say(char const* format, ...)
{
  if (!text_wanted) { return; }
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);  // NOLINT: the format is checked at each call
  va_end(args);
}

json bounds_json(bounds const& b)
{
  if (b.empty()) { return nullptr; }
  return json{{"xmin", b.xmin}, {"ymin", b.ymin}, {"xmax", b.xmax}, {"ymax", b.ymax}};
}

json crs_json(std::string const& wkt)
{
  if (wkt.empty()) { return nullptr; }
  return json{{"name", io::crs_name(wkt)}, {"wkt", wkt}};
}

json las_header_json(io::las_header_info const& h)
{
  json vlrs = json::array();
  for (auto const& v : h.vlrs) {
    vlrs.push_back({{"user_id", printable(v.user_id)}, {"record_id", v.record_id}, {"length", v.length},
                    {"description", printable(v.description)}, {"extended", v.extended}});
  }
  return {{"version", std::to_string(h.version_major) + "." + std::to_string(h.version_minor)},
          {"point_format", h.point_format}, {"record_length", h.record_length}, {"compressed", h.compressed},
          {"point_count", h.point_count}, {"scale", h.scale}, {"offset", h.offset},
          {"header_min", h.header_min}, {"header_max", h.header_max}, {"system_id", printable(h.system_id)},
          {"generating_software", printable(h.generating_software)}, {"vlrs", vlrs},
          {"crs_record", h.crs_source}, {"vertical_units", h.vertical_units}};
}

void print_las_header(io::las_header_info const& h)
{
  say("  LAS %d.%d, point format %d, record length %u bytes%s\n", h.version_major, h.version_minor,
              h.point_format, static_cast<unsigned>(h.record_length), h.compressed ? ", LAZ compressed" : "");
  if (h.laz) { say("  %s\n", h.laz->describe().c_str()); }
  say("  header point count: %s\n", with_commas(h.point_count).c_str());
  say("  scale: %.10g %.10g %.10g   offset: %.10g %.10g %.10g\n", h.scale[0], h.scale[1], h.scale[2],
              h.offset[0], h.offset[1], h.offset[2]);
  say("  header bounds (not trusted): x %.3f .. %.3f, y %.3f .. %.3f, z %.3f .. %.3f\n", h.header_min[0],
              h.header_max[0], h.header_min[1], h.header_max[1], h.header_min[2], h.header_max[2]);
  if (!h.system_id.empty() || !h.generating_software.empty()) {
    say("  system: '%s', software: '%s'\n", h.system_id.c_str(), h.generating_software.c_str());
  }
  say("  VLRs: %zu\n", h.vlrs.size());
  for (auto const& v : h.vlrs) {
    say("    %s%s %u, %s bytes: %s\n", v.extended ? "EVLR " : "", v.user_id.c_str(),
                static_cast<unsigned>(v.record_id), with_commas(v.length).c_str(), v.description.c_str());
  }
  say("  CRS record: %s\n", h.crs_source.c_str());
  if (!h.vertical_units.empty()) { say("  vertical units: %s\n", h.vertical_units.c_str()); }
  if (io::is_remote(h.path)) {
    say("  remote: read through GDAL (%s), %s bytes asked of it so far\n", io::remote_path(h.path)->c_str(),
        with_commas(io::remote_bytes_requested()).c_str());
  }
  std::optional<io::copc_summary> copc;
  try {
    copc = io::read_copc_summary(h.path);
  } catch (error const& e) {
    say("  COPC: unusable, the file reads as plain LAZ: %s\n", e.what());
  }
  if (copc) {
    say("  COPC: root cube centre (%.3f, %.3f, %.3f), half side %.3f; root spacing %.6g (--copc-level auto reads "
        "down to the first level whose spacing is at most the cell)\n",
        copc->center[0], copc->center[1], copc->center[2], copc->halfsize, copc->spacing);
    for (auto const& l : copc->levels) {
      say("    level %d: spacing %.6g, %s nodes, %s points, %s bytes\n", l.depth, l.spacing,
          with_commas(l.nodes).c_str(), with_commas(l.points).c_str(), with_commas(l.bytes).c_str());
    }
  }
}

}  // namespace

namespace {

/// A catalogue of several inputs, from their headers: files and formats, points, extent, CRS,
/// density, and the headers that look wrong (mixed CRSs are named).
json print_catalogue(opened_sources const& opened)
{
  std::map<std::string, std::size_t> formats;
  std::uint64_t points = 0;
  std::size_t unknown_count = 0;
  bounds extent;
  std::string crs, crs_path;
  std::vector<std::string> odd;
  std::string mixed;
  for (std::size_t i = 0; i < opened.sources.size(); ++i) {
    auto const& s = *opened.sources[i];
    auto const& info = s.info();
    ++formats[info.format];
    if (info.point_count) {
      points += *info.point_count;
      if (*info.point_count == 0) { odd.push_back(info.path + ": the header says 0 points"); }
    } else {
      ++unknown_count;
    }
    auto const d = s.declared_bounds();
    if (d && !d->empty()) {
      extent.extend(*d);
    } else if (info.point_count) {
      odd.push_back(info.path + ": no usable bounds in the header");
    }
    for (auto const& note : info.notes) { odd.push_back(printable(note)); }
    if (!info.crs_wkt.empty()) {
      if (crs.empty()) {
        crs = info.crs_wkt;
        crs_path = info.path;
      } else if (mixed.empty() && !io::same_crs(crs, info.crs_wkt)) {
        mixed = info.path + " (" + io::crs_name(info.crs_wkt) + ") vs " + crs_path + " (" + io::crs_name(crs) + ")";
      }
    }
  }
  // Headers far from the others: bounds more than 100 times the median file's size away from the
  // catalogue's median centre (a unit or offset mistake in one tile).
  std::vector<double> cx, cy, size;
  for (auto const& src : opened.sources) {
    if (auto const d = src->declared_bounds(); d && !d->empty()) {
      cx.push_back(0.5 * (d->xmin + d->xmax));
      cy.push_back(0.5 * (d->ymin + d->ymax));
      size.push_back(std::max(d->xmax - d->xmin, d->ymax - d->ymin));
    }
  }
  if (cx.size() >= 3) {
    auto median = [](std::vector<double> v) {
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    double const mx = median(cx), my = median(cy), ms = std::max(median(size), 1e-9);
    for (auto const& src : opened.sources) {
      if (auto const d = src->declared_bounds(); d && !d->empty()) {
        double const dist = std::max(std::abs(0.5 * (d->xmin + d->xmax) - mx), std::abs(0.5 * (d->ymin + d->ymax) - my));
        if (dist > 100.0 * ms * std::sqrt(static_cast<double>(cx.size()))) {
          odd.push_back(src->info().path + ": its header bounds lie far from the other files' (a wrong offset or unit?)");
        }
      }
    }
  }
  say("catalogue: %zu files", opened.sources.size());
  for (auto const& [f, n] : formats) { say(", %zu %s", n, f.c_str()); }
  say("\n");
  say("points (headers): %s%s\n", with_commas(points).c_str(),
              unknown_count > 0 ? (" (+ " + std::to_string(unknown_count) + " files without a count)").c_str() : "");
  if (!extent.empty()) {
    double const area = (extent.xmax - extent.xmin) * (extent.ymax - extent.ymin);
    say("extent (headers): x %.3f .. %.3f, y %.3f .. %.3f\n", extent.xmin, extent.xmax, extent.ymin, extent.ymax);
    if (area > 0.0) { say("density (headers): %.4g points per square unit over the extent\n", static_cast<double>(points) / area); }
  }
  say("CRS: %s\n", !mixed.empty() ? ("MIXED: " + mixed).c_str() : crs.empty() ? "none" : io::crs_name(crs).c_str());
  say("headers that look wrong: %zu\n", odd.size());
  for (auto const& line : odd) { say("  %s\n", line.c_str()); }
  json files = json::array();
  for (auto const& src : opened.sources) {
    auto const& info = src->info();
    auto const d = src->declared_bounds();
    files.push_back({{"path", info.path}, {"format", info.format},
                     {"point_count", info.point_count ? json(*info.point_count) : json(nullptr)},
                     {"bounds", d ? bounds_json(*d) : json(nullptr)}, {"crs", crs_json(info.crs_wkt)}});
  }
  double const area = extent.empty() ? 0.0 : (extent.xmax - extent.xmin) * (extent.ymax - extent.ymin);
  return {{"files", opened.sources.size()}, {"formats", formats}, {"points", points},
          {"files_without_count", unknown_count}, {"extent", bounds_json(extent)},
          {"density", area > 0.0 ? json(static_cast<double>(points) / area) : json(nullptr)},
          {"crs", mixed.empty() ? crs_json(crs) : json(nullptr)},
          {"mixed_crs", mixed.empty() ? json(nullptr) : json(mixed)}, {"odd_headers", odd}, {"inputs", files}};
}

}  // namespace

int run_info(info_options const& o)
{
  auto const filter = make_filter(o.in);
  filter_rules const rules(filter);
  unsigned const threads = apply_threads(o.threads);
  HG_EXPECTS(o.res >= 0.0 && std::isfinite(o.res), error_kind::usage, "--res must be a positive cell size");
  auto const paths = input_paths(o.in);
  text_wanted = !o.json;
  for (auto const& arg : o.in.inputs) {
    if (!io::is_ept(arg)) { continue; }
    auto const ept = io::select_ept_nodes(arg, {});
    say("%s: EPT of %s data, cube side %.6g, span %.6g, %s nodes, %s points (--copc-level auto reads down to the first "
        "level whose spacing is at most the cell)\n",
        arg.c_str(), ept.data_type.c_str(), ept.side, ept.span, with_commas(ept.report.nodes).c_str(), with_commas(ept.report.points).c_str());
    for (auto const& l : ept.levels) {
      say("    level %d: spacing %.6g, %s nodes, %s points\n", l.depth, l.spacing, with_commas(l.nodes).c_str(),
          with_commas(l.points).c_str());
    }
  }
  json doc;
  // Printed however run_info ends: a catalogue's unreadable files end it early.
  struct print_at_exit {
    json const& doc;
    bool on;
    ~print_at_exit()
    {
      if (on && !doc.is_null() && std::uncaught_exceptions() == 0) { std::printf("%s\n", doc.dump(2, ' ', false, json::error_handler_t::replace).c_str()); }
    }
  } const printer{doc, o.json};
  if (o.headers_only || paths.size() > 1) {
    auto const catalogue = open_sources(o.in, paths, std::nullopt, threads, true);
    doc["catalogue"] = print_catalogue(catalogue);
    json unreadable = json::array();
    for (auto const& [path, why] : catalogue.failed) {
      say("  unreadable: %s\n", printable(why).c_str());
      unreadable.push_back({{"path", path}, {"error", printable(why)}});
    }
    doc["catalogue"]["unreadable"] = unreadable;
    if (o.headers_only) { return catalogue.failed.empty() ? 0 : exit_code(error_kind::input); }
  }
  // LAS headers first: they are worth showing even for a file whose points cannot be read.
  json las_headers = json::object();
  for (auto const& path : paths) {
    if (looks_like_las(path)) {
      say("%s:\n", path.c_str());
      auto const h = io::read_las_header(path);
      print_las_header(h);
      las_headers[path] = las_header_json(h);
    }
  }
  auto const opened = open_sources(o.in, paths, o.res > 0.0 ? std::optional<double>(o.res) : std::nullopt, threads);
  json files = json::array();
  for (auto const& s : opened.sources) {
    auto const& info = s->info();
    say("%s: %s\n", info.path.c_str(), info.format.c_str());
    for (auto const& note : info.notes) { spdlog::warn("{}", printable(note)); }
    json file{{"path", info.path}, {"format", info.format},
              {"header_point_count", info.point_count ? json(*info.point_count) : json(nullptr)},
              {"crs", crs_json(info.crs_wkt)}};
    if (las_headers.contains(info.path)) { file["las"] = las_headers[info.path]; }
    files.push_back(std::move(file));
  }
  doc["files"] = files;
  auto const sources = source_pointers(opened.sources);
  std::size_t batch_points = 1;
  for (auto* s : sources) { batch_points = std::max(batch_points, s->max_part_points()); }

  // First pass: bounds, z range and filter statistics, in bounded memory.
  bounds_sink bounds(threads, batch_points);
  auto const read = read_parts(sources, rules, {threads, false}, bounds);
  auto const& f = read.total.filtered;
  std::uint64_t const kept = f.points_in - f.removed();
  say("points: %s read, %s kept", with_commas(f.points_in).c_str(), with_commas(kept).c_str());
  if (f.removed() > 0) {
    say(" (%s non-finite, %s by class, %s withheld, %s by return, %s by z)", with_commas(f.non_finite).c_str(),
                with_commas(f.by_class).c_str(), with_commas(f.withheld).c_str(), with_commas(f.by_return).c_str(),
                with_commas(f.by_z).c_str());
  }
  say("\n");
  doc["points"] = {{"read", f.points_in},
                   {"kept", kept},
                   {"filtered", {{"non_finite", f.non_finite}, {"by_class", f.by_class}, {"withheld", f.withheld},
                                 {"by_return", f.by_return}, {"by_z", f.by_z}}}};
  if (kept == 0) {
    say("no points: nothing to grid\n");
    return 0;
  }
  auto const& e = read.total.extent;
  say("bounds: x %.6f .. %.6f, y %.6f .. %.6f (from the points)\n", e.xmin, e.xmax, e.ymin, e.ymax);
  say("z range: %.6f .. %.6f\n", read.total.z_min, read.total.z_max);
  std::string crs;
  for (auto* s : sources) {
    if (crs.empty()) { crs = s->info().crs_wkt; }
  }
  say("CRS: %s\n", crs.empty() ? "none" : io::crs_name(crs).c_str());
  for (auto* s : sources) {
    if (!s->info().vertical_units.empty()) {
      say("vertical units: %s\n", s->info().vertical_units.c_str());
      break;
    }
  }
  double const suggested = suggest_resolution(kept, e);
  double const area = (e.xmax - e.xmin) * (e.ymax - e.ymin);
  if (area > 0.0) { say("density: %.4g points per square unit\n", static_cast<double>(kept) / area); }
  say("suggested --res: %g (about 8 points per cell)\n", suggested);
  doc["bounds"] = bounds_json(e);
  doc["z_range"] = {read.total.z_min, read.total.z_max};
  doc["crs"] = crs_json(crs);
  doc["density"] = area > 0.0 ? json(static_cast<double>(kept) / area) : json(nullptr);
  doc["suggested_res"] = suggested;

  // Second pass: points per cell at the resolution, counted into a host grid.
  double const res = o.res > 0.0 ? o.res : suggested;
  auto const grid = grid_from_bounds(e, res, res);
  metric_request counts;
  counts.count = true;
  host_grid cells(grid_band::whole(grid), counts);
  grid_sink sink(bin_route::cpu, threads, batch_points, &cells, nullptr, {});
  (void)read_parts(sources, rules, {threads, false}, sink);
  auto const window = cells.finalize_rows(0, grid.rows, grid.cols, counts, default_nodata);
  std::vector<point_offset> offsets(window.count.size() + 1, 0);
  for (std::size_t c = 0; c < window.count.size(); ++c) { offsets[c + 1] = offsets[c] + window.count[c]; }
  auto const s = describe_cell_counts(offsets);
  say("at --res %g: %u x %u = %s cells, %s non-empty (%.1f%%)\n", res, grid.cols, grid.rows,
              with_commas(s.cells).c_str(), with_commas(s.non_empty_cells).c_str(),
              100.0 * static_cast<double>(s.non_empty_cells) / static_cast<double>(s.cells));
  say("points per cell: mean %.2f (%.2f over non-empty), max %s, p50 %s, p90 %s, p99 %s, CV %.2f, Gini %.3f\n",
              s.mean, s.mean_non_empty, with_commas(s.max_count).c_str(), with_commas(s.p50).c_str(),
              with_commas(s.p90).c_str(), with_commas(s.p99).c_str(), s.cv, s.gini);
  say("one-thread-per-cell lane efficiency (predicted): %.1f%%\n", 100.0 * s.thread_lane_efficiency);
  say("histogram (points per cell: cells):\n");
  json histogram = json::array();
  for (std::size_t k = 0; k < s.histogram.size(); ++k) {
    if (s.histogram[k] == 0) { continue; }
    auto const lo = histogram_bin_low(k), hi = histogram_bin_high(k);
    std::string const label = lo == hi ? with_commas(lo) : with_commas(lo) + "-" + with_commas(hi);
    say("  %15s: %s\n", label.c_str(), with_commas(s.histogram[k]).c_str());
    histogram.push_back({{"points_min", lo}, {"points_max", hi}, {"cells", s.histogram[k]}});
  }
  auto const gt = grid.geotransform();
  doc["grid"] = {{"res", res},
                 {"size", {grid.cols, grid.rows}},
                 {"geotransform", gt},
                 {"cells", s.cells},
                 {"non_empty_cells", s.non_empty_cells},
                 {"points_per_cell",
                  {{"mean", s.mean}, {"mean_non_empty", s.mean_non_empty}, {"max", s.max_count}, {"p50", s.p50},
                   {"p90", s.p90}, {"p99", s.p99}, {"cv", s.cv}, {"gini", s.gini}}},
                 {"histogram", histogram}};
  return 0;
}

}  // namespace heightgrid::app
