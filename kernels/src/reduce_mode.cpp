#include "heightgrid/kernels/reduce_mode.hpp"

#include "heightgrid/core/name_table.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"

#include <array>
#include <sstream>
#include <string>

namespace heightgrid {
namespace {

constexpr std::array<name_row<csr_method>, 2> csr_methods{{
  {csr_method::counting, "counting"},
  {csr_method::radix_sort, "radix_sort"},
}};

constexpr std::array<name_row<batch_reduction>, 2> batch_reductions{{
  {batch_reduction::atomic, "atomic"},
  {batch_reduction::sorted, "sorted"},
}};

}  // namespace

std::string_view mode_name(reduce_mode mode) noexcept { return name_in(reduce_modes, mode); }

std::optional<reduce_mode> parse_mode(std::string_view name) noexcept { return parse_in(reduce_modes, name); }

std::vector<reduce_mode> all_modes() { return values_in(reduce_modes); }

bool mode_reduces_csr(reduce_mode mode) noexcept
{
  auto const* row = row_in(reduce_modes, mode);
  return row != nullptr && row->reduces_csr;
}

bool mode_supports(reduce_mode mode, metric_request const& request) noexcept
{
  auto const* row = row_in(reduce_modes, mode);
  return row != nullptr && (row->supports_sums || !request.needs_sums());
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

std::string_view csr_method_name(csr_method method) noexcept { return name_in(csr_methods, method); }

std::optional<csr_method> parse_csr_method(std::string_view name) noexcept { return parse_in(csr_methods, name); }

std::vector<csr_method> all_csr_methods() { return values_in(csr_methods); }

std::string_view batch_reduction_name(batch_reduction r) noexcept { return name_in(batch_reductions, r); }

}  // namespace heightgrid
