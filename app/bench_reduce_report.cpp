// bench-reduce's reports: tables, accuracy, verdict, --json and --plot.

#include "bench_reduce_report.hpp"

#include "gnuplot.hpp"
#include "report.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>

namespace heightgrid::app::bench_reduce {
namespace {

using json = nlohmann::ordered_json;

std::string describe_cache(std::string const& cache, std::optional<device_facts> const& dev)
{
  if (!dev) { return "host memory"; }
  if (cache == "flushed") { return "L2 flushed before every run: read from DRAM"; }
  if (cache == "l2_resident") {
    return "L2-RESIDENT: fits in the " + human_bytes(static_cast<double>(dev->info.l2_bytes)) + " L2, not flushed";
  }
  return "larger than L2: read from DRAM";
}

}  // namespace

std::string type_op(ladder_type type, ladder_op op)
{
  return std::string(ladder_type_name(type)) + " " + std::string(ladder_op_name(op));
}

void print_table(bench_table const& t, std::optional<device_facts> const& dev, std::string const& gpu_skipped)
{
  std::printf("\n%s, n = 2^%d = %s (%s), %s\n", type_op(t.type, t.op).c_str(), t.exponent, with_commas(t.n).c_str(),
              human_bytes(t.bytes).c_str(), describe_cache(t.cache, dev).c_str());
  std::printf("  %2s  %-22s %10s %10s %9s %8s %7s %7s %6s  %s\n", "#", "kernel", "median ms", "min ms", "GB/s",
              "% read", "step", "cumul.", "passes",
              t.rows.empty() || t.rows.front().rel_error ? "rel. error" : "check");
  for (auto const& r : t.rows) {
    char pct[16] = "-";
    if (r.kernel != 0 && dev && dev->read_gbps > 0.0) {
      std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * r.gbps / dev->read_gbps);
    }
    char step[16] = "-";
    if (r.step > 0.0) { std::snprintf(step, sizeof step, "%.2fx", r.step); }
    char cumulative[16] = "-";
    if (r.cumulative > 0.0) { std::snprintf(cumulative, sizeof cumulative, "%.2fx", r.cumulative); }
    char passes[16] = "-";
    if (r.kernel != 0) { std::snprintf(passes, sizeof passes, "%d", r.passes); }
    char check[48];
    if (r.rel_error) {
      std::snprintf(check, sizeof check, "%.2e%s", static_cast<double>(*r.rel_error),
                    r.wrong ? "  WRONG: beyond bound" : "");
    } else {
      std::snprintf(check, sizeof check, "%s", r.wrong ? "WRONG" : "exact");
    }
    std::string const number = r.kernel != 0 ? std::to_string(r.kernel) : "-";
    std::printf("  %2s  %-22s %10.4f %10.4f %9.1f %8s %7s %7s %6s  %s\n", number.c_str(), r.name.c_str(), r.median_ms,
                r.min_ms, r.gbps, pct, step, cumulative, passes, check);
  }
  if (!gpu_skipped.empty()) { std::printf("  (GPU rows skipped: %s)\n", gpu_skipped.c_str()); }
}

void print_accuracy(std::vector<accuracy_row> const& rows, std::string const& gpu_skipped)
{
  if (rows.empty()) { return; }
  std::printf(
    "\nAccuracy of float sums: relative error |s - S| / S, S = Neumaier's compensated sum in long double\n"
    "(x87, 64-bit significand: exact to ~1e-19 here); data uniform in [0, 1); float u = %.1e\n",
    static_cast<double>(std::numeric_limits<float>::epsilon() / 2));
  std::printf(
    "(gpu k3 = sequential, k7 = multiple_elements, k8 = warp_shuffle: float tree sums; cpu seq is the "
    "plain loop)\n");
  std::printf("  %-6s %16s", "n", "S");
  for (auto const& e : rows.front().errors) { std::printf(" %11s", e.label.c_str()); }
  std::printf("\n");
  for (auto const& r : rows) {
    std::printf("  2^%-4d %16.1Lf", r.exponent, r.exact);
    for (auto const& e : r.errors) {
      if (e.error) {
        std::printf(" %11.2e", static_cast<double>(*e.error));
      } else {
        std::printf(" %11s", "skipped");
      }
    }
    std::printf("\n");
  }
  if (!gpu_skipped.empty()) { std::printf("  (GPU columns skipped: %s)\n", gpu_skipped.c_str()); }
}

// ---------------------------------------------------------------------------------------------
// Verdict: the issue's bar for kernels 7/8 at 2^26 elements and above.


