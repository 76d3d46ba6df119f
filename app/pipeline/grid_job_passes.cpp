// The grid job's passes (grid_job_impl.hpp): each band binned, the guessed grid checked on the
// first, and the band finalized and written window by window.

#include "pipeline/grid_job_impl.hpp"

#include "pipeline/grid_plan.hpp"
#include "pipeline/route_policy.hpp"
#include "report.hpp"

#include "heightgrid/core/cell_accumulator.hpp"
#include "heightgrid/core/error.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

namespace heightgrid::app {
namespace {

/// Batch memory the readers of a GPU job may fill while CUDA starts (at most a quarter of the host
/// budget): 2 GiB holds ~9 * 10^7 LAS points (12 bytes each in 24-byte slots), what 16 cores read
/// in the ~0.4 s CUDA takes to start on the H200 host.
constexpr std::uint64_t max_read_ahead_bytes = std::uint64_t{2} << 30;

std::string describe_bounds(bounds const& b)
{
  std::ostringstream s;
  s.precision(17);  // enough to tell a header rounded in its last digits from the points
  s << "x " << b.xmin << " .. " << b.xmax << ", y " << b.ymin << " .. " << b.ymax;
  return s.str();
}

bool within(bounds const& inner, bounds const& outer) noexcept
{
  return inner.empty() ||
         (inner.xmin >= outer.xmin && inner.xmax <= outer.xmax && inner.ymin >= outer.ymin && inner.ymax <= outer.ymax);
}

bool same_origin(grid_spec const& a, grid_spec const& b) noexcept
{
  return a.x0 == b.x0 && a.y0 == b.y0 && a.xres == b.xres && a.yres == b.yres;
}

/// Where `inner` starts in `outer` (column, row) when it is a window of it: the same cells (the same
/// resolution, its origin exactly on one of `outer`'s cell corners) and inside it. Both grids are
/// snapped to whole cells the same way, so the kept points' grid is one of the guessed grid's.
std::optional<std::pair<std::uint32_t, std::uint32_t>> window_in(grid_spec const& inner,
                                                                  grid_spec const& outer) noexcept
{
  if (inner.xres != outer.xres || inner.yres != outer.yres || outer.xres == 0.0 || outer.yres == 0.0) {
    return std::nullopt;
  }
  // Columns run east from x0, rows south from y0 (the top edge).
  double const dc = std::round((inner.x0 - outer.x0) / outer.xres);
  double const dr = std::round((outer.y0 - inner.y0) / outer.yres);
  if (dc < 0.0 || dr < 0.0 || dc > static_cast<double>(outer.cols) || dr > static_cast<double>(outer.rows)) {
    return std::nullopt;
  }
  auto const col0 = static_cast<std::uint32_t>(dc);
  auto const row0 = static_cast<std::uint32_t>(dr);
  // Exactly the origin a grid of the kept points gets (the output's georeferencing is the same
  // whether the points were read once or twice).
  if (outer.x0 + col0 * outer.xres != inner.x0 || outer.y0 - row0 * outer.yres != inner.y0) { return std::nullopt; }
  if (std::uint64_t{col0} + inner.cols > outer.cols || std::uint64_t{row0} + inner.rows > outer.rows) {
    return std::nullopt;
  }
  return std::make_pair(col0, row0);
}

}  // namespace

namespace job_detail {

void grid_job::add_record_results(grid_sink const& sink, bool device_used)
{
  std::vector<las_record_stats> found = sink.cpu_record_stats();
  if (device_used) {
    std::vector<las_record_stats> const device = gpu_->binner().take_record_stats();
    if (found.size() < device.size()) { found.resize(device.size()); }
    for (std::size_t i = 0; i < device.size(); ++i) { found[i].add(device[i]); }
  }
  for (std::size_t s = 0; s < found.size() && s < all_.size(); ++s) {
    part_result const r = all_[s]->result_of_records(found[s]);
    last_read_.per_source[s].add(r);
    last_read_.total.add(r);
  }
}

bool grid_job::bin_and_write()
{
  if (no_points_) {
    throw error(error_kind::input, (all_.empty() ? std::string("input") : all_.front()->info().path) +
                                     ": no points to grid (the input is empty or every point was filtered out)");
  }
  int const bands = bands_for(grid_);
  report_.bands = bands;
  report_.binned = report_.non_empty = report_.max_count = counted_ = 0;
  settle_route(bands);
  grid_spec out_grid = grid_;
  std::vector<grid_band> todo = band_stack(grid_, bands);  // the bands left, the next one last
  while (!todo.empty()) {
    grid_band const band = todo.back();
    todo.pop_back();
    std::uint32_t const first = band.first_row;
    try {
      bin_band(band, first == 0);
    } catch (order_store_full const& e) {
      // The band's points do not fit beside its accumulators: two bands of half the rows.
      if (band.rows < 2 || report_.bands >= static_cast<int>(max_band_passes)) {
        throw error(error_kind::resource,
                    std::string(e.what()) + ": a band of " + std::to_string(band.rows) + " row(s) of " +
                      std::to_string(band.grid.cols) + " cells holds more points than the memory budget keeps for "
                      "percentiles; use a larger --memory, a coarser --res or tiles (--tile-size)");
      }
      std::uint32_t const half = band.rows / 2;
      todo.push_back(grid_band{grid_, first + half, band.rows - half});
      todo.push_back(grid_band{grid_, first, half});
      ++report_.bands;
      continue;
    }
    if (first == 0) {
      // The first pass has seen every point: check the guessed grid.
      auto const& kept = last_read_.total.extent;
      if (kept.empty()) {
        if (!o_.fixed_grid) {
          throw error(error_kind::input,
                      (all_.empty() ? std::string("input") : all_.front()->info().path) +
                        (last_read_.total.filtered.points_in == 0
                           ? ": no points to grid (the input is empty)"
                           : ": no points left to grid after filtering (" +
                               std::to_string(last_read_.total.filtered.removed()) + " filtered)"));
        }
      }
      if (speculative_) {
        grid_spec const actual = grid_from_bounds(kept, o_.xres, o_.yres, false, o_.edge);
        // Coarser COPC levels than the file has: their points need not reach the header's
        // bounds, whose grid (the whole file's) the output keeps when it holds them all.
        bool const fits = pass_outside_ == 0 && (levels_cut_ || (same_origin(actual, grid_) &&
                                                                 actual.cols <= grid_.cols &&
                                                                 actual.rows <= grid_.rows));
        note_lying_headers();
        // The kept points starting a few cells right of or below the headers' bounds (a filter that
        // drops the edge points): their grid is a window of the accumulators', cropped from them.
        auto const window = !fits && pass_outside_ == 0 && !levels_cut_ ? window_in(actual, grid_) : std::nullopt;
        if (window) {
          out_col0_ = window->first;
          out_row0_ = window->second;
          report_.grid_crop = {out_col0_, out_row0_};
        }
        if (!fits && !window) {
          // Points outside the guessed grid (headers that lie), or the kept points starting in a
          // later cell than the headers' bounds (a filter that drops the edge points, headers wider
          // than the points): the accumulators hold another grid than the output's.
          std::string const why =
            pass_outside_ > 0
              ? with_commas(pass_outside_) + " points lie outside the grid guessed from the headers' bounds"
              : std::string("the points kept start in another cell than the headers' bounds (a filter that drops "
                            "the edge points, or headers wider than the points)");
          report_.warnings.push_back(why + ": the points kept span " + describe_bounds(kept) +
                                     "; reading them again with their own grid (--te reads them once)");
          grid_ = actual;
          speculative_ = false;
          return false;
        }
        // The guessed grid cropped at the right and bottom (the same origin), or to a window of it.
        if (!levels_cut_) { out_grid = actual; }
      }
      report_.grid = out_grid;
      output_.begin(out_grid, max_count_bound(todo.empty() ? 1 : 2, band));
    }
    if (todo.empty() && owns_gpu_ && gpu_ != nullptr && !gpu_used_) {
      // The last pass is over and the CPU binned every point: the job needs no binner (its device
      // memory and page-locked ring would be made beside the write and undone at exit), nor a
      // context where the driver is not up yet; --device gpu still waits for the driver to find
      // the GPU before it commits (confirm_gpu).
      gpu_->skip_binner();
    }
    last_band_ = todo.empty();
    trace_moment("finalizing and writing a band");
    finalize_band(band, out_grid);
    trace_moment("the band is written");
  }
  check_counts();
  confirm_gpu();
  output_.commit(report_.non_empty);
  return true;
}

void grid_job::bin_band(grid_band const& band, bool first_band)
{
  auto const t = clock_type::now();
  host_.reset();
  // The GPU decoder's records: binned on the device, or down to the readers.
  bool const fold = fold_laz(band);
  // In a large LAZ job the readers decode a share of the chunks beside the GPU (laz_gpu_stage) and
  // bin them on the CPU: where the device bins the GPU's records, into a host grid beside the
  // device's (merged when the band is finalized), kept only where it stays small.
  bool const laz_share =
    laz_stage_ != nullptr && laz_stage_->may_share() &&
    (route_ != bin_route::gpu ||
     (fold && band.cells() * accumulator_bytes_per_cell(acc_request_) <= auto_device_policy::cooperative_host_bytes));
  if (route_ != bin_route::gpu || laz_share) {
    // A grid binned by the CPU keeps counts only when they are asked for (or sums or order
    // statistics need them): without, each point costs two atomic maxima and no locked add; merged
    // with the GPU's, its cells count as one point (only which cells hold points matters then).
    metric_request r = acc_request_;
    r.count = o_.request.count;
    host_ = std::make_unique<host_grid>(band, r, order_capacity(band));
    // A grid most pages of which the points will reach (by the headers' count): its pages are
    // mapped up front on every core rather than by double faults in the binning.
    if (route_ != bin_route::gpu && worth_prefaulting(known_points(), band.cells())) {
      omp_set_num_threads(static_cast<int>(threads_));
      host_->prefault(stored_integers());
    }
  }
  if (gpu_ != nullptr && owns_gpu_) {
    // A stage that can ask its driver from the helper process (driver_helper.hpp) does so only
    // where the CPU may bin every point first; else CUDA starts in this process now.
    gpu_->decide_driver_question(route_ == bin_route::cooperative && laz_stage_ == nullptr && known_points() > 0);
  }
  if (gpu_ != nullptr) {
    if (!gpu_->configured()) {
      // Points the GPU decodes and bins where they are never come through the host's ring.
      if (fold_laz(band)) { gpu_->leave_ring_pageable(); }
      gpu_->configure(band, binner_options(band));
    } else {
      // A later pass, or a stage that served an earlier job (tiles): the binner starts over.
      std::atomic<bool> const never{false};
      if (gpu_->wait_ready(never)) {
        gpu_->binner().reset(band, order_capacity(band));
        gpu_->resume();  // after a pass that stopped early (a band split for percentiles)
      }
    }
  }
  // Uncompressed LAS sources switch to raw records where the GPU decodes them, for this pass.
  bool records = false;
  if (wants_records()) {
    for (auto* s : all_) { records = s->deliver_records(true) || records; }
  }
  struct records_off {
    std::vector<part_source*> const& sources;
    bool on;
    ~records_off()
    {
      if (!on) { return; }
      for (auto* s : sources) { (void)s->deliver_records(false); }
    }
  } const switch_back{all_, records};
  if (gpu_ != nullptr && route_ == bin_route::gpu && !sums_ && !order_) {
    // Order-free batches: the readers go on while CUDA starts instead of waiting for it — except
    // for raw LAS records, which fill the ring's slots faster than the device takes them once up:
    // the plain buffers' copies into the ring cost more than the head start gave
    // (docs/benchmarks.md, "LAS on the device").
    std::uint64_t const bytes =
      o_.read_ahead.value_or(records ? 0 : std::min<std::uint64_t>(host_budget() / 4, max_read_ahead_bytes));
    gpu_->allow_read_ahead(static_cast<std::size_t>(bytes / batch_bytes(batch_points_)));
  }
  std::function<host_grid*()> make_host;
  if (o_.device == device_choice::automatic) {
    make_host = [this, band]() -> host_grid* {
      host_ = std::make_unique<host_grid>(band, acc_request_, order_capacity(band));
      return host_.get();
    };
  }
  grid_sink sink(route_, threads_, batch_points_, host_.get(), gpu_.get(), std::move(make_host));
  auto const counter = std::make_shared<read_progress>();
  progress_->follow(counter.get(), 0, report_.passes == 0 ? "grid" : "grid (pass " + std::to_string(report_.passes + 1) + ")");
  if (route_ == bin_route::cooperative && owns_gpu_ && gpu_ != nullptr && laz_stage_ == nullptr) {
    // The CPU bins while CUDA starts: the stage makes no context where the CPU will be done first.
    gpu_->follow_cpu_pass(std::shared_ptr<std::atomic<std::uint64_t> const>(counter, &counter->records), known_points());
  }
  std::uint64_t const parked_before = gpu_ != nullptr ? gpu_->parked_total() : 0;
  if (report_.passes == 0) { report_.setup_s = seconds_since(job_start_); }
  if (records) { sink.decode_records_with(&rules_); }
  if (laz_share && route_ == bin_route::gpu) { sink.bin_readers_batches_on_cpu(); }
  if (laz_stage_ != nullptr) { laz_stage_->deliver_to(fold ? gpu_.get() : nullptr, laz_share); }
  trace_moment("a pass begins");
  last_read_ = read_parts(all_, rules_, {threads_, sums_}, sink, counter.get());
  trace_moment("the pass's readers are done");
  ++report_.passes;
  bool const folded = fold && laz_stage_->report().folded_chunks > 0;
  close_laz_stage();

  std::uint64_t binned = sink.cpu_binning().binned;
  std::uint64_t outside = sink.cpu_binning().outside;
  bool const device_used = sink.gpu_batches() > 0 || folded;
  if (device_used) {
    auto& b = gpu_->binner();
    b.synchronize();
    binned += b.points_binned();
    outside += b.points_outside();
    report_.device = gpu_->wait_started().value_or(gpu_stage::device_facts{}).name;
  }
  if (records || folded) { add_record_results(sink, device_used); }
  if (records) { report_.las_records_on_gpu = report_.las_records_on_gpu || sink.gpu_batches() > 0; }
  report_.laz_binned_on_gpu = report_.laz_binned_on_gpu || folded;
  gpu_used_ = device_used;
  if (!gpu_used_ && host_ == nullptr) {
    // The GPU route, and no batch reached it (a tile or --te that no point meets): empty cells.
    host_ = std::make_unique<host_grid>(band, acc_request_, order_capacity(band));
  }
  if (gpu_ != nullptr && gpu_->current() == gpu_stage::state::failed && !gpu_->context_skipped() &&
      o_.device == device_choice::gpu && !cpu_took_gpus_memory_wait()) {
    throw error(error_kind::device, "--device gpu: the GPU could not be used: " + gpu_->failure());
  }
  pass_outside_ = outside;
  report_.cpu_batches += sink.cpu_batches();
  report_.gpu_batches += sink.gpu_batches();
  report_.read_busy_s += last_read_.read_seconds;
  report_.cpu_bin_busy_s += last_read_.sink_seconds;
  report_.wait_busy_s += last_read_.wait_seconds;
  report_.bin_pass_s += seconds_since(t);
  if (first_band) {
    report_.read = last_read_.total;
    report_.source_extents.clear();
    for (auto const& p : last_read_.per_source) { report_.source_extents.push_back(p.extent); }
    report_.outside = outside;
  }
  report_.binned += binned;
  if (gpu_ != nullptr) {
    report_.gpu_start_s = gpu_->start_seconds();
    report_.read_ahead_batches += gpu_->parked_total() - parked_before;
  }
  report_.route = !gpu_used_ ? "CPU" : (sink.cpu_batches() > 0 ? "CPU + GPU" : "GPU");
}

void grid_job::note_lying_headers()
{
  for (std::size_t s = 0; s < all_.size(); ++s) {
    auto const d = all_[s]->declared_bounds();
    auto const& kept = last_read_.per_source[s].extent;
    if (d && !d->empty() && !within(kept, *d)) {
      double const excess = std::max({d->xmin - kept.xmin, kept.xmax - d->xmax, d->ymin - kept.ymin, kept.ymax - d->ymax});
      std::ostringstream by;
      by.precision(3);
      by << excess;
      report_.warnings.push_back(all_[s]->info().path + ": points lie outside the bounds its header declares, by up to " +
                                 by.str() + " (" + describe_bounds(kept) + " vs header " + describe_bounds(*d) +
                                 "); every point was gridded");
    }
  }
}

band_accumulators grid_job::accumulators(grid_band const& band) const
{
  return band_accumulators(band, host_.get(), gpu_used_ ? &gpu_->binner() : nullptr);
}

std::uint64_t grid_job::max_count_bound(int bands, grid_band const& band)
{
  // Tagged counts are at most their cell's count: one bound for every count-like band.
  if (!o_.request.count && !o_.request.needs_tags()) { return 0; }
  if (bands > 1) {
    // Rows are written before later bands are binned: bound by every point of the job.
    std::uint64_t const known = known_points();
    return known > 0 ? known : std::numeric_limits<std::uint64_t>::max();
  }
  return accumulators(band).max_count();
}

void grid_job::finalize_band(grid_band const& band, grid_spec const& out_grid)
{
  auto const t = clock_type::now();
  // The band's rows [begin, end) (band-local) that hold output rows: accumulator rows
  // [out_row0_, out_row0_ + out_grid.rows).
  std::uint64_t const out_first = out_row0_;
  std::uint64_t const out_end = out_first + out_grid.rows;
  std::uint64_t const band_first = band.first_row;
  std::uint64_t const band_end = band_first + band.rows;
  if (std::max(band_first, out_first) >= std::min(band_end, out_end)) { return; }
  auto const begin = static_cast<std::uint32_t>(std::max(band_first, out_first) - band_first);
  auto const end = static_cast<std::uint32_t>(std::min(band_end, out_end) - band_first);
  // Where the device finalizes alone, window k + 1 is finalized and downloaded while window k is
  // written (its DEFLATE takes the cores; the device and the copy engine are free): windows of whole
  // blocks, smaller than the host's. On the CPU both would take the same cores: one after the other.
  // Where the CPU and the GPU binned the band together (the cooperative route), its windows are
  // downloaded, merged and finalized on the host before any is written (below; on one thread beside
  // the writer they took 4x as long: docs/benchmarks.md, "LAS on the device"), in the device's
  // window size (the downloaded accumulators, 20 bytes a cell, stay small).
  band_accumulators acc = accumulators(band);
  bool const overlap = gpu_used_ && !acc.both_sides();
  std::uint32_t const rows_per = gpu_used_ ? window_rows(o_.device_window_cells, band.grid.cols, output_.block_rows())
                                           : window_rows(window_cells, band.grid.cols, 0);
  metric_request fin = o_.request;
  fin.cell_area = std::fabs(out_grid.xres * out_grid.yres);
  double writing = 0.0;
  omp_set_num_threads(static_cast<int>(threads_));
  // The window from band row r: up to the next multiple of rows_per in output rows (where the
  // file's blocks start), or the band's end.
  auto const rows_from = [&](std::uint32_t r) {
    std::uint64_t const out_row = band_first + r - out_first;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(rows_per - out_row % rows_per, end - r));
  };
  auto const finalize = [&](std::uint32_t r) {
    if (!gpu_used_) { return acc.finalize(r, rows_from(r), out_grid.cols, fin, o_.nodata, out_col0_); }
    // The device's sort and bands allocate: where other processes hold its memory, the window waits
    // as the job allows (a failed attempt changes nothing).
    finalized_window f;
    gpu_->within_memory("finalizing the band on the device",
                        [&] { f = acc.finalize(r, rows_from(r), out_grid.cols, fin, o_.nodata, out_col0_); });
    return f;
  };
  // Beside GDAL's compression threads the window's host work (the copies out of the pinned staging,
  // the count) stays on its own thread: an OpenMP team there would wait at each barrier for members
  // that the busy cores do not run (measured: docs/benchmarks.md, "Shape metrics").
  auto const finalize_beside_the_writer = [&](std::uint32_t r) {
    omp_set_num_threads(1);
    return finalize(r);
  };
  bool const release_early = last_band_ && owns_gpu_ && o_.release_device_when_done && laz_stage_ == nullptr;
  auto const release = [&] {
    // The device's last window is in hand: its teardown overlaps the last writes and the close
    // (docs/benchmarks.md, "Shape metrics and density": the device released early).
    report_.gpu = gpu_->binner().times();
    report_.device_released_early = true;
    gpu_->release_device();
  };
  // Windows the CPU and the GPU binned together: every one merged and finalized first, by the whole
  // team while no compression runs beside it (between writes its barriers waited for cores GDAL's
  // threads held), then written; the finalized bands are held meanwhile, not the accumulators.
  bool const merged_first = gpu_used_ && acc.both_sides();
  std::vector<finalized_window> ready;
  if (merged_first) {
    for (std::uint32_t r = begin, rows = 0; r < end; r += rows) {
      rows = rows_from(r);
      ready.push_back(finalize(r));
    }
    if (release_early) { release(); }
  }
  std::future<finalized_window> next;
  if (overlap) { next = std::async(std::launch::async, finalize_beside_the_writer, begin); }
  std::size_t k = 0;
  for (std::uint32_t r = begin, rows = 0; r < end; r += rows, ++k) {
    rows = rows_from(r);
    finalized_window f = merged_first ? std::move(ready[k]) : overlap ? next.get() : finalize(r);
    if (overlap && r + rows < end) { next = std::async(std::launch::async, finalize_beside_the_writer, r + rows); }
    if (overlap && r + rows >= end && release_early) { release(); }
    window_counts const& c = f.counts;
    std::uint32_t largest = c.largest;
    std::uint64_t const total = c.total, non_empty = c.non_empty;
    if (host_ != nullptr && !host_->keeps_counts()) { largest = 0; }  // counts of 0 or 1: no maximum known
    report_.max_count = std::max<std::uint64_t>(report_.max_count, largest);
    counted_ += total;
    report_.non_empty += non_empty;
    auto const w = clock_type::now();
    output_.write_rows(static_cast<std::uint32_t>(band_first + r - out_first), rows, f.bands);
    writing += seconds_since(w);
  }
  report_.finalize_s += seconds_since(t) - writing;
  if (gpu_used_ && !report_.device_released_early) { report_.gpu = gpu_->binner().times(); }
}

void grid_job::confirm_gpu()
{
  if (o_.device != device_choice::gpu || gpu_ == nullptr || gpu_used_) { return; }
  if (host_ != nullptr && gpu_->waiting_for_memory()) {
    // The CPU binned every batch while the GPU side waited for memory other processes hold: the
    // job is done, the wait is over.
    gpu_->stop();
    gpu_->wait_settled();
  }
  // The GPU was there once its driver found it: the job, binned on the CPU alone, waits for no context.
  bool const found = gpu_->wait_found();
  if (!cpu_took_gpus_memory_wait() && !found) {
    throw error(error_kind::device, "--device gpu: the GPU could not be used: " + gpu_->failure());
  }
}

bool grid_job::cpu_took_gpus_memory_wait()
{
  if (gpu_ == nullptr || !gpu_->failed_for_memory() || gpu_used_ || host_ == nullptr) { return false; }
  std::string const note = "the device's memory stayed with other processes until the CPU had binned every batch: "
                           "the job ran on the CPU (" + gpu_->failure() + ")";
  if (std::find(report_.device_memory_notes.begin(), report_.device_memory_notes.end(), note) ==
      report_.device_memory_notes.end()) {
    report_.device_memory_notes.push_back(note);
  }
  return true;
}

void grid_job::check_counts()
{
  // A cell's count is 32 bits: with 2^32 points or more one could have wrapped. The counts of the
  // output cells then no longer add up to the points binned into them. (A host grid without
  // counts has none to wrap.)
  bool const counts_kept = host_ == nullptr || host_->keeps_counts();
  if (counts_kept && report_.binned >= (std::uint64_t{1} << 32) && counted_ != report_.binned) {
    throw error(error_kind::resource, "a cell holds more than 4,294,967,295 points, more than a count can hold; "
                                      "choose a finer resolution (--res)");
  }
}

}  // namespace job_detail
}  // namespace heightgrid::app
