#include "pipeline/grid_job_impl.hpp"

#include "pipeline/driver_helper.hpp"
#include "pipeline/grid_plan.hpp"
#include "pipeline/memory_wait.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace heightgrid::app {
namespace {

/// Grids whose accumulators are at most this large are assumed to fit any GPU the job meets, so
/// planning does not wait for CUDA to start to learn the device's memory.
constexpr std::uint64_t device_bytes_assumed_free = std::uint64_t{2} << 30;

std::size_t largest_part(std::vector<part_source*> const& sources)
{
  std::size_t n = 1;
  for (auto* s : sources) { n = std::max(n, s->max_part_points()); }
  return n;
}

}  // namespace

namespace job_detail {

grid_job::grid_job(std::vector<std::unique_ptr<part_source>> const& sources, grid_job_options const& o,
                   grid_output& output, std::shared_ptr<gpu_stage> gpu)
  : all_(source_pointers(sources)), o_(o), output_(output), gpu_(std::move(gpu)),
    rules_(o.filter, tag_table::of(o.request.tags)),
    threads_(worker_threads(o.threads)), batch_points_(largest_part(all_))
{
  owns_gpu_ = gpu_ != nullptr && o.gpu_stage_private;
  acc_request_ = o.request;
  // What accumulators keep (a grid binned by the CPU alone drops the count unless asked: bin_band).
  acc_request_.min = acc_request_.max = acc_request_.count = true;
  sums_ = o.request.needs_sums();
  order_ = o.request.needs_order();
  report_.threads = threads_;
}

grid_job_report grid_job::run()
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
    // The grid guessed from the headers was not the points': they are read again with theirs, the
    // LAZ chunks through a GPU decoder again (the first pass's stage handed each chunk once).
    if (report_.laz_gpu) { offload_laz(); }
  }
  progress_->finish();
  if (report_.gpu_batches == 0) {
    if (gpu_ == nullptr) {
      report_.gpu_note = o_.device == device_choice::cpu ? "not started (--device cpu)"
                                                         : "not started: the job is small enough for the CPU alone";
    } else if (gpu_->context_skipped()) {
      report_.gpu_note = "found after " + human_seconds(gpu_->start_seconds()) +
                         (gpu_->driver_asked_elsewhere() ? " (its driver, asked by a helper process)" : " (its driver)") +
                         ", no context made: the CPU was to bin every point first";
    } else if (gpu_->binner_skipped()) {
      report_.gpu_note = "up after " + human_seconds(gpu_->start_seconds()) +
                         ", no binner made: the CPU had binned every point";
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

void grid_job::restrict_sources()
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

std::uint64_t grid_job::known_points() const
{
  std::uint64_t total = 0;
  for (auto* s : all_) {
    if (!s->info().point_count) { return 0; }
    total += *s->info().point_count;
  }
  return total;
}

bool grid_job::stored_integers() const
{
  return std::all_of(all_.begin(), all_.end(), [](auto* s) { return s->integer_parts(); });
}

void grid_job::choose_route()
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
    owns_gpu_ = true;
  }
  HG_EXPECTS(gpu_ == nullptr || gpu_->batch_points() >= batch_points_, error_kind::internal,
          "grid_job: the GPU stage's batches are smaller than the sources' parts");
  if (gpu_ != nullptr) { gpu_->set_memory_wait(memory_wait_s()); }
}

bool grid_job::may_share_with_cpu() const { return job_may_share_with_cpu(o_); }

void grid_job::settle_route(int bands)
{
  if (route_ != bin_route::cooperative) { return; }
  bool const known = known_points() > 0;
  std::uint64_t const host_bytes = grid_.num_cells() * accumulator_bytes_per_cell(acc_request_);
  if (bands > 1 || (known && (laz_stage_ != nullptr || host_bytes > auto_device_policy::cooperative_host_bytes))) {
    // Splitting a band between the CPU and the GPU would pass every point over both for each band.
    route_ = bin_route::gpu;
  }
}

