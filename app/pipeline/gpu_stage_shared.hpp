#pragma once
// gpu_stage's state, shared by the stage (gpu_stage.cpp: slots, batches, read-ahead, the binner's
// use) and its start-up thread (gpu_stage_start.cpp: CUDA's start and the binner, within the device
// memory the job may wait for).

#include "pipeline/gpu_stage.hpp"
#include "pipeline/memory_wait.hpp"

#include "heightgrid/kernels/gpu_binner.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace heightgrid::app {
namespace stage_detail {

using clock_type = std::chrono::steady_clock;

inline double seconds_from(clock_type::time_point t0)
{
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct free_deleter {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};

}  // namespace stage_detail

struct gpu_stage::shared {
  std::mutex mutex;
  std::condition_variable changed;
  std::atomic<state> now{state::starting};
  std::string why;
  bool stopping{false};
  bool abandoned{false};
  bool binner_unneeded{false};             ///< skip_binner(): settle once CUDA is up, no binner made
  std::atomic<bool> binner_skipped{false};  ///< it did
  bool found{false};                        ///< the driver has found the device (find_gpu)
  std::atomic<bool> context_skipped{false};  ///< settled once found, no context made (context_wanted)
  /// follow_cpu_pass(): the records the CPU has read in its pass, how many it will read, since when.
  std::shared_ptr<std::atomic<std::uint64_t> const> cpu_pass_read;
  std::uint64_t cpu_pass_expected{0};
  stage_detail::clock_type::time_point cpu_pass_began{};

  int device{-1};
  std::function<bool()> before_start;
  std::function<bool(std::string*)> find_driver;  ///< empty: find_gpu in this process
  /// Where the driver's question goes (decide_driver_question), for a stage with find_driver.
  enum class question { undecided, elsewhere, here };
  question driver_question{question::undecided};
  std::atomic<bool> asked_elsewhere{false};
  void decide(bool elsewhere)
  {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (driver_question != question::undecided) { return; }
      driver_question = elsewhere ? question::elsewhere : question::here;
    }
    changed.notify_all();
  }
  std::size_t batch_points{0};
  std::size_t slot_bytes{0};
  std::size_t slots{0};
  std::unique_ptr<std::byte[], stage_detail::free_deleter> ring;
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

  stage_detail::clock_type::time_point created{stage_detail::clock_type::now()};
  std::atomic<double> settled_after{0.0};

  bool ring_pageable{false};  ///< leave_ring_pageable() (guarded by `mutex`)
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
      settled_after = std::chrono::duration<double>(stage_detail::clock_type::now() - created).count();
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

  /// What a wait for device memory tells this stage (within_device_memory).
  memory_wait_hooks memory_hooks();
  /// CUDA's start; where the device's memory is taken, again within the wait the job allows
  /// (set_memory_wait, or none once configured without one).
  static bool start_within_memory(shared& s, std::string* reason, bool* short_of_memory);
  /// The binner; where the device's memory is short, with one device batch, then again within the
  /// wait the job allows.
  static std::unique_ptr<gpu_binner> make_binner(shared& s, grid_band const& band, gpu_binner_options options);
  /// Once the driver has found the device: whether to make the context (no: the job's CPU has
  /// binned every point, or at its rate so far will have binned them too soon for the GPU to pay:
  /// gpu_context_worth_making; or the job is over). Takes the lock.
  bool context_wanted();
  /// The start-up thread: CUDA first (the slow part), then, once configured, the binner.
  static void start(std::shared_ptr<shared> s);
  /// Runs start(s) on a detached thread, counted by gpu_start_in_flight().
  static void launch(std::shared_ptr<shared> const& s);
};

}  // namespace heightgrid::app
