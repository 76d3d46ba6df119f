#pragma once
// `heightgrid grid`: stream points from files (or a synthetic cloud) into a grid's per-cell
// accumulators on the CPU and/or the GPU, and write a GeoTIFF of per-cell statistics.

#include "options.hpp"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace heightgrid::app {

/// Every option of `grid`, as parsed; checked together in run_grid().
struct grid_options {
  input_selection in;
  grid_geometry geometry;
  run_options run;
  std::string output;
  std::string metrics{"range"};
  std::string prange{"5,95"};
  double cover_above{2.0};  ///< --cover-above
  std::string ground;        ///< --ground DTM
  std::string fill{"none"};  ///< --fill
  double fill_radius{10.0};  ///< --fill-radius (cells)
  double fill_max_edge{0.0};  ///< --fill-max-edge (cells; 0: any)
  std::string nodata{"nan"};
  std::string a_srs;
  std::string output_format;  ///< --of; empty: from the output's extension (GTiff by default)
  std::string output_type;    ///< --ot; empty: Float32 (Float64 for counts above 2^24, UInt32 for count alone)
  std::vector<std::string> creation_options;
  bool overwrite{false};
  bool json{false};     ///< --json: what was written, as one JSON document on stdout
  std::string preview;  ///< --preview FILE.png: band 1 rendered for a quick look
  std::string mode{"auto"};
  std::string read_ahead;  ///< --read-ahead SIZE; empty: the default (min(2G, a quarter of the host budget))
  std::string las_decoder{"auto"};  ///< --las-decoder auto|cpu
  std::string laz_decoder{"auto"};  ///< --laz-decoder auto|cpu|gpu|both
  std::string gpu_start{"cpu"};     ///< --gpu-start cpu|wait
  double gpu_memory_wait{600.0};    ///< --gpu-memory-wait SECONDS (--device gpu)
  std::string copc_level;           ///< --copc-level N|auto; empty: every level
  // Tiled output (-o names a directory)
  std::string tile_size;              ///< --tile-size CELLS or COLSxROWS
  std::optional<double> tile_size_m;  ///< --tile-size-m: tile side in CRS units
  std::string tile_name;              ///< --tile-name: file name prefix (default: the directory's name)
  bool resume{false};
  bool skip_bad{false};
  std::string gpus;                   ///< --gpus all|N|LIST
  unsigned tiles_per_gpu{0};          ///< --tiles-per-gpu (0: auto)
};

/// --gpus as written: all, a count N, or a list of device numbers.
struct gpu_request {
  bool all{false};
  bool list{false};          ///< devices are device numbers (else devices.front() is a count)
  std::vector<int> devices;
};

/// --gpus's syntax alone (no CUDA call). Throws error_kind::usage.
[[nodiscard]] gpu_request parse_gpu_request(std::string const& text);

/// The devices `r` names on a machine with `present` usable GPUs (empty text: none asked for).
/// Throws error_kind::usage (more than there are) or device (none).
[[nodiscard]] std::vector<int> resolve_gpus(gpu_request const& r, std::string const& text, int present);

/// --gpus: "all", a count N (devices 0..N-1) or a list "0,2"; checked against the devices present.
/// Empty text: none asked for. Throws error_kind::usage / device.
[[nodiscard]] std::vector<int> parse_gpus(std::string const& text);

CLI::App* add_grid_command(CLI::App& app, grid_options& o);
int run_grid(grid_options const& o);

}  // namespace heightgrid::app
