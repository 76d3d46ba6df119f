#pragma once
// laz_gpu_stage's state (laz_gpu_stage.hpp's pimpl), shared by laz_gpu_stage.cpp (the stage's
// worker and what the readers call) and laz_gpu_stage_waves.cpp (waves planned, their compressed
// bytes read and uploaded, decoded, and their records handed down or folded into the grid).

#include "pipeline/laz_gpu_stage.hpp"

#include "pipeline/gpu_stage.hpp"
#include "pipeline/memory_wait.hpp"

#include "heightgrid/kernels/laz_gpu.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace heightgrid::app {
namespace laz_stage_detail {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t)
{
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

/// cpu: the readers decode it beside the GPU (laz_gpu_limits::share_threads).
enum class chunk_state : std::uint8_t { pending, ready, folded, failed, cpu };

/// Whether the GPU leaves a chunk to the readers (it failed there, or is theirs to decode).
inline bool left_to_readers(chunk_state s) { return s == chunk_state::failed || s == chunk_state::cpu; }

/// Threads reading a group's compressed bytes (page cache to page-locked memory) while the readers
/// bin downloaded records; when the records are binned on the device the readers only wait, and
/// every core reads.
inline constexpr unsigned reading_threads = 8;
/// How long a reader waits for a stage that waits for readers before decoding the chunk itself.
inline constexpr std::chrono::milliseconds stuck_wait{100};

}  // namespace laz_stage_detail

struct laz_gpu_cache::kept {
  std::unique_ptr<laz_gpu_decoder> decoder;
  std::vector<std::uint8_t*> slots;  // the decoder's page-locked memory
  std::uint64_t slot_bytes{0};
};

struct laz_gpu_stage::impl {
  struct file_entry {
    file_format format;
    reader read;
    std::size_t source{0};  // the job's index of the file's source
  };
  struct chunk_entry {
    chunk c;
    std::size_t file;
    std::size_t wave{0};
    std::size_t group{0};
    std::uint64_t source{0};        // in the wave's compressed buffer
    std::uint64_t first_record{0};  // in the wave's records
    laz_stage_detail::chunk_state state{laz_stage_detail::chunk_state::pending};
    bool handed{false};
    bool released{false};
  };
  struct wave_entry {
    std::size_t first{0}, end{0};  // chunks
    std::uint64_t compressed{0}, points{0};
  };
  /// Consecutive chunks of a wave whose records travel together through one ring slot.
  struct group_entry {
    std::size_t first{0}, end{0};  // chunks
    std::size_t wave{0};
    std::uint64_t first_record{0}, points{0};  // in the wave's records
    std::size_t remaining{0};                  // chunks not yet released
    std::size_t slot{0};
    bool ready{false};
  };

  int device;
  laz_gpu_limits limits;
  // The page-locked ring between the device and the readers: compressed bytes go up and records
  // come down through it, a group of chunks a slot. 16 workers hold at most 16 parts of ~5 chunks
  // (2^18 points) at once, ~5 M records = 86 MiB: eight 32 MiB slots (the default) keep them busy.
  std::size_t ring_slots;
  std::uint64_t ring_slot_bytes;
  std::vector<file_entry> files;
  std::size_t next_source{0};
  std::vector<chunk_entry> chunks;
  std::uint64_t points{0};
  std::uint32_t largest{0};             // of the layered chunks
  std::uint64_t pointwise_points{0};
  std::uint32_t largest_pointwise{0};

