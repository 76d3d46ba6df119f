#pragma once
// Tiled output: the grid of a catalogue of inputs (thousands of LAS/LAZ tiles) cut into tiles of
// `--tile-size` cells, each gridded by its own streaming job (grid_job.hpp) over the inputs whose
// header bounds meet it, written as its own GeoTIFF, with a GDAL VRT over them all.
//
//   plan: the whole grid (snapped as a single run's; --te fixes it), cut into tiles; each input is
//         assigned to the tiles its header bounds meet
//   run:  tiles are handed out one at a time (dynamic: a slow tile does not stall the others) to
//         workers — one per GPU of --gpus, or one for the CPU, or MPI ranks (tiles_mpi.cpp) — each
//         worker keeping its GPU stage across tiles
//   check: header bounds only select inputs, they never drop a point. Every job reports the bounds
//         of each input's points (all of them are read); an input whose points reach a tile its
//         header did not is added to that tile, which is gridded (again) with it. A point outside
//         the whole grid re-plans the grid from the points' bounds.
//   write: tiles with points are written atomically (empty tiles are not written); a log in the
//         directory records every finished tile, so `--resume` skips them after a killed run; the
//         VRT is written last, only when every tile succeeded.
//
// A tile's cells are the whole grid's cells (grid_spec::col0/row0 keep the whole grid's cell
// rule), so the mosaic of the tiles is bit-identical to a single run over the same grid.

#include "pipeline/grid_job.hpp"

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_source.hpp"
#include "heightgrid/io/geotiff_writer.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid::app {

/// One input as the catalogue knows it from its header.
struct catalogue_entry {
  std::string path;                ///< the file ("synthetic ..." for --synth)
  std::optional<bounds> declared;  ///< bounds its header declares (none: every tile reads it)
  std::uint64_t points{0};         ///< records its header declares (0: unknown)
};

/// Opens the sources of one tile's job: catalogue entries `which` (in that order), each opened anew
/// (a job owns its sources). `tile` and `tile_index` let a synthetic input make the tile's share.
using tile_source_opener = std::function<std::vector<std::unique_ptr<part_source>>(
  grid_spec const& tile, std::uint64_t tile_index, std::vector<std::size_t> const& which)>;

/// Tile workers on each GPU unless --tiles-per-gpu says: a tile of ~600 LAZ files fills less than
/// half of an H200's decoder slots, so one tile at a time leaves the decoder latency-bound, and the
/// tile's finalize and write leave the GPU idle (docs/benchmarks.md, "Tiled jobs on every GPU of a host").
inline constexpr unsigned default_tiles_per_gpu = 3;

struct tiled_job_options {
  grid_job_options job;  ///< every tile's job (fixed_grid and threads are set per tile)
  std::optional<grid_spec> fixed_grid;  ///< --te: the whole grid
  std::uint32_t tile_cols{0};
  std::uint32_t tile_rows{0};
  std::string out_dir;
  std::string name;  ///< tiles are NAME_ROW_COL.tif, the mosaic NAME.vrt
  std::vector<metric> bands;
  io::raster_write_options write;  ///< format, creation options, CRS, nodata (overwrite is decided here)
  bool overwrite{false};
  bool resume{false};
  bool skip_bad{false};
  std::vector<int> gpus;           ///< CUDA devices, `tiles_per_gpu` tile workers each; empty: the default one
  unsigned tiles_per_gpu{1};       ///< tile workers on each GPU (a CPU job has one worker)
  std::size_t batch_points{default_part_points};  ///< the largest part of any input
};

/// How many inputs are unusable and why (--skip-bad).
struct skipped_input {
  std::string path;
  std::string reason;
};

/// What one tile worker did: "GPU 0 (NVIDIA H100 ...), 16 threads", "rank 3 on host", "worker".
struct tile_worker_summary {
  std::string name;
  std::uint64_t tiles{0};
  double busy_s{0.0};  ///< seconds inside tile jobs
  double gpu_s{0.0};   ///< seconds its GPU's compute stream was busy (0 without a GPU)
};

struct tiled_job_report {
  tiling layout;
  std::uint64_t tiles_planned{0};   ///< tiles that any input meets
  std::uint64_t tiles_written{0};
  std::uint64_t tiles_empty{0};     ///< gridded, no point in them: not written
  std::uint64_t tiles_resumed{0};   ///< done by an earlier run (--resume)
  std::uint64_t tiles_redone{0};    ///< gridded again because an input's points reached them late
  std::uint64_t tiles_filled_in{0};  ///< without a point, made because --fill reached into them
  std::uint64_t records{0};         ///< records read, summed over tiles (an input read by k tiles counts k times)
  std::uint64_t binned{0};          ///< points written into cells (each point once)
  std::uint64_t non_empty{0};
  std::vector<skipped_input> skipped;
  std::vector<std::string> warnings;
  std::string vrt;
  std::vector<tile_worker_summary> workers;  ///< what each worker (thread or MPI rank) did
  double seconds{0.0};
  double plan_s{0.0};   ///< planning the grid and preparing the directory (every round)
  double tiles_s{0.0};  ///< from the first tile handed out to the last one done (every round)
  double vrt_s{0.0};    ///< writing the VRT
  double fill_s{0.0};   ///< --fill across the tiles' edges, once every tile was written
  int replans{0};
};

/// Runs a tiled job over `catalogue` on this process's workers. Throws heightgrid::error; with
/// skip_bad, an input that fails to open or read is left out of every tile and listed in the report
/// instead. (With workers in other processes too: tile_work.hpp.)
tiled_job_report run_tiled_job(std::vector<catalogue_entry> const& catalogue, tile_source_opener const& open,
                               tiled_job_options const& options);

/// The whole grid of a tiled job: --te, else the header bounds of the inputs and `learnt` (points
/// found outside them); inputs without header bounds are read once for theirs through `open`.
[[nodiscard]] grid_spec plan_tiled_grid(std::vector<catalogue_entry> const& catalogue, tile_source_opener const& open,
                                        tiled_job_options const& options, bounds const& learnt = {});

/// Tile (tx, ty)'s file name: NAME_ROW_COL.tif, zero-padded to the widest row and column.
[[nodiscard]] std::string tile_file_name(std::string const& name, tiling const& layout, std::uint32_t tx, std::uint32_t ty);

}  // namespace heightgrid::app
