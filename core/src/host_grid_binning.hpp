#pragma once
// How a batch goes into a host grid's accumulators (host_grid.cpp, the only file that includes this):
// the binning pass (a run of points of one cell folded with one atomic a value: min/max words,
// counts, tagged counts), the sorted reduction into per-cell partials (sums for mean/stddev, in
// the CPU's deterministic order) and the points kept for order statistics. In an unnamed
// namespace, as they were in host_grid.cpp: one translation unit, and the compiler's inlining of
// the binning loops unchanged.

#include "heightgrid/core/host_grid.hpp"

#include "heightgrid/core/band_cells.hpp"
#include "heightgrid/core/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

namespace heightgrid {
namespace {

/// Lock-free max on a plain 64-bit word shared between threads (GCC/Clang atomic builtins: C++17 has
/// no atomic_ref). Most points do not move their cell's extreme, so most calls are one load.
inline void atomic_max(std::uint64_t* p, std::uint64_t v) noexcept
{
  std::uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

template <coord_encoding E>
struct coords {
  static double x(point_batch const& b, std::size_t i) noexcept
  {
    if constexpr (E == coord_encoding::float64) {
      return b.x()[i];
    } else {
      return scaled_coords::apply(b.xi()[i], b.transform.scale[0], b.transform.offset[0]);
    }
  }
  static double y(point_batch const& b, std::size_t i) noexcept
  {
    if constexpr (E == coord_encoding::float64) {
      return b.y()[i];
    } else {
      return scaled_coords::apply(b.yi()[i], b.transform.scale[1], b.transform.offset[1]);
    }
  }
  static double z(point_batch const& b, std::size_t i) noexcept
  {
    if constexpr (E == coord_encoding::float64) {
      return b.z()[i];
    } else {
      return scaled_coords::apply(b.zi()[i], b.transform.scale[2], b.transform.offset[2]);
    }
  }
};

constexpr std::uint32_t outside_key = cell_outside;
constexpr std::uint32_t skip_key = cell_skipped;

/// The requested bands of `r` sized to `cells` (left for the caller to fill) and their pointers.
band_pointers sized_bands(cell_results& r, metric_request const& request, std::size_t cells)
{
  auto const band = [&](bool wanted, auto& v) {
    if (wanted) { v.resize(cells); }
    return wanted ? v.data() : nullptr;
  };
  return {band(request.min, r.min),     band(request.max, r.max),   band(request.range, r.range),
          band(request.count, r.count), band(request.mean, r.mean), band(request.stddev, r.stddev)};
}

/// Folds every point of `b` into the cells of `band` through `target`, which gives a point's two
/// keys (`keys(i)`: both merged with max), sees each point of a run (`visit(i)`, after the run before
/// was flushed), prefetches a cell's accumulators (`prefetch(cell)`) and merges a run of points into
/// a cell (`flush(cell, lo, hi, n)`).
template <class Target>
batch_binning fold_runs(grid_band const& band, point_batch const& b, Target& target)
{
  using key = typename Target::key;
  batch_binning r;
  // Cells are computed a block ahead and their accumulators prefetched: a batch of a cloud that is
  // not in scan order touches a random cell per point, and its cache misses would otherwise bound
  // the loop.
  constexpr std::size_t block = 256;
  constexpr std::size_t distance = 16;
  // This block's cells and the next's, so that the prefetch runs across the blocks' boundary.
  std::array<std::uint32_t, 2 * block> cells;
  cell_code const code = best_cell_code();
  // A run of consecutive points in one cell (LAS files are in scan order, so a run is typical) is
  // combined in registers and hits the shared cell with one set of atomics.
  std::uint32_t run = outside_key;
  key run_lo = 0, run_hi = 0;
  std::uint32_t run_n = 0;
  auto const flush = [&] {
    if (run_n == 0) { return; }
    target.flush(run, run_lo, run_hi, run_n);
    r.binned += run_n;
  };
  band_cells(band, b, 0, std::min(block, b.size), cells.data(), code);
  for (std::size_t first = 0; first < b.size; first += block) {
    std::size_t const n = std::min(block, b.size - first);
    std::size_t const next = first + n < b.size ? std::min(block, b.size - first - n) : 0;
    if (next > 0) { band_cells(band, b, first + n, next, cells.data() + n, code); }
    std::size_t const ahead_end = n + next;
    for (std::size_t k = 0; k < n; ++k) {
      if (k + distance < ahead_end && cells[k + distance] < skip_key) { target.prefetch(cells[k + distance]); }
      std::uint32_t const c = cells[k];
      if (c >= skip_key) {
        r.outside += c == outside_key;
        continue;
      }
      auto const [lo, hi] = target.keys(first + k);
      if (c != run) { flush(); }
      target.visit(first + k);
      if (c == run) {
        run_lo = lo > run_lo ? lo : run_lo;
        run_hi = hi > run_hi ? hi : run_hi;
        ++run_n;
      } else {
        run = c;
        run_lo = lo;
        run_hi = hi;
        run_n = 1;
      }
    }
    std::copy(cells.begin() + static_cast<std::ptrdiff_t>(n), cells.begin() + static_cast<std::ptrdiff_t>(ahead_end),
              cells.begin());
  }
  flush();
  return r;
}

/// fold_runs into {lo, hi} pairs of double keys (and counts, when kept; and tagged counts, when
/// `Tagged`: a run's tags are counted per band in registers and added with one atomic a band).
template <coord_encoding E, bool Counted, bool Tagged = false>
struct pair_target {
  using key = std::uint64_t;
  accumulator_view const& acc;
  point_batch const& b;
  std::uint32_t* tags{nullptr};  ///< Tagged: cell c's count of band k at tags[c * bands + k]
  std::size_t bands{0};
  // A run's tags: byte k of `packed` counts band k (a table spreads a tag's bits into bytes: one add
  // a point), spilled into `spilled` before a byte can overflow.
  std::uint64_t packed{0};
  unsigned in_packed{0};
  std::array<std::uint32_t, max_tag_bands> spilled{};
  bool any_spilled{false};

  /// Bit k of a tag as byte k of a word.
  static constexpr std::array<std::uint64_t, 256> spread = [] {
    std::array<std::uint64_t, 256> t{};
    for (unsigned v = 0; v < 256; ++v) {
      for (unsigned k = 0; k < 8; ++k) { t[v] |= static_cast<std::uint64_t>((v >> k) & 1U) << (8 * k); }
    }
    return t;
  }();

  void spill() noexcept
  {
    for (std::size_t k = 0; k < max_tag_bands; ++k) { spilled[k] += static_cast<std::uint32_t>((packed >> (8 * k)) & 0xff); }
    packed = 0;
    in_packed = 0;
    any_spilled = true;
  }

  void prefetch(std::uint32_t c) const noexcept
  {
    __builtin_prefetch(&acc.lo_of(c), 1);  // hi shares its line (host_grid's layout)
    if constexpr (Counted) { __builtin_prefetch(acc.count + c, 1); }
    if constexpr (Tagged) { __builtin_prefetch(tags + std::size_t{c} * bands, 1); }
  }

  void visit(std::size_t i) noexcept
  {
    if constexpr (Tagged) {
      packed += spread[b.tags()[i]];
      if (++in_packed == 255) { spill(); }
    } else {
      (void)i;
    }
  }
  [[nodiscard]] std::pair<key, key> keys(std::size_t i) const noexcept
  {
    double const z = coords<E>::z(b, i);
    return {lo_key(z), hi_key(z)};
  }
  void flush(std::uint32_t c, key lo, key hi, std::uint32_t n) noexcept
  {
    atomic_max(&acc.lo_of(c), lo);
    atomic_max(&acc.hi_of(c), hi);
    // A locked add a point costs more than both maxima (which rarely write): a grid of extremes
    // alone keeps no count (host_grid's constructor).
    if constexpr (Counted) { __atomic_fetch_add(acc.count + c, n, __ATOMIC_RELAXED); }
    if constexpr (Tagged) {
      if (any_spilled) { spill(); }
      std::uint32_t* const cell = tags + std::size_t{c} * bands;
      for (std::size_t k = 0; k < bands; ++k) {
        std::uint32_t const add = any_spilled ? spilled[k] : static_cast<std::uint32_t>((packed >> (8 * k)) & 0xff);
        if (add != 0) { __atomic_fetch_add(cell + k, add, __ATOMIC_RELAXED); }
      }
      if (any_spilled) {
        spilled.fill(0);
        any_spilled = false;
      }
      packed = 0;
      in_packed = 0;
    }
  }
};

template <coord_encoding E, bool Counted>
batch_binning add_points(grid_band const& band, accumulator_view const& acc, point_batch const& b)
{
  pair_target<E, Counted> target{acc, b};
  return fold_runs(band, b, target);
}

/// add_points of a tagged batch into a counted grid: its tags counted in the same pass.
template <coord_encoding E>
batch_binning add_tagged_points(grid_band const& band, accumulator_view const& acc, point_batch const& b,
                                std::uint32_t* tags, std::size_t bands)
{
  pair_target<E, true, true> target{acc, b, tags, bands};
  return fold_runs(band, b, target);
}

/// The 32-bit key of a stored integer: unsigned order = signed order.
inline std::uint32_t int_key(std::int32_t v) noexcept { return static_cast<std::uint32_t>(v) ^ 0x80000000U; }
inline std::int32_t int_of_key(std::uint32_t k) noexcept { return static_cast<std::int32_t>(k ^ 0x80000000U); }

inline void atomic_merge_word(std::uint64_t* p, std::uint64_t w) noexcept
{
  std::uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    std::uint64_t const hi = std::max(cur >> 32, w >> 32);
    std::uint64_t const lo = std::max(cur & 0xffffffffULL, w & 0xffffffffULL);
    std::uint64_t const next = (hi << 32) | lo;
    if (next == cur || __atomic_compare_exchange_n(p, &cur, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      return;
    }
  }
}

/// fold_runs into the integer words (scaled_int32 batches whose z rule is the words'): a cell's
/// word holds the highest key in the upper half and the complement of the lowest in the lower, both
/// merged with max (0 is an empty cell: a cell with a point has lo <= hi, so not both halves 0).
struct word_target {
  using key = std::uint32_t;
  std::uint64_t* words;
  std::int32_t const* zi;

  void prefetch(std::uint32_t c) const noexcept { __builtin_prefetch(words + c, 1); }
  void visit(std::size_t) const noexcept {}
  [[nodiscard]] std::pair<key, key> keys(std::size_t i) const noexcept
  {
    std::uint32_t const k = int_key(zi[i]);
    return {~k, k};
  }
  void flush(std::uint32_t c, key lo, key hi, std::uint32_t) const noexcept
  {
    atomic_merge_word(words + c, (std::uint64_t{hi} << 32) | lo);
  }
};

batch_binning add_points_words(grid_band const& band, std::uint64_t* words, point_batch const& b)
{
  word_target target{words, b.zi()};
  return fold_runs(band, b, target);
}

/// Stable LSD radix sort of `order` (point indices) by keys, 8 bits a pass; passes in which every
/// key has the same digit are skipped (a spatially coherent batch often needs one or two).
void radix_sort_by_key(std::vector<std::uint32_t>& keys, std::vector<std::uint32_t>& keys_tmp,
                       std::vector<std::uint32_t>& order, std::vector<std::uint32_t>& order_tmp)
{
  std::size_t const n = keys.size();
  std::array<std::array<std::uint32_t, 256>, 4> hist{};
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t const k = keys[i];
    ++hist[0][k & 0xff];
    ++hist[1][(k >> 8) & 0xff];
    ++hist[2][(k >> 16) & 0xff];
    ++hist[3][k >> 24];
  }
  keys_tmp.resize(n);
  order_tmp.resize(n);
  for (int pass = 0; pass < 4; ++pass) {
    auto& h = hist[static_cast<std::size_t>(pass)];
    if (std::any_of(h.begin(), h.end(), [n](std::uint32_t c) { return c == n; })) { continue; }
    std::uint32_t sum = 0;
    for (auto& c : h) {
      std::uint32_t const t = c;
      c = sum;
      sum += t;
    }
    int const shift = 8 * pass;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t const d = (keys[i] >> shift) & 0xff;
      std::uint32_t const at = h[d]++;
      keys_tmp[at] = keys[i];
      order_tmp[at] = order[i];
    }
    keys.swap(keys_tmp);
    order.swap(order_tmp);
  }
}

template <coord_encoding E>
void reduce_points(grid_band const& band, bool sums, bool m2, point_batch const& b, batch_partials& out)
{
  std::size_t const n = b.size;
  out.keys.resize(n);
  out.order.resize(n);
  batch_binning r;
  band_cells(band, b, 0, n, out.keys.data());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t const c = out.keys[i];
    out.order[i] = static_cast<std::uint32_t>(i);
    r.outside += c == outside_key;
    r.binned += c < skip_key;
  }
  radix_sort_by_key(out.keys, out.keys_tmp, out.order, out.order_tmp);

