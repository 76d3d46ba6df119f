#include "bench_reduce_command.hpp"

#include "bench_reduce_report.hpp"
#include "output_file.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/ladder/reduction_cpu.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/ladder/reduction_ladder.hpp"

#include <nlohmann/json.hpp>
#include <omp.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

namespace heightgrid::app {
namespace {

using namespace bench_reduce;

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------
// Options

std::vector<std::string> split(std::string const& text, char sep)
{
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) {
    if (!part.empty()) { parts.push_back(part); }
  }
  return parts;
}

std::optional<int> to_int(std::string_view s)
{
  int v = 0;
  auto const [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) { return std::nullopt; }
  return v;
}

/// Exponents of 2 from "17..28", "20,24,26" or "10..28:2" (each in 0..32), sorted, unique.
std::vector<int> parse_exponents(std::string const& text, char const* option)
{
  constexpr int largest = 32;
  auto const bad = [&](std::string const& item, std::string const& why) {
    return error(error_kind::usage, std::string(option) + ": '" + item + "' " + why +
                                      " (give exponents of 2: 17..28, 20,24,26 or 10..28:2)");
  };
  std::vector<int> out;
  for (auto const& item : split(text, ',')) {
    auto const dots = item.find("..");
    if (dots == std::string::npos) {
      auto const e = to_int(item);
      if (!e || *e < 0 || *e > largest) { throw bad(item, "is not an exponent in 0..32"); }
      out.push_back(*e);
      continue;
    }
    auto const colon = item.find(':', dots);
    auto const lo = to_int(std::string_view(item).substr(0, dots));
    auto const hi = to_int(
      std::string_view(item).substr(dots + 2, colon == std::string::npos ? std::string::npos : colon - dots - 2));
    auto const step =
      colon == std::string::npos ? std::optional<int>(1) : to_int(std::string_view(item).substr(colon + 1));
    if (!lo || !hi || !step || *lo < 0 || *hi > largest || *lo > *hi || *step < 1) {
      throw bad(item, "is not a range A..B or A..B:STEP with 0 <= A <= B <= 32");
    }
    for (int e = *lo; e <= *hi; e += *step) { out.push_back(e); }
  }
  if (out.empty()) { throw bad(text, "names no size"); }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Kernels from "1-10", "3,7,8,cub" (numbers, ranges of numbers, names), in ladder order.
std::vector<ladder_kernel> parse_kernels(std::string const& text)
{
  std::vector<bool> wanted(all_ladder_kernels().size() + 1, false);
  for (auto const& item : split(text, ',')) {
    auto const dash = item.find('-');
    if (dash != std::string::npos && dash > 0) {
      auto const lo = parse_ladder_kernel(item.substr(0, dash));
      auto const hi = parse_ladder_kernel(item.substr(dash + 1));
      HG_EXPECTS(lo && hi && *lo <= *hi, error_kind::usage,
              "--kernels: '" + item + "' is not a range of kernel numbers such as 1-9");
      for (int k = static_cast<int>(*lo); k <= static_cast<int>(*hi); ++k) {
        wanted[static_cast<std::size_t>(k)] = true;
      }
      continue;
    }
    auto const k = parse_ladder_kernel(item);
    HG_EXPECTS(k.has_value(), error_kind::usage,
            "--kernels: '" + item + "' is not a kernel (1-10, or a name such as warp_shuffle or cub)");
    wanted[static_cast<std::size_t>(*k)] = true;
  }
  std::vector<ladder_kernel> out;
  for (auto const k : all_ladder_kernels()) {
    if (wanted[static_cast<std::size_t>(k)]) { out.push_back(k); }
  }
  HG_EXPECTS(!out.empty(), error_kind::usage, "--kernels: '" + text + "' names no kernel");
  return out;
}

template <typename E, typename Parse>
std::vector<E> parse_list(std::string const& text, char const* option, Parse parse, char const* choices)
{
  std::vector<E> out;
  for (auto const& item : split(text, ',')) {
    auto const v = parse(item);
    HG_EXPECTS(v.has_value(), error_kind::usage, std::string(option) + ": '" + item + "' is not one of " + choices);
    if (std::find(out.begin(), out.end(), *v) == out.end()) { out.push_back(*v); }
  }
  HG_EXPECTS(!out.empty(), error_kind::usage, std::string(option) + ": nothing given (choose from " + choices + ")");
  return out;
}

settings check_options(bench_reduce_options const& o)
{
  settings s;
  s.exponents = parse_exponents(o.sizes, "--sizes");
  s.types = parse_list<ladder_type>(o.types, "--types", parse_ladder_type, "int32, float, double");
  s.ops = parse_list<ladder_op>(o.ops, "--ops", parse_ladder_op, "sum, max");
  s.kernels = parse_kernels(o.kernels);
  if (o.accuracy) { s.accuracy_exponents = parse_exponents(o.accuracy_sizes, "--accuracy-sizes"); }
  HG_EXPECTS(o.repeat >= 1, error_kind::usage, "--repeat must be >= 1, not " + std::to_string(o.repeat));
  HG_EXPECTS(o.cpu_repeat >= 0, error_kind::usage, "--cpu-repeat must be >= 0, not " + std::to_string(o.cpu_repeat));
  HG_EXPECTS(o.threads >= 0, error_kind::usage, "--threads must be >= 0");
  s.repeat = o.repeat;
  s.cpu_repeat = o.cpu_repeat;
  s.flush_l2 = !o.no_flush;
  s.seed = o.seed;
  if (!o.json.empty()) { check_output_file(o.json, o.overwrite, "--json"); }
  if (!o.plot.empty()) { check_output_file(o.plot, o.overwrite, "--plot"); }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Measuring

/// The answer a row is checked against: exact (int32 sums, every max) or the reference sum with
/// the rounding bound of a GPU tree kernel.
struct reference {
  bool exact{true};
  long double value{0.0L};
  long double u{0.0L};      ///< unit roundoff of the type (float/double sums)
  long double scale{0.0L};  ///< sum |x|
};

/// Depth of the longest chain of additions in any GPU kernel (per-thread sequential part: every
/// grid has >= 1024 threads; trees and passes: 2 log2 n + 64), as in the kernels tests.
long double gpu_error_bound(reference const& ref, std::uint64_t n, ladder_kernel k)
{
  if (k == ladder_kernel::kahan) { return 4.0L * ref.u * ref.scale; }
  int log2n = 0;
  while ((std::uint64_t{1} << log2n) < n && log2n < 63) { ++log2n; }
  long double const depth = static_cast<long double>(n / 1024 + 2 * static_cast<std::uint64_t>(log2n) + 64);
  long double const d = std::min(depth, static_cast<long double>(n));
  return d * ref.u / (1.0L - d * ref.u) * ref.scale;
}

void judge(bench_row& row, reference const& ref, std::optional<long double> bound)
{
  if (ref.exact) {
    row.wrong = row.value != ref.value;
    return;
  }
  row.rel_error = relative_error(row.value, ref.value);
  row.wrong = bound.has_value() && std::fabs(row.value - ref.value) > *bound;
}

/// Median of `repeats` host-clock runs of f after one warm-up; the warm-up's value.
template <typename F>
bench_row time_on_host(std::string name, int repeats, F&& f)
{
  bench_row row;
  row.name = std::move(name);
  row.value = static_cast<long double>(f());
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    stopwatch clock;
    auto volatile const v = f();  // volatile: the result is used, so the loop is not dropped
    ms.push_back(clock.seconds() * 1e3);
    (void)v;
  }
  std::sort(ms.begin(), ms.end());
  auto const k = ms.size();
  row.median_ms = k % 2 == 1 ? ms[k / 2] : 0.5 * (ms[k / 2 - 1] + ms[k / 2]);
  row.min_ms = ms.front();
  row.max_ms = ms.back();
  return row;
}

template <typename T>
reference reference_of(std::vector<T> const& x, std::uint64_t n, ladder_type type, ladder_op op)
{
  reference ref;
  if (op == ladder_op::max) {
    ref.value = static_cast<long double>(sequential_max(x.data(), n));
  } else if (type == ladder_type::int32) {
    ref.value = static_cast<long double>(sequential_sum(x.data(), n));
  } else {
    ref.exact = false;
    ref.value = reference_sum(x.data(), n);
    ref.scale = abs_sum(x.data(), n);
    ref.u = static_cast<long double>(std::numeric_limits<T>::epsilon()) / 2.0L;
  }
  return ref;
}

/// Speedups and bandwidths, once a table's rows are in.
void finish_table(bench_table& t)
{
  bench_row const* base = nullptr;
  bench_row const* previous = nullptr;
  for (auto const& r : t.rows) {
    if (r.kernel == 1) { base = &r; }
  }
  for (auto const& r : t.rows) {
    if (base == nullptr && r.kernel != 0) { base = &r; }
  }
  for (auto& r : t.rows) {
    r.gbps = r.median_ms > 0.0 ? t.bytes / (r.median_ms * 1e-3) / 1e9 : 0.0;
    if (r.median_ms <= 0.0) { continue; }
    if (base != nullptr) { r.cumulative = base->median_ms / r.median_ms; }
    if (r.kernel != 0) {
      if (previous != nullptr) { r.step = previous->median_ms / r.median_ms; }
      previous = &r;
    }
  }
}

/// The tables of one element type: its input generated once at the largest size, uploaded once,
/// every size a prefix of it.
template <typename T>
void bench_type(ladder_type type, settings const& s, std::optional<device_facts> const& dev,
                std::string const& gpu_skipped, std::vector<bench_table>& tables)
{
  std::uint64_t const largest = std::uint64_t{1} << s.exponents.back();
  std::vector<T> x(largest);
  fill_reduction_input(x.data(), largest, s.seed, reduction_data::uniform);
  std::optional<ladder_input> input;
  if (dev) { input = ladder_input::upload(x.data(), largest, nullptr); }

  for (auto const op : s.ops) {
    for (int const e : s.exponents) {
      bench_table t;
      t.type = type;
      t.op = op;
      t.exponent = e;
      t.n = std::uint64_t{1} << e;
      t.bytes = static_cast<double>(t.n) * static_cast<double>(sizeof(T));
      t.cache =
        s.flush_l2 ? "flushed" : (dev && t.bytes <= static_cast<double>(dev->info.l2_bytes) ? "l2_resident" : "dram");
      auto const ref = reference_of(x, t.n, type, op);
      if (input) {
        for (auto const k : s.kernels) {
          if (!ladder_supports(k, op, type)) { continue; }
          ladder_options options;
          options.repeats = s.repeat;
          options.flush_l2 = s.flush_l2;
          auto const r = run_ladder(k, op, *input, ladder_range{0, t.n}, options, nullptr);
          bench_row row;
          row.name = std::string(ladder_kernel_name(k));
          row.kernel = static_cast<int>(k);
          row.median_ms = r.median_ms;
          row.min_ms = r.min_ms;
          row.max_ms = r.max_ms;
          row.passes = r.passes;
          row.value = r.value();
          judge(row, ref, gpu_error_bound(ref, t.n, k));
          t.rows.push_back(std::move(row));
        }
      }
      if (s.cpu_repeat > 0) {
        T const* const p = x.data();
        std::uint64_t const n = t.n;
        bench_row seq = op == ladder_op::sum
                          ? time_on_host("cpu sequential", s.cpu_repeat, [&] { return sequential_sum(p, n); })
                          : time_on_host("cpu sequential", s.cpu_repeat, [&] { return sequential_max(p, n); });
        std::string const omp_name = "cpu openmp (" + std::to_string(omp_get_max_threads()) + " thr)";
        bench_row omp = op == ladder_op::sum ? time_on_host(omp_name, s.cpu_repeat, [&] { return openmp_sum(p, n); })
                                             : time_on_host(omp_name, s.cpu_repeat, [&] { return openmp_max(p, n); });
        judge(seq, ref, std::nullopt);
        judge(omp, ref, std::nullopt);
        t.rows.push_back(std::move(seq));
        t.rows.push_back(std::move(omp));
      }
      finish_table(t);
      print_table(t, dev, gpu_skipped);
      std::fflush(stdout);
      tables.push_back(std::move(t));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Accuracy of float sums

/// Float sums of uniform [0, 1) data at n = 2^e: relative error of each method against the
/// reference. The plain float loop stalls once its sum reaches 2^24 (adding x < 1 to it rounds to
/// nothing), so its error grows without bound; Kahan's stays at rounding level.
std::vector<accuracy_row> measure_accuracy(settings const& s, bool gpu)
{
  std::uint64_t const largest = std::uint64_t{1} << s.accuracy_exponents.back();
  std::vector<float> x(largest);
  fill_reduction_input(x.data(), largest, s.seed, reduction_data::uniform);
  std::optional<ladder_input> input;
  if (gpu) { input = ladder_input::upload(x.data(), largest, nullptr); }
  std::vector<ladder_kernel> const gpu_kernels{ladder_kernel::sequential, ladder_kernel::multiple_elements,
                                               ladder_kernel::warp_shuffle, ladder_kernel::cub, ladder_kernel::kahan};
  std::vector<accuracy_row> rows;
  for (int const e : s.accuracy_exponents) {
    std::uint64_t const n = std::uint64_t{1} << e;
    accuracy_row row;
    row.exponent = e;
    row.exact = reference_sum(x.data(), n);
    auto const add = [&](std::string key, std::string label, std::optional<long double> value) {
      row.errors.push_back({std::move(key), std::move(label),
                            value ? std::optional<long double>(relative_error(*value, row.exact)) : std::nullopt});
    };
    add("cpu_sequential", "cpu seq", sequential_sum(x.data(), n));
    add("cpu_openmp", "cpu openmp", openmp_sum(x.data(), n));
    for (auto const k : gpu_kernels) {
      std::optional<long double> v;
      if (input) { v = run_ladder(k, ladder_op::sum, *input, ladder_range{0, n}, ladder_options{}, nullptr).value(); }
      auto const number = std::to_string(static_cast<int>(k));
      add("gpu_" + number + "_" + std::string(ladder_kernel_name(k)),
          k == ladder_kernel::cub || k == ladder_kernel::kahan ? "gpu " + std::string(ladder_kernel_name(k))
                                                               : "gpu k" + number,
          v);
    }
    add("cpu_kahan", "cpu kahan", kahan_sum(x.data(), n));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

CLI::App* add_bench_reduce_command(CLI::App& app, bench_reduce_options& o)
{
  auto* cmd =
    app.add_subcommand("bench-reduce",
                       "The parallel-reduction ladder (classic kernels 1-7, warp shuffle, CUB, Kahan) against the "
                       "measured read bandwidth, the CPU baselines, and the accuracy of float sums");
  cmd->add_option("--sizes", o.sizes, "Input sizes as exponents of 2: 17..28, 20,24,26 or 10..28:2")
    ->default_val("17..28");
  cmd->add_option("--types", o.types, "Element types: int32,float,double")->default_val("int32,float,double");
  cmd->add_option("--ops", o.ops, "Reductions: sum,max")->default_val("sum,max");
  cmd
    ->add_option("--kernels", o.kernels,
                 "GPU kernels by number or name: 1 interleaved_divergent, 2 interleaved_strided, 3 sequential, "
                 "4 first_add, 5 unroll_last_warp, 6 complete_unroll, 7 multiple_elements, 8 warp_shuffle, 9 cub, "
                 "10 kahan (float/double sums); ranges like 1-9")
    ->default_val("1-10");
  cmd->add_option("--repeat", o.repeat, "Timed GPU runs per row after one warm-up; the median is reported")
    ->default_val(20);
  cmd->add_option("--cpu-repeat", o.cpu_repeat, "Timed CPU runs per row after one warm-up (0: no CPU rows)")
    ->default_val(3);
  cmd->add_flag("--no-flush", o.no_flush,
                "Do not flush L2 between GPU runs: inputs smaller than L2 are then read from cache (marked "
                "L2-RESIDENT)");
  cmd->add_flag("--accuracy", o.accuracy,
                "Also print the accuracy table of float sums (sequential, tree kernels, "
                "CUB, Kahan on GPU and CPU)");
  cmd->add_option("--accuracy-sizes", o.accuracy_sizes, "Sizes of the accuracy table, as --sizes")
    ->default_val("10..28");
  cmd->add_option("--seed", o.seed, "Seed of the input data")->default_val(1);
  cmd->add_option("--json", o.json, "Also write every row, the accuracy table and the verdict as JSON");
  cmd->add_option("--plot", o.plot, "Also draw GB/s against n per kernel into this PNG (needs gnuplot)");
  cmd->add_flag("--overwrite", o.overwrite, "Replace existing --json / --plot files");
  cmd->add_option("--threads", o.threads, "CPU threads for the OpenMP rows (default: all cores)");
  cmd->footer(R"(Examples:
  heightgrid bench-reduce --sizes 20..28 --types float --ops sum --kernels 1-9
  heightgrid bench-reduce --repeat 20 --accuracy --json ladder.json --plot ladder.png
  heightgrid bench-reduce --sizes 10,12 --cpu-repeat 1 --no-flush)");
  return cmd;
}

int run_bench_reduce(bench_reduce_options const& o)
{
  stopwatch total;
  auto const s = check_options(o);
  if (o.threads > 0) { omp_set_num_threads(o.threads); }

  std::string why_not;
  std::optional<device_facts> dev;
  std::string gpu_skipped;
  if (gpu_available(&why_not)) {
    device_facts d;
    d.info = query_device();
    d.probe_bytes = std::min<std::size_t>(std::size_t{1} << 30, d.info.free_mem / 4);
    d.read_gbps = measure_read_bandwidth_gbps(d.probe_bytes, 20, nullptr);
    dev = d;
    std::printf(
      "bench-reduce on %s: %d SMs, compute capability %d.%d, L2 %s; read bandwidth %.1f GB/s (streaming "
      "read of %s, median of 20)\n",
      d.info.name.c_str(), d.info.sm_count, d.info.cc_major, d.info.cc_minor,
      human_bytes(static_cast<double>(d.info.l2_bytes)).c_str(), d.read_gbps,
      human_bytes(static_cast<double>(d.probe_bytes)).c_str());
    std::printf(
      "GPU rows: median of %d runs after a warm-up, CUDA events around every pass of a run (scratch "
      "allocated in the warm-up); %s\n",
      s.repeat,
      s.flush_l2 ? "L2 flushed before every run (a read of 4x its size), so every row reads DRAM"
                 : "L2 NOT flushed: rows that fit in L2 are marked L2-RESIDENT");
  } else {
    gpu_skipped = "no usable GPU: " + why_not;
    std::printf("bench-reduce: GPU rows skipped (%s); CPU rows only\n", gpu_skipped.c_str());
  }
  if (s.cpu_repeat > 0) {
    std::printf("CPU rows: median of %d runs after a warm-up, host clock; OpenMP with %d threads\n", s.cpu_repeat,
                omp_get_max_threads());
  }
  std::printf(
    "Data: int32 uniform over the whole range (sums accumulate in int64), float and double uniform in "
    "[0, 1); seed %llu. GB/s = n * element size / median time. Speedups: step = over the GPU row above, "
    "cumul. = over kernel 1\n",
    static_cast<unsigned long long>(s.seed));

  std::vector<bench_table> tables;
  for (auto const type : s.types) {
    switch (type) {
      case ladder_type::int32:
        bench_type<std::int32_t>(type, s, dev, gpu_skipped, tables);
        break;
      case ladder_type::float32:
        bench_type<float>(type, s, dev, gpu_skipped, tables);
        break;
      case ladder_type::float64:
        bench_type<double>(type, s, dev, gpu_skipped, tables);
        break;
    }
  }

  std::vector<accuracy_row> accuracy;
  if (!s.accuracy_exponents.empty()) {
    accuracy = measure_accuracy(s, dev.has_value());
    print_accuracy(accuracy, gpu_skipped);
  }
  std::vector<verdict> verdicts;
  if (dev) {
    verdicts = judge_ladder(tables, *dev);
    print_verdicts(verdicts);
  }
  std::fflush(stdout);

  if (!o.json.empty()) {
    write_text_file(o.json, to_json(o, s, dev, gpu_skipped, tables, accuracy, verdicts).dump(2) + "\n");
    spdlog::info("wrote {}", o.json);
  }
  if (!o.plot.empty()) { plot_bandwidth(o.plot, s, tables, dev); }

  std::size_t wrong = 0;
  for (auto const& t : tables) {
    for (auto const& r : t.rows) { wrong += r.wrong ? 1 : 0; }
  }
  HG_EXPECTS(wrong == 0, error_kind::internal,
          "bench-reduce: " + std::to_string(wrong) + " result(s) disagree with the CPU reference (rows marked WRONG)");
  spdlog::info("bench-reduce done in {}", human_seconds(total.seconds()));
  return 0;
}

}  // namespace heightgrid::app
