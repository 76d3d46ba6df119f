#include "heightgrid/core/host_grid.hpp"

#include "heightgrid/core/band_cells.hpp"
#include "heightgrid/core/error.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
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

host_grid::host_grid(grid_band const& band, metric_request const& request, std::uint64_t order_capacity) : band_(band)
{
  if (request.needs_order()) { order_ = std::make_unique<order_store>(order_capacity); }
  std::uint64_t const cells = band.cells();
  bool const sums = request.needs_sums();
  bool const m2 = request.stddev;
  bool const counted = request.needs_counts();
  // {lo, hi} pairs | sum | m2 (8-byte fields) first, count (4-byte) last: every array stays aligned,
  // and a pair never straddles a cache line.
  std::size_t const words = 2 + (sums ? 1 : 0) + (m2 ? 1 : 0);
  bytes_ = static_cast<std::size_t>(cells) * (words * 8 + (counted ? 4 : 0));
  if (bytes_ > 0) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    HG_EXPECTS(p != MAP_FAILED, error_kind::resource,
            "cannot map " + std::to_string(bytes_ >> 20) + " MiB for the accumulators of " + std::to_string(cells) +
              " cells; choose a coarser resolution (--res) or a smaller --memory share");
    memory_ = p;
  }
  auto* words_base = static_cast<std::uint64_t*>(memory_);
  acc_.cells = cells;
  acc_.lo = words_base;
  acc_.hi = cells > 0 ? words_base + 1 : nullptr;  // no memory for an empty band
  acc_.stride = 2;
  std::uint64_t next = 2 * cells;
  if (sums) {
    acc_.sum = reinterpret_cast<double*>(words_base + next);
    next += cells;
  }
  if (m2) {
    acc_.m2 = reinterpret_cast<double*>(words_base + next);
    next += cells;
  }
  if (counted) { acc_.count = reinterpret_cast<std::uint32_t*>(words_base + next); }
  // Extremes alone: the integer words too (untouched pages cost nothing: a job whose batches all
  // go to one of the two never maps the other's).
  if (!counted && cells > 0) {
    words_bytes_ = static_cast<std::size_t>(cells) * sizeof(std::uint64_t);
    void* w = ::mmap(nullptr, words_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (w == MAP_FAILED) {
      ::munmap(memory_, bytes_);
      throw error(error_kind::resource, "cannot map " + std::to_string(words_bytes_ >> 20) +
                                          " MiB for the accumulators of " + std::to_string(cells) +
                                          " cells; choose a coarser resolution (--res) or a smaller --memory share");
    }
    words_ = static_cast<std::uint64_t*>(w);
  }
  tag_bands_ = request.tags.size();
  if (tag_bands_ > 0 && cells > 0) {
    tags_bytes_ = static_cast<std::size_t>(cells) * tag_bands_ * sizeof(std::uint32_t);
    void* t = ::mmap(nullptr, tags_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (t == MAP_FAILED) {
      ::munmap(memory_, bytes_);
      throw error(error_kind::resource, "cannot map " + std::to_string(tags_bytes_ >> 20) +
                                          " MiB for the tagged counts of " + std::to_string(cells) +
                                          " cells; choose a coarser resolution (--res) or a smaller --memory share");
    }
    tags_ = static_cast<std::uint32_t*>(t);
  }
}

host_grid::~host_grid()
{
  if (memory_ != nullptr) { ::munmap(memory_, bytes_); }
  if (words_ != nullptr) { ::munmap(words_, words_bytes_); }
  if (tags_ != nullptr) { ::munmap(tags_, tags_bytes_); }
}

void host_grid::prefault(bool integers)
{
  bool const words = integers && words_ != nullptr;
  auto* const base = static_cast<unsigned char*>(words ? static_cast<void*>(words_) : memory_);
  std::size_t const bytes = words ? words_bytes_ : bytes_;
  // Fresh anonymous pages hold zeros: storing a zero changes nothing but maps them writable.
  touch_pages(base, bytes);
}

bool host_grid::z_rule_of_words(scaled_coords const& t)
{
  double const s = t.scale[2];
  double const o = t.offset[2];
  // A positive finite scale: the rule is then non-decreasing in the integer.
  if (!(s > 0.0) || !std::isfinite(s) || !std::isfinite(o)) { return false; }
  if (!z_rule_set_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(z_rule_mutex_);
    if (!z_rule_set_.load(std::memory_order_relaxed)) {
      z_scale_ = s;
      z_offset_ = o;
      z_rule_set_.store(true, std::memory_order_release);
    }
  }
  // Bit for bit: the words decode with z_scale_/z_offset_ alone.
  return std::memcmp(&s, &z_scale_, sizeof s) == 0 && std::memcmp(&o, &z_offset_, sizeof o) == 0;
}

batch_binning host_grid::add_batch(point_batch const& batch)
{
  HG_EXPECTS(!keeps_sums(), error_kind::internal, "host_grid::add_batch on a grid that keeps sums");
  HG_EXPECTS(batch.encoding != coord_encoding::las_records, error_kind::internal,
             "host_grid::add_batch: raw LAS records must be decoded first (decode_las_records)");
  keep_batch(band_, batch, order_.get());
  bool const f64 = batch.encoding == coord_encoding::float64;
  if (tags_ != nullptr && batch.tagged) {
    // Tagged counts need the counts (empty cells): such a grid keeps them, and no integer words.
    return f64 ? add_tagged_points<coord_encoding::float64>(band_, acc_, batch, tags_, tag_bands_)
               : add_tagged_points<coord_encoding::scaled_int32>(band_, acc_, batch, tags_, tag_bands_);
  }
  if (words_ != nullptr && !f64 && z_rule_of_words(batch.transform)) { return add_points_words(band_, words_, batch); }
  if (words_ != nullptr && !pairs_used_.load(std::memory_order_relaxed)) {
    pairs_used_.store(true, std::memory_order_relaxed);
  }
  if (keeps_counts()) {
    return f64 ? add_points<coord_encoding::float64, true>(band_, acc_, batch)
               : add_points<coord_encoding::scaled_int32, true>(band_, acc_, batch);
  }
  return f64 ? add_points<coord_encoding::float64, false>(band_, acc_, batch)
             : add_points<coord_encoding::scaled_int32, false>(band_, acc_, batch);
}

void host_grid::reduce_batch(point_batch const& batch, batch_partials& out) const
{
  bool const sums = acc_.sum != nullptr;
  bool const m2 = acc_.m2 != nullptr;
  HG_EXPECTS(batch.encoding != coord_encoding::las_records, error_kind::internal,
             "host_grid::reduce_batch: raw LAS records must be decoded first (decode_las_records)");
  keep_batch(band_, batch, order_.get());
  add_tag_counts(band_, batch, tags_, tag_bands_);
  if (batch.encoding == coord_encoding::float64) {
    reduce_points<coord_encoding::float64>(band_, sums, m2, batch, out);
  } else {
    reduce_points<coord_encoding::scaled_int32>(band_, sums, m2, batch, out);
  }
}

void host_grid::merge(batch_partials const& p) { merge(p, 0, p.cells.size()); }

void host_grid::merge(batch_partials const& p, std::size_t begin, std::size_t end)
{
  bool const sums = acc_.sum != nullptr;
  // Merges run one at a time (in batch order), so their cache misses are the job's bound: a batch's
  // cells are increasing but far apart, each a line of the pairs, the sums, m2 and the counts.
  constexpr std::size_t distance = 16;
  for (std::size_t k = begin; k < end; ++k) {
    if (k + distance < end) {
      std::uint64_t const a = p.cells[k + distance];
      __builtin_prefetch(&acc_.lo_of(a), 1);
      __builtin_prefetch(acc_.count + a, 1);
      if (sums) {
        __builtin_prefetch(acc_.sum + a, 1);
        if (acc_.m2 != nullptr) { __builtin_prefetch(acc_.m2 + a, 1); }
      }
    }
    std::uint64_t const c = p.cells[k];
    std::uint64_t const lo = lo_key(p.lo[k]);
    std::uint64_t const hi = hi_key(p.hi[k]);
    acc_.lo_of(c) = lo > acc_.lo_of(c) ? lo : acc_.lo_of(c);
    acc_.hi_of(c) = hi > acc_.hi_of(c) ? hi : acc_.hi_of(c);
    if (sums) {
      double unused_m2 = 0.0;
      double& m2 = acc_.m2 != nullptr ? acc_.m2[c] : unused_m2;
      merge_moments(acc_.count[c], acc_.sum[c], m2, p.n[k], p.sum[k], p.m2[k]);
    }
    acc_.count[c] += p.n[k];
  }
}

void host_grid::merge_into(accumulator_view const& window, std::uint64_t first) const
{
  HG_EXPECTS(first + window.cells <= acc_.cells, error_kind::internal, "host_grid::merge_into: window outside the grid");
  auto const n = static_cast<std::int64_t>(window.cells);
  if (!keeps_counts()) {
    // Extremes alone (integer words and/or pairs): a cell of this grid counts as one point.
    bool const words = words_ != nullptr && z_rule_set_.load(std::memory_order_acquire);
    bool const pairs = pairs_used_.load(std::memory_order_relaxed) || !words;
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint64_t const c = first + static_cast<std::uint64_t>(i);
      std::uint64_t lo = 0, hi = 0;
      if (words) {
        std::uint64_t const w = words_[c];
        if (w != 0) {
          lo = lo_key(scaled_coords::apply(int_of_key(~static_cast<std::uint32_t>(w)), z_scale_, z_offset_));
          hi = hi_key(scaled_coords::apply(int_of_key(static_cast<std::uint32_t>(w >> 32)), z_scale_, z_offset_));
        }
      }
      if (pairs) {
        lo = std::max(lo, acc_.lo_of(c));
        hi = std::max(hi, acc_.hi_of(c));
      }
      if (hi == 0) { continue; }
      auto const u = static_cast<std::uint64_t>(i);
      window.lo_of(u) = std::max(window.lo_of(u), lo);
      window.hi_of(u) = std::max(window.hi_of(u), hi);
      if (window.count[i] == 0) { window.count[i] = 1; }
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t const c = first + static_cast<std::uint64_t>(i);
    std::uint32_t const count = acc_.count[c];
    if (count == 0) { continue; }
    auto const u = static_cast<std::uint64_t>(i);
    window.lo_of(u) = acc_.lo_of(c) > window.lo_of(u) ? acc_.lo_of(c) : window.lo_of(u);
    window.hi_of(u) = acc_.hi_of(c) > window.hi_of(u) ? acc_.hi_of(c) : window.hi_of(u);
    window.count[i] += count;
  }
}

cell_results host_grid::finalize_rows(std::uint32_t row0, std::uint32_t rows, std::uint32_t cols,
                                      metric_request const& request, float nodata, window_counts* counts) const
{
  HG_EXPECTS(row0 + std::uint64_t{rows} <= band_.rows && cols <= band_.grid.cols, error_kind::internal,
          "host_grid::finalize_rows: window outside the band");
  if (words_ != nullptr && z_rule_set_.load(std::memory_order_acquire)) {
    return finalize_words(row0, rows, cols, request, nodata, counts);
  }
  auto r = finalize_window(acc_, std::uint64_t{row0} * band_.grid.cols, band_.grid.cols, rows, cols, request, nodata,
                           counts);
  if (request.needs_order()) {
    HG_EXPECTS(order_ != nullptr, error_kind::internal, "host_grid::finalize_rows: order statistics of a grid that kept no points");
    if (!order_->finalized()) { order_->finalize(acc_.count, acc_.cells, request, nodata); }
    order_->copy_window(std::uint64_t{row0} * band_.grid.cols, band_.grid.cols, rows, cols, request, r);
  }
  if (request.needs_tags()) {
    HG_EXPECTS(tags_ != nullptr || acc_.cells == 0, error_kind::internal,
               "host_grid::finalize_rows: tagged counts of a grid that kept none");
    finalize_tag_window(tags_, 1, tag_bands_, acc_, std::uint64_t{row0} * band_.grid.cols, band_.grid.cols, rows, cols,
                        request, r);
  }
  return r;
}

cell_results host_grid::finalize_words(std::uint32_t row0, std::uint32_t rows, std::uint32_t cols,
                                       metric_request const& request, float nodata, window_counts* counts) const
{
  cell_results r;
  band_pointers const out = sized_bands(r, request, std::size_t{rows} * cols);
  bool const pairs = pairs_used_.load(std::memory_order_relaxed);
  std::uint64_t const first = std::uint64_t{row0} * band_.grid.cols;
  auto const nrows = static_cast<std::int64_t>(rows);
  std::uint64_t non_empty = 0;
#pragma omp parallel for schedule(static) reduction(+ : non_empty)
  for (std::int64_t row = 0; row < nrows; ++row) {
    std::uint64_t const in = first + static_cast<std::uint64_t>(row) * band_.grid.cols;
    std::uint64_t const o = static_cast<std::uint64_t>(row) * cols;
    for (std::uint32_t col = 0; col < cols; ++col) {
      std::uint64_t const c = in + col;
      // The cell as a {lo, hi} pair of double keys, then the one finalize_cell rule.
      std::uint64_t pair[2] = {0, 0};
      std::uint64_t const w = words_[c];
      if (w != 0) {
        pair[0] = lo_key(scaled_coords::apply(int_of_key(~static_cast<std::uint32_t>(w)), z_scale_, z_offset_));
        pair[1] = hi_key(scaled_coords::apply(int_of_key(static_cast<std::uint32_t>(w >> 32)), z_scale_, z_offset_));
      }
      if (pairs) {
        pair[0] = std::max(pair[0], acc_.lo_of(c));
        pair[1] = std::max(pair[1], acc_.hi_of(c));
      }
      accumulator_view const one{pair, pair + 1, nullptr, nullptr, nullptr, 1, 2};
      finalize_cell(one, 0, out, o + col, nodata);
      non_empty += pair[1] != 0;
    }
  }
  if (counts != nullptr) { *counts = window_counts{non_empty, non_empty, non_empty > 0 ? 1U : 0U}; }
  return r;
}

void host_grid::add_tags_into(std::uint32_t* out, std::uint64_t first, std::uint64_t cells) const
{
  HG_EXPECTS(first + cells <= acc_.cells, error_kind::internal, "host_grid::add_tags_into: window outside the grid");
  if (tags_ == nullptr) { return; }
  for (std::size_t b = 0; b < tag_bands_; ++b) {
    std::uint32_t* const to = out + b * cells;
    for (std::uint64_t i = 0; i < cells; ++i) { to[i] += tags_[(first + i) * tag_bands_ + b]; }
  }
}

std::uint64_t host_grid::total_count() const
{
  HG_EXPECTS(keeps_counts(), error_kind::internal, "host_grid::total_count: a grid that keeps no counts");
  std::uint64_t total = 0;
  auto const n = static_cast<std::int64_t>(acc_.cells);
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) { total += acc_.count[i]; }
  return total;
}