  out.cells.clear();
  out.n.clear();
  out.lo.clear();
  out.hi.clear();
  out.sum.clear();
  out.m2.clear();
  for (std::size_t begin = 0; begin < n;) {
    std::uint32_t const c = out.keys[begin];
    if (c >= skip_key) { break; }  // outside and skipped points sort last
    std::size_t end = begin + 1;
    while (end < n && out.keys[end] == c) { ++end; }
    // The cell's points in input order (the sort is stable): min/max as std::min/std::max keep the
    // running value on ties, the sum runs from 0.0, m2 is a second pass about the partial's mean,
    // exactly as the thread-per-cell reduction of a CSR does.
    double lo = HUGE_VAL, hi = -HUGE_VAL, s = 0.0;
    for (std::size_t k = begin; k < end; ++k) {
      double const z = coords<E>::z(b, out.order[k]);
      lo = z < lo ? z : lo;
      hi = hi < z ? z : hi;
      if (sums) { s += z; }
    }
    out.cells.push_back(c);
    out.n.push_back(static_cast<std::uint32_t>(end - begin));
    out.lo.push_back(lo);
    out.hi.push_back(hi);
    if (sums) {
      out.sum.push_back(s);
      double d2 = 0.0;
      if (m2) {
        double const mean = s / static_cast<double>(end - begin);
        for (std::size_t k = begin; k < end; ++k) {
          double const d = coords<E>::z(b, out.order[k]) - mean;
          d2 += d * d;
        }
      }
      out.m2.push_back(d2);
    }
    begin = end;
  }
  out.binning = r;
}

