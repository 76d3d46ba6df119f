#include "pipeline/grid_job.hpp"

#include "pipeline/band_accumulators.hpp"
#include "pipeline/grid_plan.hpp"

#include "pipeline/progress.hpp"
#include "pipeline/sinks.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/host_grid.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <future>
#include <thread>

namespace heightgrid::app {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

/// Batch memory the readers of a GPU job may fill while CUDA starts (at most a quarter of the host
/// budget): 2 GiB holds ~9 * 10^7 LAS points (12 bytes each in 24-byte slots), what 16 cores read
/// in the ~0.4 s CUDA takes to start on the H200 host.
constexpr std::uint64_t max_read_ahead_bytes = std::uint64_t{2} << 30;

/// Grids whose accumulators are at most this large are assumed to fit any GPU the job meets, so
/// planning does not wait for CUDA to start to learn the device's memory.
constexpr std::uint64_t device_bytes_assumed_free = std::uint64_t{2} << 30;

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

std::size_t largest_part(std::vector<part_source*> const& sources)
{
  std::size_t n = 1;
  for (auto* s : sources) { n = std::max(n, s->max_part_points()); }
  return n;
}

/// The job's state across passes.
class grid_job {
 public:
  grid_job(std::vector<std::unique_ptr<part_source>> const& sources, grid_job_options const& o, grid_output& output,
           std::shared_ptr<gpu_stage> gpu)
    : all_(source_pointers(sources)), o_(o), output_(output), gpu_(std::move(gpu)),
      rules_(o.filter, tag_table::of(o.request.tags)),
      threads_(worker_threads(o.threads)), batch_points_(largest_part(all_))
  {
    acc_request_ = o.request;
    // What accumulators keep (a grid binned by the CPU alone drops the count unless asked: bin_band).
    acc_request_.min = acc_request_.max = acc_request_.count = true;
    sums_ = o.request.needs_sums();
    order_ = o.request.needs_order();
    report_.threads = threads_;
  }

  grid_job_report run()
  {
    job_start_ = clock_type::now();
    progress_ = std::make_unique<progress_display>(o_.progress, o_.progress_terminal, 0);
    restrict_sources();
    choose_route();
    // The sources stop taking records from the LAZ stage when the job ends, however it ends.
    struct take_back {
      std::vector<part_source*> const& sources;
      ~take_back()
      {
        for (auto* s : sources) {
          s->offload_chunks(nullptr);
          (void)s->deliver_records(false);
        }
      }
    } const guard{all_};
    offload_laz();
    plan_grid();
    for (;;) {
      bool const done = bin_and_write();
      if (done) { break; }
    }
    progress_->finish();
    if (report_.gpu_batches == 0) {
      if (gpu_ == nullptr) {
        report_.gpu_note = o_.device == device_choice::cpu ? "not started (--device cpu)"
                                                           : "not started: the job is small enough for the CPU alone";
      } else if (gpu_->current() == gpu_stage::state::failed) {
        report_.gpu_note = "could not start: " + gpu_->failure();
      } else if (gpu_->current() == gpu_stage::state::starting) {
        report_.gpu_note = "still starting when the CPU had finished";
      } else {
        report_.gpu_note = "ready after " + human_seconds(gpu_->start_seconds()) + ", but the CPU had finished";
      }
    }
    close_laz_stage();
    if (gpu_ != nullptr) {
      auto const notes = gpu_->memory_notes();
      report_.device_memory_notes.insert(report_.device_memory_notes.end(), notes.begin(), notes.end());
    }
    return report_;
  }

  /// Seconds the GPU side waits for device memory other processes hold: --device gpu has no other
  /// side to go to; under auto the CPU takes over at once.
  double memory_wait_s() const { return o_.device == device_choice::gpu ? o_.device_memory_wait_s : 0.0; }

 private:
  // ---- what to read ---------------------------------------------------------------------------

