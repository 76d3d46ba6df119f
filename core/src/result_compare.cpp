#include "heightgrid/core/result_compare.hpp"

#include "heightgrid/core/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>
#include <vector>

namespace heightgrid {
namespace {

std::uint32_t bits_of(float f) noexcept
{
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/// First index where the two columns differ under `same`, or nullopt.
template <class T, class Same>
std::optional<std::uint64_t> first_mismatch(column<T> const& a, column<T> const& b, Same same)
{
  std::size_t const n = std::min(a.size(), b.size());
  // memcmp finds the common case (identical columns) at memory speed; the element loop only
  // runs when something differs or a tolerance applies.
  if (a.size() == b.size() && std::memcmp(a.data(), b.data(), n * sizeof(T)) == 0) { return std::nullopt; }
  for (std::size_t i = 0; i < n; ++i) {
    if (!same(a[i], b[i])) { return i; }
  }
  if (a.size() != b.size()) { return n; }
  return std::nullopt;
}

std::string show(double v, bool is_count)
{
  std::ostringstream os;
  if (is_count) {
    if (std::isnan(v)) {
      os << "(no cell)";
    } else {
      os << static_cast<std::uint64_t>(v);
    }
  } else {
    auto const f = static_cast<float>(v);
    os << std::setprecision(9) << f << " [0x" << std::hex << bits_of(f) << "]";
  }
  return os.str();
}

}  // namespace

std::uint64_t ulp_distance(float a, float b) noexcept
{
  if (bits_of(a) == bits_of(b)) { return 0; }
  if (std::isnan(a) || std::isnan(b)) { return std::numeric_limits<std::uint64_t>::max(); }
  auto const ordered = [](float f) {
    auto const u = bits_of(f);
    // Sign-magnitude to a monotonic integer line: negative floats count down from 0.
    return (u & 0x80000000U) != 0 ? -static_cast<std::int64_t>(u & 0x7fffffffU) : static_cast<std::int64_t>(u);
  };
  auto const d = ordered(a) - ordered(b);
  return static_cast<std::uint64_t>(d < 0 ? -d : d);
}

std::string band_difference::describe() const
{
  bool const is_count = band == metric::count;
  return "band " + std::string(metric_name(band)) + ", cell " + std::to_string(cell) + ": " + show(a, is_count) +
         " vs " + show(b, is_count);
}

std::optional<band_difference> first_difference(cell_results const& a, cell_results const& b,
                                                 metric_request const& request, std::uint64_t mean_ulps)
{
  auto const exact = [](float x, float y) { return bits_of(x) == bits_of(y); };
  auto const close = [mean_ulps](float x, float y) { return ulp_distance(x, y) <= mean_ulps; };
  auto const at = [](column<float> const& v, std::uint64_t i) {
    return i < v.size() ? static_cast<double>(v[i]) : std::numeric_limits<double>::quiet_NaN();
  };
  struct float_band {
    bool wanted;
    metric m;
    column<float> const& x;
    column<float> const& y;
  };
  float_band const bands[] = {
    {request.range, metric::range, a.range, b.range},
    {request.min, metric::min, a.min, b.min},
    {request.max, metric::max, a.max, b.max},
  };
  for (auto const& band : bands) {
    if (!band.wanted) { continue; }
    if (auto i = first_mismatch(band.x, band.y, exact)) { return band_difference{band.m, *i, at(band.x, *i), at(band.y, *i)}; }
  }
  if (request.count) {
    if (auto i = first_mismatch(a.count, b.count, [](std::uint32_t x, std::uint32_t y) { return x == y; })) {
      auto const c = [](column<std::uint32_t> const& v, std::uint64_t k) {
        return k < v.size() ? static_cast<double>(v[k]) : std::numeric_limits<double>::quiet_NaN();
      };
      return band_difference{metric::count, *i, c(a.count, *i), c(b.count, *i)};
    }
  }
  // Order statistics are exact on every backend (sorted values, one rule).
  static column<float> const none;
  for (std::size_t k = 0; k < request.percentiles.size(); ++k) {
    auto const& x = k < a.percentile.size() ? a.percentile[k] : none;
    auto const& y = k < b.percentile.size() ? b.percentile[k] : none;
    if (auto i = first_mismatch(x, y, exact)) {
      return band_difference{metric::percentile(request.percentiles[k]), *i, at(x, *i), at(y, *i)};
    }
  }
  if (request.prange) {
    if (auto i = first_mismatch(a.prange, b.prange, exact)) {
      return band_difference{metric::prange, *i, at(a.prange, *i), at(b.prange, *i)};
    }
  }
  // So are the shape metrics (one rule over the sorted values, no library maths) and density.
  for (std::size_t k = 0; k < request.shapes.size(); ++k) {
    auto const& x = k < a.shape.size() ? a.shape[k] : none;
    auto const& y = k < b.shape.size() ? b.shape[k] : none;
    if (auto i = first_mismatch(x, y, exact)) { return band_difference{request.shapes[k], *i, at(x, *i), at(y, *i)}; }
  }
  if (request.density) {
    if (auto i = first_mismatch(a.density, b.density, exact)) {
      return band_difference{metric::density, *i, at(a.density, *i), at(b.density, *i)};
    }
  }
  float_band const sums[] = {
    {request.mean, metric::mean, a.mean, b.mean},
    {request.stddev, metric::stddev, a.stddev, b.stddev},
  };
  for (auto const& band : sums) {
    if (!band.wanted) { continue; }
    if (auto i = first_mismatch(band.x, band.y, close)) { return band_difference{band.m, *i, at(band.x, *i), at(band.y, *i)}; }
  }
  return std::nullopt;
}

std::string mode_mismatch(std::string const& first_mode, cell_results const& first, std::string const& mode,
                          cell_results const& bands, metric_request const& request, grid_spec const& grid)
{
  auto const d = first_difference(first, bands, request);
  if (!d) { return {}; }
  std::string where;
  if (grid.cols > 0) {
    where = "row " + std::to_string(d->cell / grid.cols) + ", col " + std::to_string(d->cell % grid.cols) + "; ";
  }
  return "modes " + first_mode + " and " + mode + " differ: " + d->describe() + " (" + where + first_mode + " first)";
}

void require_modes_agree(std::string const& mismatch)
{
  HG_EXPECTS(mismatch.empty(), error_kind::internal, "compare: " + mismatch);
}

}  // namespace heightgrid
