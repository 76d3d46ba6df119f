// The tile coordinator and the tile worker of a tiled job (tile_work.hpp), and the threads of
// this process that run workers (run_tiles_here).

#include "pipeline/tile_work.hpp"

#include "pipeline/grid_job.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/geotiff_writer.hpp"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>

namespace heightgrid::app {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

bool within(bounds const& inner, bounds const& outer) noexcept
{
  return inner.empty() ||
         (inner.xmin >= outer.xmin && inner.xmax <= outer.xmax && inner.ymin >= outer.ymin && inner.ymax <= outer.ymax);
}

/// Whether `b` reaches past the grid's cells under the cell rule.
bool beyond_grid(grid_spec const& g, bounds const& b)
{
  double const c_lo = std::floor((b.xmin - g.x0) / g.xres);
  double const c_hi = std::floor((b.xmax - g.x0) / g.xres);
  double const r_lo = grid_spec::row_below((g.y0 - b.ymax) / g.yres, g.edge);
  double const r_hi = grid_spec::row_below((g.y0 - b.ymin) / g.yres, g.edge);
  return c_lo < 0.0 || r_lo < 0.0 || c_hi >= static_cast<double>(g.cols) || r_hi >= static_cast<double>(g.rows);
}

}  // namespace

// ---- tile_coordinator -------------------------------------------------------------------------

tile_coordinator::tile_coordinator(tiling layout, std::vector<catalogue_entry> const& catalogue,
                                   tiled_job_options const& o)
  : layout_(std::move(layout)), catalogue_(catalogue), o_(o), bad_(catalogue.size(), false)
{
  // Every input goes to the tiles its header bounds meet. Not widened: a file that ends on a tile's
  // edge would be read by both tiles; a header rounded past its last point is caught like any
  // other header that lies (complete()).
  for (std::size_t s = 0; s < catalogue_.size(); ++s) {
    auto const& d = catalogue_[s].declared;
    auto const points = static_cast<double>(catalogue_[s].points);
    if (!d || d->empty()) {
      for (std::uint64_t t = 0; t < layout_.count(); ++t) {
        tiles_[t].sources.push_back(s);
        tiles_[t].points += points / static_cast<double>(layout_.count());
      }
      continue;
    }
    std::uint32_t tx0 = 0, tx1 = 0, ty0 = 0, ty1 = 0;
    if (!layout_.tiles_meeting(*d, 0, tx0, tx1, ty0, ty1)) { continue; }
    double const share = points / (static_cast<double>(tx1 - tx0 + 1) * static_cast<double>(ty1 - ty0 + 1));
    for (std::uint32_t ty = ty0; ty <= ty1; ++ty) {
      for (std::uint32_t tx = tx0; tx <= tx1; ++tx) {
        auto& tile = tiles_[std::uint64_t{ty} * layout_.tiles_x() + tx];
        tile.sources.push_back(s);
        tile.points += share;
      }
    }
  }
  // Biggest tiles first (longest processing time first): a big tile handed out last would run
  // alone while every other worker waits. Ties keep the tiles' order.
  std::vector<std::pair<double, std::uint64_t>> order;
  for (auto& [index, tile] : tiles_) {
    tile.state = tile_state::pending;
    order.emplace_back(tile.points, index);
  }
  std::stable_sort(order.begin(), order.end(), [](auto const& a, auto const& b) { return a.first > b.first; });
  for (auto const& entry : order) { queue_.push_back(entry.second); }
  planned_ = tiles_.size();
}

void tile_coordinator::mark_done_earlier(std::uint64_t index, bool written)
{
  auto it = tiles_.find(index);
  if (it == tiles_.end()) { return; }
  it->second.state = tile_state::done;
  it->second.written = written;
  ++resumed_;  // next() passes over it in the queue (no search here: a resume may mark 10^5 tiles)
}

