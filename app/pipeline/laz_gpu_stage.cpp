#include "pipeline/laz_gpu_stage.hpp"

#include "pipeline/gpu_stage.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"
#include "heightgrid/kernels/laz_gpu.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <utility>

namespace heightgrid::app {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t)
{
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

enum class chunk_state : std::uint8_t { pending, ready, folded, failed };

/// Threads reading a group's compressed bytes (page cache to page-locked memory) while the readers
/// bin downloaded records; when the records are binned on the device the readers only wait, and
/// every core reads.
constexpr unsigned reading_threads = 8;
/// How long a reader waits for a stage that waits for readers before decoding the chunk itself.
constexpr std::chrono::milliseconds stuck_wait{100};


}  // namespace

struct laz_gpu_cache::kept {
  std::unique_ptr<laz_gpu_decoder> decoder;
  std::vector<std::uint8_t*> slots;  // the decoder's page-locked memory
  std::uint64_t slot_bytes{0};
};

laz_gpu_cache::laz_gpu_cache() = default;
laz_gpu_cache::~laz_gpu_cache() = default;

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
    chunk_state state{chunk_state::pending};
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
  void plan(std::size_t max_chunks, std::uint64_t max_device_bytes)
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto const same_format = [&](std::size_t a, std::size_t b) {
      file_format const& fa = files[chunks[a].file].format;
      file_format const& fb = files[chunks[b].file].format;
      return fa.record_length == fb.record_length && fa.layer_count == fb.layer_count && fa.pointwise == fb.pointwise &&
             fa.gps_time == fb.gps_time && fa.rgb == fb.rgb && fa.extra_bytes == fb.extra_bytes;
    };
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      chunk_entry& e = chunks[i];
      std::uint64_t const record_bytes = files[e.file].format.decoded_bytes();  // one for a wave (one format)
      if (e.c.points == 0 || std::max<std::uint64_t>(e.c.bytes, std::uint64_t{e.c.points} * record_bytes) > ring_slot_bytes) {
        // A chunk of no points (lazrs ends files of variable chunks with one), or larger than a
        // ring slot (over 1.8 M points by default), stays with the readers.
        e.state = chunk_state::failed;
        ++stats.skipped;
        e.wave = waves.empty() ? 0 : waves.size() - 1;
        e.group = groups.size();
        groups.push_back({i, i + 1, e.wave, 0, 0, e.released ? 0U : 1U, 0, true});
        continue;
      }
      std::uint64_t const device_bytes = e.c.bytes + std::uint64_t{e.c.points} * record_bytes;
      bool const new_wave = waves.empty() || waves.back().end - waves.back().first >= max_chunks ||
                            !same_format(waves.back().first, i) ||
                            waves.back().compressed + waves.back().points * record_bytes + device_bytes > max_device_bytes;
      if (new_wave) { waves.push_back({i, i, 0, 0}); }
      wave_entry& w = waves.back();
      std::uint64_t const slot_bytes = std::max<std::uint64_t>(e.c.bytes, std::uint64_t{e.c.points} * record_bytes);
      bool const new_group = new_wave || groups.empty() || groups.back().end != i ||
                             std::max(groups.back().points * record_bytes, slot_used(groups.back())) + slot_bytes >
                               ring_slot_bytes;
      if (new_group) { groups.push_back({i, i, waves.size() - 1, w.points, 0, 0, 0, false}); }
      group_entry& g = groups.back();
      e.wave = waves.size() - 1;
      e.group = groups.size() - 1;
      e.source = w.compressed;
      e.first_record = w.points;
      w.compressed += e.c.bytes;
      w.points += e.c.points;
      w.end = i + 1;
      g.points += e.c.points;
      g.end = i + 1;
      if (!e.released) { ++g.remaining; }
    }
    oldest = 0;
    while (oldest < groups.size() && groups[oldest].remaining == 0) { ++oldest; }
    planned = true;
    changed.notify_all();
  }

  /// Compressed bytes of a group's chunks (they pass through the group's slot on the way up).
  std::uint64_t slot_used(group_entry const& g) const
  {
    std::uint64_t bytes = 0;
    for (std::size_t i = g.first; i < g.end; ++i) {
      if (chunks[i].state != chunk_state::failed) { bytes += chunks[i].c.bytes; }
    }
    return bytes;
  }

  /// Reads a group's compressed bytes into `out` (its chunks side by side) on several threads.
  void read_group(group_entry const& g, std::uint8_t* out)
  {
    std::uint64_t const base = chunks[g.first].source;
    std::atomic<std::size_t> next{g.first};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto const work = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < g.end;) {
        chunk_entry const& e = chunks[i];
        if (e.state == chunk_state::failed) { continue; }
        try {
          files[e.file].read(e.c.offset, static_cast<std::size_t>(e.c.bytes), out + (e.source - base));
        } catch (...) {
          std::lock_guard<std::mutex> lock(failure_mutex);
          if (!failure) { failure = std::current_exception(); }
        }
      }
    };
    std::size_t const n = std::min<std::size_t>(reading_threads, g.end - g.first);
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < n; ++t) { pool.emplace_back(work); }
    work();
    for (auto& t : pool) { t.join(); }
    if (failure) { std::rethrow_exception(failure); }
  }

  /// Groups [first_group, end_group) of one wave read by one pool of threads (every core: the
  /// readers only wait while the records are binned on the device) that take the wave's chunks in
  /// order; the thread that reads a group's last chunk uploads the group, and a chunk waits for its
  /// slot's previous group to be uploaded. So the wave streams from the page cache to the device
  /// without a pause per group. False when a read failed (the readers' own decoding reads again
  /// and names it). Only while folding: no reader holds a slot.
  bool stream_groups(std::size_t first_group, std::size_t end_group)
  {
    if (first_group == end_group) { return true; }
    std::size_t const n_slots = slots.size();
    std::vector<std::size_t> left(end_group - first_group);  // chunks of each group not yet read
    std::vector<char> uploaded(end_group - first_group, 0);
    for (std::size_t k = first_group; k < end_group; ++k) { left[k - first_group] = groups[k].end - groups[k].first; }
    std::size_t const end_chunk = groups[end_group - 1].end;
    std::atomic<std::size_t> next{groups[first_group].first};
    std::mutex m;
    std::condition_variable cv;
    bool failed = false;
    std::exception_ptr device_failure;
    auto const work = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < end_chunk;) {
        chunk_entry const& e = chunks[i];
        std::size_t const k = e.group;
        group_entry const& g = groups[k];
        std::uint8_t* const slot = slots[k % n_slots];
        if (k >= first_group + n_slots) {
          std::unique_lock<std::mutex> lock(m);
          cv.wait(lock, [&] { return failed || uploaded[k - n_slots - first_group] != 0; });
          if (failed) { return; }
        }
        bool ok = true;
        if (e.state != chunk_state::failed) {
          try {
            files[e.file].read(e.c.offset, static_cast<std::size_t>(e.c.bytes), slot + (e.source - chunks[g.first].source));
          } catch (...) {
            ok = false;
          }
        }
        bool last = false;
        {
          std::lock_guard<std::mutex> lock(m);
          failed = failed || !ok;
          last = --left[k - first_group] == 0;
        }
        if (!ok) {
          cv.notify_all();
          return;
        }
        if (!last) { continue; }
        try {
          decoder->upload(slot, slot_used(g), chunks[g.first].source);
        } catch (...) {
          std::lock_guard<std::mutex> lock(m);
          failed = true;
          if (!device_failure) { device_failure = std::current_exception(); }
        }
        {
          std::lock_guard<std::mutex> lock(m);
          uploaded[k - first_group] = 1;
        }
        cv.notify_all();
      }
    };
    std::size_t const n = std::min<std::size_t>(std::max(reading_threads, std::thread::hardware_concurrency()),
                                                end_chunk - groups[first_group].first);
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < n; ++t) { pool.emplace_back(work); }
    work();
    for (auto& t : pool) { t.join(); }
    if (device_failure) { std::rethrow_exception(device_failure); }  // the run's handler: back to the readers
    return !failed;
  }

  /// Waits until group k may use its slot: the group that used it before is released.
  bool wait_for_slot(std::size_t k)
  {
    std::unique_lock<std::mutex> lock(mutex);
    stage_waiting = true;
    changed.wait(lock, [&] { return stop || k < slots.size() || oldest > k - slots.size(); });
    stage_waiting = false;
    return !stop;
  }

  /// Groups [first_group, end_group) of one wave: their compressed bytes read through the ring and
  /// uploaded. False when a read failed (the readers' own decoding reads again and names it).
  bool upload_groups(std::size_t first_group, std::size_t end_group)
  {
    for (std::size_t k = first_group; k < end_group; ++k) {
      group_entry const& g = groups[k];
      std::uint8_t* const slot = slots[k % slots.size()];
      try {
        read_group(g, slot);
      } catch (std::exception const&) {
        return false;
      }
      decoder->upload(slot, slot_used(g), chunks[g.first].source);
    }
    return true;
  }

  /// Decodes the wave's chunks that are still pending; `decoded` gets the chunk of each status.
  std::vector<laz_gpu_status> decode_pending(wave_entry const& w, std::vector<std::size_t>& decoded,
                                             laz_gpu_times& times)
  {
    std::vector<laz_gpu_chunk> jobs;
    jobs.reserve(w.end - w.first);
    decoded.clear();
    for (std::size_t i = w.first; i < w.end; ++i) {
      chunk_entry const& e = chunks[i];
      if (e.state == chunk_state::failed) { continue; }
      jobs.push_back({e.source, e.c.bytes, e.first_record, e.c.points});
      decoded.push_back(i);
    }
    file_format const& f = files[chunks[w.first].file].format;
    laz_gpu_format format;
    format.layout = f.pointwise ? laz_gpu_layout::pointwise_point10 : laz_gpu_layout::layered_point14;
    format.record_length = f.record_length;
    format.layer_count = f.layer_count;
    format.gps_time = f.gps_time;
    format.rgb = f.rgb;
    format.extra_bytes = f.extra_bytes;
    return decoder->decode(format, jobs, &times);
  }

  /// The groups of wave `w_index`, from `next_group` on (which moves past them).
  std::pair<std::size_t, std::size_t> groups_of(std::size_t w_index, std::size_t& next_group) const
  {
    std::size_t const first_group = next_group;
    std::size_t end_group = first_group;
    while (end_group < groups.size() && groups[end_group].wave == w_index) { ++end_group; }
    next_group = end_group;
    return {first_group, end_group};
  }

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

  /// Runs `attempt` until it does not fail for want of device memory, asking again every
  /// device_memory_poll_s within limits.memory_wait_s; `what` names it in the notes.
  template <class Attempt>
  void within_memory(char const* what, Attempt attempt)
  {
    auto const t0 = clock_type::now();
    bool waiting = false;
    for (;;) {
      try {
        attempt();
        if (waiting) { note_memory(std::string(what) + ": device memory came free after " + human_seconds(seconds_since(t0))); }
        return;
      } catch (device_memory_error const& e) {
        if (seconds_since(t0) >= limits.memory_wait_s) { throw; }
        if (!waiting) {
          note_memory(std::string(what) + ": waiting up to " + human_seconds(limits.memory_wait_s) +
                      " for device memory other processes hold: " + e.what());
          waiting = true;
        }
        if (!pause(device_memory_poll_s)) { throw; }
      }
    }
  }

  /// The wave's device buffers (the previous wave's are reused: its records are all handed out or
  /// folded).
  void reserve_within_memory(wave_entry const& w)
  {
    within_memory("a LAZ wave", [&] { decoder->reserve(w.compressed, w.points); });
  }

  /// A wave whose records go down to the readers.
  void decode_wave(std::size_t w_index, std::size_t& next_group)
  {
    wave_entry const& w = waves[w_index];
    auto const range = groups_of(w_index, next_group);  // (a structured binding cannot be captured in C++17)
    std::size_t const first_group = range.first;
    std::size_t const end_group = range.second;
    // The wave's records stay on the device until every group of the previous wave was handed
    // out: the device buffers are reused.
    {
      std::unique_lock<std::mutex> lock(mutex);
      stage_waiting = true;
      changed.wait(lock, [&] { return stop || oldest >= first_group; });
      stage_waiting = false;
      if (stop) { return; }
    }
    reserve_within_memory(w);
    // Up: each group's compressed bytes through a ring slot (the groups of the previous wave are
    // all released, so every slot is free).
    auto const t_read = clock_type::now();
    bool const read_ok = upload_groups(first_group, end_group);
    double const read_s = seconds_since(t_read);
    std::vector<laz_gpu_status> status;
    std::vector<std::size_t> decoded;  // the chunk of each status
    laz_gpu_times times;
    auto const t_decode = clock_type::now();
    if (read_ok) { status = decode_pending(w, decoded, times); }
    double const decode_s = seconds_since(t_decode);
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!read_ok) {
        for (std::size_t i = w.first; i < w.end; ++i) { chunks[i].state = chunk_state::failed; }
      }
      for (std::size_t j = 0; j < status.size(); ++j) {
        if (status[j] != laz_gpu_status::ok) { chunks[decoded[j]].state = chunk_state::failed; }
      }
      ++stats.waves;
      ++events;
      stats.read_s += read_s;
      stats.decode_s += decode_s;
      stats.kernel_s += times.decode_ms / 1e3;
      changed.notify_all();
    }
    // Down: group by group into the ring, as the readers free its slots.
    for (std::size_t k = first_group; k < end_group; ++k) {
      if (!wait_for_slot(k)) { return; }
      group_entry const& g = groups[k];
      std::uint8_t* const slot = slots[k % slots.size()];
      if (read_ok) { decoder->download(g.first_record, g.points, slot, &times); }
      std::lock_guard<std::mutex> lock(mutex);
      groups[k].slot = k % slots.size();
      groups[k].ready = true;
      ++events;
      for (std::size_t i = g.first; i < g.end; ++i) {
        if (chunks[i].state == chunk_state::pending) { chunks[i].state = chunk_state::ready; }
      }
      changed.notify_all();
    }
    std::lock_guard<std::mutex> lock(mutex);
    stats.download_s += times.download_ms / 1e3;
  }

  /// A wave whose records are binned where they are, by the grid's binner: nothing comes down, and
  /// nothing waits for the readers (the slots only carry compressed bytes up).
  void fold_wave(std::size_t w_index, std::size_t& next_group)
  {
    wave_entry const& w = waves[w_index];
    auto const range = groups_of(w_index, next_group);  // (a structured binding cannot be captured in C++17)
    std::size_t const first_group = range.first;
    std::size_t const end_group = range.second;
    reserve_within_memory(w);  // the previous wave's folds are done
    auto const t_read = clock_type::now();
    bool const read_ok = stream_groups(first_group, end_group);
    double const read_s = seconds_since(t_read);
    std::vector<laz_gpu_status> status;
    std::vector<std::size_t> decoded;
    laz_gpu_times times;
    auto const t_decode = clock_type::now();
    if (read_ok) { status = decode_pending(w, decoded, times); }
    double const decode_s = seconds_since(t_decode);
    // Runs of consecutive decoded chunks of one file (their records lie back to back).
    std::vector<device_record_run> runs;
    std::uint64_t points = 0, folded = 0;
    std::size_t run_file = SIZE_MAX;
    for (std::size_t j = 0; j < status.size(); ++j) {
      if (status[j] != laz_gpu_status::ok) { continue; }
      chunk_entry const& e = chunks[decoded[j]];
      if (!runs.empty() && run_file == e.file && runs.back().first + runs.back().count == e.first_record) {
        runs.back().count += e.c.points;
      } else {
        file_entry const& f = files[e.file];
        runs.push_back({e.first_record, e.c.points, f.format.transform, f.source});
        run_file = e.file;
      }
      points += e.c.points;
      ++folded;
    }
    auto const t_fold = clock_type::now();
    if (!runs.empty()) {
      file_format const& f = files[chunks[w.first].file].format;  // one format a wave
      target->fold_device_records(decoder->device_records(), static_cast<std::uint32_t>(f.decoded_bytes()), !f.pointwise,
                                  runs);
      target->wait_folds();
    }
    double const fold_s = seconds_since(t_fold);
    std::lock_guard<std::mutex> lock(mutex);
    for (std::size_t i = w.first; i < w.end; ++i) {
      if (!read_ok) { chunks[i].state = chunk_state::failed; }
    }
    for (std::size_t j = 0; j < status.size(); ++j) {
      chunks[decoded[j]].state = status[j] == laz_gpu_status::ok ? chunk_state::folded : chunk_state::failed;
    }
    ++stats.waves;
    ++events;
    stats.read_s += read_s;
    stats.decode_s += decode_s;
    stats.kernel_s += times.decode_ms / 1e3;
    stats.fold_s += fold_s;
    stats.folded_chunks += folded;
    stats.folded_points += points;
    changed.notify_all();
  }

  /// Whether the records can be binned where they are decoded: every file grids its Z, and the
  /// grid is up (waits for its start).
  bool can_fold()
  {
    if (target == nullptr) { return false; }
    for (auto const& f : files) {
      if (!f.format.grids_z) { return false; }
    }
    return target->wait_ready(stopping);
  }

  void run()
  {
    auto const t0 = clock_type::now();
    try {
      within_memory("the LAZ decoder's start", [&] {
        std::string reason;
        bool short_of_memory = false;
        if (start_gpu(&reason, device, &short_of_memory)) { return; }
        if (short_of_memory) { throw device_memory_error(reason); }
        throw error(error_kind::device, reason);
      });
      take_from_cache();
      if (decoder == nullptr) {
        slots.clear();
        within_memory("the LAZ decoder", [&] { decoder = std::make_unique<laz_gpu_decoder>(); });
      }
      std::size_t const n = std::min<std::size_t>(ring_slots, chunks.size());
      while (slots.size() < n) { slots.push_back(decoder->pinned(ring_slot_bytes)); }
    } catch (std::exception const& e) {
      fail_everything(e.what());
      return;
    }
    auto const t_decide = clock_type::now();
    {
      std::lock_guard<std::mutex> lock(mutex);
      stats.start_s = seconds_since(t0);
      stats.chunks_at_once = decoder->threads();
    }
    {
      // Where the records go (the job says so before its first pass that reads them).
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return stop || decided; });
      if (stop) { return; }
    }
    bool const folding = can_fold();  // waits for the grid's start
    {
      std::lock_guard<std::mutex> lock(mutex);
      fold = folding;
      stats.decided_s = seconds_since(t_decide);
    }
    try {
      // Waves hold their compressed bytes and records on the device: at most half its free memory.
      // Records that go down: a chunk a decoder thread, so the first come soon. Records binned on
      // the device: as many chunks as fit, which the decoder's threads take longest first as they
      // finish earlier ones, so that a wave's last round (threads idle behind the longest chunks
      // left) comes once, not once a wave (docs/benchmarks.md, "LAZ on the device").
      std::size_t const wave_chunks =
        limits.wave_chunks != 0 ? limits.wave_chunks : (folding ? SIZE_MAX : decoder->threads());
      plan(wave_chunks, std::max<std::uint64_t>(decoder->free_device_bytes() / 2, 1));
      std::size_t next_group = 0;
      for (std::size_t w = 0; w < waves.size(); ++w) {
        if (folding) {
          fold_wave(w, next_group);
        } else {
          decode_wave(w, next_group);
        }
        std::lock_guard<std::mutex> lock(mutex);
        if (stop) { return; }
      }
    } catch (std::exception const& e) {
      // A device failure (or pinned memory refused): the chunks not yet decoded go back to the readers.
      std::lock_guard<std::mutex> lock(mutex);
      for (auto& c : chunks) {
        if (c.state == chunk_state::pending) { c.state = chunk_state::failed; }
      }
      if (stats.failure.empty()) { stats.failure = e.what(); }
      changed.notify_all();
    }
  }
};

