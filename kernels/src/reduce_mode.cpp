#include "heightgrid/kernels/reduce_mode.hpp"

#include "heightgrid/core/name_table.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"

#include <array>
#include <string>

namespace heightgrid {
namespace {

constexpr std::array<name_row<csr_method>, 1> csr_methods{{
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

std::string_view csr_method_name(csr_method method) noexcept { return name_in(csr_methods, method); }

std::optional<csr_method> parse_csr_method(std::string_view name) noexcept { return parse_in(csr_methods, name); }

std::vector<csr_method> all_csr_methods() { return values_in(csr_methods); }

std::string_view batch_reduction_name(batch_reduction r) noexcept { return name_in(batch_reductions, r); }

}  // namespace heightgrid