std::optional<tile_task> tile_coordinator::next()
{
  std::lock_guard<std::mutex> lock(mutex_);
  if (fatal_ || replan_) { return std::nullopt; }
  while (!queue_.empty()) {
    std::uint64_t const index = queue_.front();
    queue_.pop_front();
    auto& t = tiles_.at(index);
    if (t.state != tile_state::pending) { continue; }
    std::vector<std::size_t> sources;
    for (auto const s : t.sources) {
      if (!bad_[s]) { sources.push_back(s); }
    }
    if (sources.empty()) {  // every input it had was skipped (--skip-bad)
      t.state = tile_state::done;
      ++empty_;
      continue;
    }
    t.state = tile_state::running;
    t.dirty = false;
    ++running_;
    return tile_task{index, std::move(sources)};
  }
  return std::nullopt;
}

bool tile_coordinator::finished() const
{
  std::lock_guard<std::mutex> lock(mutex_);
  return running_ == 0 && (fatal_ || replan_ || queue_.empty());
}

bool tile_coordinator::idle_worker_may_get_work() const
{
  std::lock_guard<std::mutex> lock(mutex_);
  return !fatal_ && !replan_ && running_ > 0;
}

void tile_coordinator::requeue(std::uint64_t index, std::vector<std::string>& log_lines)
{
  auto& t = tiles_.at(index);
  if (t.state == tile_state::running) {
    t.dirty = true;
    return;
  }
  if (t.state == tile_state::done) {
    ++redone_;
    log_lines.push_back(std::to_string(index) + " pending");
  }
  if (t.state != tile_state::pending || std::find(queue_.begin(), queue_.end(), index) == queue_.end()) {
    t.state = tile_state::pending;
    queue_.push_back(index);
  }
}

std::vector<std::string> tile_coordinator::complete(tile_task const& task, tile_outcome const& r)
{
  std::vector<std::string> log_lines;
  std::lock_guard<std::mutex> lock(mutex_);
  --running_;
  auto& t = tiles_.at(task.index);
  for (auto const& w : r.warnings) { warnings_.push_back(w); }
  switch (r.status) {
    case tile_outcome::kind::failed:
      if (!fatal_) { fatal_ = error(r.error, r.message); }
      t.state = tile_state::pending;
      return log_lines;
    case tile_outcome::kind::bad_input: {
      if (!bad_[r.bad]) {
        bad_[r.bad] = true;
        skipped_.push_back({catalogue_[r.bad].path, r.message});
      }
      t.state = tile_state::pending;
      queue_.push_front(task.index);
      return log_lines;
    }
    case tile_outcome::kind::written:
    case tile_outcome::kind::empty: break;
  }
  records_ += r.records;
  if (t.counted) {
    // Gridded again in this run (an input reached it late): the totals count its last result.
    binned_ -= t.binned;
    non_empty_ -= t.non_empty;
    (t.written ? written_ : empty_) -= 1;
  }
  binned_ += r.binned;
  non_empty_ += r.non_empty;
  t.written = r.status == tile_outcome::kind::written;
  t.binned = r.binned;
  t.non_empty = r.non_empty;
  t.counted = true;
  t.state = tile_state::done;
  (t.written ? written_ : empty_) += 1;
  log_lines.push_back(std::to_string(task.index) + (t.written ? " written" : " empty"));
  // Inputs whose points reached past their header's bounds: the tiles those points reach get them.
  for (auto const& [s, extent] : r.extents) {
    auto const& d = catalogue_[s].declared;
    if (extent.empty() || !d || d->empty() || within(extent, *d)) { continue; }
    if (!o_.fixed_grid && beyond_grid(layout_.grid, extent)) {
      replan_ = true;
      replan_bounds_.extend(extent);
      warnings_.push_back(catalogue_[s].path + ": points lie outside the bounds its header declares and outside the "
                                               "grid planned from the headers; planning the grid again from them");
      continue;
    }
    std::uint32_t tx0 = 0, tx1 = 0, ty0 = 0, ty1 = 0;
    if (!layout_.tiles_meeting(extent, 0, tx0, tx1, ty0, ty1)) { continue; }
    bool added = false;
    for (std::uint32_t ty = ty0; ty <= ty1; ++ty) {
      for (std::uint32_t tx = tx0; tx <= tx1; ++tx) {
        std::uint64_t const index = std::uint64_t{ty} * layout_.tiles_x() + tx;
        bool const is_new = tiles_.find(index) == tiles_.end();  // a tile no header met
        auto& other = tiles_[index];
        if (std::find(other.sources.begin(), other.sources.end(), s) != other.sources.end()) { continue; }
        other.sources.insert(std::upper_bound(other.sources.begin(), other.sources.end(), s), s);
        if (is_new) {
          other.state = tile_state::pending;
          queue_.push_back(index);
          ++planned_;
        } else {
          requeue(index, log_lines);
        }
        added = true;
      }
    }
    if (added) {
      warnings_.push_back(catalogue_[s].path + ": points lie outside the bounds its header declares; the tiles they "
                                               "reach were gridded with it too");
    }
  }
  if (t.dirty) { requeue(task.index, log_lines); }
  return log_lines;
}