laz_gpu_stage::laz_gpu_stage(int device, laz_gpu_limits limits, std::shared_ptr<laz_gpu_cache> cache)
  : impl_(std::make_unique<impl>(device, limits, std::move(cache)))
{
}

laz_gpu_stage::~laz_gpu_stage()
{
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
    impl_->stopping = true;
    impl_->changed.notify_all();
  }
  if (impl_->worker.joinable()) { impl_->worker.join(); }
  try {
    impl_->give_to_cache();
  } catch (...) {  // memory for the cache's entry: the decoder is freed instead
  }
}

std::size_t laz_gpu_stage::add_file(file_format const& format, std::vector<chunk> const& chunks, reader read)
{
  impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  HG_EXPECTS(!s.started, error_kind::internal, "laz_gpu_stage: a file registered after start()");
  std::size_t const first = s.chunks.size();
  s.files.push_back({format, std::move(read), s.next_source});
  for (auto const& c : chunks) {
    impl::chunk_entry e;
    e.c = c;
    e.file = s.files.size() - 1;
    s.chunks.push_back(e);
    s.points += c.points;
    if (format.pointwise) {
      s.pointwise_points += c.points;
      s.largest_pointwise = std::max(s.largest_pointwise, c.points);
    } else {
      s.largest = std::max(s.largest, c.points);
    }
  }
  return first;
}

