#pragma once
// The GPU strategies for reducing a grid's cells, the ways of building its CSR on the device, their
// CLI names, and the rules of `--mode auto`. Host-clean: included by app/ through g++.

#include "heightgrid/core/cell_stats.hpp"
#include "heightgrid/core/metrics.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace heightgrid {

/// How the cells of a CSR grid are mapped onto GPU threads when reducing them. Every mode
/// produces the same bands under the output convention of metrics.hpp (see kernels/README.md).
enum class reduce_mode {
  thread,  ///< one thread per cell loops over the cell's points
  warp,    ///< one warp per cell: lanes stride through the points, shuffles reduce
  cub,     ///< cub::DeviceSegmentedReduce over the CSR: oracle and baseline
  hybrid,  ///< one lane per small cell, the whole warp for bigger ones, many warps for the biggest
  atomic,  ///< no CSR: every point updates its cell with atomics (range, min, max, count only)
};

/// What the rest of the program knows of a mode: its CLI name, whether it reduces a CSR (what
/// reduce(device_csr, ...) accepts; `atomic` updates cells from the points themselves and builds no
/// CSR, so only grid_points_gpu runs it), and whether it can produce mean and stddev (`atomic` keeps
/// only a min, a max and a count per cell).
struct reduce_mode_row {
  reduce_mode value;
  std::string_view name;
  bool reduces_csr;
  bool supports_sums;
};

/// The one list of modes. Parsing, all_modes(), `compare --list-modes`, the scripts, the
/// parameterised tests and the benchmarks all read it: a mode missing here exists nowhere.
inline constexpr std::array<reduce_mode_row, 5> reduce_modes{{
  {reduce_mode::thread, "thread", true, true},
  {reduce_mode::warp, "warp", true, true},
  {reduce_mode::cub, "cub", true, true},
  {reduce_mode::hybrid, "hybrid", true, true},
  {reduce_mode::atomic, "atomic", false, false},
}};

/// CLI name of a mode ("thread", "warp", "cub", "hybrid", "atomic").
[[nodiscard]] std::string_view mode_name(reduce_mode mode) noexcept;
[[nodiscard]] std::optional<reduce_mode> parse_mode(std::string_view name) noexcept;
/// Every mode, in table order: tests and benchmarks iterate over this list.
[[nodiscard]] std::vector<reduce_mode> all_modes();

/// True for the modes that reduce a CSR (reduce_mode_row::reduces_csr).
[[nodiscard]] bool mode_reduces_csr(reduce_mode mode) noexcept;
/// True when `mode` can produce every band of `request` (mean and stddev need
/// reduce_mode_row::supports_sums).
[[nodiscard]] bool mode_supports(reduce_mode mode, metric_request const& request) noexcept;

/// The CLI name that leaves the mode to the job: `atomic` for range/min/max/count, `thread` for
/// mean/stddev (their sums in the CPU's order). Not a reduce_mode: all_modes() does not list it.
inline constexpr std::string_view auto_mode_name = "auto";

/// How the device turns per-point cell ids into a CSR: one way, the stable radix sort of (cell, z)
/// pairs and offsets by binary search (CPU order kept), the sort the streaming grid's run CSR shares.
/// A histogram + scan + atomic-cursor scatter built it 5x slower at 10^8 and 10^9 points
/// (docs/benchmarks-history.md, "The whole-cloud `grid` pipeline before streaming") and is gone.
enum class csr_method {
  radix_sort,
};

inline constexpr csr_method default_csr_method = csr_method::radix_sort;

/// Name of a method in reports ("radix_sort").
[[nodiscard]] std::string_view csr_method_name(csr_method method) noexcept;
[[nodiscard]] std::optional<csr_method> parse_csr_method(std::string_view name) noexcept;
[[nodiscard]] std::vector<csr_method> all_csr_methods();

}  // namespace heightgrid
