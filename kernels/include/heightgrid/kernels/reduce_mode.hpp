#pragma once
// The GPU strategies for reducing a grid's cells, the ways of building its CSR on the device, and
// their CLI names. Host-clean: included by app/ through g++.

#include <optional>
#include <string_view>
#include <vector>

namespace heightgrid {

/// How the cells of a CSR grid are mapped onto GPU threads when reducing them. Every mode
/// produces the same bands under the output convention of metrics.hpp (see kernels/README.md).
enum class reduce_mode {
  thread,  ///< one thread per cell loops over the cell's points
  warp,    ///< one warp per cell: lanes stride through the points, shuffles reduce
  cub,     ///< cub::DeviceSegmentedReduce over the CSR: oracle and baseline
};

/// CLI name of a mode ("thread", "warp", "cub").
[[nodiscard]] std::string_view mode_name(reduce_mode mode) noexcept;
[[nodiscard]] std::optional<reduce_mode> parse_mode(std::string_view name) noexcept;
/// Every mode, in declaration order: tests and benchmarks iterate over this list.
[[nodiscard]] std::vector<reduce_mode> all_modes();

/// How the device turns per-point cell ids into a CSR.
enum class csr_method {
  counting,    ///< histogram (atomics) + exclusive scan + atomic-cursor scatter; order in a cell varies
  radix_sort,  ///< stable radix sort of (cell, z) pairs + offsets by binary search; CPU order kept
};

/// The method used when none is asked for (to be revisited once both are measured on the H100).
inline constexpr csr_method default_csr_method = csr_method::radix_sort;

/// CLI name of a method ("counting", "radix_sort").
[[nodiscard]] std::string_view csr_method_name(csr_method method) noexcept;
[[nodiscard]] std::optional<csr_method> parse_csr_method(std::string_view name) noexcept;
[[nodiscard]] std::vector<csr_method> all_csr_methods();

}  // namespace heightgrid
