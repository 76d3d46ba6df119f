// The reduction ladder's names and support table (host only, built with and without CUDA).

#include "heightgrid/ladder/reduction_ladder.hpp"

#include <array>
#include <charconv>
#include <cstdint>

namespace heightgrid {
namespace {

// The one list of kernels (ops, types) that parsing, all_ladder_kernels() and the tests go through.
constexpr std::array kernels{ladder_kernel::interleaved_divergent,
                             ladder_kernel::interleaved_strided,
                             ladder_kernel::sequential,
                             ladder_kernel::first_add,
                             ladder_kernel::unroll_last_warp,
                             ladder_kernel::complete_unroll,
                             ladder_kernel::multiple_elements,
                             ladder_kernel::warp_shuffle,
                             ladder_kernel::cub,
                             ladder_kernel::kahan};
constexpr std::array ops{ladder_op::sum, ladder_op::max};
constexpr std::array types{ladder_type::int32, ladder_type::float32, ladder_type::float64};

}  // namespace

std::string_view ladder_kernel_name(ladder_kernel kernel) noexcept
{
  switch (kernel) {
    case ladder_kernel::interleaved_divergent:
      return "interleaved_divergent";
    case ladder_kernel::interleaved_strided:
      return "interleaved_strided";
    case ladder_kernel::sequential:
      return "sequential";
    case ladder_kernel::first_add:
      return "first_add";
    case ladder_kernel::unroll_last_warp:
      return "unroll_last_warp";
    case ladder_kernel::complete_unroll:
      return "complete_unroll";
    case ladder_kernel::multiple_elements:
      return "multiple_elements";
    case ladder_kernel::warp_shuffle:
      return "warp_shuffle";
    case ladder_kernel::cub:
      return "cub";
    case ladder_kernel::kahan:
      return "kahan";
  }
  return "?";
}

std::optional<ladder_kernel> parse_ladder_kernel(std::string_view text) noexcept
{
  int number = 0;
  auto const [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  bool const numeric = ec == std::errc{} && end == text.data() + text.size();
  for (auto k : kernels) {
    if (numeric ? number == static_cast<int>(k) : text == ladder_kernel_name(k)) { return k; }
  }
  return std::nullopt;
}

std::vector<ladder_kernel> all_ladder_kernels() { return {kernels.begin(), kernels.end()}; }

std::string_view ladder_op_name(ladder_op op) noexcept
{
  switch (op) {
    case ladder_op::sum:
      return "sum";
    case ladder_op::max:
      return "max";
  }
  return "?";
}

std::optional<ladder_op> parse_ladder_op(std::string_view text) noexcept
{
  for (auto op : ops) {
    if (text == ladder_op_name(op)) { return op; }
  }
  return std::nullopt;
}

std::string_view ladder_type_name(ladder_type type) noexcept
{
  switch (type) {
    case ladder_type::int32:
      return "int32";
    case ladder_type::float32:
      return "float";
    case ladder_type::float64:
      return "double";
  }
  return "?";
}

std::optional<ladder_type> parse_ladder_type(std::string_view text) noexcept
{
  for (auto type : types) {
    if (text == ladder_type_name(type)) { return type; }
  }
  return std::nullopt;
}

std::size_t ladder_type_bytes(ladder_type type) noexcept
{
  switch (type) {
    case ladder_type::int32:
      return sizeof(std::int32_t);
    case ladder_type::float32:
      return sizeof(float);
    case ladder_type::float64:
      return sizeof(double);
  }
  return 0;
}

bool ladder_supports(ladder_kernel kernel, ladder_op op, ladder_type type) noexcept
{
  if (kernel == ladder_kernel::kahan) { return op == ladder_op::sum && type != ladder_type::int32; }
  return true;
}

}  // namespace heightgrid
