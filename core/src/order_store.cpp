#include "heightgrid/core/order_store.hpp"

#include "heightgrid/core/shape_metrics.hpp"

#include <algorithm>
#include <cmath>

namespace heightgrid {

void sort_values(double* z, std::size_t n)
{
  std::sort(z, z + n, [](double a, double b) { return a < b || (a == b && std::signbit(a) && !std::signbit(b)); });
}

void size_order_columns(cell_results& out, metric_request const& request, std::size_t cells)
{
  // Each column sized on its own: assign(n, column(cells)) would copy a prototype into every
  // column, touching each page on this thread (one memcpy and one page fault a page, huge pages
  // zeroed one after another) instead of leaving them to the threads that fill them.
  auto const sized = [cells](std::vector<column<float>>& columns, std::size_t n) {
    columns.clear();
    columns.resize(n);
    for (auto& c : columns) { c.resize(cells); }
  };
  sized(out.percentile, request.percentiles.size());
  out.percentile_of = request.percentiles;
  if (request.prange) { out.prange.resize(cells); }
  sized(out.shape, request.shapes.size());
  out.shape_of = request.shapes;
}

void finalize_order_cell(double const* sorted, std::uint64_t n, metric_request const& request, cell_results& out,
                         std::size_t o, float nodata)
{
  for (std::size_t k = 0; k < request.percentiles.size(); ++k) {
    out.percentile[k][o] = n == 0 ? nodata : static_cast<float>(percentile_of_sorted(sorted, n, request.percentiles[k]));
  }
  if (request.prange) {
    out.prange[o] = n == 0 ? nodata
                           : static_cast<float>(percentile_of_sorted(sorted, n, request.prange_hi) -
                                                percentile_of_sorted(sorted, n, request.prange_lo));
  }
  for (std::size_t k = 0; k < request.shapes.size(); ++k) {
    double const v = n == 0 ? NAN : shape_of_sorted(sorted, n, request.shapes[k]);
    out.shape[k][o] = std::isnan(v) ? nodata : static_cast<float>(v);
  }
}

void order_store::append(std::vector<std::uint32_t>&& cells, std::vector<double>&& z)
{
  std::uint64_t const n = cells.size();
  std::uint64_t const before = size_.fetch_add(n, std::memory_order_relaxed);
  if (before + n > capacity_) {
    throw order_store_full("the points of a band (more than " + std::to_string(capacity_) +
                           ") do not fit the memory budget of percentiles");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  chunks_.push_back({std::move(cells), std::move(z)});
}

void order_store::finalize(std::uint32_t const* count, std::uint64_t cells, metric_request const& request, float nodata)
{
  auto const n_cells = static_cast<std::int64_t>(cells);
  std::vector<std::uint64_t> offsets(cells + 1, 0);
  for (std::uint64_t c = 0; c < cells; ++c) { offsets[c + 1] = offsets[c] + count[c]; }
  HG_EXPECTS(offsets[cells] == size(), error_kind::internal,
          "order_store::finalize: the counts (" + std::to_string(offsets[cells]) + ") and the kept points (" +
            std::to_string(size()) + ") disagree");
  std::vector<double> z(offsets[cells]);
  {
    // Scatter chunk by chunk, freeing each once placed; cursors are atomics (any order within a cell).
    std::vector<std::uint64_t> cursor(offsets.begin(), offsets.end() - 1);
    auto const n_chunks = static_cast<std::int64_t>(chunks_.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t k = 0; k < n_chunks; ++k) {
      auto& ch = chunks_[static_cast<std::size_t>(k)];
      for (std::size_t i = 0; i < ch.cells.size(); ++i) {
        std::uint64_t const at = __atomic_fetch_add(&cursor[ch.cells[i]], 1, __ATOMIC_RELAXED);
        z[at] = ch.z[i];
      }
      std::vector<std::uint32_t>().swap(ch.cells);
      std::vector<double>().swap(ch.z);
    }
    chunks_.clear();
  }
  bands_ = {};
  size_order_columns(bands_, request, cells);
#pragma omp parallel for schedule(dynamic, 4096)
  for (std::int64_t c = 0; c < n_cells; ++c) {
    double* const v = z.data() + offsets[c];
    std::uint64_t const n = offsets[c + 1] - offsets[c];
    sort_values(v, n);
    finalize_order_cell(v, n, request, bands_, static_cast<std::size_t>(c), nodata);
  }
  finalized_ = true;
}

void order_store::copy_window(std::uint64_t first, std::uint32_t band_cols, std::uint32_t rows, std::uint32_t cols,
                              metric_request const& request, cell_results& out) const
{
  std::size_t const cells = std::size_t{rows} * cols;
  size_order_columns(out, request, cells);
  auto const copy = [&](column<float> const& from, column<float>& to) {
    for (std::uint32_t r = 0; r < rows; ++r) {
      auto const src = from.begin() + static_cast<std::ptrdiff_t>(first + std::uint64_t{r} * band_cols);
      std::copy(src, src + cols, to.begin() + static_cast<std::ptrdiff_t>(std::size_t{r} * cols));
    }
  };
  for (std::size_t k = 0; k < request.percentiles.size(); ++k) { copy(bands_.percentile[k], out.percentile[k]); }
  if (request.prange) { copy(bands_.prange, out.prange); }
  for (std::size_t k = 0; k < request.shapes.size(); ++k) { copy(bands_.shape[k], out.shape[k]); }
}

}  // namespace heightgrid