  /// Sources with a hierarchy (COPC) read only the nodes the fixed grid (-te, a tile) meets and the
  /// levels --copc-level asks for.
  void restrict_sources()
  {
    read_region region;
    if (o_.fixed_grid) {
      grid_spec const& g = *o_.fixed_grid;  // a tile: a window (col0, row0) of a larger grid
      bounds b;
      b.xmin = g.x0 + g.xres * g.col0;
      b.xmax = g.x0 + g.xres * (static_cast<double>(g.col0) + g.cols);
      b.ymax = g.y0 - g.yres * g.row0;
      b.ymin = g.y0 - g.yres * (static_cast<double>(g.row0) + g.rows);
      region.window = b;
    }
    region.max_level = o_.copc_level;
    if (o_.copc_level_auto) { region.auto_level_cell = std::min(o_.xres, o_.yres); }
    if (!region.window && !region.max_level && region.auto_level_cell <= 0.0) { return; }
    for (auto* s : all_) { report_.copc.add(s->restrict_to(region)); }
    levels_cut_ = report_.copc.deepest_read < report_.copc.deepest;
  }

  // ---- route ---------------------------------------------------------------------------------

  std::uint64_t known_points() const
  {
    std::uint64_t total = 0;
    for (auto* s : all_) {
      if (!s->info().point_count) { return 0; }
      total += *s->info().point_count;
    }
    return total;
  }

  /// Whether every input's points travel as stored integers (LAS/LAZ Z, small integer dimensions).
  bool stored_integers() const
  {
    return std::all_of(all_.begin(), all_.end(), [](auto* s) { return s->integer_parts(); });
  }

  void choose_route()
  {
    std::uint64_t const points = known_points();
    switch (o_.device) {
      case device_choice::cpu: route_ = bin_route::cpu; break;
      case device_choice::gpu: route_ = may_share_with_cpu() ? bin_route::cooperative : bin_route::gpu; break;
      case device_choice::automatic:
        if (points > 0 && !auto_wants_gpu(points, o_.request, threads_)) {
          route_ = bin_route::cpu;
        } else if (points > 0 || sums_ || order_) {
          // Known to be big enough: the CPU bins while CUDA starts where the grid is small enough to
          // keep on both sides (bin_and_write decides), else the GPU alone.
          route_ = may_share_with_cpu() ? bin_route::cooperative : bin_route::gpu;
        } else {
          // Unknown size (text, rasters): the CPU bins while the GPU starts, the GPU takes over once up.
          route_ = bin_route::cooperative;
        }
        break;
    }
    if (route_ == bin_route::cpu) {
      gpu_.reset();
    } else if (gpu_ == nullptr) {
      gpu_ = std::make_shared<gpu_stage>(batch_points_, gpu_ring_slots(threads_), o_.gpu_device);
    }
    HG_EXPECTS(gpu_ == nullptr || gpu_->batch_points() >= batch_points_, error_kind::internal,
            "grid_job: the GPU stage's batches are smaller than the sources' parts");
    if (gpu_ != nullptr) { gpu_->set_memory_wait(memory_wait_s()); }
  }

  /// Batches that may be binned on either side and merged in any order (min/max/count by atomics),
  /// and the job lets the CPU bin while CUDA starts.
  bool may_share_with_cpu() const
  {
    // Tagged counts would need both sides' counts merged per band: the GPU alone keeps them.
    return o_.cpu_while_gpu_starts && !sums_ && !order_ && !o_.request.needs_tags() &&
           binner_options().reduction == batch_reduction::atomic;
  }

  /// The cooperative route of a job whose size is known: the CPU bins the batches read while CUDA
  /// starts (the GPU's start hidden), the GPU the rest, and the two grids merge. Kept where the host
  /// grid stays small (auto_device_policy::cooperative_host_bytes) and no LAZ chunk goes to the GPU
  /// decoder (its records are binned where they are decoded); otherwise the GPU alone.
  void settle_route(int bands)
  {
    if (route_ != bin_route::cooperative) { return; }
    bool const known = known_points() > 0;
    std::uint64_t const host_bytes = grid_.num_cells() * accumulator_bytes_per_cell(acc_request_);
    if (bands > 1 || (known && (laz_stage_ != nullptr || host_bytes > auto_device_policy::cooperative_host_bytes))) {
      // Splitting a band between the CPU and the GPU would pass every point over both for each band.
      route_ = bin_route::gpu;
    }
  }

