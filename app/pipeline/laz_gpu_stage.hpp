#pragma once
// laz_gpu_stage: a job's LAZ chunks decoded on the GPU (kernels/laz_gpu.hpp): layered (LAS 1.4
// formats 6-10) and pointwise (formats 0-3, items v2), a wave of one format at a time. A CPU core
// decodes one LAZ chunk at a time (3.7-5.3 M points/s on the lent hosts); the GPU decodes thousands
// at once, a warp each (docs/benchmarks.md, "LAZ on the device").
//
// Flow: the sources register their chunks (part_source::offload_chunks), start() launches one
// thread that brings up the decoder and waits for the job to say where the records go
// (deliver_to). Then, wave after wave (at most half the device's free memory), it reads the wave's
// compressed bytes on several threads through a ring of eight 32 MiB page-locked slots, uploads
// them and decodes the wave. The records then either
// - stay on the device: the job's GPU grid bins them where they are (gpu_binner::
//   fold_device_records; the GPU route with range/min/max/count over one band). A reader asking
//   for a chunk (binned()) waits for its wave and counts the chunk's points; the grid reports the
//   filter counts and bounds. The stage never waits for the readers; a wave is as many chunks as
//   fit, taken longest first by the decoder's threads, and every core reads the compressed bytes; or
// - come down group by group into the ring as the readers free its slots (host memory stays at 256
//   MiB however large the wave; a wave is a chunk a decoder thread), and the readers bin them
//   (records()): for jobs that bin on the CPU, keep sums or order statistics, or need several
//   passes.
// (Readers that decode chunks themselves while the GPU starts and decodes were tried: the CPU they
// take slows CUDA's start and the reading of the compressed bytes more than they gain;
// docs/benchmarks-history.md.) Anything the GPU cannot do goes back to the reader's own decoder
// (records() returns nullptr): a chunk the GPU decoder rejects (the CPU decoder then names the
// problem), a device that fails to start or fails later, a chunk asked for a second time (a later
// pass), a chunk beyond what the stage can reach before readers that have not come yet release
// theirs (a reading order this stage did not plan for: waiting could deadlock), or a chunk larger
// than a ring slot.

#include "pipeline/route_policy.hpp"

#include "heightgrid/core/bulk_decoder.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace heightgrid::app {

class gpu_stage;

struct laz_gpu_stage_report {
  std::uint64_t chunks{0};          ///< registered
  std::uint64_t points{0};          ///< in the registered chunks
  std::uint64_t gpu_chunks{0};      ///< handed out as GPU records
  std::uint64_t skipped{0};         ///< never given to the GPU: no points, or larger than a ring slot
  std::uint64_t waves{0};           ///< decoded
  std::uint64_t chunks_at_once{0};  ///< the most chunks a wave decoded at once (laz_gpu_decoder::last_chunks_at_once)
  unsigned pointwise_lanes{0};      ///< the most pointwise chunks a warp decoded side by side (0: none pointwise)
  std::uint64_t folded_chunks{0};   ///< binned on the device where they were decoded (never downloaded)
  std::uint64_t folded_points{0};
  double start_s{0.0};              ///< the decoder's start (CUDA context, device memory)
  double read_s{0.0};               ///< reading compressed bytes and uploading them, summed over waves
  double decode_s{0.0};             ///< decode() calls (kernel and statuses), summed
  double download_s{0.0};           ///< record downloads (CUDA events), summed
  double kernel_s{0.0};             ///< the decode kernels alone (CUDA events)
  double fold_s{0.0};               ///< binning the decoded records on the device (CUDA events)
  double decided_s{0.0};            ///< waiting for the job to say where the records go (deliver_to)
  double close_s{0.0};              ///< freeing the stage (set by its owner)
  double readers_wait_s{0.0};       ///< the readers' time in records() and binned(), summed over readers
  std::uint64_t cpu_chunks{0};      ///< decoded by the readers beside the GPU (laz_gpu_limits::share_threads)
  std::uint64_t cpu_points{0};
  std::uint64_t cpu_chunks_planned{0};  ///< of cpu_chunks: left to the readers when the waves were planned
  std::string failure;              ///< why the GPU decoded nothing, when it did not
  std::vector<std::string> memory_notes;  ///< waits for device memory other processes held

  /// Another stage's report of the same job (a pass of its own) added: counts and times summed,
  /// the most chunks at once, the first failure, the notes of both.
  void add(laz_gpu_stage_report const& other);
};