void laz_gpu_stage::set_source(std::size_t source)
{
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->next_source = source;
}

void laz_gpu_stage::deliver_to(gpu_stage* grid)
{
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->decided) { return; }
  impl_->decided = true;
  impl_->target = grid;
  impl_->changed.notify_all();
}

std::size_t laz_gpu_stage::chunk_count() const
{
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->chunks.size();
}

std::uint64_t laz_gpu_stage::point_count() const
{
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->points;
}

std::uint32_t laz_gpu_stage::largest_chunk() const
{
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->largest;
}

std::uint64_t laz_gpu_stage::pointwise_point_count() const
{
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->pointwise_points;
}

std::uint32_t laz_gpu_stage::largest_pointwise_chunk() const
{
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->largest_pointwise;
}

void laz_gpu_stage::start()
{
  impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    HG_EXPECTS(!s.started, error_kind::internal, "laz_gpu_stage: started twice");
    s.started = true;
    if (s.chunks.empty()) { return; }
  }
  s.worker = std::thread([&s] { s.run(); });
}

std::uint8_t const* laz_gpu_stage::records(std::size_t index)
{
  impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.started || index >= s.chunks.size()) { return nullptr; }
  s.decide_if_undecided();
  impl::chunk_entry& e = s.chunks[index];
  if (e.handed) { return nullptr; }  // a later pass, or binned() failed it: the reader decodes it
  s.changed.wait(lock, [&] { return s.planned || s.failed_all || s.stop; });
  e.handed = true;
  if (!s.planned || s.stop) { return nullptr; }
  // A group beyond the ring's reach of the oldest one in use needs readers to release theirs
  // first: the reader decodes it itself rather than wait.
  if (e.group >= s.oldest + s.ring_slots) { return nullptr; }
  // Otherwise the reader waits while the stage works. A stage that waits itself, for chunks of an
  // earlier wave or group to be released, may be waiting for readers that wait here (a reading
  // order it did not plan for): after `stuck_wait` without news the reader decodes the chunk itself.
  for (;;) {
    if (e.state != chunk_state::pending || s.stop) { break; }
    std::uint64_t const events = s.events;
    bool const news = s.changed.wait_for(lock, stuck_wait, [&] {
      return e.state != chunk_state::pending || s.stop || s.events != events;
    });
    if (!news && s.stage_waiting) { return nullptr; }
  }
  if (e.state != chunk_state::ready || s.stop) { return nullptr; }
  ++s.stats.gpu_chunks;
  impl::group_entry const& g = s.groups[e.group];
  return s.slots[g.slot] + (e.first_record - g.first_record) * s.files[e.file].format.decoded_bytes();
}

