#pragma once
// Order statistics (percentiles, median, prange) of a whole CSR grid on the device: what `compare`
// times. The streaming pipeline computes the same bands inside gpu_binner with the same code.
// Host-clean: included by app/ through g++.

#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/name_table.hpp"
#include "heightgrid/kernels/device_csr.hpp"

#include <array>
#include <optional>
#include <string_view>

namespace heightgrid {

/// How a grid's points are put in (cell, z) order before the percentiles are read off.
enum class order_sort {
  segmented,  ///< scatter into cell order by the counts' offsets, then cub::DeviceSegmentedSort per cell
  radix,      ///< two global radix sorts (cub::DeviceRadixSort): by z, then stably by cell
};

/// The sorts' CLI names (`compare --modes`), read through name_table.hpp's name_in / parse_in.
inline constexpr std::array<name_row<order_sort>, 2> order_sorts{
  {{order_sort::segmented, "sort-segmented"}, {order_sort::radix, "sort-radix"}}};

struct order_stats_run {
  cell_results bands;      ///< percentile columns (request.percentiles) and prange
  double kernel_ms{0.0};   ///< device time of the sort and the per-cell selection (CUDA events)
};

/// The order-statistic bands of every cell of `csr` (its z values in cell order), sorted with
/// `method`. Throws error_kind::device without a GPU, error_kind::resource when memory runs out.
[[nodiscard]] order_stats_run order_stats_of_csr(device_csr const& csr, metric_request const& request, float nodata,
                                                 order_sort method);

}  // namespace heightgrid
