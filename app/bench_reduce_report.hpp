#pragma once
// What `heightgrid bench-reduce` measures and how it reports it: the rows and tables of the
// timings, the accuracy of float sums, the issue #6 verdict, and their printing, --json and
// --plot (bench_reduce_report.cpp). The measuring itself is bench_reduce_command.cpp.

#include "bench_reduce_command.hpp"

#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/ladder/reduction_ladder.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid::app::bench_reduce {

/// Every option, checked together before any work.
struct settings {
  std::vector<int> exponents;
  std::vector<ladder_type> types;
  std::vector<ladder_op> ops;
  std::vector<ladder_kernel> kernels;
  std::vector<int> accuracy_exponents;
  int repeat{20};
  int cpu_repeat{3};
  bool flush_l2{true};
  std::uint64_t seed{1};
};

/// The device facts every table refers to; absent without a GPU.
struct device_facts {
  gpu_device_info info;
  double read_gbps{0.0};
  std::size_t probe_bytes{0};
};

struct bench_row {
  std::string name;  ///< kernel name, or "cpu sequential" / "cpu openmp"
  int kernel{0};     ///< 1..10; 0 for the CPU rows
  double median_ms{0.0};
  double min_ms{0.0};
  double max_ms{0.0};
  int passes{0};
  long double value{0.0L};
  std::optional<long double> rel_error;  ///< float/double sums: against the reference
  bool wrong{false};
  double gbps{0.0};
  double step{0.0};        ///< speedup over the GPU row above (0: none)
  double cumulative{0.0};  ///< speedup over kernel 1 (or the first GPU row)
};

struct bench_table {
  ladder_type type{ladder_type::int32};
  ladder_op op{ladder_op::sum};
  int exponent{0};
  std::uint64_t n{0};
  double bytes{0.0};
  std::string cache;  ///< "flushed", "l2_resident" or "dram" (larger than L2, not flushed)
  std::vector<bench_row> rows;
};

struct accuracy_entry {
  std::string key;                   ///< --json key: "cpu_sequential", "gpu_8_warp_shuffle", ...
  std::string label;                 ///< column title: "cpu seq", "gpu k8", ...
  std::optional<long double> error;  ///< relative error; none when the GPU was skipped
};

struct accuracy_row {
  int exponent{0};
  long double exact{0.0L};
  std::vector<accuracy_entry> errors;
};

struct verdict {
  ladder_type type;
  ladder_op op;
  int exponent;
  std::string best;
  double pct{0.0};
  double vs_cub{0.0};  ///< CUB's time / the best kernel's time (>= 0.95 passes)
  bool pass{false};
};

[[nodiscard]] std::string type_op(ladder_type type, ladder_op op);
void print_table(bench_table const& t, std::optional<device_facts> const& dev, std::string const& gpu_skipped);
void print_accuracy(std::vector<accuracy_row> const& rows, std::string const& gpu_skipped);
/// Issue #6's bar for kernels 7/8 at 2^26 elements and above, per table.
[[nodiscard]] std::vector<verdict> judge_ladder(std::vector<bench_table> const& tables, device_facts const& dev);
void print_verdicts(std::vector<verdict> const& verdicts);
[[nodiscard]] nlohmann::ordered_json to_json(bench_reduce_options const& o, settings const& s,
                                             std::optional<device_facts> const& dev, std::string const& gpu_skipped,
                                             std::vector<bench_table> const& tables,
                                             std::vector<accuracy_row> const& accuracy,
                                             std::vector<verdict> const& verdicts);
/// One panel per type x op: GB/s against n; without gnuplot a warning, no error.
void plot_bandwidth(std::string const& path, settings const& s, std::vector<bench_table> const& tables,
                    std::optional<device_facts> const& dev);

}  // namespace heightgrid::app::bench_reduce
