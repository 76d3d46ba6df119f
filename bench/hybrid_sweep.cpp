// hybrid_sweep: the reduce phase of every CSR mode, and of `hybrid` over a grid of its thresholds,
// on the point distributions of `heightgrid synth` (binned on the device) plus an extreme one built
// directly as a CSR. Prints Markdown tables for docs/benchmarks.md. Self-checking: every run's range
// and count bands must equal thread mode's bit for bit; the exit status is 1 otherwise.
//
//   hybrid_sweep [--points N] [--kinds uniform,lidar,skewed,clustered,hot,sparse] [--repeat R] [--seed S]
//                [--grid full|axes] [--no-cub] [--lanes L,..] [--warps W,..] [--chunks C,..] [--cells K,..]
//
// --lanes/--warps/--chunks replace the lists of lane_max, warp_max and chunk sizes swept (defaults
// 0,16,32,64,128 / 512,1024,4096 / 1024,2048,4096,65536; with --grid axes the chunk sizes are swept
// at the default lane_max and warp_max only). --cells lists cells_per_lane values (1, 2, 4, 8) swept
// at the default lane_max, warp_max and chunk size (default: 1,2,4,8). A warp_max other than the
// default applies as given (queued_warp_max_points 0); rows at the default warp_max keep the
// default queued_warp_max_points. Chunk sizes above 256 act as 256 on kinds of under 4 points per cell
// whose biggest cell holds at most 65,536 points (skewed at 10^8: balanced_policy::thin_chunk_points).
//
// Each time is the median of R reduce() calls after one warm-up (CUDA events around the mode's work,
// as device_cell_results::kernel_ms() reports it), for the bands range + count. Effective bandwidth
// = the fewest bytes the reduce must move (offsets and z read once, two bands written once) / time,
// next to a streaming-read bandwidth measured in the same process.

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/cell_stats.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/core/synthetic.hpp"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/hybrid_tuning.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace heightgrid {
namespace {

struct sweep_options {
  std::uint64_t points{100000000};
  std::vector<std::string> kinds{"uniform", "lidar", "skewed", "clustered", "hot"};
  int repeat{5};
  std::uint64_t seed{1};
  bool full_grid{false};
  bool with_cub{true};
  std::vector<std::uint64_t> lanes{0, 16, 32, 64, 128};
  std::vector<std::uint64_t> warps{512, 1024, 4096};
  std::vector<std::uint64_t> chunks{1024, 2048, 4096, 65536};
  std::vector<std::uint64_t> cells{1, 2, 4, 8};
};

[[noreturn]] void usage(std::string const& why)
{
  std::cerr << "hybrid_sweep: " << why << "\n"
            << "usage: hybrid_sweep [--points N] [--kinds uniform,lidar,skewed,clustered,hot,sparse] [--repeat R]\n"
            << "                    [--seed S] [--grid full|axes] [--no-cub] [--lanes L,..] [--warps W,..]\n"
            << "                    [--chunks C,..] [--cells K,..]\n";
  std::exit(2);
}

/// std::stod / std::stoull with a usage error instead of an exception for what is not a number.
template <typename F>
auto number(std::string const& option, std::string const& text, F&& convert)
{
  try {
    return convert(text);
  } catch (std::exception const&) {
    usage(option + ": '" + text + "' is not a number");
  }
}

sweep_options parse(int argc, char** argv)
{
  sweep_options o;
  auto const to_double = [](std::string const& t) { return std::stod(t); };
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    auto const value = [&]() -> std::string {
      if (i + 1 >= argc) { usage(a + " needs a value"); }
      return argv[++i];
    };
    if (a == "--points") {
      o.points = static_cast<std::uint64_t>(number(a, value(), to_double));
    } else if (a == "--kinds") {
      o.kinds.clear();
      std::stringstream list(value());
      for (std::string k; std::getline(list, k, ',');) { o.kinds.push_back(k); }
    } else if (a == "--repeat") {
      o.repeat = number(a, value(), [](std::string const& t) { return std::stoi(t); });
    } else if (a == "--seed") {
      o.seed = number(a, value(), [](std::string const& t) { return std::stoull(t); });
    } else if (a == "--grid") {
      auto const g = value();
      if (g != "full" && g != "axes") { usage("--grid: '" + g + "' is not full or axes"); }
      o.full_grid = g == "full";
    } else if (a == "--no-cub") {
      o.with_cub = false;
    } else if (a == "--lanes" || a == "--warps" || a == "--chunks" || a == "--cells") {
      auto& list = a == "--lanes" ? o.lanes : (a == "--warps" ? o.warps : (a == "--chunks" ? o.chunks : o.cells));
      list.clear();
      std::stringstream items(value());
      for (std::string v; std::getline(items, v, ',');) { list.push_back(static_cast<std::uint64_t>(number(a, v, to_double))); }
      if (list.empty()) { usage(a + " needs at least one value"); }
      if (a == "--chunks" && std::find(list.begin(), list.end(), 0) != list.end()) { usage("--chunks: 0 is not a chunk size"); }
      if (a == "--cells") {
        for (auto const k : list) {
          if (k != 1 && k != 2 && k != 4 && k != 8) { usage("--cells: " + std::to_string(k) + " is not 1, 2, 4 or 8"); }
        }
      }
    } else {
      usage("unknown argument '" + a + "'");
    }
  }
  if (o.repeat < 1) { usage("--repeat must be >= 1"); }
  return o;
}

