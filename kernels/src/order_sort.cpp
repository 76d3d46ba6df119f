// Names of the order-statistic sorts (order_stats.hpp), built with or without CUDA.

#include "heightgrid/core/name_table.hpp"
#include "heightgrid/kernels/order_stats.hpp"

#include <array>

namespace heightgrid {
namespace {

constexpr std::array<name_row<order_sort>, 2> order_sorts{{
  {order_sort::segmented, "sort-segmented"},
  {order_sort::radix, "sort-radix"},
}};

}  // namespace

std::string_view order_sort_name(order_sort s) noexcept { return name_in(order_sorts, s); }

std::optional<order_sort> parse_order_sort(std::string_view name) noexcept { return parse_in(order_sorts, name); }

}  // namespace heightgrid