  mutable std::mutex mutex;
  std::condition_variable changed;
  bool started{false};
  bool planned{false};
  bool failed_all{false};
  bool stop{false};
  std::atomic<bool> stopping{false};  // `stop` for waits outside the stage (the grid's start)
  bool decided{false};                // deliver_to() was called
  gpu_stage* target{nullptr};         // deliver_to()'s grid
  bool fold{false};                   // records binned on the device (set before `planned`)
  bool sharing{false};                // the readers decode chunks beside the GPU (deliver_to())
  bool uploading{false};              // a shared wave's compressed bytes go up: the readers hold back
  std::vector<wave_entry> waves;
  std::vector<group_entry> groups;
  std::size_t oldest{0};        // first group with chunks not released
  std::uint64_t events{0};      // the stage's progress: a wave decoded, a group downloaded
  bool stage_waiting{false};    // the stage waits for readers to release chunks
  std::vector<std::uint8_t*> slots;
  laz_gpu_stage_report stats;
  std::unique_ptr<laz_gpu_decoder> decoder;
  std::shared_ptr<laz_gpu_cache> cache;
  std::thread worker;

  impl(int dev, laz_gpu_limits lim, std::shared_ptr<laz_gpu_cache> c)
    : device(dev), limits(lim), ring_slots(std::max<std::size_t>(1, lim.ring_slots)),
      ring_slot_bytes(std::max<std::uint64_t>(1, lim.slot_bytes)), cache(std::move(c))
  {
  }

  /// The cache's decoder and ring, when it holds ones made for this ring's slots.
  void take_from_cache()
  {
    if (cache == nullptr) { return; }
    std::lock_guard<std::mutex> lock(cache->mutex);
    if (cache->held != nullptr && cache->held->slot_bytes == ring_slot_bytes) {
      decoder = std::move(cache->held->decoder);
      slots = std::move(cache->held->slots);
    }
    cache->held.reset();
  }

  /// After the worker ended: the decoder and ring go back to the cache unless something failed.
  void give_to_cache()
  {
    if (cache == nullptr || decoder == nullptr || !stats.failure.empty() || failed_all) { return; }
    auto k = std::make_unique<laz_gpu_cache::kept>();
    k->decoder = std::move(decoder);
    k->slots = std::move(slots);
    k->slot_bytes = ring_slot_bytes;
    std::lock_guard<std::mutex> lock(cache->mutex);
    cache->held = std::move(k);
  }

  /// A reader came before the job said where the records go: they go down to the readers.
  /// Caller holds `mutex`.
  void decide_if_undecided()
  {
    if (decided) { return; }
    decided = true;
    target = nullptr;
    changed.notify_all();
  }

  void fail_everything(std::string const& why)
  {
    std::lock_guard<std::mutex> lock(mutex);
    failed_all = true;
    if (stats.failure.empty()) { stats.failure = why; }
    changed.notify_all();
  }

  /// Waves of consecutive chunks of one format, at most `max_chunks` and `max_device_bytes` each;
  /// groups of consecutive chunks of a wave whose records and compressed bytes fit a ring slot.
  /// Chunks left to the readers (`folding`, sharing) are marked first (share_with_readers).
  void plan(std::size_t max_chunks, std::uint64_t max_device_bytes, bool folding);

  /// Large enough for the readers to share the decoding. Caller holds `mutex`.
  [[nodiscard]] bool may_share() const
  {
    using policy = auto_device_policy;
    double const pointwise_weight = policy::laz_gpu_points_per_slot_s / policy::laz_gpu_pointwise_points_per_slot_s;
    double const weighted =
      static_cast<double>(points - pointwise_points) + pointwise_weight * static_cast<double>(pointwise_points);
    return limits.share_threads > 0 && weighted >= static_cast<double>(limits.share_min_points);
  }

  /// A reader about to decode a chunk of its share while the GPU's wave is read and uploaded waits
  /// for the upload: the upload takes every core for a tenth of a second, and the kernel waits for
  /// it (docs/benchmarks.md, "Both decoders"). Caller holds `lock`.
  void hold_back_for_upload(std::unique_lock<std::mutex>& lock)
  {
    changed.wait(lock, [&] { return !uploading || stop; });
  }