  /// Hands LAZ chunks (layered, and pointwise of formats 0-3) to the GPU decoder when that is worth it
  /// (laz_decoder_choice).
  void offload_laz()
  {
    laz_decoder_choice choice = o_.laz_decoder;
    if (choice == laz_decoder_choice::automatic) {
      choice = o_.device == device_choice::cpu ? laz_decoder_choice::cpu
               : o_.device == device_choice::gpu ? laz_decoder_choice::gpu
                                                 : laz_decoder_choice::automatic;
    }
    if (choice == laz_decoder_choice::cpu) {
      report_.laz_gpu_note = "not used (--device cpu)";
      return;
    }
    laz_gpu_limits limits = o_.laz_gpu_sizes;
    limits.memory_wait_s = memory_wait_s();
    auto stage = std::make_unique<laz_gpu_stage>(o_.gpu_device, limits, o_.laz_cache);
    std::vector<part_source*> offloaded;
    for (std::size_t i = 0; i < all_.size(); ++i) {
      stage->set_source(i);  // the statistics' entry of its chunks binned on the device
      if (all_[i]->offload_chunks(stage.get())) { offloaded.push_back(all_[i]); }
    }
    auto const give_back = [&](std::string note) {
      for (auto* s : offloaded) { s->offload_chunks(nullptr); }
      report_.laz_gpu_note = std::move(note);
    };
    if (offloaded.empty()) {
      give_back("no LAZ chunk the GPU decoder can take");
      return;
    }
    if (choice == laz_decoder_choice::automatic) {
      laz_offload_facts f;
      f.points = stage->point_count();
      f.pointwise_points = stage->pointwise_point_count();
      f.largest_chunk = stage->largest_chunk();
      f.largest_pointwise_chunk = stage->largest_pointwise_chunk();
      f.chunks = stage->chunk_count();
      f.threads = threads_;
      // The records are binned where they are decoded (bin_band: fold_laz), or go down.
      f.fold = !sums_ && !order_ && binner_options().reduction == batch_reduction::atomic;
      auto const e = estimate_laz_offload(f);
      if (!e.use_gpu) {
        give_back(e.note(f));
        return;
      }
    }
    // Whether there is a GPU is the stage's thread's to find out: asking here would hold the
    // job for the driver's start (~0.2 s); without one the stage hands every chunk back at once.
    stage->start();
    laz_stage_ = std::move(stage);
    report_.laz_gpu = true;
    if (route_ == bin_route::cpu && o_.device == device_choice::automatic && !sums_ && !order_) {
      // Records the GPU decoded are binned where they are (bin_band: fold_laz) rather than sent
      // down for the CPU to bin: the GPU route, whatever the points' count chose.
      route_ = bin_route::gpu;
      if (gpu_ == nullptr) {
        gpu_ = std::make_shared<gpu_stage>(batch_points_, gpu_ring_slots(threads_),
                                           o_.gpu_device);
        gpu_->set_memory_wait(memory_wait_s());
      }
    }
  }

  /// Whether this pass bins the GPU decoder's records on the device (never downloaded): the GPU
  /// route with the atomic reduction over the whole grid in one band, on the pass that reads the
  /// chunks (the stage hands each chunk once).
  bool fold_laz(grid_band const& band) const
  {
    return laz_stage_ != nullptr && gpu_ != nullptr && route_ == bin_route::gpu && !sums_ && !order_ &&
           binner_options().reduction == batch_reduction::atomic && band.first_row == 0 && band.rows == grid_.rows &&
           report_.passes == 0;
  }

  /// After the first pass that read the points: the GPU decoder has handed out what it will (a
  /// later pass decodes on the CPU), so its device and page-locked memory go now.
  void close_laz_stage()
  {
    if (laz_stage_ == nullptr) { return; }
    for (auto* s : all_) { s->offload_chunks(nullptr); }
    report_.laz_gpu_stats = laz_stage_->report();
    auto const& notes = report_.laz_gpu_stats.memory_notes;
    report_.device_memory_notes.insert(report_.device_memory_notes.end(), notes.begin(), notes.end());
    auto const t = clock_type::now();
    laz_stage_.reset();
    report_.laz_gpu_stats.close_s = seconds_since(t);
  }

