// laz_gpu_stage (see laz_gpu_stage.hpp): the stage's worker, which runs the waves
// (laz_gpu_stage_waves.cpp), and what the job and the readers call.

#include "pipeline/laz_gpu_stage_impl.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

namespace heightgrid::app {

using laz_stage_detail::chunk_state;
using laz_stage_detail::clock_type;
using laz_stage_detail::reading_threads;
using laz_stage_detail::seconds_since;
using laz_stage_detail::stuck_wait;

void laz_gpu_stage_report::add(laz_gpu_stage_report const& o)
{
  chunks += o.chunks;
  points += o.points;
  gpu_chunks += o.gpu_chunks;
  skipped += o.skipped;
  waves += o.waves;
  chunks_at_once = std::max(chunks_at_once, o.chunks_at_once);
  pointwise_lanes = std::max(pointwise_lanes, o.pointwise_lanes);
  folded_chunks += o.folded_chunks;
  folded_points += o.folded_points;
  start_s += o.start_s;
  read_s += o.read_s;
  decode_s += o.decode_s;
  download_s += o.download_s;
  kernel_s += o.kernel_s;
  fold_s += o.fold_s;
  decided_s += o.decided_s;
  close_s += o.close_s;
  readers_wait_s += o.readers_wait_s;
  cpu_chunks += o.cpu_chunks;
  cpu_points += o.cpu_points;
  cpu_chunks_planned += o.cpu_chunks_planned;
  if (failure.empty()) { failure = o.failure; }
  memory_notes.insert(memory_notes.end(), o.memory_notes.begin(), o.memory_notes.end());
}

laz_gpu_cache::laz_gpu_cache() = default;
laz_gpu_cache::~laz_gpu_cache() = default;

namespace {

/// Host memory for the ring, its pages faulted in (zeroed by the kernel) on several threads while
/// CUDA starts, so that page-locking it later is only the locking: pinning fresh memory, the
/// stage's one thread paid every page fault after CUDA's start (docs/benchmarks.md, "LAZ on the
/// device").
struct touched_memory {
  void* p{nullptr};
  std::size_t bytes{0};

  touched_memory() = default;
  touched_memory(touched_memory const&) = delete;
  touched_memory& operator=(touched_memory const&) = delete;
  ~touched_memory() { std::free(p); }

  /// Allocates `wanted` bytes and touches them on four threads, a few MiB at a time until done or
  /// `abandon` is set (CUDA did not start: a host without a GPU stops after a step or two).
  void make(std::size_t wanted, std::atomic<bool> const& abandon)
  {
    constexpr std::size_t huge_page = std::size_t{2} << 20;
    bytes = (wanted + huge_page - 1) / huge_page * huge_page;
    p = std::aligned_alloc(huge_page, bytes);
    if (p == nullptr) { return; }  // the decoder's own pinned() then
    (void)::madvise(p, bytes, MADV_HUGEPAGE);  // fewer faults where the kernel allows it
    constexpr std::size_t threads = 4;
    std::size_t const share = (bytes / threads + huge_page - 1) / huge_page * huge_page;
    auto const touch = [this, share, &abandon](std::size_t t) {
      auto* const from = static_cast<std::byte*>(p) + t * share;
      std::size_t const n = std::min(share, bytes - t * share);
      for (std::size_t at = 0; at < n && !abandon.load(std::memory_order_relaxed); at += 4 * huge_page) {
        std::memset(from + at, 0, std::min(4 * huge_page, n - at));
      }
    };
    std::vector<std::thread> pool;
    std::size_t t = 1;
    try {
      for (; t < threads && t * share < bytes; ++t) { pool.emplace_back(touch, t); }
    } catch (std::exception const&) {  // no more threads: this one touches the rest
      for (; t < threads && t * share < bytes; ++t) { touch(t); }
    }
    touch(0);
    for (auto& th : pool) { th.join(); }
  }

