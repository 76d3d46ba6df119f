#pragma once
// `heightgrid bench-reduce`: the parallel-reduction ladder (kernels 1-7 of the classic talk, warp
// shuffles, CUB, Kahan) timed against the device's measured read bandwidth, next to the CPU's
// sequential loop and OpenMP reduction, plus the accuracy of float sums. Without a GPU it prints
// the CPU parts and says why the GPU rows are missing.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace heightgrid::app {

struct bench_reduce_options {
  std::string sizes{"17..28"};  ///< exponents of 2: "17..28", "20,24,26", "10..28:2"
  std::string types{"int32,float,double"};
  std::string ops{"sum,max"};
  std::string kernels{"1-10"};  ///< numbers, ranges and names: "1-9", "3,7,8,cub"
  int repeat{20};               ///< timed GPU runs per row after one warm-up (median reported)
  int cpu_repeat{3};            ///< timed CPU runs per row after one warm-up; 0: no CPU rows
  bool no_flush{false};         ///< keep L2 between runs (rows that fit are then L2-resident)
  bool accuracy{false};
  std::string accuracy_sizes{"10..28"};
  std::uint64_t seed{1};
  std::string json;
  std::string plot;
  bool overwrite{false};
  int threads{0};
  std::string command_line;  ///< the invocation, recorded in --json (set by main)
};

CLI::App* add_bench_reduce_command(CLI::App& app, bench_reduce_options& o);
int run_bench_reduce(bench_reduce_options const& o);

}  // namespace heightgrid::app
