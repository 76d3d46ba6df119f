#include "heightgrid/core/cell_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace heightgrid {

std::uint64_t histogram_bin_low(std::size_t k) noexcept
{
  return k == 0 ? 0 : std::uint64_t{1} << (k - 1);
}

std::uint64_t histogram_bin_high(std::size_t k) noexcept
{
  return k == 0 ? 0 : (std::uint64_t{1} << k) - 1;
}

cell_count_stats describe_cell_counts(std::vector<point_offset> const& offsets)
{
  cell_count_stats s;
  if (offsets.size() < 2) { return s; }
  std::size_t const cells = offsets.size() - 1;
  std::vector<std::uint64_t> counts(cells);
  for (std::size_t c = 0; c < cells; ++c) { counts[c] = offsets[c + 1] - offsets[c]; }

  s.cells = cells;
  s.histogram.assign(1, 0);
  double sum_sq = 0.0;
  std::uint64_t lane_work = 0;
  for (std::size_t c = 0; c < cells; ++c) {
    auto const n = counts[c];
    s.points += n;
    s.max_count = std::max(s.max_count, n);
    sum_sq += static_cast<double>(n) * static_cast<double>(n);
    std::size_t bin = 0;
    if (n > 0) {
      ++s.non_empty_cells;
      bin = 1;
      while ((n >> bin) != 0) { ++bin; }  // n in [2^(bin-1), 2^bin - 1]
    }
    if (s.histogram.size() <= bin) { s.histogram.resize(bin + 1, 0); }
    ++s.histogram[bin];
  }
  for (std::size_t w = 0; w < cells; w += 32) {
    std::size_t const end = std::min(cells, w + 32);
    std::uint64_t const widest = *std::max_element(counts.begin() + static_cast<std::ptrdiff_t>(w),
                                                   counts.begin() + static_cast<std::ptrdiff_t>(end));
    lane_work += widest * (end - w);
  }
  double const n_cells = static_cast<double>(cells);
  s.mean = static_cast<double>(s.points) / n_cells;
  s.mean_non_empty = s.non_empty_cells ? static_cast<double>(s.points) / static_cast<double>(s.non_empty_cells) : 0.0;
  double const var = std::max(0.0, sum_sq / n_cells - s.mean * s.mean);
  s.cv = s.mean > 0.0 ? std::sqrt(var) / s.mean : 0.0;
  s.thread_lane_efficiency = lane_work ? static_cast<double>(s.points) / static_cast<double>(lane_work) : 1.0;

  std::sort(counts.begin(), counts.end());
  auto const pct = [&](double q) {
    auto const idx = static_cast<std::size_t>(std::ceil(q * n_cells)) - 1;
    return counts[std::min(idx, cells - 1)];
  };
  s.p50 = pct(0.50);
  s.p90 = pct(0.90);
  s.p99 = pct(0.99);
  s.p999 = pct(0.999);
  // Gini over sorted values: G = sum_i (2i - n - 1) x_i / (n sum x), i = 1..n.
  if (s.points > 0) {
    double acc = 0.0;
    for (std::size_t i = 0; i < cells; ++i) {
      acc += (2.0 * static_cast<double>(i + 1) - n_cells - 1.0) * static_cast<double>(counts[i]);
    }
    s.gini = acc / (n_cells * static_cast<double>(s.points));
  }
  return s;
}

}  // namespace heightgrid