  /// The memory, handed over (the caller frees it).
  void* release() noexcept { return std::exchange(p, nullptr); }
};

/// A reader's time in records() or binned(), added to the report when it ends (declared after the
/// stage's lock, so that the lock is held then).
struct reader_wait {
  laz_gpu_stage_report& stats;
  clock_type::time_point since;
  ~reader_wait() { stats.readers_wait_s += seconds_since(since); }
};

}  // namespace

bool laz_gpu_stage::impl::can_fold()
{
  if (target == nullptr) { return false; }
  for (auto const& f : files) {
    if (!f.format.grids_z) { return false; }
  }
  return target->wait_ready(stopping);
}

void laz_gpu_stage::impl::run()
{
  auto const t0 = clock_type::now();
  // The ring's memory is made on other threads while CUDA starts, unless the cache holds a ring.
  std::size_t const n = std::min<std::size_t>(ring_slots, chunks.size());
  bool cached_ring = false;
  if (cache != nullptr) {
    std::lock_guard<std::mutex> lock(cache->mutex);
    cached_ring = cache->held != nullptr && cache->held->slot_bytes == ring_slot_bytes;
  }
  touched_memory ring_memory;
  std::atomic<bool> no_gpu{false};
  struct joined_thread {
    std::atomic<bool>& abandon;
    std::thread t;
    ~joined_thread()
    {
      abandon = true;  // a failed start: the memory is not wanted
      if (t.joinable()) { t.join(); }
    }
  } preparing{no_gpu, {}};
  if (!cached_ring) {
    try {
      preparing.t = std::thread([&ring_memory, &no_gpu, bytes = n * ring_slot_bytes] { ring_memory.make(bytes, no_gpu); });
    } catch (std::exception const&) {  // no thread: the decoder's own pinned() below
    }
  }
  try {
    within_memory("the LAZ decoder's start", [&] {
      std::string reason;
      bool short_of_memory = false;
      if (start_gpu(&reason, device, &short_of_memory)) {
        trace_moment("LAZ stage: CUDA is up");
        return;
      }
      if (short_of_memory) { throw device_memory_error(reason); }
      throw error(error_kind::device, reason);
    });
    take_from_cache();
    if (decoder == nullptr) {
      slots.clear();
      within_memory("the LAZ decoder", [&] { decoder = std::make_unique<laz_gpu_decoder>(); });
    }
    trace_moment("LAZ stage: the decoder is made");
    if (preparing.t.joinable()) { preparing.t.join(); }
    if (slots.empty() && ring_memory.p != nullptr) {
      std::size_t const bytes = ring_memory.bytes;
      std::uint8_t* const base = decoder->adopt_pinned(ring_memory.release(), bytes);
      for (std::size_t k = 0; k < n; ++k) { slots.push_back(base + k * ring_slot_bytes); }
    }
    while (slots.size() < n) { slots.push_back(decoder->pinned(ring_slot_bytes)); }
    trace_moment("LAZ stage: its ring is page-locked");
  } catch (std::exception const& e) {
    fail_everything(e.what());
    return;
  }
  auto const t_decide = clock_type::now();
  {
    std::lock_guard<std::mutex> lock(mutex);
    stats.start_s = seconds_since(t0);
  }
  {
    // Where the records go (the job says so before its first pass that reads them).
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return stop || decided; });
    if (stop) { return; }
  }
  trace_moment("LAZ stage: the job said where the records go");
  bool const folding = can_fold();  // waits for the grid's start
  trace_moment(folding ? "LAZ stage: the grid is ready, records binned on the device" : "LAZ stage: records go down");
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
    plan(wave_chunks, std::max<std::uint64_t>(decoder->free_device_bytes() / 2, 1), folding);
    trace_moment("LAZ stage: the waves planned");
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

void laz_gpu_stage::deliver_to(gpu_stage* grid, bool readers_share)
{
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->decided) { return; }
  impl_->decided = true;
  impl_->target = grid;
  impl_->sharing = readers_share && impl_->may_share();
  impl_->changed.notify_all();
}

bool laz_gpu_stage::may_share() const
{
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->may_share();
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
  auto const t = clock_type::now();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.started || index >= s.chunks.size()) { return nullptr; }
  reader_wait const counted{s.stats, t};
  s.decide_if_undecided();
  impl::chunk_entry& e = s.chunks[index];
  if (e.handed) { return nullptr; }  // a later pass, or binned() failed it: the reader decodes it
  if (s.claim_before_plan(e)) { return nullptr; }
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
  if (e.state == chunk_state::cpu) { s.hold_back_for_upload(lock); }
  if (e.state != chunk_state::ready || s.stop) { return nullptr; }
  ++s.stats.gpu_chunks;
  impl::group_entry const& g = s.groups[e.group];
  return s.slots[g.slot] + (e.first_record - g.first_record) * s.files[e.file].format.decoded_bytes();
}

bool laz_gpu_stage::binned(std::size_t index)
{
  impl& s = *impl_;
  auto const t = clock_type::now();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.started || index >= s.chunks.size()) { return false; }
  reader_wait const counted{s.stats, t};
  s.decide_if_undecided();
  if (s.claim_before_plan(s.chunks[index])) { return false; }
  s.changed.wait(lock, [&] { return s.planned || s.failed_all || s.stop; });
  if (!s.planned || s.stop || !s.fold) { return false; }  // records() as usual
  impl::chunk_entry& e = s.chunks[index];
  if (e.handed) { return false; }
  e.handed = true;  // whatever comes of it: a chunk not folded is the reader's to decode
  // The stage never waits for readers while it folds: waiting here cannot deadlock.
  s.changed.wait(lock, [&] { return e.state != chunk_state::pending || s.stop; });
  if (e.state == chunk_state::cpu) { s.hold_back_for_upload(lock); }
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
