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

/// The CLI name that asks for choose_mode() instead of naming a mode. Not a reduce_mode: it is
/// resolved before the pipeline runs, and all_modes() does not list it.
inline constexpr std::string_view auto_mode_name = "auto";

/// The thresholds of choose_mode(), named so that a measurement can move them.
struct auto_mode_policy {
  /// `atomic` is picked only while its per-cell state (two 8-byte words, plus a 4-byte count) stays
  /// a fraction of the H100's 50 MiB L2: then its atomics resolve in L2 and it skips the radix sort
  /// of every point. Above it, the atomics of a random point order go to DRAM at sector granularity.
  /// 0: `auto` never picks atomic. On an H100 atomic lost to thread and hybrid on every input
  /// measured (docs/benchmarks.md: synthetic kinds at 10^8 and 10^9 points, real LAS files);
  /// raise this only with a measurement where it wins.
  static constexpr std::uint64_t atomic_max_cells = 0;
  /// ...and only when the cells hold enough points on average for the sort it saves to matter.
  static constexpr double atomic_min_points_per_cell = 4.0;
};

/// A mode and the reason it was picked, for the log.
struct mode_choice {
  reduce_mode mode{reduce_mode::hybrid};
  std::string reason;
};

/// `--mode auto`. Reads only `stats.cells` and `stats.points` (known before binning, which it must
/// be: `atomic` skips the CSR, so the choice comes before it is built); the other fields may be 0.
/// Rules, in order:
///  1. mean or stddev requested -> hybrid: they need every point of a cell, i.e. the CSR; hybrid is
///     the CSR mode built to match the better of thread and warp on every distribution.
///  2. cells <= auto_mode_policy::atomic_max_cells and points / cells >=
///     auto_mode_policy::atomic_min_points_per_cell -> atomic (no CSR to build).
///  3. otherwise -> hybrid.
/// Example: range on 10^8 points over 10^7 cells -> hybrid ("10000000 cells: the atomic state would
/// not stay in L2"); range,count on 10^8 points over 10^6 cells -> atomic.
[[nodiscard]] mode_choice choose_mode(metric_request const& request, cell_count_stats const& stats);

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