  // ---- grid ----------------------------------------------------------------------------------

  std::uint64_t host_budget() const
  {
    if (o_.host_memory > 0) { return o_.host_memory; }
    std::uint64_t const available = available_memory_bytes();
    return available > 0 ? available / 2 : std::uint64_t{8} << 30;
  }

  /// Bounds of the kept points of `sources`, from a pass that only reads.
  bounds bounds_pass(std::vector<part_source*> const& sources)
  {
    auto const t = clock_type::now();
    bounds_sink sink(threads_, batch_points_);
    read_progress counter;
    progress_->follow(&counter, 0, "bounds");
    auto const r = read_parts(sources, rules_, {threads_, false}, sink, &counter);
    ++report_.bounds_passes;
    report_.bounds_s += seconds_since(t);
    return r.total.extent;
  }

  void plan_grid()
  {
    if (o_.fixed_grid) {
      grid_ = *o_.fixed_grid;
      grid_.edge = o_.edge;
      speculative_ = false;
      return;
    }
    bounds declared;
    std::vector<part_source*> undeclared;
    for (auto* s : all_) {
      auto const d = s->declared_bounds();
      if (d && !d->empty()) {
        declared.extend(*d);
      } else {
        undeclared.push_back(s);
      }
    }
    bounds guess = declared;
    if (!undeclared.empty()) { guess.extend(bounds_pass(undeclared)); }
    speculative_ = !declared.empty();
    if (guess.empty()) {
      // Nothing declared and nothing kept: no grid; the binning pass below finds no point either.
      no_points_ = true;
      return;
    }
    try {
      grid_ = grid_from_bounds(guess, o_.xres, o_.yres, false, o_.edge);
    } catch (error const& e) {
      if (!speculative_) { throw; }
      // Absurd header bounds (a grid past the limits): read the bounds of the points instead.
      report_.warnings.push_back("the bounds the input headers declare make no usable grid (" + std::string(e.what()) +
                                 "); reading the points' bounds first");
      grid_ = grid_from_bounds(bounds_pass(all_), o_.xres, o_.yres, false, o_.edge);
      speculative_ = false;
      return;
    }
    if (speculative_ && bands_for(grid_) > 1) {
      // A guess that needs several bands would cost a pass per band if wrong: know the bounds first.
      grid_ = grid_from_bounds(bounds_pass(all_), o_.xres, o_.yres, false, o_.edge);
      speculative_ = false;
    }
  }

  std::uint64_t accumulator_bytes(grid_spec const& g) const
  {
    return g.num_cells() * accumulator_bytes_per_cell(acc_request_);
  }

  /// Bytes a point kept for order statistics costs on the route's side (the larger, for a route that
  /// may fall back to the CPU).
  std::uint64_t order_bytes_per_point() const
  {
    if (!order_) { return 0; }
    std::uint64_t const device = route_ == bin_route::cpu ? 0 : gpu_binner::order_bytes_per_point();
    return std::max<std::uint64_t>(host_order_bytes_per_point, device);
  }

  /// Points a band's order store may hold: what the budget leaves beside its accumulators.
  std::uint64_t order_capacity(grid_band const& band) const
  {
    if (!order_) { return 0; }
    return app::order_capacity(std::min(host_budget(), order_device_budget_),
                               band.cells() * accumulator_bytes_per_cell(acc_request_), order_bytes_per_point());
  }

