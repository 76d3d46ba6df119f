#pragma once
// Per-cell statistics computed from the CSR, and their output convention.

#include "heightgrid/core/binning.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace heightgrid {

enum class metric { range, min, max, count, mean, stddev };

/// CLI / band-description name of a metric ("range", "min", ...).
[[nodiscard]] std::string_view metric_name(metric m) noexcept;
/// Human description written into the band metadata.
[[nodiscard]] std::string_view metric_description(metric m) noexcept;
[[nodiscard]] std::optional<metric> parse_metric(std::string_view name) noexcept;
/// Parses "range,min,count"; throws error_kind::usage on an unknown or repeated name.
[[nodiscard]] std::vector<metric> parse_metric_list(std::string_view list);

/// Default value written to empty cells of float bands.
inline constexpr float default_nodata = std::numeric_limits<float>::quiet_NaN();

/// Which per-cell outputs a reduction must produce.
struct metric_request {
  bool min{false};
  bool max{false};
  bool range{false};
  bool count{false};
  bool mean{false};
  bool stddev{false};

  [[nodiscard]] static metric_request from(std::vector<metric> const& metrics) noexcept;
  [[nodiscard]] bool needs_sums() const noexcept { return mean || stddev; }
};

/// Per-cell results, one entry per cell, only the requested columns filled.
///
/// Convention shared by every backend (so outputs are bit-identical):
///  - min/max/range are reduced in double and rounded to float once:
///    min = float(min_z), max = float(max_z), range = float(max_z - min_z);
///  - mean = float(sum_z / n) with sum_z in double;
///  - stddev is the population standard deviation float(sqrt(sum((z - mean_d)^2) / n)), a second
///    pass over the cell with mean_d in double (no sum-of-squares cancellation);
///  - empty cells hold `nodata` in every float column and 0 in count; a one-point cell has range 0.
struct cell_results {
  std::vector<float> min;
  std::vector<float> max;
  std::vector<float> range;
  std::vector<std::uint32_t> count;
  std::vector<float> mean;
  std::vector<float> stddev;
};

/// CPU (OpenMP) reduction of every cell. Deterministic whatever the thread count: each cell is
/// reduced sequentially in CSR order.
cell_results reduce_cells_cpu(csr_grid const& csr, metric_request const& request,
                              float nodata = default_nodata);

}  // namespace heightgrid
