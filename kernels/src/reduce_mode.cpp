#include "heightgrid/kernels/reduce_mode.hpp"

#include <array>

namespace heightgrid {
namespace {

// The one list of modes (and of CSR methods) that parsing, all_modes() and the tests go through.
constexpr std::array modes{reduce_mode::thread, reduce_mode::warp, reduce_mode::cub};
constexpr std::array methods{csr_method::counting, csr_method::radix_sort};

}  // namespace

std::string_view mode_name(reduce_mode mode) noexcept
{
  switch (mode) {
    case reduce_mode::thread: return "thread";
    case reduce_mode::warp: return "warp";
    case reduce_mode::cub: return "cub";
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

}  // namespace heightgrid
