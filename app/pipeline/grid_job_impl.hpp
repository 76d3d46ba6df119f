#pragma once
// The grid job's state across passes (run_grid_job, grid_job.hpp), in two files:
//   grid_job.cpp        — what to read, the route (which side bins, LAZ on the device), the grid
//                         and the bands the budgets allow (grid_plan.hpp's pure rules);
//   grid_job_passes.cpp — the passes: binning a band, checking the guessed grid, finalizing and
//                         writing the band window by window.
// Internal to the pipeline: nothing outside these two files uses it.

#include "pipeline/band_accumulators.hpp"
#include "pipeline/grid_job.hpp"
#include "pipeline/progress.hpp"
#include "pipeline/sinks.hpp"

#include "heightgrid/core/host_grid.hpp"

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace heightgrid::app::job_detail {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t)
{
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

/// The job's state across passes.
class grid_job {
 public:
  grid_job(std::vector<std::unique_ptr<part_source>> const& sources, grid_job_options const& o, grid_output& output,
           std::shared_ptr<gpu_stage> gpu);

  grid_job_report run();

  /// Seconds the GPU side waits for device memory other processes hold: --device gpu has no other
  /// side to go to; under auto the CPU takes over at once.
  double memory_wait_s() const { return o_.device == device_choice::gpu ? o_.device_memory_wait_s : 0.0; }

 private:
  // ---- what to read ---------------------------------------------------------------------------

  /// Sources with a hierarchy (COPC) read only the nodes the fixed grid (-te, a tile) meets and the
  /// levels --copc-level asks for.
  void restrict_sources();

  // ---- route ---------------------------------------------------------------------------------

  std::uint64_t known_points() const;

  /// Whether every input's points travel as stored integers (LAS/LAZ Z, small integer dimensions).
  bool stored_integers() const;

  void choose_route();

  /// Batches that may be binned on either side and merged in any order (min/max/count by atomics),
  /// and the job lets the CPU bin while CUDA starts.
  bool may_share_with_cpu() const;

  /// The cooperative route of a job whose size is known: the CPU bins the batches read while CUDA
  /// starts (the GPU's start hidden), the GPU the rest, and the two grids merge. Kept where the host
  /// grid stays small (auto_device_policy::cooperative_host_bytes) and no LAZ chunk goes to the GPU
  /// decoder (its records are binned where they are decoded); otherwise the GPU alone.
  void settle_route(int bands);

  /// Hands LAZ chunks (layered, and pointwise of formats 0-3) to the GPU decoder when that is worth it
  /// (laz_decoder_choice).
  void offload_laz();

  /// Whether this pass bins the GPU decoder's records on the device (never downloaded): the GPU
  /// route with the atomic reduction over the whole grid in one band, on a pass with a stage of its
  /// own (the stage hands each chunk once: the first pass, and the re-read of a guessed grid).
  bool fold_laz(grid_band const& band) const;

  /// After a pass that read the points: the GPU decoder has handed out what it will, so its device
  /// and page-locked memory go now. A re-read of the points with their own grid (the guess from the
  /// headers failed) gets a new stage (offload_laz again); the later bands of a split grid decode on
  /// the CPU.
  void close_laz_stage();

  // ---- grid ----------------------------------------------------------------------------------

  std::uint64_t host_budget() const;

  /// Bounds of the kept points of `sources`, from a pass that only reads.
  bounds bounds_pass(std::vector<part_source*> const& sources);

  void plan_grid();

  std::uint64_t accumulator_bytes(grid_spec const& g) const;

  /// Bytes a point kept for order statistics costs on the route's side (the larger, for a route that
  /// may fall back to the CPU).
  std::uint64_t order_bytes_per_point() const;

  /// Points a band's order store may hold: what the budget leaves beside its accumulators.
  std::uint64_t order_capacity(grid_band const& band) const;

  /// Bands of rows the budgets allow. Where the device's free memory (other processes hold the
  /// rest) allows too few, --device gpu waits for more (polling, within the job's memory wait) and
  /// auto takes the CPU route.
  int bands_for(grid_spec const& g);

  gpu_binner_options binner_options(grid_band const& band = grid_band{}) const;

  /// Whether uncompressed LAS goes to the GPU as raw records this pass: the GPU route, the atomic
  /// reduction (order-free: batches of records cut the file where the CPU's parts do not) and no
  /// order statistics.
  bool wants_records() const;

  /// Adds what binning raw records found (on the device, and on the CPU where the GPU failed) to
  /// the pass's read report, source by source, as read_part would have reported it.
  void add_record_results(grid_sink const& sink, bool device_used);

  // ---- passes --------------------------------------------------------------------------------

  /// Bins every band of grid_ and writes them. Returns false when the guessed grid turned out wrong
  /// (grid_ is then the grid of the points, and the caller runs again).
  bool bin_and_write();

  void bin_band(grid_band const& band, bool first_band);

  void note_lying_headers();

  /// The band's accumulators, wherever its pass left them (band_accumulators.hpp).
  band_accumulators accumulators(grid_band const& band) const;

  std::uint64_t max_count_bound(int bands, grid_band const& band);

  /// The output rows of `band` (accumulator rows, less out_row0_), columns from out_col0_.
  void finalize_band(grid_band const& band, grid_spec const& out_grid);

  void confirm_gpu();

  /// A GPU there but its memory held by other processes, while the CPU binned every batch beside it
  /// (the cooperative route): the job is done, and not failed for want of device memory.
  bool cpu_took_gpus_memory_wait();

  void check_counts();

  std::vector<part_source*> all_;
  grid_job_options const& o_;
  grid_output& output_;
  std::shared_ptr<gpu_stage> gpu_;
  bool owns_gpu_{false};  ///< gpu_ was made by this job (not a tile worker's, kept between tiles)
  filter_rules rules_;
  unsigned threads_;
  std::size_t batch_points_;
  metric_request acc_request_;
  bool sums_{false};
  bool order_{false};  ///< order statistics: every point of a band is kept until it is finalized
  std::uint64_t order_device_budget_{std::numeric_limits<std::uint64_t>::max()};

  bin_route route_{bin_route::cpu};
  std::unique_ptr<laz_gpu_stage> laz_stage_;  ///< layered LAZ chunks decoded on the GPU, or none
  clock_type::time_point job_start_{};
  grid_spec grid_{};
  bool speculative_{false};
  bool no_points_{false};
  bool levels_cut_{false};  ///< COPC inputs read above their deepest level (restrict_sources)
  /// Where the output grid starts in the accumulators' (the kept points' grid, a window of the one
  /// guessed from the headers when a filter dropped the points of its first rows or columns).
  std::uint32_t out_col0_{0};
  std::uint32_t out_row0_{0};
  bool gpu_used_{false};
  bool last_band_{false};        ///< the band being finalized is the job's last
  std::unique_ptr<host_grid> host_;
  read_report last_read_;
  std::uint64_t pass_outside_{0};
  std::uint64_t counted_{0};
  std::unique_ptr<progress_display> progress_;
  grid_job_report report_;
};

}  // namespace heightgrid::app::job_detail
