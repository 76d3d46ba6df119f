#include "heightgrid/core/metrics.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/name_table.hpp"
#include "heightgrid/core/order_store.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/mman.h>

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

bool populate_pages(void* data, std::size_t bytes) noexcept
{
#ifndef MADV_POPULATE_WRITE
  constexpr int populate_write = 23;  // Linux 5.14 (uapi/asm-generic/mman-common.h)
#else
  constexpr int populate_write = MADV_POPULATE_WRITE;
#endif
  constexpr std::size_t page = 4096;
  if (data == nullptr || bytes == 0) { return true; }
  if (reinterpret_cast<std::uintptr_t>(data) % page != 0) { return false; }
  // Pieces of 8 MiB: enough for the team, few system calls.
  constexpr std::size_t piece = std::size_t{8} << 20;
  auto const pieces = static_cast<std::int64_t>((bytes + piece - 1) / piece);
  auto* const base = static_cast<unsigned char*>(data);
  bool failed = false;
#pragma omp parallel for schedule(dynamic, 1) reduction(|| : failed)
  for (std::int64_t k = 0; k < pieces; ++k) {
    std::size_t const from = static_cast<std::size_t>(k) * piece;
    std::size_t const n = std::min(piece, bytes - from);
    failed = failed || ::madvise(base + from, n, populate_write) != 0;
  }
  return !failed;
}

void* allocate_huge_column(std::size_t bytes)
{
  constexpr std::size_t huge_page = std::size_t{2} << 20;
  std::size_t const rounded = (bytes + huge_page - 1) / huge_page * huge_page;
  if (rounded < bytes) { throw std::bad_alloc(); }
  void* const p = std::aligned_alloc(huge_page, rounded);
  if (p == nullptr) { throw std::bad_alloc(); }
  (void)::madvise(p, rounded, MADV_HUGEPAGE);  // advice: 4 KiB pages where the kernel declines
  return p;
}

void free_huge_column(void* p) noexcept { std::free(p); }

void copy_bytes_parallel(void* dst, void const* src, std::size_t bytes) noexcept
{
  constexpr std::size_t piece = std::size_t{256} << 10;
  auto* const d = static_cast<unsigned char*>(dst);
  auto const* const s = static_cast<unsigned char const*>(src);
  auto const pieces = static_cast<std::int64_t>((bytes + piece - 1) / piece);
  if (pieces <= 1) {
    if (bytes > 0) { std::memcpy(d, s, bytes); }
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < pieces; ++k) {
    std::size_t const pos = static_cast<std::size_t>(k) * piece;
    std::memcpy(d + pos, s + pos, std::min(piece, bytes - pos));
  }
}

namespace {

struct metric_row {
  metric value;
  std::string_view name;
  std::string_view description;  ///< written into the band metadata (pNN and prange build theirs)
};
/// The metrics with fixed names, in the order of the usage message (pNN has no row: it is parsed).
constexpr std::array<metric_row, 15> metrics{{
  {metric::range, "range", "height range (max z - min z)"},
  {metric::min, "min", "minimum z"},
  {metric::max, "max", "maximum z"},
  {metric::count, "count", "number of points"},
  {metric::mean, "mean", "mean z"},
  {metric::stddev, "stddev", "population standard deviation of z"},
  {metric::median, "median", "median of z (the 50th percentile, as numpy.percentile(z, 50))"},
  {metric::prange, "prange", ""},
  {metric::skewness, "skewness", "skewness of z (scipy.stats.skew, biased: m3 / m2^1.5)"},
  {metric::kurtosis, "kurtosis", "excess kurtosis of z (scipy.stats.kurtosis, Fisher, biased: m4 / m2^2 - 3)"},
  {metric::cover(), "cover", ""},
  {metric::entropy, "entropy", "normalised entropy of z in 1-unit bins from 0 (lidR's entropy(z, by = 1))"},
  {metric::density, "density", "points per square unit of the cell"},
  {metric::first_returns, "first", "number of first returns (return number 1)"},
  {metric::last_returns, "last", "number of last returns (return number = number of returns)"},
}};

/// The classes of a count:CLASSES band, increasing ("2", "3,4,5").
std::string class_list(metric m, char const* separator)
{
  std::string out;
  for (unsigned c = 0; c < 256; ++c) {
    if (!m.has_class(c)) { continue; }
    if (!out.empty()) { out += separator; }
    out += std::to_string(c);
  }
  return out;
}

/// A class number: 0..255, digits only.
std::optional<unsigned> class_number(std::string_view text) noexcept
{
  if (text.empty() || text.size() > 3) { return std::nullopt; }
  unsigned v = 0;
  for (char const c : text) {
    if (c < '0' || c > '9') { return std::nullopt; }
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > 255) { return std::nullopt; }
  return v;
}

/// A decimal with an optional sign ("-1.5", "2", "+3"), as the heights of above: and zbin: are.
std::optional<double> signed_decimal(std::string_view text) noexcept;

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

std::optional<double> signed_decimal(std::string_view text) noexcept
{
  bool const negative = !text.empty() && text.front() == '-';
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) { text.remove_prefix(1); }
  auto const v = plain_decimal(text);
  if (!v) { return std::nullopt; }
  return negative ? -*v : *v;
}

