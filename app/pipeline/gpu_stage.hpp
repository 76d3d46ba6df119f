#pragma once
// The GPU side of a job, started in the background: CUDA takes about a third of a second to start
// (context creation, measured on the H100 machine), so it starts on its own thread while the inputs
// are opened, planned and read, and the job uses it from the moment it is ready.
//
// Batches reach the device from a ring of host slots, allocated once as plain memory (workers may
// fill slots before the GPU is ready) and page-locked when it is. A slot returns to the free list
// when its upload is done.

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/point_batch.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace heightgrid::app {

/// Ring slots of a stage fed by `workers` readers: two each (one filling while one uploads) and four
/// spare (batches parked while CUDA starts, merge lanes).
[[nodiscard]] constexpr std::size_t gpu_ring_slots(std::size_t workers) noexcept { return workers * 2 + 4; }

class gpu_stage {
 public:
  enum class state { starting, ready, failed };

  /// Starts CUDA on a background thread and allocates `ring_slots` host slots of `batch_points`
  /// points. The binner is created once configure() has said what to bin, on CUDA device `device`
  /// (-1: the runtime's default). A stage may serve several jobs in turn (tiles): the first
  /// configures it, the next reset its binner to their grid.
  /// `before_start` (tests) runs on the start-up thread before CUDA starts; returning false makes
  /// the start fail as CUDA's failure would. `find_driver`, where given, is how the start-up thread
  /// may ask whether the driver finds the device (driver_helper.hpp: a helper process), with the
  /// reason when not, where the job says so (decide_driver_question); else it asks CUDA's driver
  /// itself (find_gpu). Either way the context, where one is made, is this process's.
  gpu_stage(std::size_t batch_points, std::size_t ring_slots, int device = -1,
            std::function<bool()> before_start = {}, std::function<bool(std::string*)> find_driver = {});
  gpu_stage(gpu_stage const&) = delete;
  gpu_stage& operator=(gpu_stage const&) = delete;
  /// Joins the background thread if it has finished; otherwise leaves it to finish alone (a small
  /// job must not wait for CUDA to start only to stop it) — see gpu_start_in_flight().
  ~gpu_stage();

  /// What to bin: the background thread creates the binner (device accumulators) and page-locks
  /// the ring once CUDA is up. Call once.
  void configure(grid_band const& band, gpu_binner_options const& options);
  /// Before configure(): the job expects few or no batches from the host (its LAZ points are
  /// binned where the GPU decodes them), so the ring is not page-locked: the batches that come
  /// anyway (chunks the GPU decoder hands back to the CPU's) are copied from pageable memory.
  /// Page-locking the ring (pages never touched before) held the binner's start, and the LAZ
  /// decoder behind it, and kept the pages in memory (docs/benchmarks.md, "LAZ on the device").
  void leave_ring_pageable();
  /// Device memory other processes hold: where CUDA cannot start or the binner does not fit, the
  /// binner first keeps one device batch instead of options.device_batches, then the stage waits up
  /// to `seconds` for the memory to come free (polling), and fails only after that (0: at once, for
  /// a job that has the CPU to fall back on). memory_notes() says what it did. A start short of
  /// memory waits for this call (or configure(), which leaves the wait at 0) to know which.
  void set_memory_wait(double seconds);
  [[nodiscard]] bool configured() const;
  /// The CUDA device the stage was made for (-1: the default).
  [[nodiscard]] int device() const noexcept;

  [[nodiscard]] state current() const noexcept;
  /// Why the stage failed (empty otherwise).
  [[nodiscard]] std::string failure() const;
  /// What the stage did for want of device memory (shrank, waited), in order; empty when nothing.
  [[nodiscard]] std::vector<std::string> memory_notes() const;
  /// Whether the start-up thread is waiting for device memory other processes hold (configure()).
  [[nodiscard]] bool waiting_for_memory() const noexcept;
  /// Blocks until the stage is ready or failed, whether or not the job is stopping (the start-up
  /// thread settles promptly once it is).
  void wait_settled();
  /// Whether the stage failed for want of device memory (other processes held it past the wait,
  /// or until the job had ended on the CPU).
  [[nodiscard]] bool failed_for_memory() const noexcept;
  /// The job that made the stage needs no binner (the CPU binned every point, and no other job
  /// shares the stage): once CUDA is up the start-up thread settles without making one (no device
  /// accumulators, no ring page-locked beside the job's write and exit). wait_started() still says
  /// whether CUDA started.
  void skip_binner();
  /// Whether the stage settled without a binner after skip_binner().
  [[nodiscard]] bool binner_skipped() const noexcept;
  /// The pass the CPU bins while CUDA starts (the cooperative route of a job that owns the stage):
  /// `read` counts its records, `expected` (> 0) is how many it reads. Once the driver is up, the
  /// start-up thread makes the context only where the CPU, at its rate so far, would still be
  /// reading for long enough that the GPU pays (gpu_context_worth_making): a job the CPU finishes
  /// first makes none, so neither waits for it nor pays its teardown at exit (context_skipped()).
  void follow_cpu_pass(std::shared_ptr<std::atomic<std::uint64_t> const> read, std::uint64_t expected);
  /// A stage made with `find_driver` asks it only once the job has said where the question goes:
  /// `helper` true where the CPU may bin every point first (the cooperative route), false where the
  /// GPU is needed (CUDA then starts in this process: a second start after the helper's would cost
  /// the driver's start again). Until then the start-up thread waits (the inputs' headers and the
  /// plan: milliseconds); wait_started() and wait_ready() decide false, skip_binner(),
  /// wait_found() and wait_settled() true where the job has not. The first decision holds.
  void decide_driver_question(bool helper);
  /// Whether the driver's answer came from `find_driver`.
  [[nodiscard]] bool driver_asked_elsewhere() const noexcept;
  /// Whether the stage settled once the driver had found the device, without making a context
  /// (follow_cpu_pass, skip_binner before the context, or the job over); binner_skipped() then too.
  [[nodiscard]] bool context_skipped() const noexcept;
  /// Blocks until the driver has found the device (true: --device gpu had its GPU) or the start
  /// failed before (false), or the stage stops.
  bool wait_found();
  /// Blocks until the stage is ready or failed, or `stopping`. True when ready.
  bool wait_ready(std::atomic<bool> const& stopping);
  /// Seconds from construction until ready or failed (0 while starting).
  [[nodiscard]] double start_seconds() const noexcept;
  /// Waits until CUDA has started (or failed) and returns the device's name and free memory then;
  /// nullopt when it failed.
  struct device_facts {
    std::string name;
    std::size_t free_bytes{0};
  };
  [[nodiscard]] std::optional<device_facts> wait_started();

  /// A free slot without waiting: empty unless the stage is ready and a slot is free.
  [[nodiscard]] std::optional<point_batch> try_slot();
  /// A free slot, waiting for one (any state); empty once `stopping` is set, or when the stage has
  /// settled with parked batches that are to be uploaded first (take_parked).
  [[nodiscard]] std::optional<point_batch> slot(std::atomic<bool> const& stopping);
  [[nodiscard]] bool owns(point_batch const& batch) const noexcept;
  /// Returns an unused slot.
  void give_back(point_batch const& batch);
  /// Uploads and bins a slot's batch (stage ready); the slot returns once its copy is done, or at
  /// once when it throws. Serialised: any worker may call it. Where the binner keeps points (order
  /// statistics), their store grows first, waiting for device memory other processes hold as the
  /// job allows.
  void submit(point_batch const& batch);
  /// Runs `attempt` (stage ready) until it does not throw device_memory_error, within the job's
  /// wait for device memory (set_memory_wait), saying so in the memory notes; then rethrows it.
  /// `what` names the attempt there.
  void within_memory(char const* what, std::function<void()> const& attempt);
  /// Bins records already on the device (gpu_binner::fold_device_records; stage ready), serialised
  /// with submit(). One thread at a time folds; it calls wait_folds() before it changes them.
  void fold_device_records(void const* records, std::uint32_t stride, bool extended,
                           std::vector<device_record_run> const& runs);
  void wait_folds();
  // ---- reading ahead while CUDA starts (jobs whose batches may be binned in any order) -----------
  // CUDA's start takes a third of a second or more; a job's readers would otherwise wait for it with
  // one batch each. With read-ahead allowed they go on reading into the free ring slots and up to
  // `buffers` plain host buffers, and park what they read; once the stage is ready the workers
  // upload the parked batches (a plain buffer is copied into a ring slot first), or bin them on the
  // CPU if it failed.

  /// Allows up to `buffers` plain buffers of batch memory while the stage starts (0: none, the
  /// default: every batch waits for the stage).
  void allow_read_ahead(std::size_t buffers);
  /// While starting, with read-ahead allowed: a free ring slot, else a new plain buffer within the
  /// limit; empty otherwise (never waits).
  [[nodiscard]] std::optional<point_batch> read_ahead_slot();
  /// Keeps a batch read while starting (ring slot or plain buffer) until the stage settles. False
  /// when the stage is no longer starting or read-ahead is off: the caller uploads or bins it.
  [[nodiscard]] bool park(point_batch const& batch);
  /// A parked batch once the stage has settled (ring slots first); empty while starting or none.
  [[nodiscard]] std::optional<point_batch> take_parked();
  [[nodiscard]] bool has_parked() const;
  /// Whether `batch` is one of the plain read-ahead buffers.
  [[nodiscard]] bool is_read_ahead(point_batch const& batch) const;
  /// Uploads a plain buffer's batch through a ring slot (the stage is ready) and frees the buffer.
  /// While it waits for a free slot it uploads the ring slots still parked (they free slots, and
  /// every worker may be waiting here). Returns the batches submitted (0 once stopping).
  std::size_t submit_copy(point_batch const& batch, std::atomic<bool> const& stopping);
  /// Frees a plain read-ahead buffer.
  void free_read_ahead(point_batch const& batch);
  /// Batches parked while the stage started, since it was made.
  [[nodiscard]] std::uint64_t parked_total() const;
  /// Whether stop() was called (and not resumed).
  [[nodiscard]] bool stopped() const;

  /// Wakes every wait (the job stops); parked batches are dropped.
  void stop();
  /// Hands out slots again after stop(): a pass that ended early (a band of percentiles that did not
  /// fit, split and read again). The binner must have been synchronized (every slot back).
  void resume();

  /// The job is done with the device (its last window downloaded) and nothing else in the process
  /// uses CUDA: on a thread of its own the binner is freed (device memory, the ring's page-locking)
  /// and the device reset (cudaDeviceReset: the context's teardown, which would otherwise follow
  /// the output at exit). binner() is unusable from here; the destructor waits for the thread.
  void release_device();

  /// The binner, once ready (for synchronize, finalize, statistics).
  [[nodiscard]] gpu_binner& binner();
  [[nodiscard]] std::size_t batch_points() const noexcept;

  struct shared;

 private:
  std::shared_ptr<shared> s_;
  std::thread releasing_;  ///< release_device()'s
};

/// True while a gpu_stage's start-up thread, left alone by its destructor, is still running: the
/// process must then end with _exit() after its output is complete, since CUDA's teardown at exit
/// would race with a context being created.
[[nodiscard]] bool gpu_start_in_flight() noexcept;

/// True once a gpu_stage has started CUDA in this process: main then ends it with _exit() after its
/// output is complete, sparing CUDA's teardown at exit (60-75 ms on the lent hosts; the driver frees
/// the context when the process ends).
[[nodiscard]] bool gpu_started_in_process() noexcept;

}  // namespace heightgrid::app