void tile_coordinator::fail(error const& e)
{
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fatal_) { fatal_ = e; }
}

std::vector<std::uint64_t> tile_coordinator::written_tiles() const
{
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::uint64_t> out;
  for (auto const& [index, t] : tiles_) {
    if (t.state == tile_state::done && t.written) { out.push_back(index); }
  }
  return out;
}

// ---- tile_worker --------------------------------------------------------------------------------

namespace {

/// A tile's GeoTIFF: streamed like a single run's, not kept when the tile holds no point.
class tile_output final : public grid_output {
 public:
  tile_output(std::string path, std::vector<metric> const& bands, io::raster_write_options const& options)
    : path_(std::move(path)), bands_(bands), options_(options)
  {
  }
  void begin(grid_spec const& grid, std::uint64_t max_count) override
  {
    writer_ = std::make_unique<io::raster_writer>(path_, grid, bands_, options_, max_count);
  }
  void write_rows(std::uint32_t row0, std::uint32_t, cell_results const& window) override { writer_->write_rows(row0, window); }
  [[nodiscard]] std::uint32_t block_rows() const override
  {
    return writer_ != nullptr ? static_cast<std::uint32_t>(writer_->block_rows()) : 0;
  }
  void commit(std::uint64_t non_empty_cells) override
  {
    if (non_empty_cells == 0) {
      writer_.reset();  // removes the temporary
      std::error_code ec;
      fs::remove(path_, ec);  // a tile of an earlier job (--overwrite) that is empty now
      return;
    }
    writer_->commit();
    writer_.reset();
    written_ = true;
  }
  [[nodiscard]] bool written() const noexcept { return written_; }

 private:
  std::string path_;
  std::vector<metric> const& bands_;
  io::raster_write_options const& options_;
  std::unique_ptr<io::raster_writer> writer_;
  bool written_{false};
};

}  // namespace

tile_worker::tile_worker(tiled_job_options const& o, tiling const& layout, std::vector<catalogue_entry> const& catalogue,
                         tile_source_opener const& open, int device, unsigned threads)
  : o_(o), layout_(layout), catalogue_(catalogue), open_(open), device_(device), threads_(threads)
{
}

std::string tile_worker::name() const
{
  std::string prefix = label_.empty() ? std::string() : label_ + ", ";
  if (!ordinal_.empty()) { prefix += ordinal_ + ", "; }
  if (device_ < 0 && gpu_ == nullptr) { return prefix + "worker (" + std::to_string(threads_) + " threads)"; }
  std::string n = device_ >= 0 ? "GPU " + std::to_string(device_) : std::string("GPU");
  if (!device_name_.empty()) { n += " (" + device_name_ + ")"; }
  return prefix + n + ", " + std::to_string(threads_) + " threads";
}

