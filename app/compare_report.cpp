#include "compare_report.hpp"

#include "compare_plot.hpp"
#include "output_file.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace heightgrid::app::compare_report {

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  auto const n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string bin_label(std::size_t k)
{
  auto const lo = histogram_bin_low(k), hi = histogram_bin_high(k);
  return lo == hi ? with_commas(lo) : with_commas(lo) + "-" + with_commas(hi);
}

std::string imbalance_text(cell_count_stats const& s, grid_spec const& grid)
{
  auto const pct = [](double part, double whole) { return whole > 0.0 ? 100.0 * part / whole : 0.0; };
  std::string t;
  t += fmt::format("points per cell, grid {} x {} = {} cells of {} x {}:\n", grid.cols, grid.rows,
                   with_commas(s.cells), grid.xres, grid.yres);
  t += fmt::format("  points {}, non-empty cells {} ({:.1f} %)\n", with_commas(s.points), with_commas(s.non_empty_cells),
                   pct(static_cast<double>(s.non_empty_cells), static_cast<double>(s.cells)));
  t += fmt::format("  mean {:.2f} (over non-empty cells {:.2f}), max {}\n", s.mean, s.mean_non_empty,
                   with_commas(s.max_count));
  t += fmt::format("  percentiles: p50 {}, p90 {}, p99 {}, p99.9 {}\n", with_commas(s.p50), with_commas(s.p90),
                   with_commas(s.p99), with_commas(s.p999));
  t += fmt::format("  coefficient of variation {:.3f}, Gini {:.3f}\n", s.cv, s.gini);
  t += fmt::format("  predicted lane efficiency of one thread per cell: {:.1f} % "
                   "(points / sum over warps of 32 x the warp's largest cell)\n",
                   100.0 * s.thread_lane_efficiency);
  t += "  histogram (log2 bins):\n";
  t += fmt::format("    {:>15}  {:>15}  {:>7}\n", "points in cell", "cells", "share");
  for (std::size_t k = 0; k < s.histogram.size(); ++k) {
    double const share = pct(static_cast<double>(s.histogram[k]), static_cast<double>(s.cells));
    t += fmt::format("    {:>15}  {:>15}  {:>6.2f} %  {}\n", bin_label(k), with_commas(s.histogram[k]), share,
                     std::string(static_cast<std::size_t>(std::lround(share * 0.4)), '#'));
  }
  return t;
}

std::string phases_text(phase_times const& p, std::string const& csr_name)
{
  std::vector<std::string> parts;
  auto const add = [&](char const* what, std::optional<double> ms) {
    if (ms) { parts.push_back(fmt::format("{} {:.2f} ms", what, *ms)); }
  };
  parts.push_back(fmt::format("read/generate + filter {:.1f} ms (host)", p.read_ms));
  add("H2D", p.h2d_ms);
  add("cell ids", p.cell_ids_ms);
  if (p.csr_ms) { parts.push_back(fmt::format("CSR build ({}) {:.2f} ms", csr_name, *p.csr_ms)); }
  if (p.csr_cpu_ms) { parts.push_back(fmt::format("CSR build (CPU) {:.2f} ms", *p.csr_cpu_ms)); }
  add("D2H CSR", p.d2h_csr_ms);
  add("D2H bands", p.d2h_bands_ms);
  std::string t = "phases, timed once:";
  for (std::size_t i = 0; i < parts.size(); ++i) { t += (i == 0 ? " " : ", ") + parts[i]; }
  return t + "\n";
}

std::string table_text(std::vector<mode_result> const& modes)
{
  std::string t = fmt::format("{:<8} {:>5} {:>11} {:>11} {:>11} {:>9} {:>10} {:>10}\n", "mode", "runs", "median ms",
                              "min ms", "max ms", "GB/s", "% read BW", "vs thread");
  for (auto const& m : modes) {
    t += fmt::format("{:<8} {:>5} {:>11.4f} {:>11.4f} {:>11.4f} {:>9.1f} {:>10} {:>10}\n", m.name, m.ms.size(),
                     m.median_ms, m.min_ms, m.max_ms, m.gbps,
                     m.percent_of_read_bw ? fmt::format("{:.1f} %", *m.percent_of_read_bw) : std::string("-"),
                     m.speedup_vs_thread ? fmt::format("{:.2f}x", *m.speedup_vs_thread) : std::string("-"));
  }
  return t;
}

json stats_json(cell_count_stats const& s)
{
  json j;
  j["cells"] = s.cells;
  j["non_empty_cells"] = s.non_empty_cells;
  j["points"] = s.points;
  j["mean"] = s.mean;
  j["mean_non_empty"] = s.mean_non_empty;
  j["max"] = s.max_count;
  j["p50"] = s.p50;
  j["p90"] = s.p90;
  j["p99"] = s.p99;
  j["p99_9"] = s.p999;
  j["cv"] = s.cv;
  j["gini"] = s.gini;
  j["thread_lane_efficiency"] = s.thread_lane_efficiency;
  return j;
}

json optional_json(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

std::string plot_title(std::string const& input, std::uint64_t points, std::uint64_t cols, std::uint64_t rows,
                       double res, std::string const& device)
{
  return fmt::format("heightgrid compare: {}, {} points, {} x {} cells of {}; {}", input, with_commas(points), cols,
                     rows, res, device);
}

int replot(compare_options const& o)
{
  HG_EXPECTS(!o.plot.empty(), error_kind::usage, "--replot draws --plot FILE.png from a --json file: give --plot");
  check_output_file(o.plot, o.overwrite, "--plot");
  std::ifstream in(o.replot);
  HG_EXPECTS(static_cast<bool>(in), error_kind::input, o.replot + ": cannot open for reading");
  json j;
  try {
    j = json::parse(in);
    std::vector<plotted_mode> modes;
    for (auto const& m : j.at("modes")) {
      modes.push_back({m.at("mode").get<std::string>(), m.at("median_ms").get<double>(), m.at("min_ms").get<double>(),
                       m.at("max_ms").get<double>()});
    }
    cell_count_stats stats;
    for (auto const& bin : j.at("histogram")) { stats.histogram.push_back(bin.at("cells").get<std::uint64_t>()); }
    std::string input;
    for (auto const& src : j.at("input").at("sources")) {
      input += (input.empty() ? "" : ", ") +
               src.at(j.at("input").contains("synthetic") ? "format" : "path").get<std::string>();
    }
    auto const& g = j.at("grid");
    auto const& d = j.at("device");
    std::string const title =
      plot_title(input, g.at("points_binned").get<std::uint64_t>(), g.at("cols").get<std::uint64_t>(),
                 g.at("rows").get<std::uint64_t>(), g.at("xres").get<double>(),
                 d.at("available").get<bool>() ? d.at("name").get<std::string>() : std::string("CPU only"));
    if (plot_compare(o.plot, title, modes, stats, j.at("repeat").get<int>())) { spdlog::info("wrote {}", o.plot); }
  } catch (json::exception const& e) {
    throw error(error_kind::input, o.replot + ": not a compare --json file: " + e.what());
  }
  return 0;
}

}  // namespace heightgrid::app::compare_report