std::vector<verdict> judge_ladder(std::vector<bench_table> const& tables, device_facts const& dev)
{
  std::vector<verdict> out;
  for (auto const& t : tables) {
    if (t.exponent < 26) { continue; }
    bench_row const* best = nullptr;
    bench_row const* cub = nullptr;
    for (auto const& r : t.rows) {
      if ((r.kernel == 7 || r.kernel == 8) && (best == nullptr || r.median_ms < best->median_ms)) { best = &r; }
      if (r.kernel == 9) { cub = &r; }
    }
    if (best == nullptr || cub == nullptr || dev.read_gbps <= 0.0) { continue; }
    verdict v{
      t.type, t.op, t.exponent, best->name, 100.0 * best->gbps / dev.read_gbps, cub->median_ms / best->median_ms};
    v.pass = v.pct >= 90.0 && v.vs_cub >= 1.0 / 1.05;
    out.push_back(v);
  }
  return out;
}

void print_verdicts(std::vector<verdict> const& verdicts)
{
  std::printf(
    "\nIssue #6 bar: kernel 7 or 8 at >= 90%% of the measured read bandwidth for n >= 2^26, within 5%% of CUB\n");
  if (verdicts.empty()) {
    std::printf("  no verdict: needs sizes >= 2^26 (--sizes) and kernels 7 or 8 and 9 (--kernels)\n");
    return;
  }
  for (auto const& v : verdicts) {
    std::printf("  %-11s 2^%d: %-17s %5.1f%% of read BW, CUB time / its time %.3f -> %s\n",
                type_op(v.type, v.op).c_str(), v.exponent, v.best.c_str(), v.pct, v.vs_cub,
                v.pass ? "meets" : "MISSES");
  }
}

// ---------------------------------------------------------------------------------------------
// --json and --plot

nlohmann::ordered_json to_json(bench_reduce_options const& o, settings const& s, std::optional<device_facts> const& dev,
             std::string const& gpu_skipped, std::vector<bench_table> const& tables,
             std::vector<accuracy_row> const& accuracy, std::vector<verdict> const& verdicts)
{
  json j;
  j["command"] = o.command_line;
  if (dev) {
    j["device"] = {
      {"name", dev->info.name},
      {"sm_count", dev->info.sm_count},
      {"compute_capability", std::to_string(dev->info.cc_major) + "." + std::to_string(dev->info.cc_minor)},
      {"l2_bytes", dev->info.l2_bytes},
      {"read_bandwidth_gbps", dev->read_gbps},
      {"read_bandwidth_probe_bytes", dev->probe_bytes}};
  } else {
    j["device"] = nullptr;
    j["gpu_skipped"] = gpu_skipped;
  }
  j["settings"] = {{"repeat", s.repeat},
                   {"cpu_repeat", s.cpu_repeat},
                   {"flush_l2", s.flush_l2},
                   {"seed", s.seed},
                   {"omp_threads", omp_get_max_threads()},
                   {"data", "int32: uniform over the whole range; float, double: uniform in [0, 1)"}};
  json rows = json::array();
  for (auto const& t : tables) {
    for (auto const& r : t.rows) {
      json row = {{"type", ladder_type_name(t.type)},
                  {"op", ladder_op_name(t.op)},
                  {"n", t.n},
                  {"log2_n", t.exponent},
                  {"bytes", t.bytes},
                  {"device", r.kernel != 0 ? "gpu" : "cpu"},
                  {"kernel", r.kernel},
                  {"name", r.name},
                  {"median_ms", r.median_ms},
                  {"min_ms", r.min_ms},
                  {"max_ms", r.max_ms},
                  {"gbps", r.gbps},
                  {"cache", r.kernel != 0 ? t.cache : "host"},
                  {"correct", !r.wrong}};
      // int32 results are int64 sums or int32 maxima: exact as JSON integers, not as doubles.
      row["value"] = t.type == ladder_type::int32 ? json(static_cast<std::int64_t>(r.value))
                                                  : json(static_cast<double>(r.value));
      row["passes"] = r.kernel != 0 ? json(r.passes) : json(nullptr);
      row["pct_read_bw"] =
        r.kernel != 0 && dev && dev->read_gbps > 0.0 ? json(100.0 * r.gbps / dev->read_gbps) : json(nullptr);
      row["step_speedup"] = r.step > 0.0 ? json(r.step) : json(nullptr);
      row["cumulative_speedup"] = r.cumulative > 0.0 ? json(r.cumulative) : json(nullptr);
      row["rel_error"] = r.rel_error ? json(static_cast<double>(*r.rel_error)) : json(nullptr);
      rows.push_back(std::move(row));
    }
  }
  j["rows"] = std::move(rows);
  json acc = json::array();
  for (auto const& r : accuracy) {
    json errors = json::object();
    for (auto const& e : r.errors) { errors[e.key] = e.error ? json(static_cast<double>(*e.error)) : json(nullptr); }
    acc.push_back({{"n", std::uint64_t{1} << r.exponent},
                   {"log2_n", r.exponent},
                   {"reference_sum", static_cast<double>(r.exact)},
                   {"rel_error", std::move(errors)}});
  }
  j["accuracy"] = std::move(acc);
  json ver = json::array();
  for (auto const& v : verdicts) {
    ver.push_back({{"type", ladder_type_name(v.type)},
                   {"op", ladder_op_name(v.op)},
                   {"log2_n", v.exponent},
                   {"best", v.best},
                   {"pct_read_bw", v.pct},
                   {"cub_time_over_best", v.vs_cub},
                   {"meets_bar", v.pass}});
  }
  j["verdict"] = std::move(ver);
  return j;
}

