#pragma once
// Every --device auto decision of a grid job, as rules over what the job knows before it reads a
// point: the route (CPU, GPU) from the point count, the request and the host's cores, and the LAZ
// decoder (CPU, GPU) from the chunks' sizes. Pure functions of their arguments: tested without I/O.

#include "heightgrid/core/metrics.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace heightgrid::app {

enum class device_choice { automatic, gpu, cpu };

/// The thresholds of --device auto: each a rule, its measurement in the docs/benchmarks.md section
/// named beside it (a new measurement moves the constant and the section, not this comment).
struct auto_device_policy {
  /// Range/min/max/count: the GPU route when `las_gpu_fixed_s` + points / `las_gpu_points_per_s`
  /// beats points / (threads x `las_cpu_points_per_thread_s`): the CPU route's time falls with its
  /// cores, the GPU route's (CUDA's start, the copies) does not. Fitted on 16- and 32-core H200
  /// hosts (crossover 3-4 x 10^8 on 16 cores, above 10^9 on 32). docs/benchmarks.md, "LAS on the device".
  static constexpr double las_cpu_points_per_thread_s = 2.1e7;
  static constexpr double las_gpu_points_per_s = 7.0e8;
  static constexpr double las_gpu_fixed_s = 0.5;
  /// Tagged count bands (count:CLASSES, first, last) each add this share of the CPU route's binning
  /// (tags counted beside the extremes and counts; the GPU's cost barely moves). docs/benchmarks.md,
  /// "Tagged counts".
  static constexpr double las_cpu_tag_band_share = 0.25;
  /// The CPU bins while CUDA starts where the host's accumulators stay within this (RSS within issue
  /// #36's 512 MB of the CPU route). docs/benchmarks.md, "LAS on the device".
  static constexpr std::uint64_t cooperative_host_bytes = std::uint64_t{512} << 20;
  /// Mean/stddev (one side only: sums merged in batch order): the CPU's per-batch sorts lose from
  /// here. docs/benchmarks.md, "--device auto for mean/stddev and percentiles".
  static constexpr std::uint64_t sums_gpu_min_points = 130'000'000;
  /// Percentiles: the CPU's per-cell sorts lose from here. docs/benchmarks.md, "Percentiles".
  static constexpr std::uint64_t order_gpu_min_points = 25'000'000;
  /// LAZ chunks go to the GPU decoder when its estimate beats the CPU's decoding
  /// (`laz_cpu_points_per_thread_s` a thread) by `laz_gpu_margin`, never below `laz_gpu_min_points`.
  /// Records downloaded to the readers: CUDA's start, a wave of `laz_gpu_wave_chunks` chunks per
  /// `laz_gpu_seconds_per_chunk_point` of the largest chunk, the readers' binning a point.
  /// docs/benchmarks.md, "LAZ on the device".
  static constexpr std::uint64_t laz_gpu_min_points = 20'000'000;
  static constexpr double laz_cpu_points_per_thread_s = 3.7e6;
  static constexpr double laz_gpu_seconds_per_chunk_point = 9.5e-6;
  static constexpr double laz_gpu_start_s = 0.5;
  static constexpr double laz_records_seconds_per_point = 1.5e-9;
  static constexpr double laz_gpu_margin = 1.15;
  static constexpr std::size_t laz_gpu_wave_chunks = 2000;
  /// Records binned where they are decoded: the start, reading + uploading + binning a point, and the
  /// longer of the last round (one chunk's latency a point of the largest chunk) and every point at
  /// the decoder's rate. docs/benchmarks.md, "LAZ on the device".
  static constexpr double laz_fold_start_s = 0.45;
  static constexpr double laz_fold_seconds_per_point = 0.7e-9;
  static constexpr double laz_fold_seconds_per_chunk_point = 4.9e-6;
  static constexpr double laz_fold_points_per_s = 2.8e8;
  /// Pointwise chunks (formats 0-3: one serial chain of every item), on the same model; the CPU
  /// decodes them slower than layered ones too. docs/benchmarks.md, "Pointwise LAZ on the device".
  static constexpr double laz_cpu_pointwise_points_per_thread_s = 2.3e6;
  static constexpr double laz_pointwise_points_per_s = 9.0e7;
  static constexpr double laz_pointwise_seconds_per_chunk_point = 2.0e-5;
  /// The readers decode chunks themselves beside the GPU decoder (laz_cpu_share_chunks) in jobs of
  /// at least this many LAZ points, a pointwise point counting as laz_gpu_points_per_slot_s /
  /// laz_gpu_pointwise_points_per_slot_s layered ones (what it costs the GPU): about a second of
  /// the decoder's. Below, the share gained nothing (10^8 layered points) or lost (5 x 10^7): the
  /// cores the readers take slow CUDA's start and the upload as much as they save. The decoder's
  /// rate a chunk it holds at once (laz_gpu_decoder::threads(): a layered chunk a warp; pointwise
  /// chunks take a block each, half as many at once) with every one busy, and what a wave costs
  /// besides its kernel (upload and fold). docs/benchmarks.md, "Both decoders".
  static constexpr std::uint64_t laz_share_min_points = 400'000'000;
  /// The readers' rate beside the GPU a thread (below the CPU route's: a core waits for the device).
  static constexpr double laz_share_cpu_points_per_thread_s = 3.1e6;
  static constexpr double laz_share_cpu_pointwise_points_per_thread_s = 2.1e6;
  static constexpr double laz_gpu_points_per_slot_s = 1.0e5;
  static constexpr double laz_gpu_pointwise_points_per_slot_s = 3.4e4;
  /// A pointwise chunk's rate where a warp decodes `lanes` side by side (laz_pointwise_lanes): the
  /// kernel's rate over the chunks it held at once (docs/benchmarks.md, "Pointwise LAZ on the device").
  [[nodiscard]] static constexpr double laz_gpu_pointwise_points_per_lane_s(unsigned lanes) noexcept
  {
    return lanes >= 4 ? 1.6e4 : lanes == 2 ? 2.65e4 : laz_gpu_pointwise_points_per_slot_s;
  }
  static constexpr double laz_share_wave_fixed_s = 0.15;
  /// The CPU's time left in its pass, once CUDA's driver is up, below which the GPU does not pay
  /// for joining it: the context and the binner, then the two grids' merge and the context's
  /// teardown at exit. docs/benchmarks.md, "LAS on the device" (no context where the CPU finishes first).
  static constexpr double gpu_context_s = 0.7;
};

