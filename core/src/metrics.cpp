#include "heightgrid/core/metrics.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/name_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>

namespace heightgrid {

namespace {

struct metric_row {
  metric value;
  std::string_view name;
  std::string_view description;  ///< written into the band metadata
};
constexpr std::array<metric_row, 6> metrics{{
  {metric::range, "range", "height range (max z - min z)"},
  {metric::min, "min", "minimum z"},
  {metric::max, "max", "maximum z"},
  {metric::count, "count", "number of points"},
  {metric::mean, "mean", "mean z"},
  {metric::stddev, "stddev", "population standard deviation of z"},
}};

}  // namespace

std::string_view metric_name(metric m) noexcept { return name_in(metrics, m); }

std::string_view metric_description(metric m) noexcept
{
  auto const* row = row_in(metrics, m);
  return row == nullptr ? std::string_view("?") : row->description;
}

std::optional<metric> parse_metric(std::string_view name) noexcept { return parse_in(metrics, name); }

std::vector<metric> parse_metric_list(std::string_view list)
{
  std::vector<metric> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    auto const comma = std::min(list.find(',', pos), list.size());
    auto const name = list.substr(pos, comma - pos);
    auto const m = parse_metric(name);
    HG_EXPECTS(m.has_value(), error_kind::usage,
            "--metrics: unknown metric '" + std::string(name) +
              "' (expected a comma-separated list of " + names_in(metrics, ", ") + ")");
    HG_EXPECTS(std::find(out.begin(), out.end(), *m) == out.end(), error_kind::usage,
            "--metrics: metric '" + std::string(name) + "' is listed twice");
    out.push_back(*m);
    pos = comma + 1;
  }
  return out;
}

metric_request metric_request::from(std::vector<metric> const& metrics) noexcept
{
  metric_request r;
  for (auto m : metrics) {
    switch (m) {
      case metric::range: r.range = true; break;
      case metric::min: r.min = true; break;
      case metric::max: r.max = true; break;
      case metric::count: r.count = true; break;
      case metric::mean: r.mean = true; break;
      case metric::stddev: r.stddev = true; break;
    }
  }
  return r;
}

cell_results reduce_cells_cpu(csr_grid const& csr, metric_request const& request, float nodata)
{
  auto const cells = static_cast<std::ptrdiff_t>(csr.num_cells());
  cell_results out;
  auto const size_if = [&](std::vector<float>& v, bool wanted) {
    if (wanted) { v.resize(static_cast<std::size_t>(cells)); }
  };
  size_if(out.min, request.min);
  size_if(out.max, request.max);
  size_if(out.range, request.range);
  size_if(out.mean, request.mean);
  size_if(out.stddev, request.stddev);
  if (request.count) { out.count.resize(static_cast<std::size_t>(cells)); }

  double const* const z = csr.z.data();
  point_offset const* const offsets = csr.offsets.data();
  // Cells differ wildly in size: dynamic scheduling in blocks of cells keeps threads busy.
#pragma omp parallel for schedule(dynamic, 4096)
  for (std::ptrdiff_t c = 0; c < cells; ++c) {
    auto const begin = offsets[c];
    auto const end = offsets[c + 1];
    auto const n = end - begin;
    if (request.count) { out.count[c] = static_cast<std::uint32_t>(n); }
    if (n == 0) {
      if (request.min) { out.min[c] = nodata; }
      if (request.max) { out.max[c] = nodata; }
      if (request.range) { out.range[c] = nodata; }
      if (request.mean) { out.mean[c] = nodata; }
      if (request.stddev) { out.stddev[c] = nodata; }
      continue;
    }
    double lo = z[begin];
    double hi = z[begin];
    double sum = 0.0;
    for (auto i = begin; i < end; ++i) {
      lo = std::min(lo, z[i]);
      hi = std::max(hi, z[i]);
      sum += z[i];
    }
    if (request.min) { out.min[c] = static_cast<float>(lo); }
    if (request.max) { out.max[c] = static_cast<float>(hi); }
    if (request.range) { out.range[c] = static_cast<float>(hi - lo); }
    double const mean = sum / static_cast<double>(n);
    if (request.mean) { out.mean[c] = static_cast<float>(mean); }
    if (request.stddev) {
      double m2 = 0.0;
      for (auto i = begin; i < end; ++i) {
        double const d = z[i] - mean;
        m2 += d * d;
      }
      out.stddev[c] = static_cast<float>(std::sqrt(m2 / static_cast<double>(n)));
    }
  }
  return out;
}

}  // namespace heightgrid
