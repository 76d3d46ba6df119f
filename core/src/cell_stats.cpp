#include "heightgrid/core/cell_stats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

namespace heightgrid {
namespace {

/// Counts below this are tallied in a table (one slot per value); the few above are sorted. This
/// keeps percentiles and the Gini coefficient exact without sorting every cell: O(cells), which
/// matters at 10^8-10^9 cells.
constexpr std::uint64_t table_size = std::uint64_t{1} << 16;

/// Log bin of a count: 0 for 0, else k with count in [2^(k-1), 2^k - 1] (the bit width).
std::size_t log_bin(std::uint64_t n) noexcept
{
  std::size_t bin = 0;
  while (n != 0) {
    n >>= 1;
    ++bin;
  }
  return bin;
}

/// The counts in sorted order, as (value, how many cells) runs: the table, then the large values.
struct count_distribution {
  std::vector<std::uint64_t> table = std::vector<std::uint64_t>(table_size, 0);
  std::vector<std::uint64_t> large;  ///< sorted

  template <class F>
  void for_each_run(F&& f) const
  {
    for (std::uint64_t v = 0; v < table_size; ++v) {
      if (table[v] != 0) { f(v, table[v]); }
    }
    for (std::size_t i = 0; i < large.size();) {
      std::size_t j = i;
      while (j < large.size() && large[j] == large[i]) { ++j; }
      f(large[i], static_cast<std::uint64_t>(j - i));
      i = j;
    }
  }
};

}  // namespace

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
  auto const count = [&](std::size_t c) { return offsets[c + 1] - offsets[c]; };

  count_distribution dist;
  std::array<std::uint64_t, 65> histogram{};
  double sum_sq = 0.0;
  std::uint64_t lane_work = 0;
  auto const warps = static_cast<std::ptrdiff_t>((cells + 31) / 32);
#pragma omp parallel
  {
    count_distribution local;
    std::array<std::uint64_t, 65> local_hist{};
    std::uint64_t points = 0, non_empty = 0, widest = 0, work = 0;
    double local_sq = 0.0;
    // Warps of 32 consecutive cells: one thread per cell runs as long as its busiest lane, and a
    // partial last warp is charged its own width.
#pragma omp for schedule(static) nowait
    for (std::ptrdiff_t w = 0; w < warps; ++w) {
      std::size_t const begin = static_cast<std::size_t>(w) * 32;
      std::size_t const end = std::min(cells, begin + 32);
      std::uint64_t warp_max = 0;
      for (std::size_t c = begin; c < end; ++c) {
        auto const n = count(c);
        points += n;
        non_empty += n != 0;
        warp_max = std::max(warp_max, n);
        local_sq += static_cast<double>(n) * static_cast<double>(n);
        ++local_hist[log_bin(n)];
        if (n < table_size) {
          ++local.table[n];
        } else {
          local.large.push_back(n);
        }
      }
      widest = std::max(widest, warp_max);
      work += warp_max * (end - begin);
    }
#pragma omp critical(heightgrid_cell_stats)
    {
      s.points += points;
      s.non_empty_cells += non_empty;
      s.max_count = std::max(s.max_count, widest);
      lane_work += work;
      sum_sq += local_sq;
      for (std::size_t k = 0; k < histogram.size(); ++k) { histogram[k] += local_hist[k]; }
      for (std::uint64_t v = 0; v < table_size; ++v) { dist.table[v] += local.table[v]; }
      dist.large.insert(dist.large.end(), local.large.begin(), local.large.end());
    }
  }
  std::sort(dist.large.begin(), dist.large.end());

  s.cells = cells;
  s.histogram.assign(histogram.begin(), histogram.begin() + static_cast<std::ptrdiff_t>(log_bin(s.max_count) + 1));
  double const n_cells = static_cast<double>(cells);
  s.mean = static_cast<double>(s.points) / n_cells;
  s.mean_non_empty = s.non_empty_cells ? static_cast<double>(s.points) / static_cast<double>(s.non_empty_cells) : 0.0;
  double const var = std::max(0.0, sum_sq / n_cells - s.mean * s.mean);
  s.cv = s.mean > 0.0 ? std::sqrt(var) / s.mean : 0.0;
  s.thread_lane_efficiency = lane_work ? static_cast<double>(s.points) / static_cast<double>(lane_work) : 1.0;

  // Percentile q: the value at sorted position ceil(q * cells) (1-based), i.e. the smallest count
  // that at least a share q of the cells do not exceed.
  auto const position = [&](double q) {
    return std::min<std::uint64_t>(static_cast<std::uint64_t>(std::ceil(q * n_cells)), cells);
  };
  std::array<double, 4> const qs{0.50, 0.90, 0.99, 0.999};
  std::array<std::uint64_t*, 4> const out{&s.p50, &s.p90, &s.p99, &s.p999};
  // Gini over the sorted counts x_1 <= ... <= x_n: G = sum_i (2i - n - 1) x_i / (n sum x). A run of
  // f equal values v at positions a+1 .. a+f contributes v * f * (2a + f - n).
  double acc = 0.0;
  std::uint64_t before = 0;
  dist.for_each_run([&](std::uint64_t v, std::uint64_t f) {
    for (std::size_t k = 0; k < qs.size(); ++k) {
      auto const p = position(qs[k]);
      if (p > before && p <= before + f) { *out[k] = v; }
    }
    acc += static_cast<double>(v) * static_cast<double>(f) *
           (2.0 * static_cast<double>(before) + static_cast<double>(f) - n_cells);
    before += f;
  });
  if (s.points > 0) { s.gini = acc / (n_cells * static_cast<double>(s.points)); }
  return s;
}

}  // namespace heightgrid
