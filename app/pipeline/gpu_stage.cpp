// gpu_stage: the ring of page-locked batches between the readers and the device, read-ahead while
// CUDA starts, and the binner's use (see gpu_stage.hpp). The start-up thread: gpu_stage_start.cpp.

#include "pipeline/gpu_stage_shared.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

namespace heightgrid::app {

using stage_detail::clock_type;
using stage_detail::seconds_from;

gpu_stage::gpu_stage(std::size_t batch_points, std::size_t ring_slots, int device, std::function<bool()> before_start,
                     std::function<bool(std::string*)> find_driver)
  : s_(std::make_shared<shared>())
{
  s_->device = device;
  s_->before_start = std::move(before_start);
  s_->find_driver = std::move(find_driver);
  s_->batch_points = batch_points;
  s_->slot_bytes = batch_bytes(batch_points);
  s_->slots = std::max<std::size_t>(1, ring_slots);
  // Page-aligned, so that registering it pins whole pages of ours only.
  std::size_t const bytes = (s_->slots * s_->slot_bytes + 4095) / 4096 * 4096;
  s_->ring.reset(static_cast<std::byte*>(std::aligned_alloc(4096, bytes)));
  HG_EXPECTS(s_->ring != nullptr, error_kind::resource,
          "cannot allocate " + std::to_string(bytes >> 20) + " MiB of host memory for the GPU's batch ring");
  for (std::size_t i = s_->slots; i-- > 0;) { s_->free_slots.push_back(i); }
  shared::launch(s_);
}

gpu_stage::~gpu_stage()
{
  if (releasing_.joinable()) { releasing_.join(); }
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    s_->abandoned = true;
  }
  s_->changed.notify_all();
  // The thread holds its own reference to the shared state; it finishes alone if it is still
  // starting CUDA (gpu_start_in_flight() tells main to end the process with _exit then).
}

void gpu_stage::set_memory_wait(double seconds)
{
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    s_->memory_wait_s = std::max(0.0, seconds);
    s_->memory_wait_known = true;
  }
  s_->changed.notify_all();
}

void gpu_stage::configure(grid_band const& band, gpu_binner_options const& options)
{
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    HG_EXPECTS(!s_->configured, error_kind::internal, "gpu_stage::configure called twice");
    s_->band = band;
    s_->options = options;
    s_->options.batch_points = s_->batch_points;
    s_->options.device = s_->device;
    s_->configured = true;
  }
  s_->changed.notify_all();
}

void gpu_stage::leave_ring_pageable()
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  HG_EXPECTS(!s_->configured, error_kind::internal, "gpu_stage::leave_ring_pageable after configure");
  s_->ring_pageable = true;
}

bool gpu_stage::configured() const
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->configured;
}

int gpu_stage::device() const noexcept { return s_->device; }

gpu_stage::state gpu_stage::current() const noexcept { return s_->now.load(); }

std::string gpu_stage::failure() const
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->why;
}

bool gpu_stage::waiting_for_memory() const noexcept { return s_->memory_wait.load(); }

void gpu_stage::wait_settled()
{
  s_->decide(true);
  std::unique_lock<std::mutex> lock(s_->mutex);
  s_->changed.wait(lock, [&] { return s_->now.load() != state::starting; });
}

bool gpu_stage::failed_for_memory() const noexcept { return s_->now.load() == state::failed && s_->memory_failure.load(); }

std::vector<std::string> gpu_stage::memory_notes() const
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->memory_notes;
}

void gpu_stage::skip_binner()
{
  s_->decide(true);
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    s_->binner_unneeded = true;
  }
  s_->changed.notify_all();
}

bool gpu_stage::binner_skipped() const noexcept { return s_->binner_skipped.load(); }

void gpu_stage::follow_cpu_pass(std::shared_ptr<std::atomic<std::uint64_t> const> read, std::uint64_t expected)
{
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    s_->cpu_pass_read = std::move(read);
    s_->cpu_pass_expected = expected;
    s_->cpu_pass_began = stage_detail::clock_type::now();
  }
  s_->changed.notify_all();
}

bool gpu_stage::context_skipped() const noexcept { return s_->context_skipped.load(); }

void gpu_stage::decide_driver_question(bool helper) { s_->decide(helper); }

bool gpu_stage::driver_asked_elsewhere() const noexcept { return s_->asked_elsewhere.load(); }

bool gpu_stage::wait_found()
{
  s_->decide(true);
  std::unique_lock<std::mutex> lock(s_->mutex);
  s_->changed.wait(lock, [&] { return s_->found || s_->now.load() == state::failed || s_->stopping; });
  return s_->found;
}

bool gpu_stage::wait_ready(std::atomic<bool> const& stopping)
{
  s_->decide(false);
  std::unique_lock<std::mutex> lock(s_->mutex);
  s_->changed.wait(lock, [&] { return s_->now.load() != state::starting || s_->stopping || stopping.load(); });
  return s_->now.load() == state::ready;
}