void grid_job::offload_laz()
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
  limits.share_threads = threads_;  // the readers decode a share beside the GPU in large jobs
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
      owns_gpu_ = true;
      gpu_->set_memory_wait(memory_wait_s());
    }
  }
}

bool grid_job::fold_laz(grid_band const& band) const
{
  // laz_stage_ is the pass's own (each pass's stage is closed after it): its chunks are unread.
  return laz_stage_ != nullptr && gpu_ != nullptr && route_ == bin_route::gpu && !sums_ && !order_ &&
         binner_options().reduction == batch_reduction::atomic && band.first_row == 0 && band.rows == grid_.rows;
}

void grid_job::close_laz_stage()
{
  if (laz_stage_ == nullptr) { return; }
  for (auto* s : all_) { s->offload_chunks(nullptr); }
  laz_gpu_stage_report const pass = laz_stage_->report();
  report_.device_memory_notes.insert(report_.device_memory_notes.end(), pass.memory_notes.begin(),
                                     pass.memory_notes.end());
  // A job's passes with a stage each (the re-read of a guessed grid): the report sums them.
  report_.laz_gpu_stats.add(pass);
  auto const t = clock_type::now();
  laz_stage_.reset();
  report_.laz_gpu_stats.close_s += seconds_since(t);
  trace_moment("LAZ stage: closed");
}

std::uint64_t grid_job::host_budget() const
{
  if (o_.host_memory > 0) { return o_.host_memory; }
  std::uint64_t const available = available_memory_bytes();
  return available > 0 ? available / 2 : std::uint64_t{8} << 30;
}

bounds grid_job::bounds_pass(std::vector<part_source*> const& sources)
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

void grid_job::plan_grid()
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

std::uint64_t grid_job::accumulator_bytes(grid_spec const& g) const
{
  return g.num_cells() * accumulator_bytes_per_cell(acc_request_);
}

std::uint64_t grid_job::order_bytes_per_point() const
{
  if (!order_) { return 0; }
  std::uint64_t const device = route_ == bin_route::cpu ? 0 : gpu_binner::order_bytes_per_point();
  return std::max<std::uint64_t>(host_order_bytes_per_point, device);
}

std::uint64_t grid_job::order_capacity(grid_band const& band) const
{
  if (!order_) { return 0; }
  return app::order_capacity(std::min(host_budget(), order_device_budget_),
                             band.cells() * accumulator_bytes_per_cell(acc_request_), order_bytes_per_point());
}

int grid_job::bands_for(grid_spec const& g)
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

gpu_binner_options grid_job::binner_options(grid_band const& band) const
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

bool grid_job::wants_records() const
{
  return o_.las_decoder == las_decoder_choice::automatic &&
         (route_ == bin_route::gpu || route_ == bin_route::cooperative) && gpu_ != nullptr && !sums_ &&
         !order_ && binner_options().reduction == batch_reduction::atomic;
}

}  // namespace job_detail

bool job_may_share_with_cpu(grid_job_options const& o) noexcept
{
  // Tagged counts would need both sides' counts merged per band: the GPU alone keeps them. Sums
  // merge in batch order and order statistics keep every point: the GPU alone too.
  bool const sums = o.request.needs_sums();
  return o.cpu_while_gpu_starts && !sums && !o.request.needs_order() && !o.request.needs_tags() &&
         o.reduction.value_or(sums ? batch_reduction::sorted : batch_reduction::atomic) == batch_reduction::atomic;
}

std::function<bool(std::string*)> driver_helper_finder(int device, double timeout_s)
{
  return [device, timeout_s](std::string* reason) {
    auto const a = ask_driver_helper(device, timeout_s);
    if (!a) { return find_gpu(reason, device); }
    trace_moment(a->found ? "the helper process: the driver found the GPU" : "the helper process: no usable GPU");
    if (!a->found && reason != nullptr) { *reason = a->reason; }
    return a->found;
  };
}

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
  job_detail::grid_job job(sources, options, output, std::move(gpu));
  return job.run();
}

}  // namespace heightgrid::app

