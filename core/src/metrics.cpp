#include "heightgrid/core/metrics.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/name_table.hpp"
#include "heightgrid/core/order_store.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace heightgrid {

void touch_pages(void* data, std::size_t bytes) noexcept
{
  if (data == nullptr || bytes == 0) { return; }
  constexpr std::size_t page = 4096;
  auto* const base = static_cast<unsigned char*>(data);
  // From the first page boundary inside the range (the bytes before it share a page with
  // memory the range does not own), plus the first byte.
  auto const first = static_cast<std::size_t>((page - reinterpret_cast<std::uintptr_t>(base) % page) % page);
  __atomic_store_n(base, static_cast<unsigned char>(0), __ATOMIC_RELAXED);
  auto const pages = static_cast<std::int64_t>(first < bytes ? (bytes - first + page - 1) / page : 0);
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < pages; ++k) {
    __atomic_store_n(base + first + static_cast<std::size_t>(k) * page, static_cast<unsigned char>(0), __ATOMIC_RELAXED);
  }
}

namespace {

struct metric_row {
  metric value;
  std::string_view name;
  std::string_view description;  ///< written into the band metadata (pNN and prange build theirs)
};
/// The metrics with fixed names, in the order of the usage message (pNN has no row: it is parsed).
constexpr std::array<metric_row, 8> metrics{{
  {metric::range, "range", "height range (max z - min z)"},
  {metric::min, "min", "minimum z"},
  {metric::max, "max", "maximum z"},
  {metric::count, "count", "number of points"},
  {metric::mean, "mean", "mean z"},
  {metric::stddev, "stddev", "population standard deviation of z"},
  {metric::median, "median", "median of z (the 50th percentile, as numpy.percentile(z, 50))"},
  {metric::prange, "prange", ""},
}};

/// The shortest plain decimal (no exponent) that reads back as `p` ("95", "2.5", "99.95"), for
/// 0 <= p <= 100.
std::string shortest_decimal(double p)
{
  char buf[64];
  for (int decimals = 0; decimals <= 20; ++decimals) {
    std::snprintf(buf, sizeof buf, "%.*f", decimals, p);
    if (std::strtod(buf, nullptr) == p) { break; }
  }
  return buf;
}

/// A plain decimal number: digits, at most one '.', at least one digit, nothing else.
std::optional<double> plain_decimal(std::string_view text) noexcept
{
  bool digit = false;
  bool dot = false;
  if (text.empty() || text.size() > 32) { return std::nullopt; }
  for (char const c : text) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      return std::nullopt;
    }
  }
  if (!digit) { return std::nullopt; }
  return std::strtod(std::string(text).c_str(), nullptr);
}

}  // namespace

std::string metric_name(metric m)
{
  if (m.kind == metric_kind::percentile) { return "p" + shortest_decimal(m.p); }
  return std::string(name_in(metrics, m));
}

std::string metric_description(metric m, double prange_lo, double prange_hi)
{
  if (m.kind == metric_kind::percentile) {
    return shortest_decimal(m.p) + "th percentile of z (linear interpolation, as numpy.percentile)";
  }
  if (m.kind == metric_kind::prange) {
    return "robust height range: " + shortest_decimal(prange_hi) + "th - " + shortest_decimal(prange_lo) +
           "th percentile of z";
  }
  auto const* row = row_in(metrics, m);
  return row == nullptr ? std::string("?") : std::string(row->description);
}

std::optional<metric> parse_metric(std::string_view name) noexcept
{
  if (auto const m = parse_in(metrics, name)) { return m; }
  if (name.size() >= 2 && name.front() == 'p') {
    auto const p = plain_decimal(name.substr(1));
    if (p && *p >= 0.0 && *p <= 100.0) { return metric::percentile(*p); }
  }
  return std::nullopt;
}

std::vector<metric> parse_metric_list(std::string_view list)
{
  std::vector<metric> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    auto const comma = std::min(list.find(',', pos), list.size());
    auto const name = list.substr(pos, comma - pos);
    auto const m = parse_metric(name);
    bool const percentile_like = !name.empty() && name.front() == 'p' && name != "prange";
    HG_EXPECTS(m.has_value(), error_kind::usage,
            percentile_like
              ? "--metrics: '" + std::string(name) +
                  "' is not a percentile: pNN takes a number from 0 to 100 (decimals allowed, e.g. p95, p2.5)"
              : "--metrics: unknown metric '" + std::string(name) +
                  "' (expected a comma-separated list of " + names_in(metrics, ", ") + ", pNN)");
    HG_EXPECTS(std::find(out.begin(), out.end(), *m) == out.end(), error_kind::usage,
            "--metrics: metric '" + std::string(name) + "' is listed twice");
    out.push_back(*m);
    pos = comma + 1;
  }
  return out;
}

