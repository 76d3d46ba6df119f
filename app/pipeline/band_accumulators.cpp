#include "pipeline/band_accumulators.hpp"

#include "heightgrid/core/error.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace heightgrid::app {
namespace {

window_counts counts_of(column<std::uint32_t> const& count)
{
  std::uint64_t total = 0, non_empty = 0;
  std::uint32_t largest = 0;
  auto const cells = static_cast<std::int64_t>(count.size());
#pragma omp parallel for reduction(+ : total, non_empty) reduction(max : largest) schedule(static)
  for (std::int64_t i = 0; i < cells; ++i) {
    std::uint32_t const n = count[static_cast<std::size_t>(i)];
    total += n;
    non_empty += n != 0;
    largest = std::max(largest, n);
  }
  return {total, non_empty, largest};
}

}  // namespace

std::uint32_t window_rows(std::uint64_t cells, std::uint32_t cols, std::uint32_t block_rows) noexcept
{
  std::uint64_t rows = std::max<std::uint64_t>(1, cells / std::max<std::uint32_t>(1, cols));
  if (block_rows > 0) { rows = std::max<std::uint64_t>(block_rows, rows / block_rows * block_rows); }
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(rows, std::numeric_limits<std::uint32_t>::max()));
}

std::uint64_t band_accumulators::max_count()
{
  if (gpu_ == nullptr) { return host_->max_count(); }
  if (host_ == nullptr) { return gpu_->max_count(); }
  // Both sides binned: a cell's count is the sum of two; cheap bound first, exact when it matters.
  std::uint64_t const bound = std::uint64_t{host_->max_count()} + gpu_->max_count();
  return bound <= (std::uint64_t{1} << 24) ? bound : exact_merged_max();
}

std::uint64_t band_accumulators::exact_merged_max()
{
  std::uint32_t const rows_per = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, window_cells / band_.grid.cols));
  std::uint64_t largest = 0;
  scratch w;
  for (std::uint32_t r = 0; r < band_.rows; r += rows_per) {
    std::uint32_t const rows = std::min(rows_per, band_.rows - r);
    auto const view = merged(r, rows, w);
    for (std::uint64_t i = 0; i < view.cells; ++i) { largest = std::max<std::uint64_t>(largest, view.count[i]); }
  }
  return largest;
}

accumulator_view band_accumulators::merged(std::uint32_t row0, std::uint32_t rows, scratch& w)
{
  std::uint64_t const cells = std::uint64_t{rows} * band_.grid.cols;
  // Uninitialized: the pages are first touched by the download's copies, on the OpenMP team.
  w.lo.resize(cells);
  w.hi.resize(cells);
  w.count.resize(cells);
  gpu_->download_extremes(row0, rows, w.lo.data(), w.hi.data(), w.count.data());
  accumulator_view const view{w.lo.data(), w.hi.data(), w.count.data(), nullptr, nullptr, cells};
  if (host_ != nullptr) { host_->merge_into(view, std::uint64_t{row0} * band_.grid.cols); }
  return view;
}

finalized_window band_accumulators::finalize(std::uint32_t row0, std::uint32_t rows, std::uint32_t cols,
                                             metric_request const& request, float nodata, std::uint32_t col0)
{
  finalized_window f;
  if (gpu_ == nullptr) {
    f.bands = host_->finalize_rows(row0, rows, cols, request, nodata, &f.counts, col0);
  } else if (host_ == nullptr) {
    // The device's windows: non-empty cells and the total are counted from their counts.
    metric_request with_count = request;
    with_count.count = true;
    f.bands = gpu_->finalize_rows(row0, rows, cols, with_count, nodata, col0);
    f.counts = counts_of(f.bands.count);
    if (!request.count) { f.bands.count = {}; }
  } else {
    auto const view = merged(row0, rows, scratch_);  // whole rows
    f.bands = finalize_window(view, col0, band_.grid.cols, rows, cols, request, nodata, &f.counts);
    if (request.needs_tags()) {
      // Both sides' tagged counts of the window's rows, summed (only a GPU that failed mid-pass
      // leaves tagged points on both: the cooperative route keeps them on the GPU alone).
      std::vector<std::uint32_t> tags(view.cells * request.tags.size());
      gpu_->download_tags(row0, rows, tags.data());
      host_->add_tags_into(tags.data(), std::uint64_t{row0} * band_.grid.cols, view.cells);
      finalize_tag_window(tags.data(), view.cells, 1, view, col0, band_.grid.cols, rows, cols, request, f.bands);
    }
  }
  f.bands.add_density(request, nodata);
  return f;
}

}  // namespace heightgrid::app