/// A height as a band name shows it ("2", "-0.5", "12.25").
std::string height_name(double h) { return (h < 0.0 ? "-" : "") + shortest_decimal(std::fabs(h)); }

}  // namespace

std::string metric_name(metric m)
{
  switch (m.kind) {
    case metric_kind::percentile: return "p" + shortest_decimal(m.p);
    case metric_kind::above: return "above:" + height_name(m.p);
    case metric_kind::zbin: return "zbin:" + height_name(m.p) + ".." + height_name(m.q);
    case metric_kind::cover: return "cover";
    case metric_kind::class_count: return "count:" + class_list(m, ",");
    default: return std::string(name_in(metrics, m));
  }
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
  switch (m.kind) {
    case metric_kind::cover: return "share of points above " + height_name(m.p) + " (--cover-above)";
    case metric_kind::above: return "share of points above " + height_name(m.p);
    case metric_kind::zbin: return "share of points with " + height_name(m.p) + " <= z < " + height_name(m.q);
    case metric_kind::class_count: return "number of points of class " + class_list(m, ", ");
    default: break;
  }
  auto const* row = row_in(metrics, m);
  return row == nullptr ? std::string("?") : std::string(row->description);
}

std::optional<metric> parse_metric(std::string_view name) noexcept
{
  if (auto const m = parse_in(metrics, name)) { return m; }
  if (name.size() > 6 && name.substr(0, 6) == "above:") {
    if (auto const h = signed_decimal(name.substr(6))) { return metric::above(*h); }
    return std::nullopt;
  }
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
  auto const next_token = [&list](std::size_t at) { return list.substr(at, std::min(list.find(',', at), list.size()) - at); };
  while (pos <= list.size()) {
    auto const comma = std::min(list.find(',', pos), list.size());
    auto const name = list.substr(pos, comma - pos);
    if (name.substr(0, 5) == "zbin:") {
      // zbin:H1,H2,...: the numbers up to the next name.
      std::vector<double> heights;
      std::string_view token = name.substr(5);
      std::size_t end = comma;
      for (;;) {
        auto const h = signed_decimal(token);
        HG_EXPECTS(h.has_value(), error_kind::usage,
                   "--metrics: zbin: '" + std::string(token) + "' is not a height (zbin:H1,H2,... takes increasing numbers)");
        HG_EXPECTS(heights.empty() || *h > heights.back(), error_kind::usage,
                   "--metrics: zbin: the heights must increase (" + std::string(token) + " after " +
                     height_name(heights.empty() ? 0.0 : heights.back()) + ")");
        heights.push_back(*h);
        if (end >= list.size() || !signed_decimal(next_token(end + 1))) { break; }
        token = next_token(end + 1);
        end = std::min(list.find(',', end + 1), list.size());
      }
      HG_EXPECTS(heights.size() >= 2, error_kind::usage,
                 "--metrics: zbin: needs at least two heights (zbin:H1,H2,... gives the slices between them)");
      for (std::size_t k = 0; k + 1 < heights.size(); ++k) {
        auto const m = metric::zbin(heights[k], heights[k + 1]);
        HG_EXPECTS(std::find(out.begin(), out.end(), m) == out.end(), error_kind::usage,
                   "--metrics: metric '" + metric_name(m) + "' is listed twice");
        out.push_back(m);
      }
      pos = end + 1;
      continue;
    }
    if (name.substr(0, 6) == "count:") {
      // count:C1,C2,...: the class numbers up to the next name.
      std::vector<unsigned> classes;
      std::string_view token = name.substr(6);
      std::size_t end = comma;
      for (;;) {
        auto const c = class_number(token);
        HG_EXPECTS(c.has_value(), error_kind::usage,
                   "--metrics: count: '" + std::string(token) +
                     "' is not a class (count:C1,C2,... takes ASPRS class numbers from 0 to 255, e.g. count:2 or count:3,4,5)");
        HG_EXPECTS(std::find(classes.begin(), classes.end(), *c) == classes.end(), error_kind::usage,
                   "--metrics: count: class " + std::to_string(*c) + " is listed twice");
        classes.push_back(*c);
        if (end >= list.size() || !class_number(next_token(end + 1))) { break; }
        token = next_token(end + 1);
        end = std::min(list.find(',', end + 1), list.size());
      }
      auto const m = metric::class_count(classes.begin(), classes.end());
      HG_EXPECTS(std::find(out.begin(), out.end(), m) == out.end(), error_kind::usage,
                 "--metrics: metric '" + metric_name(m) + "' is listed twice");
      out.push_back(m);
      pos = end + 1;
      continue;
    }
    auto const m = parse_metric(name);
    bool const percentile_like = !name.empty() && name.front() == 'p' && name != "prange";
    HG_EXPECTS(m.has_value(), error_kind::usage,
            percentile_like
              ? "--metrics: '" + std::string(name) +
                  "' is not a percentile: pNN takes a number from 0 to 100 (decimals allowed, e.g. p95, p2.5)"
              : name.substr(0, 6) == "above:"
                  ? "--metrics: '" + std::string(name) + "': above:H takes a height (e.g. above:2)"
                  : "--metrics: unknown metric '" + std::string(name) + "' (expected a comma-separated list of " +
                      names_in(metrics, ", ") + ", pNN, above:H, zbin:H1,H2,..., count:CLASSES)");
    HG_EXPECTS(std::find(out.begin(), out.end(), *m) == out.end(), error_kind::usage,
            "--metrics: metric '" + std::string(name) + "' is listed twice");
    out.push_back(*m);
    pos = comma + 1;
  }
  auto const tagged = std::count_if(out.begin(), out.end(), [](metric m) { return m.is_tag_count(); });
  HG_EXPECTS(static_cast<std::size_t>(tagged) <= max_tag_bands, error_kind::usage,
             "--metrics: at most " + std::to_string(max_tag_bands) + " bands of count:CLASSES, first and last (" +
               std::to_string(tagged) + " asked for)");
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
      case metric_kind::skewness:
      case metric_kind::kurtosis:
      case metric_kind::cover:
      case metric_kind::above:
      case metric_kind::zbin:
      case metric_kind::entropy:
        if (std::find(r.shapes.begin(), r.shapes.end(), m) == r.shapes.end()) { r.shapes.push_back(m); }
        break;
      case metric_kind::density:
        r.density = true;
        r.count = true;
        break;
      case metric_kind::class_count:
      case metric_kind::first:
      case metric_kind::last:
        if (std::find(r.tags.begin(), r.tags.end(), m) == r.tags.end()) { r.tags.push_back(m); }
        break;
    }
  }
  HG_EXPECTS(r.tags.size() <= max_tag_bands, error_kind::usage,
             "--metrics: at most " + std::to_string(max_tag_bands) + " bands of count:CLASSES, first and last");
  return r;
}

