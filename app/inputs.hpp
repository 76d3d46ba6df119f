#pragma once
// The reader stage of the app: which files, which reader for each, and the loop that streams,
// filters and accumulates their points.

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/point_source.hpp"
#include "heightgrid/core/synthetic.hpp"
#include "heightgrid/io/ground_raster.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid::app {

enum class input_format { automatic, las, text, raster, vector };

/// Options that choose and configure readers (`--input-format`, `--band`, `--layer`, `--z-field`).
struct input_options {
  input_format format{input_format::automatic};
  int band{1};
  std::string layer;
  std::string z_field;
  std::string dimension;  ///< --dimension: what is gridded instead of Z (LAS attribute, vector field)
  std::size_t chunk_points{default_chunk_points};
  /// --ground: the terrain subtracted from every point's z (pipeline/ground_source.hpp); none: z as read.
  std::shared_ptr<io::ground_raster const> ground;
};

[[nodiscard]] std::optional<input_format> parse_input_format(std::string const& name);

/// Expands directories (their *.las / *.laz files, sorted), glob patterns and EPT datasets (a
/// folder with an ept.json, or an ept.json file or URL: the node files `region` needs, logged at
/// -v); other arguments pass through. Throws error_kind::input for a path that does not exist or a
/// pattern or directory that matches nothing.
[[nodiscard]] std::vector<std::string> expand_inputs(std::vector<std::string> const& args,
                                                     read_region const& region = {});

/// The extension of `path` in lower case, with its dot (".laz"); empty where it has none.
[[nodiscard]] std::string lower_extension(std::string const& path);

/// True for a .las/.laz name or a file that starts with the "LASF" signature.
[[nodiscard]] bool looks_like_las(std::string const& path);

/// The reader `path` calls for: `requested` unless automatic, else LAS by extension or "LASF"
/// signature, XYZ/CSV text by extension, else what GDAL opens it as (raster first). Throws
/// error_kind::input for a directory, an unreadable file or a format nothing reads.
[[nodiscard]] input_format resolve_input_format(std::string const& path, input_format requested);

/// Opens one input with the reader its format calls for (LAS by extension or "LASF" signature,
/// XYZ/CSV text by extension, else GDAL raster, else GDAL vector).
[[nodiscard]] std::unique_ptr<point_source> open_input(std::string const& path, input_options const& options);

/// The shape options of a synthetic cloud, as given on the command line (`--points`, the extent,
/// `--density`, `--cell-size`, `--zipf-s`, `--hotspots`, `--seed`).
struct synth_params {
  std::optional<std::uint64_t> points;  ///< default 10^6 unless the extent and density give it
  std::vector<double> extent;           ///< XMIN YMIN XMAX YMAX, or empty
  std::optional<double> density;        ///< points per square unit
  std::optional<double> cell_size;      ///< skewed: the cells the Zipf law ranks
  double zipf_s{0.6};
  int hotspots{8};
  std::uint64_t seed{1};
};

/// Parses a synthetic kind; throws error_kind::usage naming `option` and the known kinds.
[[nodiscard]] synth_kind parse_synth_kind_option(std::string const& name, std::string const& option);

/// The synthetic cloud the options describe. Any two of points, extent and density give the
/// third; with neither extent nor density the kind's default points per cell is used (a square
/// extent at the origin). The skewed kind's cell size is --cell-size, else `cell_size_hint` (the grid's
/// resolution, when the caller knows it), else 1. Throws error_kind::usage on bad values.
[[nodiscard]] synth_options make_synth_options(synth_kind kind, synth_params const& p,
                                               std::optional<double> cell_size_hint, std::string const& extent_option);

}  // namespace heightgrid::app
