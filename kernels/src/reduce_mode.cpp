#include "heightgrid/kernels/reduce_mode.hpp"

#include "heightgrid/kernels/gpu_binner.hpp"

#include <array>
#include <sstream>
#include <string>

namespace heightgrid {
namespace {

// The one list of modes (and of CSR methods) that parsing, all_modes() and the tests go through.
constexpr std::array modes{reduce_mode::thread, reduce_mode::warp, reduce_mode::cub, reduce_mode::hybrid,
                           reduce_mode::atomic};
constexpr std::array methods{csr_method::counting, csr_method::radix_sort};

}  // namespace

std::string_view mode_name(reduce_mode mode) noexcept
{
  switch (mode) {
    case reduce_mode::thread: return "thread";
    case reduce_mode::warp: return "warp";
    case reduce_mode::cub: return "cub";
    case reduce_mode::hybrid: return "hybrid";
    case reduce_mode::atomic: return "atomic";
  }
  return "?";
}

std::optional<reduce_mode> parse_mode(std::string_view name) noexcept
{
  for (auto mode : modes) {
    if (name == mode_name(mode)) { return mode; }
  }
  return std::nullopt;
}

std::vector<reduce_mode> all_modes() { return {modes.begin(), modes.end()}; }

bool mode_reduces_csr(reduce_mode mode) noexcept { return mode != reduce_mode::atomic; }

bool mode_supports(reduce_mode mode, metric_request const& request) noexcept
{
  return mode != reduce_mode::atomic || !request.needs_sums();
}

mode_choice choose_mode(metric_request const& request, cell_count_stats const& stats)
{
  using policy = auto_mode_policy;
  if (!mode_supports(reduce_mode::atomic, request)) {
    return {reduce_mode::hybrid, "mean/stddev need the CSR, and hybrid is the CSR mode for every distribution"};
  }
  if (policy::atomic_max_cells == 0) {
    return {reduce_mode::hybrid, "hybrid handles every distribution; atomic is not picked automatically (it was "
                                 "slower than thread and hybrid on every input measured)"};
  }
  if (stats.cells > policy::atomic_max_cells) {
    return {reduce_mode::hybrid, std::to_string(stats.cells) + " cells: atomic's per-cell state would not stay in L2 " +
                                   "(it is picked up to " + std::to_string(policy::atomic_max_cells) + " cells)"};
  }
  double const per_cell = stats.cells == 0 ? 0.0 : static_cast<double>(stats.points) / static_cast<double>(stats.cells);
  std::ostringstream why;
  why.precision(3);
  if (per_cell < policy::atomic_min_points_per_cell) {
    why << per_cell << " points per cell: too few for skipping the CSR to pay (atomic is picked from "
        << policy::atomic_min_points_per_cell << ")";
    return {reduce_mode::hybrid, why.str()};
  }
  why << "range/min/max/count only, " << stats.cells << " cells (atomic's state stays in L2) and " << per_cell
      << " points per cell: no CSR to build";
  return {reduce_mode::atomic, why.str()};
}

std::string_view csr_method_name(csr_method method) noexcept
{
  switch (method) {
    case csr_method::counting: return "counting";
    case csr_method::radix_sort: return "radix_sort";
  }
  return "?";
}

std::optional<csr_method> parse_csr_method(std::string_view name) noexcept
{
  for (auto method : methods) {
    if (name == csr_method_name(method)) { return method; }
  }
  return std::nullopt;
}

std::vector<csr_method> all_csr_methods() { return {methods.begin(), methods.end()}; }

std::string_view batch_reduction_name(batch_reduction r) noexcept
{
  switch (r) {
    case batch_reduction::atomic: return "atomic";
    case batch_reduction::sorted: return "sorted";
  }
  return "?";
}

}  // namespace heightgrid
