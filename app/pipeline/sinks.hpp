#pragma once
// Where batches go after reading (part_sink implementations):
//  - bounds_sink: nowhere (a bounds pass: read_parts gathers the bounds of the kept points);
//  - grid_sink: into a grid's accumulators, on the CPU, on the GPU, or on both (cooperative);
//  - collect_sink: into one point_chunk in input order (compare's whole-grid CSR).

#include "pipeline/gpu_stage.hpp"
#include "pipeline/scheduler.hpp"

#include "heightgrid/core/host_grid.hpp"
#include "heightgrid/core/point_chunk.hpp"

#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace heightgrid::app {

/// One batch buffer per worker, allocated on first use and reused.
class worker_buffers {
 public:
  worker_buffers(unsigned workers, std::size_t batch_points);
  [[nodiscard]] point_batch get(unsigned worker);

 private:
  struct aligned_free {
    void operator()(std::byte* p) const noexcept;
  };
  std::size_t batch_points_;
  std::vector<std::unique_ptr<std::byte[], aligned_free>> memory_;
};

class bounds_sink final : public part_sink {
 public:
  bounds_sink(unsigned workers, std::size_t batch_points) : buffers_(workers, batch_points) {}
  point_batch acquire(unsigned worker, std::atomic<bool> const&) override { return buffers_.get(worker); }
  void deliver(unsigned, part_ticket const&, point_batch&) override {}
  void give_back(unsigned, point_batch&) override {}

 private:
  worker_buffers buffers_;
};

/// Where a grid_sink bins.
enum class bin_route {
  cpu,          ///< workers bin their own batches into a host_grid
  gpu,          ///< every batch goes through the GPU ring (waits for the GPU to start)
  cooperative,  ///< the CPU bins until the GPU is ready; then batches go to the GPU when a ring slot
                ///< is free, else to the CPU (min/max/count only: order-free merges)
};

/// Bins batches into a grid's accumulators. With sums (ordered reading), the CPU reduces each batch
/// per cell in process() and merges the partials in deliver(), in batch order.
class grid_sink final : public part_sink {
 public:
  /// `host` may be null for the gpu route; `make_host` then creates it if the GPU fails to start and
  /// the job may fall back to the CPU (empty: the failure is an error).
  grid_sink(bin_route route, unsigned workers, std::size_t batch_points, host_grid* host, gpu_stage* gpu,
            std::function<host_grid*()> make_host);

  point_batch acquire(unsigned worker, std::atomic<bool> const& stopping) override;
  void process(unsigned worker, point_batch& batch) override;
  void deliver(unsigned worker, part_ticket const& ticket, point_batch& batch) override;
  /// Merges the worker's delivered partials lane by lane (ordered jobs with sums).
  void after_turn(unsigned worker, std::atomic<bool> const& stopping) override;
  void give_back(unsigned worker, point_batch& batch) override;
  void finish(unsigned worker, std::atomic<bool> const& stopping) override;
  void stop() override;

  /// Points binned / outside the grid by the CPU (the GPU counts its own).
  [[nodiscard]] batch_binning cpu_binning() const;
  /// Batches binned on each side.
  [[nodiscard]] std::uint64_t cpu_batches() const;
  [[nodiscard]] std::uint64_t gpu_batches() const;
  /// The host grid in use (null if none was needed).
  [[nodiscard]] host_grid* host() const noexcept { return host_.load(); }

  /// Batches of raw LAS records that end up binned on the CPU (the GPU failed to start) are
  /// decoded with `rules` first. Call before the pass when sources deliver records.
  void decode_records_with(filter_rules const* rules) noexcept { record_rules_ = rules; }
  /// What decoding such batches on the CPU found, per source index (empty when none was).
  [[nodiscard]] std::vector<las_record_stats> cpu_record_stats() const;
  /// The gpu route with a host grid beside the device's (the job's LAZ chunks binned where the GPU
  /// decodes them, and the readers decoding a share themselves): the readers' batches are binned on
  /// the CPU, never uploaded, so that they do not wait for a device the decoder fills. Call before
  /// the pass.
  void bin_readers_batches_on_cpu() noexcept { readers_on_cpu_ = true; }

 private:
  void bin_on_cpu(unsigned worker, point_batch& batch);
  /// A batch of the GPU stage's (ring slot or read-ahead buffer): uploaded once the stage is ready,
  /// or binned on the CPU if it failed; its memory goes back either way.
  void upload_or_bin(unsigned worker, point_batch& batch);
  /// Uploads (or bins) the batches parked while the GPU started, once it has settled.
  void drain_parked(unsigned worker, std::atomic<bool> const& stopping);
  [[nodiscard]] bool gpu_memory(point_batch const& batch) const;
  host_grid* fallback_host();

  /// Takes the worker's reduced batch's place in the merge order (called in order, under the turn).
  void queue_merge(unsigned worker);

  struct per_worker {
    batch_partials partials;
    batch_binning binning;
    std::uint64_t cpu_batches{0};
    std::uint64_t gpu_batches{0};
    std::vector<las_record_stats> record_stats;  ///< raw records decoded here, per source index
    bool partials_pending{false};  ///< reduced, not yet in the merge order
    bool merge_pending{false};     ///< in the merge order (merge_seq), not yet merged
    std::uint64_t merge_seq{0};
  };

  // Sums must be merged in batch order for reproducible results, but a cell's order is all that
  // matters: the band's cells are cut into lanes, and the batches go through the lanes one after
  // the other, so that up to merge_lanes batches merge at once (batch k in lane j while batch k + 1
  // is in lane j - 1). lanes_[j].next is the sequence number of the batch whose turn it is in lane j.
  static constexpr std::size_t merge_lanes = 16;
  std::uint64_t next_merge_seq_{0};  ///< only touched in deliver(), which runs in order
  struct merge_lane {
    std::atomic<std::uint64_t> next{0};
    std::mutex mutex;
    std::condition_variable changed;
  };
  std::array<merge_lane, merge_lanes> lanes_;

  bin_route route_;
  bool readers_on_cpu_{false};
  worker_buffers buffers_;
  worker_buffers record_columns_;  ///< raw records decoded on the CPU out of buffers_' batch (allocated on first use)
  std::atomic<host_grid*> host_;
  gpu_stage* gpu_;
  std::function<host_grid*()> make_host_;
  filter_rules const* record_rules_{nullptr};
  std::mutex fallback_mutex_;
  std::vector<per_worker> workers_;
};

/// Appends every batch, decoded to doubles, to one point_chunk in input order (ordered reading).
class collect_sink final : public part_sink {
 public:
  collect_sink(unsigned workers, std::size_t batch_points, point_chunk& out) : buffers_(workers, batch_points), out_(out)
  {
  }
  point_batch acquire(unsigned worker, std::atomic<bool> const&) override { return buffers_.get(worker); }
  void deliver(unsigned worker, part_ticket const& ticket, point_batch& batch) override;
  void give_back(unsigned, point_batch&) override {}

 private:
  worker_buffers buffers_;
  point_chunk& out_;
};

}  // namespace heightgrid::app