std::uint32_t host_grid::max_count() const
{
  HG_EXPECTS(keeps_counts(), error_kind::internal, "host_grid::max_count: a grid that keeps no counts");
  std::uint32_t largest = 0;
  auto const n = static_cast<std::int64_t>(acc_.cells);
#pragma omp parallel for reduction(max : largest) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) { largest = std::max(largest, acc_.count[i]); }
  return largest;
}

void finalize_tag_window(std::uint32_t const* tags, std::size_t band_stride, std::size_t cell_stride,
                         accumulator_view const& acc, std::uint64_t first_cell, std::uint32_t acc_cols, std::uint32_t rows,
                         std::uint32_t cols, metric_request const& request, cell_results& out)
{
  std::size_t const cells = std::size_t{rows} * cols;
  out.size_tag_columns(request, cells);
  auto const nrows = static_cast<std::int64_t>(rows);
  for (std::size_t b = 0; b < request.tags.size(); ++b) {
    std::uint32_t const* const band = tags + b * band_stride;
    std::uint32_t* const to = out.tag[b].data();
#pragma omp parallel for schedule(static)
    for (std::int64_t row = 0; row < nrows; ++row) {
      std::uint64_t const in = first_cell + static_cast<std::uint64_t>(row) * acc_cols;
      std::uint64_t const o = static_cast<std::uint64_t>(row) * cols;
      for (std::uint32_t col = 0; col < cols; ++col) {
        to[o + col] = cell_count(acc, in + col) == 0 ? tag_empty : band[(in + col) * cell_stride];
      }
    }
  }
}

