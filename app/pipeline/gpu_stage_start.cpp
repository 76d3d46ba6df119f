// gpu_stage's start-up thread: CUDA's start, then, once the job configured the stage, the binner;
// either waits for device memory other processes hold as the job allows (memory_wait.hpp).

#include "pipeline/gpu_stage_shared.hpp"
#include "pipeline/route_policy.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <exception>
#include <thread>
#include <utility>

namespace heightgrid::app {
namespace {

std::atomic<int> start_threads_running{0};
std::atomic<bool> cuda_started{false};

}  // namespace

bool gpu_start_in_flight() noexcept { return start_threads_running.load() > 0; }

bool gpu_started_in_process() noexcept { return cuda_started.load(); }

memory_wait_hooks gpu_stage::shared::memory_hooks()
{
  return {[this](double seconds) { return pause(seconds); }, [this](std::string note) { note_memory(std::move(note)); },
          [this](bool on) { memory_wait = on; }};
}

bool gpu_stage::shared::start_within_memory(shared& s, std::string* reason, bool* short_of_memory)
{
  if (start_gpu(reason, s.device, short_of_memory)) { return true; }
  if (!*short_of_memory) { return false; }
  double wait_s = 0.0;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.changed.wait(lock, [&] { return s.memory_wait_known || s.configured || s.abandoned || s.stopping; });
    wait_s = s.memory_wait_s;
  }
  if (wait_s <= 0.0) { return false; }
  // The first failure is in hand: the first attempt reports it, so the next start waits a poll.
  bool tried = false;
  try {
    return within_device_memory("CUDA's start", wait_s, s.memory_hooks(), [&] {
      if (tried && start_gpu(reason, s.device, short_of_memory)) { return true; }
      tried = true;
      if (*short_of_memory) { throw device_memory_error(*reason); }
      throw error(error_kind::device, *reason);  // not for memory: no wait, `reason` says why
    });
  } catch (device_memory_error const& e) {
    *reason = e.what();
    return false;
  } catch (error const&) {
    return false;
  }
}

std::unique_ptr<gpu_binner> gpu_stage::shared::make_binner(shared& s, grid_band const& band, gpu_binner_options options)
{
  double wait_s = 0.0;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    wait_s = s.memory_wait_s;
  }
  return within_device_memory("the binner", wait_s, s.memory_hooks(), [&] {
    try {
      return std::make_unique<gpu_binner>(band, options);
    } catch (device_memory_error const& e) {
      if (options.device_batches <= 1) { throw; }
      s.note_memory("device memory short for " + std::to_string(options.device_batches) + " device batches (" +
                    e.what() + "); binning with one");
      options.device_batches = 1;
      return std::make_unique<gpu_binner>(band, options);
    }
  });
}

bool gpu_stage::shared::context_wanted()
{
  std::lock_guard<std::mutex> lock(mutex);
  if (binner_unneeded || abandoned || stopping) { return false; }
  if (cpu_pass_read == nullptr) { return true; }
  return gpu_context_worth_making(stage_detail::seconds_from(cpu_pass_began), cpu_pass_read->load(), cpu_pass_expected);
}

void gpu_stage::shared::start(std::shared_ptr<shared> s)
{
  using question = shared::question;
  std::string reason;
  if (s->before_start && !s->before_start()) {
    s->settle(state::failed, "the start was refused (before_start)");
    return;
  }
  // The driver first: --device gpu's check needs no more where the CPU bins every point before the
  // GPU could pay for joining it (context_wanted), and then no context is made, nor torn down at exit.
  bool elsewhere = false;
  if (s->find_driver) {
    std::unique_lock<std::mutex> lock(s->mutex);
    s->changed.wait(lock, [&] {
      return s->driver_question != question::undecided || s->abandoned || s->stopping || s->binner_unneeded;
    });
    if (s->driver_question == question::undecided && (s->abandoned || s->stopping)) {
      lock.unlock();
      s->settle(state::failed, "the job ended before the driver was asked");
      return;
    }
    // Undecided here: the job needs no binner, and the driver's answer alone is wanted.
    elsewhere = s->driver_question != question::here;
  }
  s->asked_elsewhere.store(elsewhere);
  if (elsewhere ? !s->find_driver(&reason) : !find_gpu(&reason, s->device)) {
    s->settle(state::failed, reason);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->found = true;
  }
  s->changed.notify_all();
  trace_moment("the grid's GPU is found (the driver is up)");
  if (!s->context_wanted()) {
    s->context_skipped.store(true);
    s->binner_skipped.store(true);
    s->settle(state::failed, "no context was made: the CPU was to bin every point first");
    return;
  }
  bool short_of_memory = false;
  if (!start_within_memory(*s, &reason, &short_of_memory)) {
    s->memory_failure = short_of_memory;
    s->settle(state::failed, reason);
    return;
  }
  try {
    auto const info = query_device();
    std::lock_guard<std::mutex> lock(s->mutex);
    s->facts = gpu_stage::device_facts{info.name, info.free_mem};
    s->started = true;
    cuda_started.store(true);
    trace_moment("the grid's CUDA is up");
  } catch (std::exception const& e) {
    s->settle(state::failed, e.what());
    return;
  }
  s->changed.notify_all();
  grid_band band;
  gpu_binner_options options;
  bool ring_pageable = false;
  {
    std::unique_lock<std::mutex> lock(s->mutex);
    if (!s->wait_configured(lock)) {
      lock.unlock();
      s->settle(state::failed, "the job ended before the GPU was needed");
      return;
    }
    band = s->band;
    options = s->options;
    ring_pageable = s->ring_pageable;
    if (s->binner_unneeded || s->abandoned) {
      lock.unlock();
      s->binner_skipped.store(true);
      s->settle(state::failed, "no binner was needed: the CPU had binned every point");
      return;
    }
  }
  try {
    auto binner = make_binner(*s, band, options);
    trace_moment("the grid's binner has its device memory");
    if (!ring_pageable) {
      // Page-locking the ring faults in the pages never touched one at a time on this thread
      // (inside cudaHostRegister) while the readers wait for the binner: mapped on every core
      // first (their bytes unchanged: readers may be filling slots ahead of the start), they are
      // only pinned there (docs/benchmarks.md, "Shape metrics and density": the ring mapped).
      if (populate_pages(s->ring.get(), s->slots * s->slot_bytes)) { trace_moment("the grid's ring is mapped"); }
      binner->register_host_memory(s->ring.get(), s->slots * s->slot_bytes);
      trace_moment("the grid's ring is page-locked");
    }
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->binner = std::move(binner);
    }
    trace_moment("the grid's binner is ready");
    s->settle(state::ready);
  } catch (std::exception const& e) {
    s->memory_failure = dynamic_cast<device_memory_error const*>(&e) != nullptr;
    s->settle(state::failed, e.what());
  }
}

void gpu_stage::shared::launch(std::shared_ptr<shared> const& s)
{
  start_threads_running.fetch_add(1);
  try {
    std::thread([held = s]() mutable {
      start(held);
      held.reset();  // a binner this thread made last use of is gone before the count drops
      start_threads_running.fetch_sub(1);
    }).detach();
  } catch (...) {
    start_threads_running.fetch_sub(1);
    throw;
  }
}

}  // namespace heightgrid::app
