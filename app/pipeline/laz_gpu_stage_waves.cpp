// laz_gpu_stage's waves (see laz_gpu_stage.hpp): planned from the chunks the readers registered,
// their compressed bytes read through the page-locked ring and uploaded, decoded on the device, and
// their records handed down to the readers or folded into the grid where they were decoded.

#include "pipeline/laz_gpu_stage_impl.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"

#include <algorithm>
#include <exception>

namespace heightgrid::app {

using laz_stage_detail::chunk_state;
using laz_stage_detail::clock_type;
using laz_stage_detail::reading_threads;
using laz_stage_detail::seconds_since;
using laz_stage_detail::stuck_wait;

void laz_gpu_stage::impl::share_with_readers()
{
  using policy = auto_device_policy;
  double const threads = std::max(limits.share_threads, 1U);
  auto const cpu_seconds = [&](chunk_entry const& e) {
    double const rate = files[e.file].format.pointwise ? policy::laz_share_cpu_pointwise_points_per_thread_s
                                                       : policy::laz_share_cpu_points_per_thread_s;
    return static_cast<double>(e.c.points) / (threads * rate);
  };
  // The GPU decodes every chunk it holds at once at a slot's rate: its rate is theirs together,
  // or fewer where fewer chunks are left.
  std::vector<std::size_t> open;
  double backlog_s = 0.0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    chunk_entry const& e = chunks[i];
    if (e.state == chunk_state::cpu && !e.released) { backlog_s += cpu_seconds(e); }
    if (e.state == chunk_state::pending && !e.handed && e.c.points > 0) { open.push_back(i); }
  }
  std::size_t const threads_at_once = std::max<std::size_t>(decoder->threads(), 1);
  double const slots = static_cast<double>(std::min(threads_at_once, std::max<std::size_t>(open.size(), 1)));
  // Pointwise chunks: several a warp where one a warp cannot hold them all (laz_pointwise_lanes),
  // each slower, all together faster.
  std::size_t pointwise_open = 0;
  bool rgb = false;
  for (std::size_t const i : open) {
    file_format const& f = files[chunks[i].file].format;
    pointwise_open += f.pointwise ? 1 : 0;
    rgb = rgb || (f.pointwise && f.rgb);
  }
  unsigned const lanes = laz_pointwise_lanes(rgb, pointwise_open, threads_at_once);
  double const pointwise_slots = static_cast<double>(
    std::max<std::size_t>(std::min(pointwise_open, threads_at_once * lanes), 1));
  std::vector<double> cpu_s, gpu_s;
  cpu_s.reserve(open.size());
  gpu_s.reserve(open.size());
  for (std::size_t const i : open) {
    chunk_entry const& e = chunks[i];
    bool const pointwise = files[e.file].format.pointwise;
    double const rate = pointwise ? pointwise_slots * policy::laz_gpu_pointwise_points_per_lane_s(lanes)
                                  : slots * policy::laz_gpu_points_per_slot_s;
    cpu_s.push_back(cpu_seconds(e));
    gpu_s.push_back(static_cast<double>(e.c.points) / rate);
  }
  std::size_t const k = limits.share_chunks ? std::min(*limits.share_chunks, open.size())
                                            : laz_cpu_share_chunks(cpu_s, gpu_s, backlog_s, limits.share_fixed_s);
  for (std::size_t j = 0; j < k; ++j) {
    chunk_entry& e = chunks[open[j]];
    e.state = chunk_state::cpu;
    ++stats.cpu_chunks;
    ++stats.cpu_chunks_planned;
    stats.cpu_points += e.c.points;
  }
}