  /// Bands of rows the budgets allow. Where the device's free memory (other processes hold the
  /// rest) allows too few, --device gpu waits for more (polling, within the job's memory wait) and
  /// auto takes the CPU route.
  int bands_for(grid_spec const& g)
  {
    band_plan_facts f;
    f.grid = g;
    f.bytes_per_cell = accumulator_bytes_per_cell(acc_request_);
    f.points = known_points();
    f.budget_from_option = o_.host_memory > 0 || o_.device_memory > 0;
    auto const t0 = clock_type::now();
    bool waiting = false;
    for (;;) {
      f.bytes_per_point = order_bytes_per_point();
      std::uint64_t const bytes = accumulator_bytes(g) + f.points * f.bytes_per_point;
      std::uint64_t const host = route_ != bin_route::gpu ? host_budget() : std::numeric_limits<std::uint64_t>::max();
      std::uint64_t budget = host;
      std::uint64_t device = 0;
      if (route_ != bin_route::cpu) {
        device = o_.device_memory;
        if (device == 0 && bytes > device_bytes_assumed_free) {
          if (auto const facts = gpu_->wait_started()) {
            std::uint64_t const free_bytes = waiting ? free_device_memory(gpu_->device()) : facts->free_bytes;
            std::uint64_t const ring = gpu_binner::device_bytes(grid_band{}, binner_options()) + (std::uint64_t{64} << 20);
            device = free_bytes * 8 / 10 > ring ? free_bytes * 8 / 10 - ring : 1;
          }
        }
        if (device > 0) { budget = std::min(budget, device); }
        order_device_budget_ = device > 0 ? device : std::numeric_limits<std::uint64_t>::max();
      }
      f.budget = budget;
      try {
        int const bands = plan_bands(f);
        if (waiting) {
          report_.device_memory_notes.push_back("the grid's device memory came free after " +
                                                human_seconds(seconds_since(t0)));
        }
        return bands;
      } catch (error const& e) {
        // Bound by the device's free memory (not --memory, not the host's): others hold the rest.
        bool const device_bound = e.kind() == error_kind::resource && o_.device_memory == 0 && device > 0 &&
                                  device < host;
        if (!device_bound) { throw; }
        if (o_.device == device_choice::automatic) {
          report_.device_memory_notes.push_back("the device's free memory holds too few rows of the grid (" +
                                                format_bytes(device) + "): the CPU route");
          route_ = bin_route::cpu;
          gpu_.reset();
          continue;
        }
        double const wait_s = memory_wait_s();
        if (seconds_since(t0) >= wait_s) {
          throw device_memory_error(std::string(e.what()) + " (the device's free memory; waited " +
                                    human_seconds(wait_s) + " for other processes to free more)");
        }
        if (!waiting) {
          report_.device_memory_notes.push_back("waiting up to " + human_seconds(wait_s) +
                                                " for device memory other processes hold: the grid needs " +
                                                format_bytes(bytes) + ", " + format_bytes(device) + " usable now");
          waiting = true;
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(device_memory_poll_s));
      }
    }
  }

  gpu_binner_options binner_options(grid_band const& band = grid_band{}) const
  {
    gpu_binner_options b;
    b.batch_points = batch_points_;
    b.device_batches = 3;
    b.reduction = o_.reduction.value_or(sums_ ? batch_reduction::sorted : batch_reduction::atomic);
    // thread reduces each cell of a batch in order from 0.0, exactly as host_grid::reduce_batch does:
    // mean and stddev bit-identical to the CPU's (other modes sum big cells in another order).
    b.mode = o_.mode.value_or(reduce_mode::thread);
    b.request = acc_request_;
    b.order_capacity = order_capacity(band);
    b.record_filter = rules_.table();
    return b;
  }

  /// Whether uncompressed LAS goes to the GPU as raw records this pass: the GPU route, the atomic
  /// reduction (order-free: batches of records cut the file where the CPU's parts do not) and no
  /// order statistics.
  bool wants_records() const
  {
    return o_.las_decoder == las_decoder_choice::automatic &&
           (route_ == bin_route::gpu || route_ == bin_route::cooperative) && gpu_ != nullptr && !sums_ &&
           !order_ && binner_options().reduction == batch_reduction::atomic;
  }

  /// Adds what binning raw records found (on the device, and on the CPU where the GPU failed) to
  /// the pass's read report, source by source, as read_part would have reported it.
  void add_record_results(grid_sink const& sink, bool device_used)
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

  // ---- passes --------------------------------------------------------------------------------