bool laz_gpu_stage::binned(std::size_t index)
{
  impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.started || index >= s.chunks.size()) { return false; }
  s.decide_if_undecided();
  s.changed.wait(lock, [&] { return s.planned || s.failed_all || s.stop; });
  if (!s.planned || s.stop || !s.fold) { return false; }  // records() as usual
  impl::chunk_entry& e = s.chunks[index];
  if (e.handed) { return false; }
  e.handed = true;  // whatever comes of it: a chunk not folded is the reader's to decode
  // The stage never waits for readers while it folds: waiting here cannot deadlock.
  s.changed.wait(lock, [&] { return e.state != chunk_state::pending || s.stop; });
  return e.state == chunk_state::folded;
}

void laz_gpu_stage::release(std::size_t index) noexcept
{
  impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (index >= s.chunks.size() || s.chunks[index].released) { return; }
  s.chunks[index].released = true;
  if (!s.planned) { return; }  // counted when the groups are planned
  impl::group_entry& g = s.groups[s.chunks[index].group];
  --g.remaining;
  while (s.oldest < s.groups.size() && s.groups[s.oldest].remaining == 0) { ++s.oldest; }
  s.changed.notify_all();
}

laz_gpu_stage_report laz_gpu_stage::report() const
{
  std::lock_guard<std::mutex> lock(impl_->mutex);
  laz_gpu_stage_report r = impl_->stats;
  r.chunks = impl_->chunks.size();
  r.points = impl_->points;
  return r;
}

}  // namespace heightgrid::app
