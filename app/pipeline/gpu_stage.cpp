#include "pipeline/gpu_stage.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <chrono>
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

namespace heightgrid::app {
namespace {

std::atomic<int> start_threads_running{0};

using clock_type = std::chrono::steady_clock;

double seconds_from(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

struct free_deleter {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};

}  // namespace

bool gpu_start_in_flight() noexcept { return start_threads_running.load() > 0; }

namespace {
std::atomic<bool> cuda_started{false};
}  // namespace

bool gpu_started_in_process() noexcept { return cuda_started.load(); }

struct gpu_stage::shared {
  std::mutex mutex;
  std::condition_variable changed;
  std::atomic<state> now{state::starting};
  std::string why;
  bool stopping{false};
  bool abandoned{false};

  int device{-1};
  std::function<bool()> before_start;
  std::size_t batch_points{0};
  std::size_t slot_bytes{0};
  std::size_t slots{0};
  std::unique_ptr<std::byte[], free_deleter> ring;
  std::vector<std::size_t> free_slots;

  // Read-ahead while starting: plain buffers (each slot_bytes, freed once uploaded) and batches
  // parked until the stage settles.
  std::size_t read_ahead_limit{0};
  std::unordered_set<std::byte const*> read_ahead;
  std::deque<point_batch> parked;
  std::uint64_t parked_total{0};

  bool started{false};
  std::optional<gpu_stage::device_facts> facts;

  bool configured{false};
  grid_band band;
  gpu_binner_options options;
  double memory_wait_s{0.0};
  bool memory_wait_known{false};  ///< set_memory_wait() or configure() was called
  std::vector<std::string> memory_notes;
  std::atomic<bool> memory_failure{false};  ///< failed for want of device memory
  std::atomic<bool> memory_wait{false};     ///< waiting for device memory now

  clock_type::time_point created{clock_type::now()};
  std::atomic<double> settled_after{0.0};

  std::mutex submitting;
  bool reclaiming{false};  ///< a thread waits for the oldest upload in wait_for (guarded by `mutex`)

  /// Waits (caller holds `lock` on `mutex`) until `done()`. While the binner has uploads in flight,
  /// one waiting thread waits for the oldest of them itself and hands back the slots that are
  /// uploaded; the others sleep until a slot comes back or a batch is submitted.
  template <class Done>
  void wait_for(std::unique_lock<std::mutex>& lock, Done done)
  {
    while (!done()) {
      if (!reclaiming && now.load() == state::ready && binner != nullptr && binner->in_flight() > 0) {
        reclaiming = true;
        lock.unlock();
        try {
          (void)binner->reclaim(true);
        } catch (...) {  // a device error: synchronize() reports it; the slots came back regardless
        }
        lock.lock();
        reclaiming = false;
        changed.notify_all();  // another waiter may take over the reclaiming
        continue;
      }
      changed.wait(lock);
    }
  }
  // Last: destroyed first, and its destructor waits for the streams, so no release callback can
  // run after the members above are gone.
  std::unique_ptr<gpu_binner> binner;

  void settle(state s, std::string reason = {})
  {
    {
      std::lock_guard<std::mutex> lock(mutex);
      why = std::move(reason);
      settled_after = std::chrono::duration<double>(clock_type::now() - created).count();
      now = s;
    }
    changed.notify_all();
  }

  ~shared()
  {
    for (auto const* p : read_ahead) { std::free(const_cast<std::byte*>(p)); }
  }

  bool owns(point_batch const& b) const noexcept
  {
    auto const* p = static_cast<std::byte const*>(b.data);
    return p >= ring.get() && p < ring.get() + slots * slot_bytes;
  }

  /// Drops the parked batches (the job stops). Caller holds `mutex`.
  void drop_parked()
  {
    for (auto const& b : parked) {
      if (owns(b)) {
        free_slots.push_back(slot_of(b));
      } else {
        read_ahead.erase(static_cast<std::byte const*>(b.data));
        std::free(b.data);
      }
    }
    parked.clear();
  }