  /// Before the waves are planned, where the readers share the work: the chunk is the reader's.
  /// Caller holds `mutex`. True when it is (the reader decodes it).
  bool claim_before_plan(chunk_entry& e)
  {
    if (planned || !sharing || !limits.share_before_plan || e.handed || failed_all || stop) { return false; }
    e.handed = true;
    e.state = laz_stage_detail::chunk_state::cpu;
    ++stats.cpu_chunks;
    stats.cpu_points += e.c.points;
    return true;
  }

  /// Marks the chunks still pending that the readers come to first as theirs, as many as they
  /// decode in the time the GPU takes for the rest (laz_cpu_share_chunks). Caller holds `mutex`.
  void share_with_readers();

  /// Compressed bytes of a group's chunks (they pass through the group's slot on the way up).
  std::uint64_t slot_used(group_entry const& g) const
  {
    std::uint64_t bytes = 0;
    for (std::size_t i = g.first; i < g.end; ++i) {
      if (!laz_stage_detail::left_to_readers(chunks[i].state)) { bytes += chunks[i].c.bytes; }
    }
    return bytes;
  }

  /// Reads a group's compressed bytes into `out` (its chunks side by side) on several threads.
  void read_group(group_entry const& g, std::uint8_t* out);

  /// Groups [first_group, end_group) of one wave read by one pool of threads (every core: the
  /// readers only wait while the records are binned on the device) that take the wave's chunks in
  /// order; the thread that reads a group's last chunk uploads the group, and a chunk waits for its
  /// slot's previous group to be uploaded. So the wave streams from the page cache to the device
  /// without a pause per group. False when a read failed (the readers' own decoding reads again
  /// and names it). Only while folding: no reader holds a slot.
  bool stream_groups(std::size_t first_group, std::size_t end_group);

  /// Waits until group k may use its slot: the group that used it before is released.
  bool wait_for_slot(std::size_t k);

  /// Groups [first_group, end_group) of one wave: their compressed bytes read through the ring and
  /// uploaded. False when a read failed (the readers' own decoding reads again and names it).
  bool upload_groups(std::size_t first_group, std::size_t end_group);

  /// Decodes the wave's chunks that are still pending; `decoded` gets the chunk of each status.
  std::vector<laz_gpu_status> decode_pending(wave_entry const& w, std::vector<std::size_t>& decoded,
                                             laz_gpu_times& times);

  /// The groups of wave `w_index`, from `next_group` on (which moves past them).
  std::pair<std::size_t, std::size_t> groups_of(std::size_t w_index, std::size_t& next_group) const;

  /// Sleeps `seconds` unless the stage stops meanwhile (false then).
  bool pause(double seconds)
  {
    std::unique_lock<std::mutex> lock(mutex);
    return !changed.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stop; });
  }

  void note_memory(std::string note)
  {
    std::lock_guard<std::mutex> lock(mutex);
    stats.memory_notes.push_back(std::move(note));
  }

  /// Runs `attempt` until it does not fail for want of device memory, within limits.memory_wait_s
  /// (within_device_memory); `what` names it in the notes.
  template <class Attempt>
  void within_memory(char const* what, Attempt attempt)
  {
    memory_wait_hooks const hooks{[this](double seconds) { return pause(seconds); },
                                  [this](std::string note) { note_memory(std::move(note)); }, {}};
    within_device_memory(what, limits.memory_wait_s, hooks, [&] {
      attempt();
      return true;
    });
  }

  /// The wave's device buffers (the previous wave's are reused: its records are all handed out or
  /// folded).
  void reserve_within_memory(wave_entry const& w);

  /// A wave whose records go down to the readers.
  void decode_wave(std::size_t w_index, std::size_t& next_group);

  /// A wave whose records are binned where they are, by the grid's binner: nothing comes down, and
  /// nothing waits for the readers (the slots only carry compressed bytes up).
  void fold_wave(std::size_t w_index, std::size_t& next_group);

  /// Whether the records can be binned where they are decoded: every file grids its Z, and the
  /// grid is up (waits for its start).
  bool can_fold();

  void run();
};

}  // namespace heightgrid::app
