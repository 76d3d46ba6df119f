#include "pipeline/sinks.hpp"

#include "heightgrid/core/error.hpp"

#include <algorithm>
#include <cstdlib>

namespace heightgrid::app {

void worker_buffers::aligned_free::operator()(std::byte* p) const noexcept { std::free(p); }

worker_buffers::worker_buffers(unsigned workers, std::size_t batch_points)
  : batch_points_(batch_points), memory_(workers)
{
}

point_batch worker_buffers::get(unsigned worker)
{
  auto& m = memory_.at(worker);
  if (!m) {
    std::size_t const bytes = (batch_bytes(batch_points_) + 63) / 64 * 64;
    m.reset(static_cast<std::byte*>(std::aligned_alloc(64, bytes)));
    HG_EXPECTS(m != nullptr, error_kind::resource,
            "cannot allocate " + std::to_string(bytes >> 20) + " MiB for a reading thread's batch");
  }
  point_batch b;
  b.data = m.get();
  b.capacity = batch_points_;
  return b;
}

grid_sink::grid_sink(bin_route route, unsigned workers, std::size_t batch_points, host_grid* host, gpu_stage* gpu,
                     std::function<host_grid*()> make_host)
  : route_(route), buffers_(workers, batch_points), record_columns_(workers, batch_points), host_(host), gpu_(gpu), make_host_(std::move(make_host)),
    workers_(workers)
{
  HG_EXPECTS(route == bin_route::gpu || host != nullptr, error_kind::internal, "grid_sink: CPU binning without a host grid");
  HG_EXPECTS(route == bin_route::cpu || gpu != nullptr, error_kind::internal, "grid_sink: GPU binning without a GPU stage");
}

point_batch grid_sink::acquire(unsigned worker, std::atomic<bool> const& stopping)
{
  switch (route_) {
    case bin_route::cpu: break;
    case bin_route::gpu:
      if (readers_on_cpu_ && host_.load() != nullptr) { break; }
      for (;;) {
        drain_parked(worker, stopping);
        if (auto ahead = gpu_->read_ahead_slot()) { return *ahead; }
        if (auto slot = gpu_->slot(stopping)) { return *slot; }
        if (stopping.load() || gpu_->stopped()) { break; }  // any memory will do, it is given back unused
      }
      break;
    case bin_route::cooperative:
      if (auto slot = gpu_->try_slot()) { return *slot; }
      break;
  }
  // Binned here (process()): raw LAS records are better decoded by the readers as they read them.
  point_batch batch = buffers_.get(worker);
  batch.decode_records = true;
  return batch;
}

bool grid_sink::gpu_memory(point_batch const& batch) const
{
  return gpu_ != nullptr && (gpu_->owns(batch) || gpu_->is_read_ahead(batch));
}

void grid_sink::process(unsigned worker, point_batch& batch)
{
  if (gpu_memory(batch)) { return; }  // binned when delivered
  bin_on_cpu(worker, batch);
}

void grid_sink::bin_on_cpu(unsigned worker, point_batch& batch)
{
  auto& w = workers_[worker];
  if (batch.encoding == coord_encoding::las_records) {
    // Records meant for the GPU: decoded and filtered here as the GPU would have, into the worker's
    // own buffer (free on the GPU route, whose batches live in the stage's memory), or a second one
    // where the records are in the first (the cooperative route read them before the GPU was ready,
    // or while its ring was full).
    HG_EXPECTS(record_rules_ != nullptr, error_kind::internal, "grid_sink: raw LAS records without their filters");
    point_batch columns = buffers_.get(worker);
    if (columns.data == batch.data) { columns = record_columns_.get(worker); }
    if (w.record_stats.size() <= batch.source) { w.record_stats.resize(batch.source + std::size_t{1}); }
    decode_las_records(batch, *record_rules_, columns, w.record_stats[batch.source]);
    bin_on_cpu(worker, columns);
    return;
  }
  host_grid* host = host_.load() != nullptr ? host_.load() : fallback_host();
  if (host->keeps_sums()) {
    host->reduce_batch(batch, w.partials);
    w.binning.binned += w.partials.binning.binned;
    w.binning.outside += w.partials.binning.outside;
    w.partials_pending = true;
  } else {
    auto const b = host->add_batch(batch);
    w.binning.binned += b.binned;
    w.binning.outside += b.outside;
  }
  ++w.cpu_batches;
}

void grid_sink::deliver(unsigned worker, part_ticket const&, point_batch& batch)
{
  auto& w = workers_[worker];
  if (gpu_memory(batch)) {
    if (batch.size == 0) {
      // Nothing to bin (a LAZ part whose chunks the GPU binned where it decoded them, a part
      // whose points were all filtered out): its memory back without a trip through the device's
      // streams, one at a time under the submit lock (docs/benchmarks.md, "LAZ on the device").
      give_back(worker, batch);
      return;
    }
    if (gpu_->park(batch)) { return; }  // read while CUDA starts: uploaded once it is up
    upload_or_bin(worker, batch);
    return;
  }
  if (w.partials_pending) { queue_merge(worker); }
}

void grid_sink::queue_merge(unsigned worker)
{
  auto& w = workers_[worker];
  w.merge_seq = next_merge_seq_++;
  w.merge_pending = true;
  w.partials_pending = false;
}

void grid_sink::after_turn(unsigned worker, std::atomic<bool> const& stopping)
{
  auto& w = workers_[worker];
  if (!w.merge_pending) { return; }
  host_grid* host = host_.load();
  std::uint64_t const cells = host->band().cells();
  auto const& partial_cells = w.partials.cells;  // increasing
  std::size_t begin = 0;
  for (std::size_t lane = 0; lane < merge_lanes; ++lane) {
    std::uint64_t const lane_end = cells / merge_lanes * (lane + 1) + (lane + 1 == merge_lanes ? cells % merge_lanes : 0);
    auto const end = static_cast<std::size_t>(
      std::lower_bound(partial_cells.begin() + static_cast<std::ptrdiff_t>(begin), partial_cells.end(), lane_end) -
      partial_cells.begin());
    // The batch before this one leaves the lane, then this one merges its cells there. A short
    // spin (the lane is usually free or about to be), then sleep: a worker must not burn the core
    // its predecessor needs on a machine with fewer cores than workers.
    merge_lane& l = lanes_[lane];
    bool ready = false;
    for (unsigned spins = 0; spins < 256 && !ready; ++spins) {
      ready = l.next.load(std::memory_order_acquire) == w.merge_seq;
    }
    if (!ready) {
      std::unique_lock<std::mutex> lock(l.mutex);
      l.changed.wait(lock, [&] { return l.next.load(std::memory_order_acquire) == w.merge_seq || stopping.load(); });
      if (stopping.load()) { return; }
    }
    host->merge(w.partials, begin, end);
    {
      std::lock_guard<std::mutex> lock(l.mutex);
      l.next.store(w.merge_seq + 1, std::memory_order_release);
    }
    l.changed.notify_all();
    begin = end;
  }
  w.merge_pending = false;
}

void grid_sink::upload_or_bin(unsigned worker, point_batch& batch)
{
  auto& w = workers_[worker];
  bool const ring = gpu_->owns(batch);
  auto const recycle = [&] {
    if (ring) {
      gpu_->give_back(batch);
    } else {
      gpu_->free_read_ahead(batch);
    }
  };
  std::atomic<bool> const never{false};
  if (gpu_->current() == gpu_stage::state::ready || gpu_->wait_ready(never)) {
    if (ring) {
      gpu_->submit(batch);
      ++w.gpu_batches;
    } else {
      w.gpu_batches += gpu_->submit_copy(batch, never);
    }
    return;
  }
  // The GPU did not start: bin the batch on the CPU (in order, when called from deliver()).
  try {
    bin_on_cpu(worker, batch);
    if (w.partials_pending) { queue_merge(worker); }
  } catch (...) {
    recycle();
    throw;
  }
  recycle();
}

void grid_sink::drain_parked(unsigned worker, std::atomic<bool> const& stopping)
{
  if (gpu_ == nullptr || stopping.load()) { return; }
  while (auto parked = gpu_->take_parked()) { upload_or_bin(worker, *parked); }
}

void grid_sink::finish(unsigned worker, std::atomic<bool> const& stopping)
{
  if (gpu_ == nullptr || !gpu_->has_parked()) { return; }
  (void)gpu_->wait_ready(stopping);  // settled (ready or failed) or stopping
  drain_parked(worker, stopping);
}

void grid_sink::give_back(unsigned, point_batch& batch)
{
  if (gpu_ == nullptr) { return; }
  if (gpu_->owns(batch)) {
    gpu_->give_back(batch);
  } else {
    gpu_->free_read_ahead(batch);
  }
}

void grid_sink::stop()
{
  if (gpu_ != nullptr) { gpu_->stop(); }
  // Workers waiting for their turn in a merge lane see `stopping` (set before stop() is called).
  for (auto& l : lanes_) {
    { std::lock_guard<std::mutex> lock(l.mutex); }
    l.changed.notify_all();
  }
}

host_grid* grid_sink::fallback_host()
{
  std::lock_guard<std::mutex> lock(fallback_mutex_);
  if (host_.load() == nullptr) {
    HG_EXPECTS(static_cast<bool>(make_host_), error_kind::device,
            "--device gpu: the GPU could not be used: " + (gpu_ != nullptr ? gpu_->failure() : std::string("no GPU stage")));
    host_.store(make_host_());
  }
  return host_.load();
}

batch_binning grid_sink::cpu_binning() const
{
  batch_binning total;
  for (auto const& w : workers_) {
    total.binned += w.binning.binned;
    total.outside += w.binning.outside;
  }
  return total;
}

std::uint64_t grid_sink::cpu_batches() const
{
  std::uint64_t n = 0;
  for (auto const& w : workers_) { n += w.cpu_batches; }
  return n;
}

std::vector<las_record_stats> grid_sink::cpu_record_stats() const
{
  std::vector<las_record_stats> total;
  for (auto const& w : workers_) {
    if (total.size() < w.record_stats.size()) { total.resize(w.record_stats.size()); }
    for (std::size_t i = 0; i < w.record_stats.size(); ++i) { total[i].add(w.record_stats[i]); }
  }
  return total;
}

std::uint64_t grid_sink::gpu_batches() const
{
  std::uint64_t n = 0;
  for (auto const& w : workers_) { n += w.gpu_batches; }
  return n;
}

void collect_sink::deliver(unsigned, part_ticket const&, point_batch& batch)
{
  std::size_t const first = out_.x.size();
  out_.x.resize(first + batch.size);
  out_.y.resize(first + batch.size);
  out_.z.resize(first + batch.size);
  for (std::size_t i = 0; i < batch.size; ++i) {
    out_.x[first + i] = batch.x_at(i);
    out_.y[first + i] = batch.y_at(i);
    out_.z[first + i] = batch.z_at(i);
  }
}

}  // namespace heightgrid::app