std::pair<double, double> parse_prange(std::string_view text)
{
  auto const comma = text.find(',');
  std::optional<double> lo, hi;
  if (comma != std::string_view::npos) {
    lo = plain_decimal(text.substr(0, comma));
    hi = plain_decimal(text.substr(comma + 1));
  }
  HG_EXPECTS(lo && hi && *hi <= 100.0, error_kind::usage,
          "--prange: '" + std::string(text) + "' is not LO,HI with two percentiles from 0 to 100 (e.g. 5,95)");
  HG_EXPECTS(*lo < *hi, error_kind::usage,
          "--prange: '" + std::string(text) + "': the low percentile must be below the high one");
  return {*lo, *hi};
}

metric_request metric_request::from(std::vector<metric> const& metrics, double prange_lo, double prange_hi)
{
  metric_request r;
  r.prange_lo = prange_lo;
  r.prange_hi = prange_hi;
  auto const add_percentile = [&r](double p) {
    if (std::find(r.percentiles.begin(), r.percentiles.end(), p) == r.percentiles.end()) { r.percentiles.push_back(p); }
  };
  for (auto m : metrics) {
    switch (m.kind) {
      case metric_kind::range: r.range = true; break;
      case metric_kind::min: r.min = true; break;
      case metric_kind::max: r.max = true; break;
      case metric_kind::count: r.count = true; break;
      case metric_kind::mean: r.mean = true; break;
      case metric_kind::stddev: r.stddev = true; break;
      case metric_kind::percentile: add_percentile(m.p); break;
      case metric_kind::median: add_percentile(50.0); break;
      case metric_kind::prange: r.prange = true; break;
    }
  }
  return r;
}

column<float> const& cell_results::float_column(metric m) const
{
  switch (m.kind) {
    case metric_kind::range: return range;
    case metric_kind::min: return min;
    case metric_kind::max: return max;
    case metric_kind::mean: return mean;
    case metric_kind::stddev: return stddev;
    case metric_kind::prange: return prange;
    case metric_kind::percentile:
    case metric_kind::median: {
      double const p = m.kind == metric_kind::median ? 50.0 : m.p;
      for (std::size_t k = 0; k < percentile_of.size() && k < percentile.size(); ++k) {
        if (percentile_of[k] == p) { return percentile[k]; }
      }
      break;
    }
    case metric_kind::count: break;
  }
  throw error(error_kind::internal, "cell_results: no float column for " + metric_name(m));
}

std::size_t metric_request::percentile_slot(double p) const noexcept
{
  return static_cast<std::size_t>(std::find(percentiles.begin(), percentiles.end(), p) - percentiles.begin());
}

cell_results reduce_cells_cpu(csr_grid const& csr, metric_request const& request, float nodata)
{
  auto const cells = static_cast<std::ptrdiff_t>(csr.num_cells());
  cell_results out;
  auto const size_if = [&](column<float>& v, bool wanted) {
    if (wanted) { v.resize(static_cast<std::size_t>(cells)); }
  };
  size_if(out.min, request.min);
  size_if(out.max, request.max);
  size_if(out.range, request.range);
  size_if(out.mean, request.mean);
  size_if(out.stddev, request.stddev);
  if (request.count) { out.count.resize(static_cast<std::size_t>(cells)); }
  if (request.needs_order()) { size_order_columns(out, request, static_cast<std::size_t>(cells)); }

  double const* const z = csr.z.data();
  point_offset const* const offsets = csr.offsets.data();
  // Cells differ wildly in size: dynamic scheduling in blocks of cells keeps threads busy.
#pragma omp parallel
  {
  std::vector<double> sorted;  // a cell's values, for the order statistics
#pragma omp for schedule(dynamic, 4096)
  for (std::ptrdiff_t c = 0; c < cells; ++c) {
    auto const begin = offsets[c];
    auto const end = offsets[c + 1];
    auto const n = end - begin;
    if (request.count) { out.count[c] = static_cast<std::uint32_t>(n); }
    if (request.needs_order()) {
      sorted.assign(z + begin, z + end);
      sort_values(sorted.data(), sorted.size());
      finalize_order_cell(sorted.data(), n, request, out, static_cast<std::size_t>(c), nodata);
    }
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
  }
  return out;
}

}  // namespace heightgrid
