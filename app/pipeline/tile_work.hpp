#pragma once
// The parts of a tiled job (tiles.hpp) that hand tiles out and run them: the coordinator keeps
// which tiles are pending, running and done and what each finished tile taught (inputs past their
// headers, unreadable inputs); a worker runs one tile at a time. Workers are threads of this
// process (run_tiles_here) or MPI ranks (tiles_mpi.cpp), which send outcomes to rank 0's
// coordinator.

#include "pipeline/gpu_stage.hpp"
#include "pipeline/laz_gpu_stage.hpp"
#include "pipeline/tiles.hpp"

#include "heightgrid/core/error.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::app {

/// A tile to grid and the catalogue entries to read for it (in catalogue order).
struct tile_task {
  std::uint64_t index{0};  ///< ty * tiles_x + tx
  std::vector<std::size_t> sources;
};

/// What gridding one tile gave.
struct tile_outcome {
  enum class kind { written, empty, bad_input, failed };
  kind status{kind::failed};
  std::uint64_t records{0};
  std::uint64_t binned{0};
  std::uint64_t non_empty{0};
  /// Per catalogue entry read, the bounds of its kept points (every point of it was read).
  std::vector<std::pair<std::size_t, bounds>> extents;
  std::size_t bad{0};        ///< bad_input: the catalogue entry that could not be read
  std::string message;       ///< bad_input, failed: why
  error_kind error{error_kind::internal};  ///< failed: the error's kind
  std::vector<std::string> warnings;
  double seconds{0.0};
  double gpu_seconds{0.0};  ///< the device's compute stream busy (binning, finalize)
};

enum class tile_state { fresh, pending, running, done };

class tile_coordinator {
 public:
  tile_coordinator(tiling layout, std::vector<catalogue_entry> const& catalogue, tiled_job_options const& o);

  /// A tile finished by an earlier run (--resume).
  void mark_done_earlier(std::uint64_t index, bool written);
  /// The next tile to grid, or nothing now (see finished() and idle_worker_may_get_work()).
  [[nodiscard]] std::optional<tile_task> next();
  /// Records a finished tile; returns the lines for the tile log.
  std::vector<std::string> complete(tile_task const& task, tile_outcome const& outcome);
  /// Stops handing out tiles (an error outside a tile, e.g. an MPI rank lost).
  void fail(error const& e);
  /// No tile is running and none will be handed out.
  [[nodiscard]] bool finished() const;
  /// Nothing is pending, but a running tile may still requeue tiles.
  [[nodiscard]] bool idle_worker_may_get_work() const;

  [[nodiscard]] std::optional<error> fatal() const
  {
    std::lock_guard<std::mutex> lock(mutex_);
    return fatal_;
  }
  [[nodiscard]] bool replan() const
  {
    std::lock_guard<std::mutex> lock(mutex_);
    return replan_;
  }
  [[nodiscard]] bounds replan_bounds() const
  {
    std::lock_guard<std::mutex> lock(mutex_);
    return replan_bounds_;
  }
  [[nodiscard]] std::vector<std::uint64_t> written_tiles() const;
  void fill(tiled_job_report& r) const;
  void report_progress() const;

 private:
  struct tile {
    std::vector<std::size_t> sources;
    tile_state state{tile_state::fresh};
    bool dirty{false};    ///< an input reached it while it ran: grid it again
    bool written{false};
    bool counted{false};  ///< gridded in this run (not only by an earlier one, --resume)
    std::uint64_t binned{0};
    std::uint64_t non_empty{0};
    double points{0.0};  ///< the points its inputs' headers put in it (each spread evenly over the tiles it meets)
  };

  void requeue(std::uint64_t index, std::vector<std::string>& log_lines);