void cell_results::add_density(metric_request const& request, float nodata)
{
  if (!request.density) { return; }
  HG_EXPECTS(count.size() > 0 || density.size() == 0, error_kind::internal, "cell_results: density without counts");
  density.resize(count.size());
  double const area = request.cell_area;
  for (std::size_t i = 0; i < count.size(); ++i) {
    density[i] = count[i] == 0 ? nodata : static_cast<float>(static_cast<double>(count[i]) / area);
  }
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
    case metric_kind::skewness:
    case metric_kind::kurtosis:
    case metric_kind::cover:
    case metric_kind::above:
    case metric_kind::zbin:
    case metric_kind::entropy:
      for (std::size_t k = 0; k < shape_of.size() && k < shape.size(); ++k) {
        if (shape_of[k] == m) { return shape[k]; }
      }
      break;
    case metric_kind::density: return density;
    case metric_kind::count:
    case metric_kind::class_count:
    case metric_kind::first:
    case metric_kind::last: break;
  }
  throw error(error_kind::internal, "cell_results: no float column for " + metric_name(m));
}

column<std::uint32_t> const& cell_results::tag_column(metric m) const
{
  for (std::size_t k = 0; k < tag_of.size() && k < tag.size(); ++k) {
    if (tag_of[k] == m) { return tag[k]; }
  }
  throw error(error_kind::internal, "cell_results: no count column for " + metric_name(m));
}

void cell_results::size_tag_columns(metric_request const& request, std::size_t cells)
{
  tag.resize(request.tags.size());
  tag_of = request.tags;
  for (auto& column : tag) { column.resize(cells); }
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