  void release(std::size_t slot)
  {
    {
      std::lock_guard<std::mutex> lock(mutex);
      free_slots.push_back(slot);
    }
    changed.notify_all();
  }

  point_batch batch_of(std::size_t slot) const noexcept
  {
    point_batch b;
    b.data = ring.get() + slot * slot_bytes;
    b.capacity = batch_points;
    return b;
  }

  std::size_t slot_of(point_batch const& b) const noexcept
  {
    return static_cast<std::size_t>(static_cast<std::byte const*>(b.data) - ring.get()) / slot_bytes;
  }

  /// Waits (caller holds `lock` on `mutex`) until configured; false when the job ended first.
  bool wait_configured(std::unique_lock<std::mutex>& lock)
  {
    changed.wait(lock, [&] { return configured || abandoned || stopping; });
    return configured;
  }

  void note_memory(std::string note)
  {
    std::lock_guard<std::mutex> lock(mutex);
    memory_notes.push_back(std::move(note));
  }

  /// Sleeps `seconds` unless the job ends meanwhile (false then).
  bool pause(double seconds)
  {
    std::unique_lock<std::mutex> lock(mutex);
    return !changed.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return abandoned || stopping; });
  }

  /// CUDA's start; where the device's memory is taken, again every device_memory_poll_s within the
  /// wait the job allows (set_memory_wait, or none once configured without one).
  static bool start_within_memory(shared& s, std::string* reason, bool* short_of_memory)
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
    s.note_memory("CUDA could not start for want of device memory (" + *reason + "); waiting up to " +
                  human_seconds(wait_s) + " for other processes to free it");
    s.memory_wait = true;
    struct waited {
      shared& s;
      ~waited() { s.memory_wait = false; }
    } const done{s};
    auto const t0 = clock_type::now();
    while (seconds_from(t0) < wait_s) {
      if (!s.pause(device_memory_poll_s)) {
        *reason += " (the job ended while it waited for device memory)";
        return false;
      }
      if (start_gpu(reason, s.device, short_of_memory)) {
        s.note_memory("CUDA started after waiting " + human_seconds(seconds_from(t0)) + " for device memory");
        return true;
      }
      if (!*short_of_memory) { return false; }
    }
    *reason += " (waited " + human_seconds(wait_s) + " for device memory)";
    return false;
  }

  /// The binner; where the device's memory is short, with one device batch, then again every
  /// device_memory_poll_s within the wait the job allows.
  static std::unique_ptr<gpu_binner> make_binner(shared& s, grid_band const& band, gpu_binner_options options)
  {
    auto const t0 = clock_type::now();
    bool waiting = false;
    for (;;) {
      try {
        auto binner = std::make_unique<gpu_binner>(band, options);
        if (waiting) { s.note_memory("the binner's memory came free after " + human_seconds(seconds_from(t0))); }
        s.memory_wait = false;
        return binner;
      } catch (device_memory_error const& e) {
        if (options.device_batches > 1) {
          s.note_memory("device memory short for " + std::to_string(options.device_batches) +
                        " device batches (" + e.what() + "); binning with one");
          options.device_batches = 1;
          continue;
        }
        double wait_s = 0.0;
        {
          std::lock_guard<std::mutex> lock(s.mutex);
          wait_s = s.memory_wait_s;
        }
        if (seconds_from(t0) >= wait_s) {
          s.memory_wait = false;
          if (waiting) {
            throw device_memory_error(std::string(e.what()) + " (waited " + human_seconds(wait_s) + " for device memory)");
          }
          throw;
        }
        if (!waiting) {
          s.note_memory("waiting up to " + human_seconds(wait_s) + " for device memory other processes hold: " + e.what());
          waiting = true;
          s.memory_wait = true;
        }
        bool const go_on = s.pause(device_memory_poll_s);
        if (!go_on) {
          s.memory_wait = false;
          throw;
        }
      }
    }
  }

  /// The start-up thread: CUDA first (the slow part), then, once configured, the binner.
  static void start(std::shared_ptr<shared> s)
  {
    std::string reason;
    if (s->before_start && !s->before_start()) {
      s->settle(state::failed, "the start was refused (before_start)");
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
    } catch (std::exception const& e) {
      s->settle(state::failed, e.what());
      return;
    }
    s->changed.notify_all();
    grid_band band;
    gpu_binner_options options;
    {
      std::unique_lock<std::mutex> lock(s->mutex);
      if (!s->wait_configured(lock)) {
        lock.unlock();
        s->settle(state::failed, "the job ended before the GPU was needed");
        return;
      }
      band = s->band;
      options = s->options;
    }
    try {
      auto binner = make_binner(*s, band, options);
      binner->register_host_memory(s->ring.get(), s->slots * s->slot_bytes);
      {
        std::lock_guard<std::mutex> lock(s->mutex);
        s->binner = std::move(binner);
      }
      s->settle(state::ready);
    } catch (std::exception const& e) {
      s->memory_failure = dynamic_cast<device_memory_error const*>(&e) != nullptr;
      s->settle(state::failed, e.what());
    }
  }
};