tile_outcome tile_worker::run(tile_task const& task)
{
  auto const start = clock_type::now();
  tile_outcome out;
  auto const tx = static_cast<std::uint32_t>(task.index % layout_.tiles_x());
  auto const ty = static_cast<std::uint32_t>(task.index / layout_.tiles_x());
  grid_spec const tile = layout_.tile(tx, ty);
  std::size_t opening = 0;  // the entry being opened, for a failure while opening
  try {
    std::vector<std::unique_ptr<part_source>> sources;
    for (auto const s : task.sources) {
      opening = s;
      auto one = open_(tile, task.index, {s});
      for (auto& p : one) { sources.push_back(std::move(p)); }
    }
    opening = catalogue_.size();
    double const open_s = std::chrono::duration<double>(clock_type::now() - start).count();
    grid_job_options job = o_.job;
    job.fixed_grid = tile;
    job.threads = threads_;
    job.progress = false;
    job.progress_terminal = false;
    if (device_ >= 0) {
      job.device = device_choice::gpu;
      job.gpu_device = device_;
    }
    if (job.device == device_choice::gpu && gpu_ == nullptr) {
      gpu_ = std::make_shared<gpu_stage>(o_.batch_points, gpu_ring_slots(threads_), device_);
    }
    if (job.device != device_choice::cpu) {
      // The LAZ decoder of this worker's device serves its tiles one after the other.
      if (laz_cache_ == nullptr) { laz_cache_ = std::make_shared<laz_gpu_cache>(); }
      job.laz_cache = laz_cache_;
    }
    auto write = o_.write;
    write.overwrite = true;  // the directory is the job's (checked before any tile)
    write.fill.method = io::fill_method::none;  // filled across tile edges once every tile is written (run_tiled_job)
    tile_output output((fs::path(o_.out_dir) / tile_file_name(o_.name, layout_, tx, ty)).string(), o_.bands, write);
    auto const job_start = clock_type::now();
    auto const r = run_grid_job(sources, job, output, gpu_);
    double const job_s = std::chrono::duration<double>(clock_type::now() - job_start).count();
    // Where a tile's time went (-v): what a worker does between its GPU's work.
    std::string laz;
    auto const& z = r.laz_gpu_stats;
    if (r.laz_gpu && z.waves > 0) {
      laz = fmt::format("; LAZ on the GPU: {} wave(s) of {} chunks at most, read and uploaded {}, decoded {} of which "
                        "kernels {}, binned {}",
                        z.waves, z.chunks_at_once, human_seconds(z.read_s), human_seconds(z.decode_s),
                        human_seconds(z.kernel_s), human_seconds(z.fold_s));
    }
    if (r.laz_gpu && !z.failure.empty()) { laz += "; LAZ chunks decoded on the CPU after the GPU decoder failed: " + z.failure; }
    spdlog::debug("tile {}: {} input(s) opened in {}; gridded in {}: setup {}, pass {} ({} records{}), finalize {}, "
                  "the rest (write, close) {}",
                  tile_file_name(o_.name, layout_, tx, ty), task.sources.size(), human_seconds(open_s),
                  human_seconds(job_s), human_seconds(r.setup_s), human_seconds(r.bin_pass_s),
                  with_commas(r.read.filtered.points_in), laz, human_seconds(r.finalize_s),
                  human_seconds(std::max(0.0, job_s - r.setup_s - r.bin_pass_s - r.finalize_s)));
    out.status = output.written() ? tile_outcome::kind::written : tile_outcome::kind::empty;
    out.records = r.read.filtered.points_in;
    out.binned = r.binned;
    out.non_empty = r.non_empty;
    for (std::size_t i = 0; i < r.source_extents.size() && i < task.sources.size(); ++i) {
      out.extents.emplace_back(task.sources[i], r.source_extents[i]);
    }
    out.warnings = r.warnings;
    // What the device's memory held by others made the tile do (waits, fewer device batches): -v
    // says it where the tile ran (every rank logs its own debug lines).
    for (auto const& note : r.device_memory_notes) {
      if (memory_notes_said_.insert(note).second) {
        spdlog::debug("GPU memory, tile {}: {}", tile_file_name(o_.name, layout_, tx, ty), note);
      }
    }
    // The stage's binner keeps its times from tile to tile: this tile's share is the difference.
    double const gpu_total = (r.gpu.bin_ms + r.gpu.finalize_ms) * 1e-3;
    out.gpu_seconds = std::max(0.0, gpu_total - gpu_total_s_);
    gpu_total_s_ = gpu_total;
    if (device_name_.empty() && !r.device.empty()) { device_name_ = r.device; }
  } catch (source_error const& e) {
    gpu_.reset();  // a stage stopped by a failed job is not reused
    gpu_total_s_ = 0.0;
    out.status = o_.skip_bad ? tile_outcome::kind::bad_input : tile_outcome::kind::failed;
    out.bad = task.sources.at(e.source());
    out.message = e.what();
    out.error = e.kind();
  } catch (error const& e) {
    gpu_.reset();
    bool const bad_open = e.kind() == error_kind::input && opening < catalogue_.size();
    out.status = o_.skip_bad && bad_open ? tile_outcome::kind::bad_input : tile_outcome::kind::failed;
    out.bad = bad_open ? opening : 0;
    out.message = e.what();
    out.error = e.kind();
  } catch (std::bad_alloc const&) {
    gpu_.reset();
    gpu_total_s_ = 0.0;
    out.status = tile_outcome::kind::failed;
    out.message = "out of host memory while gridding tile " + tile_file_name(o_.name, layout_, tx, ty);
    out.error = error_kind::resource;
  } catch (std::exception const& e) {
    gpu_.reset();
    gpu_total_s_ = 0.0;
    out.status = tile_outcome::kind::failed;
    out.message = e.what();
    out.error = error_kind::internal;
  }
  if (out.status == tile_outcome::kind::failed && !label_.empty()) { out.message = label_ + ": " + out.message; }
  out.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  busy_s_ += out.seconds;
  gpu_busy_s_ += out.gpu_seconds;
  ++tiles_;
  return out;
}