cell_results finalize_window(accumulator_view const& acc, std::uint64_t first_cell, std::uint32_t acc_cols,
                             std::uint32_t rows, std::uint32_t cols, metric_request const& request, float nodata,
                             window_counts* counts)
{
  cell_results r;
  band_pointers const out = sized_bands(r, request, std::size_t{rows} * cols);
  auto const nrows = static_cast<std::int64_t>(rows);
  std::uint64_t total = 0, non_empty = 0;
  std::uint32_t largest = 0;
  bool const count = counts != nullptr;
#pragma omp parallel for schedule(static) reduction(+ : total, non_empty) reduction(max : largest)
  for (std::int64_t row = 0; row < nrows; ++row) {
    std::uint64_t const in = first_cell + static_cast<std::uint64_t>(row) * acc_cols;
    std::uint64_t const o = static_cast<std::uint64_t>(row) * cols;
    for (std::uint32_t col = 0; col < cols; ++col) {
      finalize_cell(acc, in + col, out, o + col, nodata);
      if (count) {
        std::uint32_t const n = cell_count(acc, in + col);
        total += n;
        non_empty += n != 0;
        largest = n > largest ? n : largest;
      }
    }
  }
  if (count) { *counts = window_counts{total, non_empty, largest}; }
  return r;
}

}  // namespace heightgrid
