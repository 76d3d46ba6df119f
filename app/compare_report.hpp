#pragma once
// What `heightgrid compare` prints and writes about its runs: the modes' timings as a table, the
// timed phases, the cells' imbalance (histogram, Gini, lane efficiency) as text and JSON, the plot's
// title, and --replot (the plot of an earlier --json).

#include "compare_command.hpp"

#include "heightgrid/core/cell_stats.hpp"
#include "heightgrid/core/grid_spec.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid::app::compare_report {

using json = nlohmann::ordered_json;

/// The timed runs of one mode and what follows from them.
struct mode_result {
  std::string name;
  bool gpu{false};
  bool uses_csr{true};     ///< false for a mode that reduces the points (atomic): timed in grid_points_gpu
  double bytes{0.0};       ///< the fewest bytes it must move
  std::vector<double> ms;  ///< every timed run: CUDA events (GPU) or wall clock (cpu)
  double median_ms{0.0}, min_ms{0.0}, max_ms{0.0};
  double gbps{0.0};
  std::optional<double> percent_of_read_bw;  ///< GPU modes only
  std::optional<double> speedup_vs_thread;   ///< when thread ran
  std::optional<double> d2h_ms;              ///< GPU: download of the bands after the last run
};

/// Phases timed once (milliseconds); absent where the path did not run them.
struct phase_times {
  double read_ms{0.0};  ///< read (or generate) and filter the points, on the host
  std::optional<double> h2d_ms, cell_ids_ms, csr_ms;  ///< device_csr::from_points
  std::optional<double> csr_cpu_ms;                   ///< bin_points_cpu, without a GPU
  std::optional<double> d2h_csr_ms;                   ///< device CSR -> host (statistics, cpu mode)
  std::optional<double> d2h_bands_ms;                 ///< first GPU mode's bands -> host
  double stats_ms{0.0};                               ///< describe_cell_counts
};

[[nodiscard]] double median(std::vector<double> v);
/// A histogram bin's range of points a cell: "0", "2-3", "1,024-2,047".
[[nodiscard]] std::string bin_label(std::size_t k);
/// The cells' load imbalance (histogram, Gini, what a thread a cell leaves idle), as text.
[[nodiscard]] std::string imbalance_text(cell_count_stats const& s, grid_spec const& grid);
/// The phases timed once, as text.
[[nodiscard]] std::string phases_text(phase_times const& p, std::string const& csr_name);
/// The modes' timings, one row a mode.
[[nodiscard]] std::string table_text(std::vector<mode_result> const& modes);
[[nodiscard]] json stats_json(cell_count_stats const& s);
[[nodiscard]] json optional_json(std::optional<double> v);
[[nodiscard]] std::string plot_title(std::string const& input, std::uint64_t points, std::uint64_t cols,
                                     std::uint64_t rows, double res, std::string const& device);
/// --replot: the plot of an earlier run, from its --json (e.g. a GPU machine without gnuplot).
int replot(compare_options const& o);

}  // namespace heightgrid::app::compare_report
