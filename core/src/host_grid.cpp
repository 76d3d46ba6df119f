#include "heightgrid/core/host_grid.hpp"

#include "host_grid_binning.hpp"

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
                                      metric_request const& request, float nodata, window_counts* counts,
                                      std::uint32_t col0) const
{
  HG_EXPECTS(row0 + std::uint64_t{rows} <= band_.rows && std::uint64_t{col0} + cols <= band_.grid.cols,
             error_kind::internal, "host_grid::finalize_rows: window outside the band");
  if (words_ != nullptr && z_rule_set_.load(std::memory_order_acquire)) {
    return finalize_words(row0, rows, cols, request, nodata, counts, col0);
  }
  std::uint64_t const first = std::uint64_t{row0} * band_.grid.cols + col0;
  auto r = finalize_window(acc_, first, band_.grid.cols, rows, cols, request, nodata, counts);
  if (request.needs_order()) {
    HG_EXPECTS(order_ != nullptr, error_kind::internal, "host_grid::finalize_rows: order statistics of a grid that kept no points");
    if (!order_->finalized()) { order_->finalize(acc_.count, acc_.cells, request, nodata); }
    order_->copy_window(first, band_.grid.cols, rows, cols, request, r);
  }
  if (request.needs_tags()) {
    HG_EXPECTS(tags_ != nullptr || acc_.cells == 0, error_kind::internal,
               "host_grid::finalize_rows: tagged counts of a grid that kept none");
    finalize_tag_window(tags_, 1, tag_bands_, acc_, first, band_.grid.cols, rows, cols, request, r);
  }
  return r;
}

cell_results host_grid::finalize_words(std::uint32_t row0, std::uint32_t rows, std::uint32_t cols,
                                       metric_request const& request, float nodata, window_counts* counts,
                                       std::uint32_t col0) const
{
  cell_results r;
  band_pointers const out = sized_bands(r, request, std::size_t{rows} * cols);
  bool const pairs = pairs_used_.load(std::memory_order_relaxed);
  std::uint64_t const first = std::uint64_t{row0} * band_.grid.cols + col0;
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