void laz_gpu_stage::impl::plan(std::size_t max_chunks, std::uint64_t max_device_bytes, bool folding)
{
  std::lock_guard<std::mutex> lock(mutex);
  // The readers wait for the GPU's records only where they are binned on the device; where they come
  // down, the readers bin them anyway and the GPU's groups arrive as the readers free the ring.
  if (sharing && folding) { share_with_readers(); }
  auto const same_format = [&](std::size_t a, std::size_t b) {
    file_format const& fa = files[chunks[a].file].format;
    file_format const& fb = files[chunks[b].file].format;
    return fa.record_length == fb.record_length && fa.layer_count == fb.layer_count && fa.pointwise == fb.pointwise &&
           fa.gps_time == fb.gps_time && fa.rgb == fb.rgb && fa.extra_bytes == fb.extra_bytes;
  };
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    chunk_entry& e = chunks[i];
    std::uint64_t const record_bytes = files[e.file].format.decoded_bytes();  // one for a wave (one format)
    bool const theirs = e.state == chunk_state::cpu;  // the readers decode it beside the GPU
    if (theirs || e.c.points == 0 ||
        std::max<std::uint64_t>(e.c.bytes, std::uint64_t{e.c.points} * record_bytes) > ring_slot_bytes) {
      // A chunk the readers decode beside the GPU, one of no points (lazrs ends files of variable
      // chunks with one), or one larger than a ring slot (over 1.8 M points by default) stays with
      // the readers.
      if (!theirs) {
        e.state = chunk_state::failed;
        ++stats.skipped;
      }
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

void laz_gpu_stage::impl::read_group(group_entry const& g, std::uint8_t* out)
{
  std::uint64_t const base = chunks[g.first].source;
  std::atomic<std::size_t> next{g.first};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto const work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < g.end;) {
      chunk_entry const& e = chunks[i];
      if (laz_stage_detail::left_to_readers(e.state)) { continue; }
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

bool laz_gpu_stage::impl::stream_groups(std::size_t first_group, std::size_t end_group)
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
      if (!laz_stage_detail::left_to_readers(e.state)) {
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

bool laz_gpu_stage::impl::wait_for_slot(std::size_t k)
{
  std::unique_lock<std::mutex> lock(mutex);
  stage_waiting = true;
  changed.wait(lock, [&] { return stop || k < slots.size() || oldest > k - slots.size(); });
  stage_waiting = false;
  return !stop;
}

bool laz_gpu_stage::impl::upload_groups(std::size_t first_group, std::size_t end_group)
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

std::vector<laz_gpu_status> laz_gpu_stage::impl::decode_pending(wave_entry const& w, std::vector<std::size_t>& decoded,
                                           laz_gpu_times& times)
{
  std::vector<laz_gpu_chunk> jobs;
  jobs.reserve(w.end - w.first);
  decoded.clear();
  for (std::size_t i = w.first; i < w.end; ++i) {
    chunk_entry const& e = chunks[i];
    if (laz_stage_detail::left_to_readers(e.state)) { continue; }
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

std::pair<std::size_t, std::size_t> laz_gpu_stage::impl::groups_of(std::size_t w_index, std::size_t& next_group) const
{
  std::size_t const first_group = next_group;
  std::size_t end_group = first_group;
  while (end_group < groups.size() && groups[end_group].wave == w_index) { ++end_group; }
  next_group = end_group;
  return {first_group, end_group};
}

void laz_gpu_stage::impl::reserve_within_memory(wave_entry const& w)
{
  within_memory("a LAZ wave", [&] { decoder->reserve(w.compressed, w.points); });
}

void laz_gpu_stage::impl::decode_wave(std::size_t w_index, std::size_t& next_group)
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
    stats.chunks_at_once = std::max<std::uint64_t>(stats.chunks_at_once, decoder->last_chunks_at_once());
    stats.pointwise_lanes = std::max(stats.pointwise_lanes, decoder->last_pointwise_lanes());
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

void laz_gpu_stage::impl::fold_wave(std::size_t w_index, std::size_t& next_group)
{
  wave_entry const& w = waves[w_index];
  auto const range = groups_of(w_index, next_group);  // (a structured binding cannot be captured in C++17)
  std::size_t const first_group = range.first;
  std::size_t const end_group = range.second;
  trace_moment("LAZ stage: a wave planned");
  reserve_within_memory(w);  // the previous wave's folds are done
  trace_moment("LAZ stage: the wave's device memory reserved");
  auto const t_read = clock_type::now();
  struct upload_window {
    impl& s;
    explicit upload_window(impl& stage) : s(stage)
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.uploading = s.sharing;
    }
    ~upload_window()
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.uploading = false;
      s.changed.notify_all();
    }
  };
  bool read_ok = false;
  {
    upload_window const readers_hold_back{*this};
    read_ok = stream_groups(first_group, end_group);
  }
  double const read_s = seconds_since(t_read);
  trace_moment("LAZ stage: the wave uploaded");
  std::vector<laz_gpu_status> status;
  std::vector<std::size_t> decoded;
  laz_gpu_times times;
  auto const t_decode = clock_type::now();
  if (read_ok) { status = decode_pending(w, decoded, times); }
  double const decode_s = seconds_since(t_decode);
  trace_moment("LAZ stage: the wave decoded");
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
  trace_moment("LAZ stage: the wave binned");
  std::lock_guard<std::mutex> lock(mutex);
  stats.chunks_at_once = std::max<std::uint64_t>(stats.chunks_at_once, decoder->last_chunks_at_once());
  stats.pointwise_lanes = std::max(stats.pointwise_lanes, decoder->last_pointwise_lanes());
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

}  // namespace heightgrid::app
