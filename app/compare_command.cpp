#include "compare_command.hpp"

#include "bandwidth.hpp"
#include "compare_plot.hpp"
#include "compare_report.hpp"
#include "output_file.hpp"
#include "pipeline/scheduler.hpp"
#include "pipeline/sinks.hpp"
#include "pipeline/sources.hpp"
#include "report.hpp"
#include "synth_command.hpp"

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/cell_stats.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/result_compare.hpp"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/grid_gpu.hpp"
#include "heightgrid/kernels/order_stats.hpp"
#include "heightgrid/kernels/hybrid_plan.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"

#include <nlohmann/json.hpp>
#include <omp.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <utility>
#include <sstream>

namespace heightgrid::app {
namespace {

using json = nlohmann::ordered_json;
using compare_report::bin_label;
using compare_report::imbalance_text;
using compare_report::median;
using compare_report::mode_result;
using compare_report::optional_json;
using compare_report::phase_times;
using compare_report::phases_text;
using compare_report::plot_title;
using compare_report::replot;
using compare_report::stats_json;
using compare_report::table_text;

constexpr char const* cpu_mode_name = "cpu";

/// One entry of --modes: a GPU reduce mode, or the CPU backend (gpu empty).
struct mode_entry {
  std::string name;
  std::optional<reduce_mode> gpu;
  std::optional<order_sort> order;  ///< a GPU sort for order statistics (percentiles), not a reduce mode
};

/// A mode listed but not run, and why.
struct skipped_mode {
  std::string name;
  std::string reason;
};

std::string known_modes()
{
  std::string s;
  for (auto m : all_modes()) { s += std::string(mode_name(m)) + ", "; }
  return s + cpu_mode_name;
}

/// "thread,warp,cpu" -> the modes in that order. Empty: every GPU mode, then cpu.
std::vector<mode_entry> parse_modes(std::string const& list)
{
  std::vector<mode_entry> out;
  if (list.empty()) {
    for (auto m : all_modes()) { out.push_back({std::string(mode_name(m)), m, std::nullopt}); }
    out.push_back({cpu_mode_name, std::nullopt, std::nullopt});
    return out;
  }
  std::istringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    HG_EXPECTS(!item.empty(), error_kind::usage, "--modes: empty mode name in '" + list + "'");
    mode_entry c{item, std::nullopt, std::nullopt};
    if (auto const sort = parse_in(order_sorts, item)) {
      c.order = *sort;
    } else if (item != cpu_mode_name) {
      auto const m = parse_mode(item);
      HG_EXPECTS(m.has_value(), error_kind::usage,
              "--modes: unknown mode '" + item + "' (expected a comma list of " + known_modes() + ")");
      c.gpu = *m;
    }
    HG_EXPECTS(std::none_of(out.begin(), out.end(), [&](mode_entry const& o) { return o.name == item; }),
            error_kind::usage, "--modes: '" + item + "' is listed twice");
    out.push_back(c);
  }
  HG_EXPECTS(!out.empty(), error_kind::usage, "--modes: no mode given");
  return out;
}

}  // namespace