  /// Bins every band of grid_ and writes them. Returns false when the guessed grid turned out wrong
  /// (grid_ is then the grid of the points, and the caller runs again).
  bool bin_and_write()
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
          if (!fits) {
            report_.warnings.push_back(
              "the grid guessed from the headers' bounds differs from the points' (" + describe_bounds(kept) +
              "); reading the points again with the grid of the points");
            grid_ = actual;
            speculative_ = false;
            return false;
          }
          if (!levels_cut_) { out_grid = actual; }  // the same origin: the guessed grid cropped at the right and bottom
        }
        report_.grid = out_grid;
        output_.begin(out_grid, max_count_bound(todo.empty() ? 1 : 2, band));
      }
      finalize_band(band, out_grid);
    }
    check_counts();
    confirm_gpu();
    output_.commit(report_.non_empty);
    return true;
  }

  void bin_band(grid_band const& band, bool first_band)
  {
    auto const t = clock_type::now();
    host_.reset();
    if (route_ != bin_route::gpu) {
      // A grid binned by the CPU keeps counts only when they are asked for (or sums or order
      // statistics need them): without, each point costs two atomic maxima and no locked add; merged
      // with the GPU's, its cells count as one point (only which cells hold points matters then).
      metric_request r = acc_request_;
      r.count = o_.request.count;
      host_ = std::make_unique<host_grid>(band, r, order_capacity(band));
      // A grid most cells of which will be reached (as many points as cells, by the headers): its
      // pages are mapped up front on every core rather than by double faults in the binning.
      std::uint64_t const known = known_points();
      if (route_ != bin_route::gpu && known > 0 && known >= band.cells()) {
        omp_set_num_threads(static_cast<int>(threads_));
        host_->prefault(stored_integers());
      }
    }
    if (gpu_ != nullptr) {
      if (!gpu_->configured()) {
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
    read_progress counter;
    progress_->follow(&counter, 0, report_.passes == 0 ? "grid" : "grid (pass " + std::to_string(report_.passes + 1) + ")");
    std::uint64_t const parked_before = gpu_ != nullptr ? gpu_->parked_total() : 0;
    if (report_.passes == 0) { report_.setup_s = seconds_since(job_start_); }
    if (records) { sink.decode_records_with(&rules_); }
    // The GPU decoder's records: binned on the device, or down to the readers.
    bool const fold = fold_laz(band);
    if (laz_stage_ != nullptr) { laz_stage_->deliver_to(fold ? gpu_.get() : nullptr); }
    last_read_ = read_parts(all_, rules_, {threads_, sums_}, sink, &counter);
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
    if (gpu_ != nullptr && gpu_->current() == gpu_stage::state::failed && o_.device == device_choice::gpu &&
        !cpu_took_gpus_memory_wait()) {
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

  void note_lying_headers()
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

  /// The band's accumulators, wherever its pass left them (band_accumulators.hpp).
  band_accumulators accumulators(grid_band const& band) const
  {
    return band_accumulators(band, host_.get(), gpu_used_ ? &gpu_->binner() : nullptr);
  }

  std::uint64_t max_count_bound(int bands, grid_band const& band)
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

  void finalize_band(grid_band const& band, grid_spec const& out_grid)
  {
    auto const t = clock_type::now();
    std::uint32_t const out_rows_end = std::min<std::uint32_t>(band.first_row + band.rows, out_grid.rows);
    if (band.first_row >= out_rows_end) { return; }
    std::uint32_t const rows_in_band = out_rows_end - band.first_row;
    std::uint32_t const rows_per =
      static_cast<std::uint32_t>(std::max<std::uint64_t>(1, window_cells / std::max<std::uint32_t>(1, band.grid.cols)));
    metric_request fin = o_.request;
    fin.cell_area = std::fabs(out_grid.xres * out_grid.yres);
    band_accumulators acc = accumulators(band);
    double writing = 0.0;
    omp_set_num_threads(static_cast<int>(threads_));
    auto const finalize = [&](std::uint32_t r) {
      return acc.finalize(r, std::min(rows_per, rows_in_band - r), out_grid.cols, fin, o_.nodata);
    };
    // Where the device finalizes, window k + 1 is finalized and downloaded while window k is written
    // (its DEFLATE takes the cores; the device and the copy engine are free). On the CPU both would
    // take the same cores: one after the other.
    bool const overlap = gpu_used_;
    std::future<finalized_window> next;
    if (overlap) { next = std::async(std::launch::async, finalize, 0U); }
    for (std::uint32_t r = 0; r < rows_in_band; r += rows_per) {
      std::uint32_t const rows = std::min(rows_per, rows_in_band - r);
      finalized_window f = overlap ? next.get() : finalize(r);
      if (overlap && r + rows < rows_in_band) { next = std::async(std::launch::async, finalize, r + rows); }
      window_counts const& c = f.counts;
      std::uint32_t largest = c.largest;
      std::uint64_t const total = c.total, non_empty = c.non_empty;
      if (host_ != nullptr && !host_->keeps_counts()) { largest = 0; }  // counts of 0 or 1: no maximum known
      report_.max_count = std::max<std::uint64_t>(report_.max_count, largest);
      counted_ += total;
      report_.non_empty += non_empty;
      auto const w = clock_type::now();
      output_.write_rows(band.first_row + r, rows, f.bands);
      writing += seconds_since(w);
    }
    report_.finalize_s += seconds_since(t) - writing;
    if (gpu_used_) { report_.gpu = gpu_->binner().times(); }
  }

  void confirm_gpu()
  {
    if (o_.device != device_choice::gpu || gpu_ == nullptr || gpu_used_) { return; }
    if (host_ != nullptr && gpu_->waiting_for_memory()) {
      // The CPU binned every batch while the GPU side waited for memory other processes hold: the
      // job is done, the wait is over.
      gpu_->stop();
      gpu_->wait_settled();
    }
    bool const started = gpu_->wait_started().has_value();
    if (!cpu_took_gpus_memory_wait() && !started) {
      throw error(error_kind::device, "--device gpu: the GPU could not be used: " + gpu_->failure());
    }
  }

  /// A GPU there but its memory held by other processes, while the CPU binned every batch beside it
  /// (the cooperative route): the job is done, and not failed for want of device memory.
  bool cpu_took_gpus_memory_wait()
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

  void check_counts()
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

  std::vector<part_source*> all_;
  grid_job_options const& o_;
  grid_output& output_;
  std::shared_ptr<gpu_stage> gpu_;
  filter_rules rules_;
  unsigned threads_;
  std::size_t batch_points_;
  metric_request acc_request_;
  bool sums_{false};
  bool order_{false};  ///< order statistics: every point of a band is kept until it is finalized
  std::uint64_t order_device_budget_{std::numeric_limits<std::uint64_t>::max()};

  bin_route route_{bin_route::cpu};
  std::unique_ptr<laz_gpu_stage> laz_stage_;  ///< layered LAZ chunks decoded on the GPU, or none
  clock_type::time_point job_start_{};
  grid_spec grid_{};
  bool speculative_{false};
  bool no_points_{false};
  bool levels_cut_{false};  ///< COPC inputs read above their deepest level (restrict_sources)
  bool gpu_used_{false};
  std::unique_ptr<host_grid> host_;
  read_report last_read_;
  std::uint64_t pass_outside_{0};
  std::uint64_t counted_{0};
  std::unique_ptr<progress_display> progress_;
  grid_job_report report_;
};

}  // namespace

bounds read_bounds(std::vector<part_source*> const& sources, filter_options const& filter, unsigned threads)
{
  unsigned const workers = worker_threads(threads);
  bounds_sink sink(workers, largest_part(sources));
  filter_rules const rules(filter);
  return read_parts(sources, rules, {workers, false}, sink, nullptr).total.extent;
}

unsigned worker_threads(unsigned requested) noexcept
{
  if (requested > 0) { return requested; }
  int const omp = omp_get_max_threads();
  return static_cast<unsigned>(std::max(1, omp));
}

grid_job_report run_grid_job(std::vector<std::unique_ptr<part_source>> const& sources, grid_job_options const& options,
                             grid_output& output, std::shared_ptr<gpu_stage> gpu)
{
  grid_job job(sources, options, output, std::move(gpu));
  return job.run();
}

}  // namespace heightgrid::app