gpu_stage::gpu_stage(std::size_t batch_points, std::size_t ring_slots, int device, std::function<bool()> before_start)
  : s_(std::make_shared<shared>())
{
  s_->device = device;
  s_->before_start = std::move(before_start);
  s_->batch_points = batch_points;
  s_->slot_bytes = batch_bytes(batch_points);
  s_->slots = std::max<std::size_t>(1, ring_slots);
  // Page-aligned, so that registering it pins whole pages of ours only.
  std::size_t const bytes = (s_->slots * s_->slot_bytes + 4095) / 4096 * 4096;
  s_->ring.reset(static_cast<std::byte*>(std::aligned_alloc(4096, bytes)));
  HG_EXPECTS(s_->ring != nullptr, error_kind::resource,
          "cannot allocate " + std::to_string(bytes >> 20) + " MiB of host memory for the GPU's batch ring");
  for (std::size_t i = s_->slots; i-- > 0;) { s_->free_slots.push_back(i); }
  start_threads_running.fetch_add(1);
  try {
    std::thread([s = s_]() mutable {
      shared::start(s);
      s.reset();  // a binner this thread made last use of is gone before the count drops
      start_threads_running.fetch_sub(1);
    }).detach();
  } catch (...) {
    start_threads_running.fetch_sub(1);
    throw;
  }
}

gpu_stage::~gpu_stage()
{
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
  std::unique_lock<std::mutex> lock(s_->mutex);
  s_->changed.wait(lock, [&] { return s_->now.load() != state::starting; });
}

bool gpu_stage::failed_for_memory() const noexcept { return s_->now.load() == state::failed && s_->memory_failure.load(); }

std::vector<std::string> gpu_stage::memory_notes() const
{
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->memory_notes;
}

bool gpu_stage::wait_ready(std::atomic<bool> const& stopping)
{
  std::unique_lock<std::mutex> lock(s_->mutex);
  s_->changed.wait(lock, [&] { return s_->now.load() != state::starting || s_->stopping || stopping.load(); });
  return s_->now.load() == state::ready;
}

double gpu_stage::start_seconds() const noexcept { return s_->settled_after.load(); }

std::optional<gpu_stage::device_facts> gpu_stage::wait_started()
{
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
      give_back(*slot);
      free_read_ahead(b);
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
    s_->binner->submit(b, [s, slot] { s->release(slot); });
  }
  // A worker waiting for a slot may now wait for this upload (gpu_stage::shared::wait_for).
  { std::lock_guard<std::mutex> lock(s_->mutex); }
  s_->changed.notify_one();
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

std::size_t gpu_stage::batch_points() const noexcept { return s_->batch_points; }

}  // namespace heightgrid::app