CLI::App* add_compare_command(CLI::App& app, compare_options& o)
{
  auto* cmd = app.add_subcommand(
    "compare", "Reduce one input's grid with every mode (GPU modes and the CPU), check that they agree, and "
               "time them next to the input's points-per-cell imbalance");
  cmd->add_option("inputs", o.in.inputs, "Input files, directories or globs (or use --synth KIND)");
  add_geometry_options(*cmd, o.geometry);
  add_metrics_option(*cmd, o.metrics,
                     "Bands every mode computes (percentiles, median and prange: by the sort-segmented and "
                     "sort-radix GPU sorts and cpu; the reduce modes do the rest)");
  add_prange_option(*cmd, o.prange);
  cmd->add_option("--modes", o.modes,
                  "Comma list of modes to run, the first being the reference the others must match "
                  "(default: every GPU mode, then cpu: " +
                    known_modes() + ")");
  cmd->add_option("--repeat", o.repeat, "Timed runs per mode, after one warm-up run")->default_val(10);
  cmd->add_flag("--no-gate", o.no_gate,
                "Time GPU modes that reuse the CSR without holding the stream until each run is enqueued, "
                "so that the host's launch latency between the run's operations is counted too");
  cmd->add_option("--json", o.json, "Also write everything measured to this JSON file");
  cmd->add_option("--plot", o.plot, "Also draw the time per mode and the points-per-cell histogram to this PNG (gnuplot)");
  cmd->add_flag("--overwrite", o.overwrite, "Replace existing --json / --plot files");
  cmd->add_flag("--list-modes", o.list_modes,
                "Run nothing: print the GPU reduce modes, one name a line (what --modes and --mode take, less "
                "cpu and auto), for scripts");
  cmd->add_option("--replot", o.replot,
                  "Run nothing: draw --plot from the --json of an earlier run (e.g. one on a machine without gnuplot)");
  cmd->add_option("--threads", o.threads, "CPU threads (default: all cores)");
  add_input_options(*cmd, o.in);
  cmd->footer(synth_kinds_help() + R"(

GPU modes are timed with CUDA events (kernel_ms: all of a mode's work), cpu with the wall clock.
GB/s = the fewest bytes a reduce must move (8-byte offsets and z read once, 4 bytes per cell per
band written once) / median time; "% read BW" compares it with a streaming read measured on the
same device in the same run. Without a usable GPU only cpu runs (and the skip is reported).

Examples:
  heightgrid compare --synth skewed --points 100000000 --res 1 --repeat 10 --json skewed.json --plot skewed.png
  heightgrid compare --synth lidar --points 10000000 --res 1 --modes thread,warp,cpu --metrics range,count
  heightgrid compare tile.las --res 0.5 --modes cpu --repeat 3
  heightgrid compare --replot skewed.json --plot skewed.png)");
  return cmd;
}

int run_compare(compare_options const& o)
{
  if (o.list_modes) {
    for (auto const& row : reduce_modes) { std::cout << row.name << '\n'; }
    return 0;
  }
  if (!o.replot.empty()) { return replot(o); }
  // --- every option, checked together before any work
  auto const [xres, yres] = cell_size(o.geometry);
  auto const [metrics, request] = parse_metrics(o.metrics, o.prange);
  auto const filter = make_filter(o.in);
  auto modes = parse_modes(o.modes);
  // Order statistics: the reduce modes compute the other bands, the GPU sorts and cpu these.
  HG_EXPECTS(!request.density, error_kind::usage,
             "--metrics density: compare measures the reductions; grid writes density (count / cell area)");
  HG_EXPECTS(!request.needs_tags(), error_kind::usage,
             "--metrics count:CLASSES, first, last: compare measures the reductions of z; grid writes these counts");
  metric_request reduce_request = request;
  reduce_request.percentiles.clear();
  reduce_request.prange = false;
  reduce_request.shapes.clear();
  metric_request order_request{};
  order_request.percentiles = request.percentiles;
  order_request.prange = request.prange;
  order_request.shapes = request.shapes;
  order_request.prange_lo = request.prange_lo;
  order_request.prange_hi = request.prange_hi;
  bool const reduce_bands = request.range || request.min || request.max || request.count || request.mean ||
                            request.stddev;
  if (request.needs_order() && o.modes.empty()) {
    if (!reduce_bands) {  // only order statistics: the reduce modes have nothing to do
      modes.erase(std::remove_if(modes.begin(), modes.end(), [](mode_entry const& m) { return m.gpu.has_value(); }),
                  modes.end());
    }
    modes.insert(modes.begin(), {{std::string(name_in(order_sorts, order_sort::segmented)), std::nullopt, order_sort::segmented},
                                 {std::string(name_in(order_sorts, order_sort::radix)), std::nullopt, order_sort::radix}});
  }
  for (auto const& m : modes) {
    HG_EXPECTS(!m.order || request.needs_order(), error_kind::usage,
            "--modes " + m.name + " sorts for percentiles, median, prange or shape metrics, which --metrics does not ask for");
  }
  HG_EXPECTS(o.repeat >= 1, error_kind::usage, "--repeat must be >= 1");
  csr_method const csr = default_csr_method;
  unsigned const threads = apply_threads(o.threads);
  auto const fixed_grid = app::fixed_grid(o.geometry);
  HG_EXPECTS(o.json.empty() || o.json != o.plot, error_kind::usage, "--json and --plot name the same file");
  if (!o.json.empty()) { check_output_file(o.json, o.overwrite, "--json"); }
  if (!o.plot.empty()) { check_output_file(o.plot, o.overwrite, "--plot"); }
  std::optional<double> const cell_hint = xres == yres ? std::optional<double>(xres) : std::nullopt;
  auto const paths = input_paths(o.in);

  // --- which modes can run here
  std::string why_not;
  bool const wants_gpu = std::any_of(modes.begin(), modes.end(),
                                     [](mode_entry const& m) { return m.gpu.has_value() || m.order.has_value(); });
  bool const use_gpu = wants_gpu && gpu_available(&why_not);
  std::vector<mode_entry> runnable;
  std::vector<skipped_mode> skipped;
  std::string no_gpu_list;
  for (auto const& m : modes) {
    if (m.gpu && (!mode_supports(*m.gpu, reduce_request) || !reduce_bands)) {
      // A mode named on purpose must do what was asked; one from the default list steps aside.
      HG_EXPECTS(o.modes.empty(), error_kind::usage,
              "--modes " + m.name + " cannot produce every band of --metrics " + o.metrics);
      skipped.push_back({m.name, "cannot produce every band of --metrics " + o.metrics});
    } else if ((m.gpu || m.order) && !use_gpu) {
      skipped.push_back({m.name, "no usable GPU: " + why_not});
      no_gpu_list += (no_gpu_list.empty() ? "" : ",") + m.name;
    } else {
      runnable.push_back(m);
    }
  }
  if (!no_gpu_list.empty()) { spdlog::warn("GPU modes {} skipped: no usable GPU ({})", no_gpu_list, why_not); }
  HG_EXPECTS(!runnable.empty(), error_kind::device,
          "--modes " + o.modes + ": no mode can run without a usable GPU (" + why_not + "); add cpu");
  bool const needs_points = std::any_of(runnable.begin(), runnable.end(), [](mode_entry const& m) {
    return m.gpu && !mode_reduces_csr(*m.gpu);
  });

  // --- read + filter: every point, in input order (the CSR keeps it, and with it every sum's order)
  auto const opened = open_sources(o.in, paths, cell_hint, threads);
  auto const& synth = opened.synth;
  auto const sources = source_pointers(opened.sources);
  std::size_t batch_points = 1;
  for (auto* s : sources) { batch_points = std::max(batch_points, s->max_part_points()); }
  phase_times phases;
  stopwatch read_clock;
  struct {
    point_chunk points;
    part_result read;
  } loaded;
  {
    collect_sink sink(threads, batch_points, loaded.points);
    loaded.read = read_parts(sources, filter_rules(filter), {threads, true}, sink).total;
  }
  phases.read_ms = read_clock.seconds() * 1e3;
  if (loaded.read.filtered.non_finite > 0) {
    spdlog::warn("skipped {} points with NaN or infinite coordinates", with_commas(loaded.read.filtered.non_finite));
  }
  HG_EXPECTS(!loaded.points.empty() || fixed_grid.has_value(), error_kind::input,
          (paths.empty() ? std::string("input") : paths.front()) + ": no points left to compare on");
  grid_spec const grid = fixed_grid ? *fixed_grid : grid_from_bounds(loaded.read.extent, xres, yres, false, cell_edge_rule(o.geometry));
  std::uint64_t const points_kept = loaded.points.size();

  // --- the CSR, once
  binning_stats binned;
  csr_grid host_csr;
  std::optional<device_csr> dev;
  if (use_gpu) {
    gpu_phase_times t;
    dev.emplace(device_csr::from_points(grid, loaded.points, csr, binned, t, nullptr));
    phases.h2d_ms = t.h2d_ms;
    phases.cell_ids_ms = t.cell_ids_ms;
    phases.csr_ms = t.csr_ms;
    if (!needs_points) { loaded.points = point_chunk{}; }
    stopwatch d2h;
    host_csr = dev->to_host(nullptr);
    phases.d2h_csr_ms = d2h.seconds() * 1e3;
  } else {
    stopwatch bin_clock;
    host_csr = bin_points_cpu(grid, loaded.points, binned);
    phases.csr_cpu_ms = bin_clock.seconds() * 1e3;
    loaded.points = point_chunk{};  // no GPU: no mode reduces the points themselves
  }
  stopwatch stats_clock;
  auto const stats = describe_cell_counts(host_csr.offsets);
  phases.stats_ms = stats_clock.seconds() * 1e3;
  std::optional<read_bandwidth> peak;
  std::optional<gpu_device_info> device;
  if (use_gpu) {
    device = query_device();
    peak = measure_device_read_bandwidth();
  }
  double const bytes = reduce_bytes(grid.num_cells(), binned.points_binned, request);
  double const point_bytes = point_reduce_bytes(grid.num_cells(), points_kept, request);
  float const nodata = default_nodata;

  // --- every mode: a warm-up, then the timed runs; bands checked against the first mode's
  std::vector<mode_result> results;
  std::optional<cell_results> reference, order_reference;
  std::string reference_name, order_reference_name;
  std::string mismatch;
  for (auto const& m : runnable) {
    mode_result r;
    r.name = m.name;
    r.gpu = m.gpu.has_value() || m.order.has_value();
    r.uses_csr = !m.gpu || mode_reduces_csr(*m.gpu);
    r.bytes = r.uses_csr ? bytes : point_bytes;
    cell_results bands;
    if (m.order) {
      // The sort and the per-cell selection over the CSR already on the device.
      (void)order_stats_of_csr(*dev, order_request, nodata, *m.order);
      for (int k = 0; k < o.repeat; ++k) {
        auto run = order_stats_of_csr(*dev, order_request, nodata, *m.order);
        r.ms.push_back(run.kernel_ms);
        if (k + 1 == o.repeat) { bands = std::move(run.bands); }
      }
    } else if (m.gpu && !r.uses_csr) {
      // No CSR to reuse: the whole device pipeline runs each time (points uploaded again), and
      // its reduce phase is what is timed.
      (void)grid_points_gpu(grid, loaded.points, reduce_request, nodata, *m.gpu, csr, nullptr);
      for (int k = 0; k < o.repeat; ++k) {
        auto run = grid_points_gpu(grid, loaded.points, reduce_request, nodata, *m.gpu, csr, nullptr);
        r.ms.push_back(run.times.reduce_ms);
        r.d2h_ms = run.times.d2h_ms;
        if (k + 1 == o.repeat) { bands = std::move(run.results); }
      }
    } else if (m.gpu) {
      if (*m.gpu == reduce_mode::hybrid) {
        auto const plan = plan_hybrid({dev->num_cells(), dev->num_points(), dev->max_cell_points()}, reduce_request,
                                      hybrid_thresholds_on_device(reduce_request));
        spdlog::debug("hybrid plan: {}", describe(plan));
      }
      (void)reduce(*dev, reduce_request, nodata, *m.gpu, nullptr).kernel_ms();
      std::optional<device_cell_results> last;
      for (int k = 0; k < o.repeat; ++k) {
        last.reset();  // free the previous run's bands before the next allocates its own
        if (o.no_gate) {
          last.emplace(reduce(*dev, reduce_request, nodata, *m.gpu, nullptr));
          r.ms.push_back(last->kernel_ms());
          continue;
        }
        // The run is enqueued whole behind the gate, then runs back to back on the device: its
        // events time the device's work, not the host's launch latency (stream_gate).
        stream_gate gate(nullptr);
        last.emplace(reduce(*dev, reduce_request, nodata, *m.gpu, nullptr));
        gate.open();
        r.ms.push_back(last->kernel_ms());
        HG_EXPECTS(!gate.timed_out(), error_kind::internal,
                "compare: mode " + m.name + ": the timing gate opened by itself after 1 s; was something behind it "
                "waiting for the host?");
      }
      stopwatch d2h;
      bands = last->to_host(nullptr);
      r.d2h_ms = d2h.seconds() * 1e3;
    } else {
      (void)reduce_cells_cpu(host_csr, request, nodata);
      for (int k = 0; k < o.repeat; ++k) {
        stopwatch run;
        bands = reduce_cells_cpu(host_csr, request, nodata);
        r.ms.push_back(run.seconds() * 1e3);
      }
    }
    if (r.d2h_ms && !phases.d2h_bands_ms) { phases.d2h_bands_ms = r.d2h_ms; }
    r.median_ms = median(r.ms);
    r.min_ms = *std::min_element(r.ms.begin(), r.ms.end());
    r.max_ms = *std::max_element(r.ms.begin(), r.ms.end());
    r.gbps = gigabytes_per_second(r.bytes, r.median_ms);
    if (r.gpu && peak && peak->gbps > 0.0) { r.percent_of_read_bw = 100.0 * r.gbps / peak->gbps; }
    spdlog::debug("{}: median {:.4f} ms over {} runs", r.name, r.median_ms, r.ms.size());
    // Each mode is checked against the first that computed the same bands: the reduce bands, and the
    // order statistics (the GPU sorts and cpu).
    if (!m.order && reduce_bands) {
      if (!reference) {
        reference = bands;
        reference_name = m.name;
      } else if (mismatch.empty()) {
        mismatch = mode_mismatch(reference_name, *reference, m.name, bands, reduce_request, grid);
      }
    }
    if (m.order || (!m.gpu && request.needs_order())) {
      if (!order_reference) {
        order_reference = bands;
        order_reference_name = m.name;
      } else if (mismatch.empty()) {
        mismatch = mode_mismatch(order_reference_name, *order_reference, m.name, bands, order_request, grid);
      }
    }
    results.push_back(std::move(r));
  }
  auto const thread = std::find_if(results.begin(), results.end(), [](mode_result const& r) { return r.name == "thread"; });
  if (thread != results.end()) {
    for (auto& r : results) { r.speedup_vs_thread = r.median_ms > 0.0 ? thread->median_ms / r.median_ms : 0.0; }
  }

  // --- report
  std::string input_name;  // the generator's description for --synth, else the files
  for (auto* s : sources) {
    input_name += (input_name.empty() ? "" : ", ") + (synth ? s->info().format : s->info().path);
  }
  std::string text;
  text += fmt::format("input: {}: {} points read, {} kept, {} binned, {} outside the grid\n", input_name,
                      with_commas(loaded.read.filtered.points_in), with_commas(points_kept), with_commas(binned.points_binned),
                      with_commas(binned.points_outside));
  if (device && peak) {
    text += fmt::format("device: {} ({} SMs, {} memory); read bandwidth {:.1f} GB/s ({} streaming read, median of {})\n",
                        device->name, device->sm_count, human_bytes(static_cast<double>(device->total_mem)), peak->gbps,
                        human_bytes(static_cast<double>(peak->probe_bytes)), peak->repeats);
  } else {
    text += fmt::format("device: {}; {} CPU threads\n",
                        wants_gpu ? "no usable GPU (" + why_not + ")" : std::string("no GPU mode in --modes"),
                        omp_get_max_threads());
  }
  text += "\n" + imbalance_text(stats, grid) + "\n";
  text += phases_text(phases, std::string(csr_method_name(csr)));
  text += fmt::format("\nreduce ({}): {} timed runs per mode after a warm-up; at least {} moved per run\n", o.metrics,
                      o.repeat, human_bytes(bytes));
  text += table_text(results);
  std::vector<std::pair<std::string, std::string>> skipped_by_reason;  // (reason, modes), first seen first
  for (auto const& sk : skipped) {
    auto it = std::find_if(skipped_by_reason.begin(), skipped_by_reason.end(),
                           [&](auto const& p) { return p.first == sk.reason; });
    if (it == skipped_by_reason.end()) {
      skipped_by_reason.emplace_back(sk.reason, sk.name);
    } else {
      it->second += "," + sk.name;
    }
  }
  for (auto const& [reason, names] : skipped_by_reason) { text += "skipped " + names + ": " + reason + "\n"; }
  for (auto const& r : results) {
    if (!r.uses_csr) {
      text += fmt::format("{}: reduces the points, no CSR: timed inside the whole device pipeline (points uploaded "
                          "every run); GB/s counts x, y, z read once ({})\n",
                          r.name, human_bytes(r.bytes));
    }
  }
  if (mismatch.empty()) {
    text += fmt::format("outputs identical across {} mode{} (min/max/range/count bit for bit, mean/stddev within 1 ulp)\n",
                        results.size(), results.size() == 1 ? "" : "s");
  } else {
    text += "OUTPUTS DIFFER: " + mismatch + "\n";
  }
  text += std::string("GPU modes: CUDA event time of the whole reduce") +
          (o.no_gate ? " (--no-gate: launch gaps included)"
                     : " (CSR modes enqueued whole before they start: device time, no host launch gaps)") +
          "; cpu: wall clock on " + std::to_string(omp_get_max_threads()) +
          " threads. GB/s: bytes the reduce must move / median time.\n";
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);

  if (!o.json.empty()) {
    json j;
    j["command"] = o.command_line;
    j["heightgrid_version"] = "0.1.0";
    json in;
    json files = json::array();
    for (auto* s : sources) { files.push_back({{"path", s->info().path}, {"format", s->info().format}}); }
    in["sources"] = files;
    if (synth) {
      in["synthetic"] = {{"kind", synth_kind_name(synth->kind)},
                         {"seed", synth->seed},
                         {"points", synth->points},
                         {"extent", {synth->xmin, synth->ymin, synth->xmax, synth->ymax}},
                         {"density", static_cast<double>(synth->points) /
                                       ((synth->xmax - synth->xmin) * (synth->ymax - synth->ymin))},
                         {"cell_size", synth->cell_size},
                         {"zipf_s", synth->zipf_s},
                         {"hotspots", synth->hotspots}};
    }
    auto const& f = loaded.read.filtered;
    in["points_read"] = f.points_in;
    in["points_kept"] = points_kept;
    in["filtered"] = {{"non_finite", f.non_finite}, {"by_class", f.by_class}, {"withheld", f.withheld},
                      {"by_return", f.by_return}, {"by_z", f.by_z}};
    j["input"] = in;
    j["grid"] = {{"cols", grid.cols},           {"rows", grid.rows},     {"cells", grid.num_cells()},
                 {"x0", grid.x0},               {"y0", grid.y0},         {"xres", grid.xres},
                 {"yres", grid.yres},           {"points_binned", binned.points_binned},
                 {"points_outside", binned.points_outside}};
    json names = json::array();
    for (auto const m : metrics) { names.push_back(std::string(metric_name(m))); }
    j["metrics"] = names;
    j["repeat"] = o.repeat;
    j["timing"] = o.no_gate ? "events, launch gaps included (--no-gate)" : "events, each run enqueued behind a gate";
    j["csr"] = use_gpu ? std::string(csr_method_name(csr)) : std::string("cpu (bin_points_cpu)");
    j["cpu_threads"] = omp_get_max_threads();
    if (device) {
      j["device"] = {{"available", true},
                     {"name", device->name},
                     {"sm_count", device->sm_count},
                     {"total_mem_bytes", device->total_mem},
                     {"compute_capability", std::to_string(device->cc_major) + "." + std::to_string(device->cc_minor)},
                     {"l2_bytes", device->l2_bytes}};
    } else {
      j["device"] = {{"available", false}, {"reason", wants_gpu ? why_not : std::string("no GPU mode in --modes")}};
    }
    j["read_bandwidth"] = peak ? json{{"gbps", peak->gbps}, {"probe_bytes", peak->probe_bytes}, {"repeats", peak->repeats}}
                               : json(nullptr);
    j["phases_ms"] = {{"read_and_filter", phases.read_ms},  {"h2d", optional_json(phases.h2d_ms)},
                      {"cell_ids", optional_json(phases.cell_ids_ms)}, {"csr_gpu", optional_json(phases.csr_ms)},
                      {"csr_cpu", optional_json(phases.csr_cpu_ms)},   {"d2h_csr", optional_json(phases.d2h_csr_ms)},
                      {"d2h_bands", optional_json(phases.d2h_bands_ms)}, {"cell_stats", phases.stats_ms}};
    j["reduce_bytes"] = bytes;
    json ms = json::array();
    for (auto const& r : results) {
      ms.push_back({{"mode", r.name},
                    {"backend", r.gpu ? "gpu" : "cpu"},
                    {"timer", r.gpu ? "cuda_events" : "wall_clock"},
                    {"uses_csr", r.uses_csr},
                    {"bytes", r.bytes},
                    {"median_ms", r.median_ms},
                    {"min_ms", r.min_ms},
                    {"max_ms", r.max_ms},
                    {"times_ms", r.ms},
                    {"gbps", r.gbps},
                    {"percent_of_read_bandwidth", optional_json(r.percent_of_read_bw)},
                    {"speedup_vs_thread", optional_json(r.speedup_vs_thread)},
                    {"d2h_bands_ms", optional_json(r.d2h_ms)}});
    }
    j["modes"] = ms;
    json sk = json::array();
    for (auto const& s : skipped) { sk.push_back({{"mode", s.name}, {"reason", s.reason}}); }
    j["skipped_modes"] = sk;
    j["identical"] = mismatch.empty();
    j["mismatch"] = mismatch.empty() ? json(nullptr) : json(mismatch);
    j["cell_stats"] = stats_json(stats);
    json hist = json::array();
    for (std::size_t k = 0; k < stats.histogram.size(); ++k) {
      hist.push_back({{"low", histogram_bin_low(k)}, {"high", histogram_bin_high(k)}, {"cells", stats.histogram[k]}});
    }
    j["histogram"] = hist;
    write_text_file(o.json, j.dump(2) + "\n");
    spdlog::info("wrote {}", o.json);
  }
  if (!o.plot.empty()) {
    std::vector<plotted_mode> plotted;
    for (auto const& r : results) { plotted.push_back({r.name, r.median_ms, r.min_ms, r.max_ms}); }
    std::string const title = plot_title(input_name, binned.points_binned, grid.cols, grid.rows, grid.xres,
                                         device ? device->name : std::string("CPU only"));
    if (plot_compare(o.plot, title, plotted, stats, o.repeat)) { spdlog::info("wrote {}", o.plot); }
  }
  require_modes_agree(mismatch);  // exit 70 when the modes differ
  return 0;
}

}  // namespace heightgrid::app
