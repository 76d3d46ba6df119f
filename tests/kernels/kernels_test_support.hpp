#pragma once
// Shared helpers of the kernels tests: GPU skip, CSR builders, and result comparisons that are
// exact for min/max/range/count and within float ulps for mean/stddev.

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/result_compare.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

/// First statement of every GPU test (or of its fixture's SetUp): skip, saying why, without a GPU.
#define HG_SKIP_WITHOUT_GPU()                                                   \
  do {                                                                          \
    std::string hg_why_;                                                        \
    if (!::heightgrid::gpu_available(&hg_why_)) { GTEST_SKIP() << hg_why_; }    \
  } while (0)

namespace heightgrid::test {

inline metric_request all_metrics()
{
  return metric_request::from({metric::range, metric::min, metric::max, metric::count, metric::mean, metric::stddev});
}

/// The bands `mode` can produce: every band, or range/min/max/count for `atomic`.
inline metric_request all_metrics_of(reduce_mode mode)
{
  if (mode_supports(mode, all_metrics())) { return all_metrics(); }
  return metric_request::from({metric::range, metric::min, metric::max, metric::count});
}

/// The modes that reduce a CSR (reduce() accepts them): the parameters of the CSR tests. `atomic`
/// builds no CSR and is tested through the pipeline (grid_points_gpu) instead.
inline std::vector<reduce_mode> csr_modes()
{
  std::vector<reduce_mode> modes;
  for (auto const mode : all_modes()) {
    if (mode_reduces_csr(mode)) { modes.push_back(mode); }
  }
  return modes;
}

inline std::string request_name(metric_request const& r)
{
  std::string s;
  auto const add = [&](bool on, char const* name) {
    if (on) { s += (s.empty() ? "" : ",") + std::string(name); }
  };
  add(r.range, "range");
  add(r.min, "min");
  add(r.max, "max");
  add(r.count, "count");
  add(r.mean, "mean");
  add(r.stddev, "stddev");
  return s.empty() ? "(none)" : s;
}

inline std::uint32_t bits_of(float f)
{
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/// The ulp distance the app's `compare` uses (core/result_compare.hpp), so tests and the tool
/// judge "within 1 ulp" the same way.
using heightgrid::ulp_distance;

namespace detail {

inline std::string show(float f)
{
  std::ostringstream os;
  os.precision(9);
  os << f << " [0x" << std::hex << bits_of(f) << "]";
  return os.str();
}
inline std::string show(std::uint32_t v) { return std::to_string(v); }

/// Compares one band; `max_ulps` < 0 means bit-identical. Appends a description to `why`.
template <typename T>
bool same_band(char const* name, bool requested, column<T> const& got, column<T> const& want,
               std::uint64_t cells, int max_ulps, std::string& why)
{
  std::size_t const expected_size = requested ? cells : 0;
  if (got.size() != expected_size) {
    why += std::string(name) + ": " + std::to_string(got.size()) + " entries, expected " +
           std::to_string(expected_size) + (requested ? "" : " (not requested)") + "\n";
    return false;
  }
  if (want.size() != got.size()) {
    why += std::string(name) + ": reference has " + std::to_string(want.size()) + " entries\n";
    return false;
  }
  std::uint64_t mismatches = 0;
  std::string first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    bool ok = false;
    if constexpr (std::is_same_v<T, float>) {
      ok = max_ulps < 0 ? bits_of(got[i]) == bits_of(want[i])
                        : ulp_distance(got[i], want[i]) <= static_cast<std::uint64_t>(max_ulps);
    } else {
      ok = got[i] == want[i];
    }
    if (!ok && mismatches++ < 5) {
      first += "  cell " + std::to_string(i) + ": got " + show(got[i]) + ", want " + show(want[i]) + "\n";
    }
  }
  if (mismatches == 0) { return true; }
  why += std::string(name) + ": " + std::to_string(mismatches) + " of " + std::to_string(got.size()) +
         " cells differ" + (max_ulps < 0 ? " (bitwise)" : " (by more than " + std::to_string(max_ulps) + " ulp)") +
         ", first:\n" + first;
  return false;
}

}  // namespace detail

/// Exactly the requested bands, each num_cells long; min/max/range/count bit-identical to `want`,
/// mean/stddev within `mean_ulps` float ulps.
inline ::testing::AssertionResult same_results(cell_results const& got, cell_results const& want,
                                               metric_request const& request, std::uint64_t num_cells,
                                               int mean_ulps = 1)
{
  std::string why;
  bool ok = true;
  ok &= detail::same_band("min", request.min, got.min, want.min, num_cells, -1, why);
  ok &= detail::same_band("max", request.max, got.max, want.max, num_cells, -1, why);
  ok &= detail::same_band("range", request.range, got.range, want.range, num_cells, -1, why);
  ok &= detail::same_band("count", request.count, got.count, want.count, num_cells, -1, why);
  ok &= detail::same_band("mean", request.mean, got.mean, want.mean, num_cells, mean_ulps, why);
  ok &= detail::same_band("stddev", request.stddev, got.stddev, want.stddev, num_cells, mean_ulps, why);
  if (ok) { return ::testing::AssertionSuccess(); }
  return ::testing::AssertionFailure() << "bands " << request_name(request) << ":\n" << why;
}

/// A CSR with the given number of points per cell and z uniform in [lo, hi).
inline csr_grid make_csr(std::vector<std::uint64_t> const& counts, std::uint64_t seed, double lo = 100.0,
                         double hi = 2000.0)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> z(lo, hi);
  csr_grid csr;
  csr.offsets.reserve(counts.size() + 1);
  csr.offsets.push_back(0);
  for (auto const n : counts) { csr.offsets.push_back(csr.offsets.back() + n); }
  csr.z.resize(csr.offsets.back());
  for (auto& v : csr.z) { v = z(rng); }
  return csr;
}

/// Mode names for parameterized test names ("warp").
struct mode_param_name {
  std::string operator()(::testing::TestParamInfo<reduce_mode> const& info) const
  {
    return std::string(mode_name(info.param));
  }
};

}  // namespace heightgrid::test