/// Whether a GPU whose driver is up should make its context for a pass the CPU bins meanwhile, the
/// CPU having read `read` of its `expected` records in `elapsed_s`: not where, at that rate, it will
/// have read the rest within auto_device_policy::gpu_context_s (the GPU would take too little to pay
/// for its context and the merge). Unknown (`expected` or `read` 0, no time yet): yes. Example:
/// 6·10^7 of 10^8 records in 0.12 s → 0.08 s left → false; 10^7 of 10^8 in 0.1 s → 0.9 s → true.
[[nodiscard]] bool gpu_context_worth_making(double elapsed_s, std::uint64_t read, std::uint64_t expected) noexcept;

/// The CPU route's binning of `points` LAS points (> 0) with `request` on `threads` threads, in
/// seconds, by auto_device_policy's model (the LAS rate a thread, tagged bands' share).
[[nodiscard]] double las_cpu_pass_s(std::uint64_t points, metric_request const& request, unsigned threads) noexcept;

/// Whether the CPU, binning a LAS job of `points` points (0: unknown) while CUDA starts, is expected
/// to finish before a GPU context would pay for joining it (las_cpu_pass_s below
/// auto_device_policy::gpu_context_s): --device gpu then only asks the driver for the device, from
/// a helper process (driver_helper.hpp). Example, 16 threads, range: 10^8 points (0.30 s) → true,
/// 3·10^8 (0.89 s) → false.
[[nodiscard]] bool cpu_bins_before_a_context_pays(std::uint64_t points, metric_request const& request,
                                                  unsigned threads) noexcept;

/// Whether a job of `points` points (0: unknown) with `request` would use the GPU under --device
/// auto: callers start the GPU early with it.
[[nodiscard]] bool auto_wants_gpu(std::uint64_t points, metric_request const& request, unsigned threads) noexcept;

/// What the GPU LAZ decoder would take: the points of its chunks (pointwise ones among them), the
/// largest chunk of each kind, the chunk count.
struct laz_offload_facts {
  std::uint64_t points{0};
  std::uint64_t pointwise_points{0};
  std::uint64_t largest_chunk{0};
  std::uint64_t largest_pointwise_chunk{0};
  std::uint64_t chunks{0};
  unsigned threads{1};
  /// The records are binned where they are decoded (range/min/max/count on the GPU route); else
  /// they go down to the readers.
  bool fold{false};
};

/// auto_device_policy's estimate for LAZ: the CPU's decoding and the GPU's, in seconds.
struct laz_offload_estimate {
  double cpu_s{0.0};
  double gpu_s{0.0};
  bool use_gpu{false};  ///< enough points, and the GPU's estimate beats the CPU's by the margin
  /// Why not, for -v ("not used: N LAZ points decode in ~X s on T threads, ~Y s on the GPU").
  [[nodiscard]] std::string note(laz_offload_facts const& f) const;
};

[[nodiscard]] laz_offload_estimate estimate_laz_offload(laz_offload_facts const& f) noexcept;

/// Both decoders on one job: how many of the chunks still left for the GPU (in the order the readers
/// come to them) the readers should decode themselves while the GPU decodes the rest, so that both
/// finish together. `cpu_s[i]` / `gpu_s[i]`: chunk i's time on the readers' threads together / on
/// the GPU decoder as a whole; `cpu_backlog_s`: the readers' chunks already theirs; `gpu_fixed_s`:
/// what the GPU's wave costs besides decoding. A chunk moves to the readers while that shortens the
/// longer of the two. Example: cpu_s {1, 1, 1, 1}, gpu_s {0.5, 0.5, 0.5, 0.5}, no backlog, no fixed
/// cost → 1 (the readers 1 s, the GPU 1.5 s; a second chunk would make the readers 2 s).
[[nodiscard]] std::size_t laz_cpu_share_chunks(std::vector<double> const& cpu_s, std::vector<double> const& gpu_s,
                                               double cpu_backlog_s, double gpu_fixed_s) noexcept;

}  // namespace heightgrid::app