std::string commas(std::uint64_t v)
{
  auto s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) { s.insert(static_cast<std::size_t>(i), ","); }
  return s;
}

std::string fixed(double v, int digits)
{
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The extreme distribution `synth` has no kind for: Poisson(1.94) points in each of points / 2
/// cells, and 20 hot cells of 10^5-10^6 points (three adjacent, one first, one last): at 10^8
/// points the hot cells hold ~8 % of them.
csr_grid hot_cells_csr(std::uint64_t points, std::uint64_t seed)
{
  std::uint64_t const cells = std::max<std::uint64_t>(1, points / 2);
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> counts(cells);
  std::poisson_distribution<std::uint64_t> background(1.94);
  for (auto& c : counts) { c = background(rng); }
  std::uniform_int_distribution<std::uint64_t> where(0, cells - 1);
  std::uniform_real_distribution<double> log_size(5.0, 6.0);
  for (int k = 0; k < 20 && cells > 40; ++k) {
    std::uint64_t const c =
      k == 0 ? 0 : (k == 1 ? cells - 1 : (k < 5 ? cells / 2 + static_cast<std::uint64_t>(k) : where(rng)));
    counts[c] = static_cast<std::uint64_t>(std::pow(10.0, log_size(rng)));
  }
  csr_grid csr;
  csr.offsets.resize(cells + 1);
  csr.offsets[0] = 0;
  for (std::uint64_t c = 0; c < cells; ++c) { csr.offsets[c + 1] = csr.offsets[c] + counts[c]; }
  csr.z.resize(csr.offsets.back());
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 1;  // splitmix64: fast enough for 10^9 values
  for (auto& v : csr.z) {
    std::uint64_t x = (state += 0x9e3779b97f4a7c15ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    v = 100.0 + 300.0 * static_cast<double>(x >> 11) * 0x1.0p-53;
  }
  return csr;
}

/// Grids the real LAS files make at 1 m: millions of cells, nearly all empty. `points` cells, one
/// point in every 1,000th cell on average (a Bernoulli draw per cell), none in the others.
csr_grid sparse_csr(std::uint64_t points, std::uint64_t seed)
{
  std::uint64_t const cells = std::max<std::uint64_t>(1, points);
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution occupied(0.001);
  csr_grid csr;
  csr.offsets.resize(cells + 1);
  csr.offsets[0] = 0;
  for (std::uint64_t c = 0; c < cells; ++c) { csr.offsets[c + 1] = csr.offsets[c] + (occupied(rng) ? 1 : 0); }
  csr.z.resize(csr.offsets.back());
  std::uniform_real_distribution<double> height(100.0, 400.0);
  for (auto& v : csr.z) { v = height(rng); }
  return csr;
}

/// `synth KIND --points N` at the kind's default density (10 points per 1 x 1 cell, 2 for skewed:
/// see synthetic.hpp), binned on the device at cell size 1 on the grid of the generator's extent.
device_csr synth_csr(synth_kind kind, std::uint64_t points, std::uint64_t seed, double& bin_ms)
{
  synth_options s;
  s.kind = kind;
  s.points = points;
  s.seed = seed;
  s.cell_size = 1.0;
  set_extent_from_density(s, kind == synth_kind::skewed ? 2.0 : 10.0);
  synthetic_source source(s);
  point_chunk all;
  point_chunk chunk;
  all.x.reserve(points);
  all.y.reserve(points);
  all.z.reserve(points);
  while (source.read(chunk, std::size_t{1} << 24)) {
    all.x.insert(all.x.end(), chunk.x.begin(), chunk.x.end());
    all.y.insert(all.y.end(), chunk.y.begin(), chunk.y.end());
    all.z.insert(all.z.end(), chunk.z.begin(), chunk.z.end());
  }
  auto const grid = grid_from_extent(s.xmin, s.ymin, s.xmax, s.ymax, 1.0, 1.0);
  binning_stats stats;
  gpu_phase_times times;
  auto csr = device_csr::from_points(grid, all, csr_method::radix_sort, stats, times, nullptr);
  bin_ms = times.cell_ids_ms + times.csr_ms;
  return csr;
}

struct run_result {
  double ms{0.0};
  std::uint64_t mismatches{0};
};

/// Median kernel_ms of `repeat` runs after a warm-up; the warm-up's bands are checked against `want`.
run_result time_runs(std::function<device_cell_results()> const& run, int repeat, cell_results const* want)
{
  run_result r;
  {
    auto const first = run();
    if (want != nullptr) {
      auto const got = first.to_host(nullptr);
      for (std::size_t c = 0; c < want->count.size(); ++c) {
        std::uint32_t a = 0;
        std::uint32_t b = 0;
        std::memcpy(&a, &got.range[c], 4);
        std::memcpy(&b, &want->range[c], 4);
        r.mismatches += (a != b || got.count[c] != want->count[c]) ? 1 : 0;
      }
    }
  }
  std::vector<double> ms;
  for (int k = 0; k < repeat; ++k) { ms.push_back(run().kernel_ms()); }
  std::sort(ms.begin(), ms.end());
  r.ms = ms.size() % 2 == 1 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  return r;
}

struct kind_summary {
  std::string kind;
  double thread_ms{0}, warp_ms{0}, cub_ms{0}, hybrid_ms{0}, best_ms{0};
  double hybrid_pct{0};
  std::string best_config;
};

int sweep(sweep_options const& o)
{
  auto const dev = query_device();
  std::size_t const probe = std::min<std::size_t>(std::size_t{1} << 30, dev.free_mem / 4);
  double const peak = measure_read_bandwidth_gbps(probe, 10, nullptr);
  auto const defaults = default_hybrid_thresholds();
  std::cout << "# hybrid_sweep on " << dev.name << " (" << dev.sm_count << " SMs): streaming read " << fixed(peak, 0)
            << " GB/s\n\nBands range + count; median of " << o.repeat
            << " runs after a warm-up. Defaults: lane_max " << defaults.lane_max_points << ", warp_max "
            << defaults.warp_max_points << ", chunk " << defaults.split_chunk_points << ", cells per lane "
            << (defaults.cells_per_lane == 0 ? std::string("auto") : std::to_string(defaults.cells_per_lane)) << ".\n";

  auto const request = metric_request::from({metric::range, metric::count});
  int failures = 0;
  std::vector<kind_summary> summaries;

  for (auto const& kind : o.kinds) {
    auto const t0 = std::chrono::steady_clock::now();
    double bin_ms = 0.0;
    device_csr csr = [&] {
      if (kind == "hot") { return device_csr::from_host(hot_cells_csr(o.points, o.seed), nullptr); }
      if (kind == "sparse") { return device_csr::from_host(sparse_csr(o.points, o.seed), nullptr); }
      auto const k = parse_synth_kind(kind);
      if (!k) { usage("unknown kind '" + kind + "' (" + synth_kind_list() + ", hot, sparse)"); }
      return synth_csr(*k, o.points, o.seed, bin_ms);
    }();
    auto const host = csr.to_host(nullptr);
    auto const stats = describe_cell_counts(host.offsets);
    std::cout << "\n## " << kind << ": " << commas(csr.num_points()) << " points in " << commas(csr.num_cells())
              << " cells (mean " << fixed(stats.mean, 2) << ", p99 " << stats.p99 << ", p99.9 " << stats.p999
              << ", max " << commas(stats.max_count) << "; thread lane efficiency "
              << fixed(100.0 * stats.thread_lane_efficiency, 1) << " %)";
    if (bin_ms > 0.0) { std::cout << ", device binning " << fixed(bin_ms, 2) << " ms"; }
    std::cout << "; prepared in " << fixed(seconds_since(t0), 1) << " s\n\n";

    double const bytes = 8.0 * static_cast<double>(csr.num_cells() + 1) + 8.0 * static_cast<double>(csr.num_points()) +
                         4.0 * 2.0 * static_cast<double>(csr.num_cells());
    auto const gbps = [&](double ms) { return ms > 0.0 ? bytes / (ms * 1e-3) / 1e9 : 0.0; };

    auto const reference = reduce(csr, request, default_nodata, reduce_mode::thread, nullptr).to_host(nullptr);
    kind_summary sum;
    sum.kind = kind;
    std::cout << "| mode | lane_max | warp_max | chunk | cells/lane | reduce ms | GB/s | % of read BW | vs best of "
                 "thread/warp | same as thread |\n|---|---|---|---|---|---|---|---|---|---|\n";
    auto const row = [&](std::string const& mode, hybrid_thresholds const* t, run_result const& r) {
      double const best = std::min(sum.thread_ms, sum.warp_ms);
      std::cout << "| " << mode << " | ";
      if (t != nullptr) {
        std::cout << t->lane_max_points << " | " << t->warp_max_points << " | " << t->split_chunk_points << " | "
                  << (t->cells_per_lane == 0 ? std::string("auto") : std::to_string(t->cells_per_lane));
      } else {
        std::cout << "| | | ";
      }
      std::cout << " | " << fixed(r.ms, 3) << " | " << fixed(gbps(r.ms), 0) << " | "
                << fixed(100.0 * gbps(r.ms) / peak, 1) << " % | " << (best > 0.0 && t != nullptr ? fixed(r.ms / best, 3) + "x" : std::string("")) << " | "
                << (r.mismatches == 0 ? "yes" : "NO: " + commas(r.mismatches) + " cells") << " |\n";
      if (r.mismatches != 0) { ++failures; }
    };

    // Every other CSR mode of the mode table, as the baselines hybrid's configurations are timed against.
    for (auto const& m : reduce_modes) {
      if (!m.reduces_csr || m.value == reduce_mode::hybrid) { continue; }
      if (m.value == reduce_mode::cub && !o.with_cub) { continue; }
      auto const r =
        time_runs([&] { return reduce(csr, request, default_nodata, m.value, nullptr); }, o.repeat, &reference);
      if (m.value == reduce_mode::thread) { sum.thread_ms = r.ms; }
      if (m.value == reduce_mode::warp) { sum.warp_ms = r.ms; }
      if (m.value == reduce_mode::cub) { sum.cub_ms = r.ms; }
      row(std::string(m.name), nullptr, r);
    }

    // The defaults first; then lane_max x warp_max, the chunk size and the cells per lane around the
    // defaults (cells per lane left at auto while the others move). Every other field keeps its
    // default (the stage only applies to requests with sums, which this sweep's range + count does
    // not run).
    std::vector<hybrid_thresholds> configs{defaults};
    auto const add = [&](std::uint64_t l, std::uint64_t w, std::uint64_t c, std::uint32_t k) {
      for (auto const& t : configs) {
        if (t.lane_max_points == l && t.warp_max_points == w && t.split_chunk_points == c && t.cells_per_lane == k) {
          return;
        }
      }
      auto t = defaults;
      t.lane_max_points = l;
      t.warp_max_points = w;
      // A swept warp_max applies as given; at the default one, so does the default's
      // queued_warp_max_points (queueing from 512 points when some cell exceeds warp_max).
      if (w != defaults.warp_max_points) { t.queued_warp_max_points = 0; }
      t.split_chunk_points = c;
      t.cells_per_lane = k;
      configs.push_back(t);
    };
    auto const& d = defaults;
    for (auto const l : o.lanes) {
      for (auto const w : o.warps) {
        if (o.full_grid) {
          for (auto const c : o.chunks) { add(l, w, c, d.cells_per_lane); }
        } else {
          add(l, w, d.split_chunk_points, d.cells_per_lane);
        }
      }
    }
    for (auto const c : o.chunks) { add(d.lane_max_points, d.warp_max_points, c, d.cells_per_lane); }
    for (auto const k : o.cells) {
      add(d.lane_max_points, d.warp_max_points, d.split_chunk_points, static_cast<std::uint32_t>(k));
    }
    double best = 0.0;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      auto const& t = configs[i];
      auto const r = time_runs([&] { return reduce_hybrid(csr, request, default_nodata, t, nullptr); }, o.repeat,
                               &reference);
      row(i == 0 ? "**hybrid (defaults)**" : "hybrid", &t, r);
      if (i == 0) {
        sum.hybrid_ms = r.ms;
        sum.hybrid_pct = 100.0 * gbps(r.ms) / peak;
      }
      if (best == 0.0 || r.ms < best) {
        best = r.ms;
        sum.best_config = std::to_string(t.lane_max_points) + "/" + std::to_string(t.warp_max_points) + "/" +
                          std::to_string(t.split_chunk_points) + "/" +
                          (t.cells_per_lane == 0 ? std::string("auto") : std::to_string(t.cells_per_lane));
      }
    }
    sum.best_ms = best;
    summaries.push_back(sum);
  }

  std::cout << "\n## Summary (hybrid with its defaults)\n\n| kind | thread ms | warp ms | cub ms | hybrid ms | hybrid % of "
               "read BW | hybrid / best of thread,warp | thread / hybrid | cub / hybrid | best sweep config "
               "(lane/warp/chunk/cells) | its ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (auto const& s : summaries) {
    double const best2 = std::min(s.thread_ms, s.warp_ms);
    std::cout << "| " << s.kind << " | " << fixed(s.thread_ms, 3) << " | " << fixed(s.warp_ms, 3) << " | "
              << (o.with_cub ? fixed(s.cub_ms, 3) : std::string("-")) << " | " << fixed(s.hybrid_ms, 3) << " | "
              << fixed(s.hybrid_pct, 1) << " % | " << fixed(s.hybrid_ms / best2, 3) << "x | "
              << fixed(s.thread_ms / s.hybrid_ms, 2) << "x | "
              << (o.with_cub ? fixed(s.cub_ms / s.hybrid_ms, 1) + "x" : std::string("-")) << " | " << s.best_config
              << " | " << fixed(s.best_ms, 3) << " |\n";
  }
  std::cout << "\nGoals (issue #7): hybrid >= 85 % of read BW on every kind; hybrid / best of thread,warp <= 1.03x; "
               "on skewed thread / hybrid >= 3x and cub / hybrid >= 10x.\n";
  if (failures > 0) { std::cout << "\nFAILED: " << failures << " runs differ from thread mode\n"; }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace heightgrid

int main(int argc, char** argv)
{
  auto const options = heightgrid::parse(argc, argv);
  std::string why;
  if (!heightgrid::gpu_available(&why)) {
    std::cerr << "hybrid_sweep: no usable GPU: " << why << "\n";
    return 77;
  }
  try {
    return heightgrid::sweep(options);
  } catch (heightgrid::error const& e) {
    std::cerr << "hybrid_sweep: " << e.what() << "\n";
    return 1;
  }
}