double gpu_stage::start_seconds() const noexcept { return s_->settled_after.load(); }

std::optional<gpu_stage::device_facts> gpu_stage::wait_started()
{
  s_->decide(false);
  std::unique_lock<std::mutex> lock(s_->mutex);
  s_->changed.wait(lock, [&] { return s_->started || s_->now.load() == state::failed || s_->stopping; });
  return s_->facts;
}

std::optional<point_batch> gpu_stage::try_slot()
{
  if (s_->now.load() != state::ready) { return std::nullopt; }
  std::unique_lock<std::mutex> lock(s_->mutex);
  if (s_->free_slots.empty() && !s_->reclaiming) {
    // Hand back the slots whose uploads are done, without waiting for any.
    s_->reclaiming = true;
    lock.unlock();
    try {
      (void)s_->binner->reclaim(false);
    } catch (...) {  // a device error: synchronize() reports it
    }
    lock.lock();
    s_->reclaiming = false;
    s_->changed.notify_all();
  }
  if (s_->free_slots.empty()) { return std::nullopt; }
  std::size_t const slot = s_->free_slots.back();
  s_->free_slots.pop_back();
  return s_->batch_of(slot);
}

std::optional<point_batch> gpu_stage::slot(std::atomic<bool> const& stopping)
{
  std::unique_lock<std::mutex> lock(s_->mutex);
  s_->wait_for(lock, [&] {
    return !s_->free_slots.empty() || s_->stopping || stopping.load() ||
           (s_->now.load() != state::starting && !s_->parked.empty());
  });
  if (s_->free_slots.empty()) { return std::nullopt; }
  std::size_t const slot = s_->free_slots.back();
  s_->free_slots.pop_back();
  return s_->batch_of(slot);
}

bool gpu_stage::owns(point_batch const& b) const noexcept { return s_->owns(b); }

void gpu_stage::allow_read_ahead(std::size_t buffers)
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  s_->read_ahead_limit = buffers;
}

std::optional<point_batch> gpu_stage::read_ahead_slot()
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  if (s_->read_ahead_limit == 0 || s_->now.load() != state::starting || s_->stopping) { return std::nullopt; }
  if (!s_->free_slots.empty()) {
    std::size_t const slot = s_->free_slots.back();
    s_->free_slots.pop_back();
    return s_->batch_of(slot);
  }
  if (s_->read_ahead.size() >= s_->read_ahead_limit) { return std::nullopt; }
  auto* p = static_cast<std::byte*>(std::aligned_alloc(4096, (s_->slot_bytes + 4095) / 4096 * 4096));
  if (p == nullptr) { return std::nullopt; }  // no memory to read ahead: wait for the GPU as without it
  s_->read_ahead.insert(p);
  point_batch b;
  b.data = p;
  b.capacity = s_->batch_points;
  return b;
}

bool gpu_stage::park(point_batch const& b)
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  if (s_->read_ahead_limit == 0 || s_->now.load() != state::starting || s_->stopping) { return false; }
  s_->parked.push_back(b);
  ++s_->parked_total;
  return true;
}

std::optional<point_batch> gpu_stage::take_parked()
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  if (s_->now.load() == state::starting || s_->parked.empty()) { return std::nullopt; }
  // Ring slots first: they upload without a copy and free slots for the plain buffers' copies.
  auto it = std::find_if(s_->parked.begin(), s_->parked.end(), [&](point_batch const& b) { return s_->owns(b); });
  if (it == s_->parked.end()) { it = s_->parked.begin(); }
  point_batch const b = *it;
  s_->parked.erase(it);
  return b;
}

bool gpu_stage::has_parked() const
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  return !s_->parked.empty();
}

bool gpu_stage::is_read_ahead(point_batch const& b) const
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->read_ahead.count(static_cast<std::byte const*>(b.data)) != 0;
}