// ---- the driver ---------------------------------------------------------------------------------

/// One worker per GPU (or one for the CPU) on threads of this process, sharing the cores.
void run_tiles_here(tile_coordinator& c, std::vector<std::unique_ptr<tile_worker>>& workers, tile_log const& log,
                    bool show_progress)
{
  std::mutex mutex;
  std::condition_variable changed;
  auto const work = [&](tile_worker& w) {
    for (;;) {
      auto task = c.next();
      if (!task) {
        std::unique_lock<std::mutex> lock(mutex);
        // Another worker's tile may still requeue tiles (an input past its header): wait for it.
        if (!c.idle_worker_may_get_work()) { break; }
        changed.wait_for(lock, std::chrono::milliseconds(50));
        continue;
      }
      auto const outcome = w.run(*task);
      auto const lines = c.complete(*task, outcome);
      log(lines);
      if (show_progress) { c.report_progress(); }
      changed.notify_all();
    }
    changed.notify_all();
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < workers.size(); ++i) { threads.emplace_back(work, std::ref(*workers[i])); }
  work(*workers.front());
  for (auto& t : threads) { t.join(); }
}

void tile_coordinator::report_progress() const
{
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(stderr, "\rtiles: %llu of %llu done (%llu written, %llu empty)   ",
               static_cast<unsigned long long>(written_ + empty_ + resumed_), static_cast<unsigned long long>(planned_),
               static_cast<unsigned long long>(written_), static_cast<unsigned long long>(empty_));
  std::fflush(stderr);
}

void tile_coordinator::fill(tiled_job_report& r) const
{
  std::lock_guard<std::mutex> lock(mutex_);
  r.tiles_planned = planned_;
  r.tiles_written = written_;
  r.tiles_empty = empty_;
  r.tiles_resumed = resumed_;
  r.tiles_redone = redone_;
  r.records = records_;
  r.binned = binned_;
  r.non_empty = non_empty_;
  r.skipped = skipped_;
  r.warnings = warnings_;
}

}  // namespace heightgrid::app
