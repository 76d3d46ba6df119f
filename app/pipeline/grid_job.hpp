#pragma once
// How a gridding job flows, in one place:
//
//   sources (part_source: LAS/LAZ parts, synthetic parts, sequential text/GDAL)
//     -> read_parts: workers read and filter parts in parallel into batches
//     -> grid_sink: batches binned into accumulators — host_grid (CPU atomics, or per-cell partials
//        merged in batch order when mean/stddev are asked), gpu_binner (GPU, fed from a ring of host
//        batches on a copy stream), or both (the CPU bins until the GPU has started)
//     -> finalize row windows into bands -> grid_output (GeoTIFF writer)
//
// The grid: --te fixes it; otherwise it is guessed from the bounds the sources declare (LAS headers)
// and checked against the points read — the first pass tracks the bounds of the kept points, and if
// the grid they give differs from the guess in its origin (a header wider at the west or north edge,
// or a point outside its header's bounds), the points are read again with the right grid, so the
// output is always the grid of the points. Sources that declare nothing get a bounds pass first.
// A grid whose accumulators do not fit the memory budget is done in bands of rows, one pass each.

#include "pipeline/band_accumulators.hpp"
#include "pipeline/gpu_stage.hpp"
#include "pipeline/route_policy.hpp"
#include "pipeline/laz_gpu_stage.hpp"
#include "pipeline/scheduler.hpp"

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::app {

/// Which decoder takes LAZ chunks (layered, pointwise of formats 0-3): `automatic` follows --device (cpu: the CPU; gpu: the GPU
/// for every chunk it can decode; auto: by auto_device_policy's estimate).
enum class laz_decoder_choice { automatic, cpu, gpu };

/// Who decodes the records of uncompressed LAS on the GPU route (range/min/max/count: the atomic
/// reduction): `automatic` the GPU (the readers copy records from the file into the page-locked
/// ring and the binning kernel decodes and filters them); `cpu` the readers (12-byte integers
/// travel), for comparison.
enum class las_decoder_choice { automatic, cpu };

struct grid_job_options {
  double xres{1.0};
  double yres{1.0};
  std::optional<grid_spec> fixed_grid;  ///< --te (its edge rule is replaced by `edge`)
  edge_rule edge{edge_rule::gdal};      ///< --edge-rule: the cell of a point on a horizontal edge
  metric_request request;               ///< the output bands
  float nodata{default_nodata};
  filter_options filter;
  device_choice device{device_choice::automatic};
  std::optional<reduce_mode> mode;           ///< the CSR mode of sorted batch reductions on the GPU (default: thread)
  std::optional<batch_reduction> reduction;  ///< default: atomic without mean/stddev, sorted with
  unsigned threads{0};                       ///< 0: every core
  std::uint64_t host_memory{0};              ///< accumulator budget on the host, bytes (0: default)
  std::uint64_t device_memory{0};            ///< on the device (0: default)
  std::optional<std::uint64_t> read_ahead;   ///< batch bytes read while CUDA starts (default: min(2 GiB, host budget / 4))
  int gpu_device{-1};                        ///< CUDA device of a stage the job starts (-1: the default)
  /// --device gpu, where other processes hold the device's memory: seconds the job waits for it
  /// (after shrinking its device batches and LAZ waves) before it fails. Under auto the CPU takes
  /// over at once.
  double device_memory_wait_s{600.0};
  laz_decoder_choice laz_decoder{laz_decoder_choice::automatic};
  las_decoder_choice las_decoder{las_decoder_choice::automatic};
  /// Range/min/max/count on the GPU: the CPU bins the batches read while CUDA starts and the two
  /// grids merge (the cooperative route, where the grid is small enough: grid_job); false: every
  /// batch waits for the GPU (--gpu-start wait).
  bool cpu_while_gpu_starts{true};
  /// The GPU stage given to run_grid_job serves this job alone (the CLI's, started before the
  /// inputs are opened): where the CPU bins every point, no binner is made on it (skip_binner).
  /// False for a stage kept between jobs (tiles). A stage the job makes itself is its own.
  bool gpu_stage_private{false};
  /// Nothing else in the process uses CUDA while or after the job runs (the CLI's job): once the
  /// device has finalized the last window of a private stage, its binner is freed and the device
  /// reset on a thread beside the last writes, so that the context's teardown, which otherwise
  /// follows the output at exit, overlaps them (gpu_stage::release_device).
  bool release_device_when_done{false};
  laz_gpu_limits laz_gpu_sizes;  ///< the GPU LAZ stage's waves and ring (tests make them small)
  /// Cells of a window the device finalizes (whole blocks of the file: band_accumulators.hpp);
  /// tests make them small.
  std::uint64_t device_window_cells{app::device_window_cells};
  /// Where the GPU LAZ decoder comes from and goes back to (tiles of one device); null: the job's own.
  std::shared_ptr<laz_gpu_cache> laz_cache;
  /// --copc-level: read COPC octree levels 0..N only (unset: every level, the exact result);
  /// `copc_level_auto`: down to the first level whose point spacing is at most the cell.
  std::optional<int> copc_level;
  bool copc_level_auto{false};
  bool progress{false};
  bool progress_terminal{false};
};

/// Receives the output grid, row window by row window, in increasing rows.
class grid_output {
 public:
  virtual ~grid_output() = default;
  /// The output grid and the largest count of a cell (decides the data type), before any row.
  virtual void begin(grid_spec const& grid, std::uint64_t max_count) = 0;
  virtual void write_rows(std::uint32_t row0, std::uint32_t rows, cell_results const& window) = 0;
  /// Rows of the file's blocks once begun (0: any): windows of whole blocks reach the compression
  /// threads as they are.
  [[nodiscard]] virtual std::uint32_t block_rows() const { return 0; }
  /// Every row was written; `non_empty_cells` of the grid hold a point (a tile with none is not
  /// kept).
  virtual void commit(std::uint64_t non_empty_cells) = 0;
};

/// What happened, for the log and --json.
struct grid_job_report {
  grid_spec grid;
  part_result read;  ///< filter statistics, bounds and z range of the kept points
  std::vector<bounds> source_extents;  ///< per source, the bounds of its kept points (outside the grid too)
  std::uint64_t binned{0};
  std::uint64_t outside{0};
  std::uint64_t non_empty{0};
  std::uint64_t max_count{0};
  int passes{0};       ///< binning passes over the points (a failed guess costs one)
  int bounds_passes{0};
  int bands{1};
  std::string route;   ///< "CPU", "GPU", "CPU + GPU"
  std::string device;  ///< the GPU's name, when one was used
  std::uint64_t cpu_batches{0};
  std::uint64_t gpu_batches{0};
  bool las_records_on_gpu{false};  ///< uncompressed LAS went to the GPU as raw records (decoded there)
  bool laz_binned_on_gpu{false};   ///< the GPU decoder's LAZ records were binned on the device (never downloaded)
  bool device_released_early{false};  ///< the device was released beside the last writes (release_device_when_done)
  std::uint64_t read_ahead_batches{0};  ///< GPU batches read while CUDA started (parked until it was up)
  unsigned threads{0};
  double gpu_start_s{0.0};
  std::string gpu_note;  ///< why the GPU was not used, when it was not
  std::vector<std::string> device_memory_notes;  ///< what the job did for want of device memory (shrank, waited)
  double bounds_s{0.0};
  double setup_s{0.0};        ///< from the job's start to its first reading (route, grid, accumulators)
  double bin_pass_s{0.0};     ///< wall time of the binning passes (reading included)
  double read_busy_s{0.0};    ///< worker time spent reading/decoding (all threads)
  double cpu_bin_busy_s{0.0}; ///< worker time spent binning on the CPU
  double wait_busy_s{0.0};    ///< worker time waiting (batch memory, delivery turn, the GPU)
  gpu_binner_times gpu;
  bool laz_gpu{false};              ///< layered LAZ chunks went to the GPU decoder (laz_gpu_stage)
  laz_gpu_stage_report laz_gpu_stats;
  std::string laz_gpu_note;         ///< why LAZ chunks were (not) decoded on the GPU
  double finalize_s{0.0};     ///< finalize + download of the row windows (the output's time excluded)
  std::uint64_t bytes_read{0};
  region_report copc;  ///< what the COPC inputs' windows and levels kept (restrict_to)
  /// Columns and rows the output grid (the kept points') starts right of and below the one guessed
  /// from the headers, cropped from its accumulators in the same pass (a filter that dropped the
  /// points of its first columns or rows); {0, 0} otherwise.
  std::pair<std::uint32_t, std::uint32_t> grid_crop{0, 0};
  std::vector<std::string> warnings;
};

/// Runs the job. `gpu` is a stage started early by the caller, or one that served an earlier job
/// (or null: the job starts one if its route needs it). Throws heightgrid::error; the output is
/// committed only on success.
grid_job_report run_grid_job(std::vector<std::unique_ptr<part_source>> const& sources, grid_job_options const& options,
                             grid_output& output, std::shared_ptr<gpu_stage> gpu = nullptr);

/// Bounds of the points `sources` keep under `filter`, from a pass that only reads (`threads`
/// workers; 0: every core).
[[nodiscard]] bounds read_bounds(std::vector<part_source*> const& sources, filter_options const& filter, unsigned threads);

/// Whether a job with `o` may bin on the CPU while CUDA starts, the two grids merged (the
/// cooperative route, where its grid is small enough): range/min/max/count with the atomic batch
/// reduction, --gpu-start cpu.
[[nodiscard]] bool job_may_share_with_cpu(grid_job_options const& o) noexcept;

/// How a gpu_stage asks whether CUDA's driver finds `device` (its `find_driver`): the helper
/// process's answer (driver_helper.hpp), waiting up to `timeout_s`, or find_gpu in this process
/// where no helper waits.
[[nodiscard]] std::function<bool(std::string*)> driver_helper_finder(int device, double timeout_s);

/// Worker threads for `requested` (0: the cores this process may use).
[[nodiscard]] unsigned worker_threads(unsigned requested) noexcept;

}  // namespace heightgrid::app