  tiling layout_;
  std::vector<catalogue_entry> const& catalogue_;
  tiled_job_options const& o_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, tile> tiles_;
  std::deque<std::uint64_t> queue_;
  std::vector<bool> bad_;
  std::vector<skipped_input> skipped_;
  std::vector<std::string> warnings_;
  std::optional<error> fatal_;
  bool replan_{false};
  bounds replan_bounds_;
  std::uint64_t planned_{0};
  std::uint64_t running_{0};
  std::uint64_t written_{0};
  std::uint64_t empty_{0};
  std::uint64_t resumed_{0};
  std::uint64_t redone_{0};
  std::uint64_t records_{0};
  std::uint64_t binned_{0};
  std::uint64_t non_empty_{0};
};

/// Runs tiles one at a time, keeping its GPU stage (device `device`, or none for -1 unless the
/// job's device choice starts one) from tile to tile.
class tile_worker {
 public:
  tile_worker(tiled_job_options const& o, tiling const& layout, std::vector<catalogue_entry> const& catalogue,
              tile_source_opener const& open, int device, unsigned threads);
  [[nodiscard]] tile_outcome run(tile_task const& task);
  [[nodiscard]] std::string name() const;
  [[nodiscard]] double busy_seconds() const noexcept { return busy_s_; }
  [[nodiscard]] double gpu_seconds() const noexcept { return gpu_busy_s_; }
  [[nodiscard]] std::uint64_t tiles() const noexcept { return tiles_; }
  /// Names the process it runs in ("rank 0 on HOST") in name() and before a failed tile's message.
  void set_label(std::string label) { label_ = std::move(label); }
  /// Tells it apart from the other workers of its GPU in name() ("worker 3").
  void set_ordinal(std::string ordinal) { ordinal_ = std::move(ordinal); }

 private:
  tiled_job_options const& o_;
  tiling const& layout_;
  std::vector<catalogue_entry> const& catalogue_;
  tile_source_opener const& open_;
  int device_;
  unsigned threads_;
  std::shared_ptr<gpu_stage> gpu_;
  std::shared_ptr<laz_gpu_cache> laz_cache_;  ///< the GPU LAZ decoder kept between this worker's tiles
  std::string device_name_;
  std::string label_;
  std::string ordinal_;
  double busy_s_{0.0};
  double gpu_busy_s_{0.0};
  double gpu_total_s_{0.0};  ///< the stage's binner's times so far (they add up over its tiles)
  std::set<std::string> memory_notes_said_;  ///< device memory notes -v has printed (the stage keeps its own)
  std::uint64_t tiles_{0};
};

using tile_log = std::function<void(std::vector<std::string> const&)>;

/// Hands the coordinator's tiles to `workers` on threads of this process; `log` receives the tile
/// log's lines as tiles finish.
void run_tiles_here(tile_coordinator& c, std::vector<std::unique_ptr<tile_worker>>& workers, tile_log const& log,
                    bool show_progress);

/// Tile workers in other processes, seen from the coordinator's (MPI rank 0: tiles_mpi.hpp).
class remote_tile_workers {
 public:
  virtual ~remote_tile_workers() = default;
  /// Before any tile: every worker opened the same catalogue as this process (or the first worker
  /// that could not says why, thrown as its error).
  virtual void check_catalogue(std::vector<catalogue_entry> const& catalogue) = 0;
  /// One planning of the grid: hands the coordinator's tiles of `layout` to the workers, one at a
  /// time to whichever asks, and feeds back their outcomes, until the coordinator is finished.
  virtual void run(tile_coordinator& c, tiling const& layout, tile_log const& log, bool show_progress) = 0;
  /// Per worker: its name, tiles gridded and seconds inside them, appended to the report.
  virtual void describe(tiled_job_report& r) const = 0;
  /// This process as the workers' names call theirs ("rank 0 on HOST"): its own worker's label.
  [[nodiscard]] virtual std::string local_label() const = 0;
};

/// run_tiled_job (tiles.hpp) with `remote` workers in other processes (MPI ranks: tiles_mpi.hpp)
/// gridding tiles beside this process's one worker (the first of `gpus`, or the CPU, with
/// job.threads threads); null: this process grids every tile with its own workers.
tiled_job_report run_tiled_job(std::vector<catalogue_entry> const& catalogue, tile_source_opener const& open,
                               tiled_job_options const& options, remote_tile_workers* remote);

}  // namespace heightgrid::app