std::size_t gpu_stage::submit_copy(point_batch const& b, std::atomic<bool> const& stopping)
{
  std::size_t submitted = 0;
  std::optional<point_batch> slot;
  for (;;) {
    std::optional<point_batch> parked_slot;
    {
      // Wait for a free ring slot. Ring slots parked while CUDA started come back only once they
      // are uploaded, and every worker may be here with a plain buffer: upload those first.
      std::unique_lock<std::mutex> lock(s_->mutex);
      auto parked_ring = [&] {
        return std::find_if(s_->parked.begin(), s_->parked.end(), [&](point_batch const& p) { return s_->owns(p); });
      };
      s_->wait_for(lock, [&] {
        return !s_->free_slots.empty() || s_->stopping || stopping.load() || parked_ring() != s_->parked.end();
      });
      if (!s_->free_slots.empty()) {
        slot = s_->batch_of(s_->free_slots.back());
        s_->free_slots.pop_back();
      } else if (auto it = parked_ring(); it != s_->parked.end() && !s_->stopping && !stopping.load()) {
        parked_slot = *it;
        s_->parked.erase(it);
      }
    }
    if (!parked_slot) { break; }
    submit(*parked_slot);
    ++submitted;
  }
  if (slot) {
    if (b.encoding == coord_encoding::las_records) {
      std::memcpy(slot->data, b.data, b.payload_bytes());
    } else {
      // The three columns sit at the same places for the same capacity: copy what is filled.
      std::size_t const column = b.column_bytes() * b.capacity;
      for (std::size_t k = 0; k < 3; ++k) {
        std::memcpy(static_cast<std::byte*>(slot->data) + k * column,
                    static_cast<std::byte const*>(b.data) + k * column, b.column_bytes() * b.size);
      }
    }
    point_batch const data = *slot;
    *slot = b;  // size, encoding, transform, record layout, source
    slot->data = data.data;
    slot->capacity = data.capacity;
    try {
      submit(*slot);
    } catch (...) {
      free_read_ahead(b);  // the slot: submit() returned it
      throw;
    }
    ++submitted;
  }
  free_read_ahead(b);
  return submitted;
}

void gpu_stage::free_read_ahead(point_batch const& b)
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  if (s_->read_ahead.erase(static_cast<std::byte const*>(b.data)) != 0) { std::free(b.data); }
}

std::uint64_t gpu_stage::parked_total() const
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->parked_total;
}

bool gpu_stage::stopped() const
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->stopping;
}

void gpu_stage::give_back(point_batch const& b) { s_->release(s_->slot_of(b)); }

void gpu_stage::submit(point_batch const& b)
{
  HG_EXPECTS(s_->now.load() == state::ready, error_kind::internal, "gpu_stage::submit before the GPU is ready");
  std::size_t const slot = s_->slot_of(b);
  shared* s = s_.get();  // outlives the callback: the binner waits for its streams first
  {
    std::lock_guard<std::mutex> lock(s_->submitting);
    // Configured before the stage was ready; unchanged while batches come.
    if (b.size > 0 && s_->options.request.needs_order()) {
      // The batch's kept points first: where other processes hold the device's memory, the
      // store's growth waits rather than failing the job.
      try {
        within_memory("the points kept for order statistics", [&] { s_->binner->reserve_kept_points(b.size); });
      } catch (...) {
        s_->release(slot);  // the binner never took it (order_store_full: the job splits the band and goes on)
        throw;
      }
    }
    // From here the binner returns the slot, whether it throws or not.
    s_->binner->submit(b, [s, slot] { s->release(slot); });
  }
  // A worker waiting for a slot may now wait for this upload (gpu_stage::shared::wait_for).
  { std::lock_guard<std::mutex> lock(s_->mutex); }
  s_->changed.notify_one();
}

void gpu_stage::within_memory(char const* what, std::function<void()> const& attempt)
{
  double wait_s = 0.0;
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    wait_s = s_->memory_wait_s;
  }
  (void)within_device_memory(what, wait_s, s_->memory_hooks(), [&] {
    attempt();
    return true;
  });
}

void gpu_stage::fold_device_records(void const* records, std::uint32_t stride, bool extended,
                                    std::vector<device_record_run> const& runs)
{
  HG_EXPECTS(s_->now.load() == state::ready, error_kind::internal, "gpu_stage::fold before the GPU is ready");
  std::lock_guard<std::mutex> lock(s_->submitting);
  s_->binner->fold_device_records(records, stride, extended, runs);
}

void gpu_stage::wait_folds()
{
  HG_EXPECTS(s_->now.load() == state::ready, error_kind::internal, "gpu_stage::wait_folds before the GPU is ready");
  s_->binner->wait_folds();  // the fold's own events: no lock, submit() goes on meanwhile
}

void gpu_stage::stop()
{
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    s_->stopping = true;
    s_->drop_parked();
  }
  s_->changed.notify_all();
}

void gpu_stage::resume()
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  s_->stopping = false;
}

gpu_binner& gpu_stage::binner()
{
  HG_EXPECTS(s_->now.load() == state::ready, error_kind::internal, "gpu_stage::binner before the GPU is ready");
  return *s_->binner;
}

void gpu_stage::release_device()
{
  HG_EXPECTS(s_->now.load() == state::ready && !releasing_.joinable(), error_kind::internal,
             "gpu_stage::release_device: no binner to release");
  std::unique_ptr<gpu_binner> binner;
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    binner = std::move(s_->binner);
  }
  releasing_ = std::thread([binner = std::move(binner), device = s_->device]() mutable {
    binner.reset();
    bool const reset = heightgrid::release_device(device);
    trace_moment(reset ? "the device is released (binner freed, context reset)"
                       : "the binner is freed (the device's reset failed: its context goes at exit)");
  });
}

std::size_t gpu_stage::batch_points() const noexcept { return s_->batch_points; }

}  // namespace heightgrid::app