/// The stage's sizes: the product's defaults; tests shrink them to reach many waves and groups.
struct laz_gpu_limits {
  std::size_t wave_chunks{0};  ///< chunks a wave at most (0: one a decoder thread; binned on the device, all that fit)
  std::size_t ring_slots{8};                       ///< page-locked slots between the device and the readers
  std::uint64_t slot_bytes{std::uint64_t{32} << 20};  ///< bytes a slot
  /// Where CUDA cannot start or a wave does not fit for want of device memory (other processes
  /// hold it): seconds to wait for it before the chunks left go back to the readers (0: at once).
  double memory_wait_s{0.0};
  /// Both decoders on one job: the readers (`share_threads` of them; 0: never) decode chunks
  /// themselves in a job of at least `share_min_points` LAZ points (pointwise ones weighted as
  /// auto_device_policy::laz_share_min_points says): every chunk they come to before
  /// the waves are planned (`share_before_plan`: CUDA is still starting), then, where the records
  /// are binned on the device, the chunks they come to first, as many as they decode in the time
  /// the GPU takes for the rest (laz_cpu_share_chunks; `share_fixed_s`: a wave's cost besides its
  /// kernel).
  unsigned share_threads{0};
  std::uint64_t share_min_points{auto_device_policy::laz_share_min_points};
  double share_fixed_s{auto_device_policy::laz_share_wave_fixed_s};
  bool share_before_plan{true};
  /// Tests: the chunks left to the readers when the waves are planned, instead of the estimate.
  std::optional<std::size_t> share_chunks;
};

/// A GPU decoder and its page-locked ring kept between the stages of one device's jobs (the tiles a
/// worker grids one after the other): a stage given one takes them at its start instead of making
/// its own (the models laid out on the device, the ring page-locked: a fifth to half a second a
/// tile) and hands them back when it ends without a failure. One stage uses it at a time.
class laz_gpu_cache {
 public:
  laz_gpu_cache();
  ~laz_gpu_cache();
  laz_gpu_cache(laz_gpu_cache const&) = delete;
  laz_gpu_cache& operator=(laz_gpu_cache const&) = delete;

  struct kept;
  std::mutex mutex;
  std::unique_ptr<kept> held;  ///< empty: nothing kept
};

class laz_gpu_stage final : public bulk_chunk_decoder {
 public:
  /// `device`: the CUDA device (-1: the default). Touches no GPU until start(). `cache` (optional):
  /// where the decoder comes from and goes back to.
  explicit laz_gpu_stage(int device, laz_gpu_limits limits = {}, std::shared_ptr<laz_gpu_cache> cache = nullptr);
  laz_gpu_stage(laz_gpu_stage const&) = delete;
  laz_gpu_stage& operator=(laz_gpu_stage const&) = delete;
  /// Stops the decoding thread (after its current wave) and frees everything.
  ~laz_gpu_stage() override;

  std::size_t add_file(file_format const& format, std::vector<chunk> const& chunks, reader read) override;
  [[nodiscard]] std::uint8_t const* records(std::size_t index) override;
  void release(std::size_t index) noexcept override;
  [[nodiscard]] bool binned(std::size_t index) override;

  /// Registered chunks and their points (pointwise ones included); the largest layered chunk.
  [[nodiscard]] std::size_t chunk_count() const;
  [[nodiscard]] std::uint64_t point_count() const;
  [[nodiscard]] std::uint32_t largest_chunk() const;
  /// Points of the registered pointwise chunks (LAS formats 0-3), and the largest such chunk.
  [[nodiscard]] std::uint64_t pointwise_point_count() const;
  [[nodiscard]] std::uint32_t largest_pointwise_chunk() const;

  /// The job's source index of the files registered from now on (their statistics' entry when
  /// their records are binned on the device).
  void set_source(std::size_t source);

  /// Starts decoding (call once, after every add_file). Without it, records() returns nullptr.
  void start();

  /// Where the decoded records go, said once before the first pass that reads the chunks (the
  /// stage decodes nothing until then): binned by `grid`'s binner on the device (binned() says
  /// true; the records never come down), or with nullptr downloaded to the readers (records()).
  /// Binning on the device needs every file's Z gridded (file_format::grids_z) and a binner made
  /// for it (raw-record batches: gpu_binner_options::record_filter, the atomic reduction), on the
  /// stage's device; otherwise, or if `grid` fails to start, the records are downloaded.
  /// `readers_share`: the readers bin on the CPU what they decode themselves (a host grid beside
  /// the device's, or the CPU's route), so that they may take a share of the chunks
  /// (laz_gpu_limits::share_threads) without waiting for the device.
  void deliver_to(gpu_stage* grid, bool readers_share = false);
  /// Whether the job is large enough for the readers to share the decoding (laz_gpu_limits).
  [[nodiscard]] bool may_share() const;

  [[nodiscard]] laz_gpu_stage_report report() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace heightgrid::app