/// One panel per type x op: GB/s against n (log2 axis), one line per kernel, the read bandwidth
/// dashed. Drawn by gnuplot (data inline in the script); without it a warning, no error.
void plot_bandwidth(std::string const& path, settings const& s, std::vector<bench_table> const& tables,
                    std::optional<device_facts> const& dev)
{
  plot_scratch scratch;
  std::ostringstream gp;
  int const columns = static_cast<int>(s.types.size());
  int const rows = static_cast<int>(s.ops.size());
  gp << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
     << "  set terminal pngcairo size " << 560 * columns << "," << 440 * rows << " font 'sans,9'\n"
     << "} else {\n"
     << "  set terminal png size " << 560 * columns << "," << 440 * rows << "\n"
     << "}\n"
     << "set termoption noenhanced\n"
     << "set output " << gnuplot_quote(scratch.png().string()) << "\n"
     << "set datafile missing '?'\n"
     << "set key autotitle columnhead left top font ',8'\n"
     << "set logscale x 2\nset format x '2^%L'\nset logscale y\nset grid\nset xlabel 'n (elements)'\n"
     << "set ylabel 'GB/s (log scale)'\n";
  std::string title = "bench-reduce: bandwidth per kernel";
  if (dev) {
    std::ostringstream t;
    t.precision(0);
    t << std::fixed << " on " << dev->info.name << " (read bandwidth " << dev->read_gbps << " GB/s, dashed)";
    title += t.str();
  }
  gp << "set multiplot layout " << rows << "," << columns << " title " << gnuplot_quote(title) << "\n";
  int block = 0;
  for (auto const op : s.ops) {
    for (auto const type : s.types) {
      std::vector<std::string> names;
      std::vector<int> kernels;
      for (auto const& t : tables) {
        if (t.type != type || t.op != op) { continue; }
        for (auto const& r : t.rows) {
          if (std::find(names.begin(), names.end(), r.name) == names.end()) {
            names.push_back(r.name);
            kernels.push_back(r.kernel);
          }
        }
      }
      ++block;
      gp << "$d" << block << " << EOD\nn";
      for (std::size_t i = 0; i < names.size(); ++i) {
        gp << " \"" << (kernels[i] != 0 ? std::to_string(kernels[i]) + " " : std::string()) << names[i] << "\"";
      }
      gp << "\n";
      for (auto const& t : tables) {
        if (t.type != type || t.op != op) { continue; }
        gp << t.n;
        for (auto const& name : names) {
          auto const it =
            std::find_if(t.rows.begin(), t.rows.end(), [&](bench_row const& r) { return r.name == name; });
          if (it == t.rows.end() || it->gbps <= 0.0) {
            gp << " ?";
          } else {
            gp << ' ' << it->gbps;
          }
        }
        gp << "\n";
      }
      gp << "EOD\n";
      gp << "set title " << gnuplot_quote(type_op(type, op)) << "\n";
      if (names.empty()) {
        gp << "plot 0 notitle\n";
        continue;
      }
      gp << "plot for [i=2:" << names.size() + 1 << "] $d" << block << " using 1:i with linespoints pt 7 ps 0.5";
      if (dev) { gp << ", " << dev->read_gbps << " with lines dt 2 lc rgb 'black' title 'read bandwidth'"; }
      gp << "\n";
    }
  }
  gp << "unset multiplot\n";

  run_gnuplot(scratch, gp.str(), path, "the tables and --json are unaffected");
}

}  // namespace heightgrid::app::bench_reduce
