#pragma once
// A tiled job (tiles.hpp) spread over MPI ranks: `mpirun -n N heightgrid grid ... --tile-size T`
// or `srun -n N ...`. Rank 0 coordinates: it plans the grid, prepares the directory (the only rank
// that touches the manifest, the tile log and the VRT) and hands tiles out through its
// tile_coordinator, one at a time to whichever rank asks, so late-input requeues and --skip-bad
// work as in one process; its main thread does the talking (sleeping between messages) while a
// tile_worker of its own grids tiles from the same coordinator (run_tiled_job). Every other rank
// opens the same catalogue itself and grids the tiles it is handed with its own tile_worker (the
// CPU, or its GPU of --gpus), writing their files itself. N ranks grid with N workers.
// Defined in tiles_mpi.cpp, compiled only with MPI (HEIGHTGRID_HAVE_MPI); mpi.h stays in there.
//
// The conversation between rank 0 and each worker rank, in messages of bytes encoded here (host
// byte order: every rank must run on the same architecture):
//   worker -> 0  hello      its host and catalogue fingerprint, or the error that stopped it opening
//                           the catalogue
//   0 -> worker  round      a planning of the grid (the tiling); the grid is planned again when a
//                           point lies outside it, so there may be several rounds
//   worker -> 0  request    ready for tiles
//   0 -> worker  task       a tile_task: up to two ahead, so that the   } until the coordinator
//                           next is there when a tile ends              } is finished
//   worker -> 0  outcome    its tile_outcome, which also asks for more  }
//   0 -> worker  end round
//   0 -> worker  done       the job's exit code: every rank exits with it
// A tile that fails on a worker fails the job as it would in one process: rank 0's coordinator stops
// handing out tiles, waits for the tiles still running, reports the worker's message and writes no
// VRT; every rank then exits with the error's code.

#include "pipeline/tile_work.hpp"
#include "pipeline/tiles.hpp"

#include "heightgrid/core/error.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid::app {

/// MPI for this process: MPI_Init_thread (MPI_THREAD_FUNNELED: only the main thread calls MPI; a
/// tile's reading threads never do) on construction, MPI_Finalize on destruction. Made only when a
/// launcher started the process (grid_tiled.cpp reads its environment first), so a plain run never
/// starts MPI.
class mpi_world {
 public:
  mpi_world();
  ~mpi_world();
  mpi_world(mpi_world const&) = delete;
  mpi_world& operator=(mpi_world const&) = delete;

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  /// Among the ranks on this host (every rank grids), this rank's place and how many there are:
  /// worker k of a host uses GPU gpus[k % gpus.size()] and its share of the host's cores.
  [[nodiscard]] int local_worker() const noexcept { return local_worker_; }
  [[nodiscard]] int local_workers() const noexcept { return local_workers_; }
  [[nodiscard]] std::string const& host() const noexcept { return host_; }
  /// Ends every rank with `exit_code` (MPI_Abort): for a failure of the conversation itself, after
  /// which no rank could wait for another's message.
  [[noreturn]] void abort(int exit_code) const noexcept;

 private:
  int rank_{0};
  int size_{1};
  int local_worker_{0};
  int local_workers_{1};
  std::string host_;
};

/// Rank 0's side: the remote workers run_tiled_job hands tiles to (tiled_job_options::remote).
class mpi_tile_ranks final : public remote_tile_workers {
 public:
  explicit mpi_tile_ranks(mpi_world const& world);

  void check_catalogue(std::vector<catalogue_entry> const& catalogue) override;
  void run(tile_coordinator& c, tiling const& layout, tile_log const& log, bool show_progress) override;
  void describe(tiled_job_report& r) const override;
  [[nodiscard]] std::string local_label() const override;

  /// The end of the job, whatever happened before (call it after rank 0 reported): reads what
  /// the workers still send, ends a round left open by an error, and tells every worker the job's
  /// exit code.
  void finish(int exit_code);

 private:
  struct worker {
    bool hello_pending{true};  ///< its hello is still to be read
    bool in_round{false};      ///< a round was sent and not ended
    bool owes_request{false};  ///< its first request of the round is on its way
    std::deque<tile_task> tasks;  ///< sent to it, their outcomes still to come (the first it grids)
    std::optional<error> setup_error;
    std::uint64_t inputs{0};  ///< in its catalogue
    std::uint64_t fingerprint{0};
    std::string host;
    std::string name;  ///< its tile worker's, from its last outcome
    std::uint64_t tiles{0};
    double busy_s{0.0};
    double gpu_s{0.0};
  };
  /// Reads rank `r`'s hello if it is still to come.
  void read_hello(int r);

  std::map<int, worker> workers_;  ///< by rank
  std::string host_;               ///< rank 0's
  bool finished_{false};
};

/// A worker rank's side: says hello to rank 0 with the catalogue it opened, then grids the tiles it
/// is handed (device `device`, -1: the job's device choice; `threads` reading threads) round after
/// round until rank 0 says the job is done. Returns the job's exit code.
[[nodiscard]] int serve_tile_rank(mpi_world const& world, std::vector<catalogue_entry> const& catalogue,
                                  tile_source_opener const& open, tiled_job_options const& o, int device,
                                  unsigned threads);

/// A worker rank that could not open the catalogue: says why to rank 0 (which reports it), then
/// waits for the job's end. Returns the job's exit code.
[[nodiscard]] int fail_tile_rank(mpi_world const& world, error const& why);

// ---- the messages' bytes (exposed for the tests) ----------------------------------------------

[[nodiscard]] std::vector<char> encode_task(tile_task const& t);
[[nodiscard]] tile_task decode_task(std::vector<char> const& bytes);
[[nodiscard]] std::vector<char> encode_outcome(tile_outcome const& o, std::string const& worker_name);
/// Throws error_kind::internal for bytes that are not an encoded outcome.
[[nodiscard]] tile_outcome decode_outcome(std::vector<char> const& bytes, std::string* worker_name = nullptr);
[[nodiscard]] std::vector<char> encode_tiling(tiling const& t);
[[nodiscard]] tiling decode_tiling(std::vector<char> const& bytes);
/// What makes two ranks' catalogues the same: the number of inputs and their paths, in order.
[[nodiscard]] std::uint64_t catalogue_fingerprint(std::vector<catalogue_entry> const& catalogue);

}  // namespace heightgrid::app