/// Appends the band's points of `b` (band-local cell, z) to `store`.
template <coord_encoding E>
void keep_points(grid_band const& band, point_batch const& b, order_store& store)
{
  std::vector<std::uint32_t> cells;
  std::vector<double> z;
  cells.resize(b.size);
  z.reserve(b.size);
  band_cells(band, b, 0, b.size, cells.data());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < b.size; ++i) {
    std::uint32_t const c = cells[i];
    if (c >= skip_key) { continue; }
    cells[kept++] = c;
    z.push_back(coords<E>::z(b, i));
  }
  cells.resize(kept);
  if (!cells.empty()) { store.append(std::move(cells), std::move(z)); }
}

/// Adds the tagged points of `b` to their cells' tag counts (cell c's count of band k at
/// tags[c * bands + k]): one relaxed atomic add a band a tagged point, exact whatever the order and
/// the threads.
void add_tag_counts(grid_band const& band, point_batch const& b, std::uint32_t* tags, std::size_t bands)
{
  if (tags == nullptr || !b.tagged) { return; }
  constexpr std::size_t block = 1024;
  std::array<std::uint32_t, block> cell;
  std::uint8_t const* const tag = b.tags();
  for (std::size_t first = 0; first < b.size; first += block) {
    std::size_t const n = std::min(block, b.size - first);
    band_cells(band, b, first, n, cell.data());
    for (std::size_t k = 0; k < n; ++k) {
      std::uint32_t const c = cell[k];
      unsigned t = tag[first + k];
      if (c >= skip_key || t == 0) { continue; }
      while (t != 0) {
        auto const bit = static_cast<unsigned>(__builtin_ctz(t));
        __atomic_fetch_add(tags + std::size_t{c} * bands + bit, 1U, __ATOMIC_RELAXED);
        t &= t - 1;
      }
    }
  }
}

void keep_batch(grid_band const& band, point_batch const& b, order_store* store)
{
  if (store == nullptr) { return; }
  if (b.encoding == coord_encoding::float64) {
    keep_points<coord_encoding::float64>(band, b, *store);
  } else {
    keep_points<coord_encoding::scaled_int32>(band, b, *store);
  }
}

}  // namespace
}  // namespace heightgrid
