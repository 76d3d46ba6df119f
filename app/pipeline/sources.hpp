#pragma once
// A job's inputs as part sources: files expanded (directories, globs), each opened with the reader
// its format calls for (headers only: points are read by the pipeline), or a synthetic cloud.

#include "options.hpp"

#include "heightgrid/core/point_source.hpp"
#include "heightgrid/core/synthetic.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::app {

struct opened_sources {
  std::vector<std::unique_ptr<part_source>> sources;
  std::vector<std::string> paths;     ///< the files, in order (empty for --synth)
  std::optional<synth_options> synth;  ///< the synthetic cloud, for --synth
  /// keep_going: inputs that could not be opened, and why (they are not in sources/paths).
  std::vector<std::pair<std::string, std::string>> failed;
};

/// The files the options name (expand_inputs), without opening them; empty for --synth.
/// Throws error_kind::usage when neither or both of files and --synth are given.
/// `region`: what EPT inputs are read of (expand_inputs).
[[nodiscard]] std::vector<std::string> input_paths(input_selection const& in, read_region const& region = {});

/// Points the inputs hold, guessed from file sizes (LAS/LAZ headers are not read yet) or from the
/// synthetic options: enough to decide early whether to start the GPU. 0 when unknown.
[[nodiscard]] std::uint64_t guess_points(input_selection const& in, std::vector<std::string> const& paths);

/// Opens every input (headers only, `threads` files at a time), each read in parts of at most
/// in.reader.chunk_points points. A synthetic skewed cloud ranks cells of `cell_size_hint` (the
/// grid's resolution) unless --cell-size is given. `keep_going` (--skip-bad): an input that fails to
/// open as malformed is listed in `failed` instead of throwing.
[[nodiscard]] opened_sources open_sources(input_selection const& in, std::vector<std::string> paths,
                                          std::optional<double> cell_size_hint, unsigned threads,
                                          bool keep_going = false);

/// The reader options of `in` with --input-format parsed (throws error_kind::usage).
[[nodiscard]] input_options reader_options(input_selection const& in);

/// Opens one file as a part source with the reader its format calls for (headers only).
[[nodiscard]] std::unique_ptr<part_source> open_part_source(std::string const& path, input_options const& options);

/// Reads the point_source `open` returns in order, `part_points` points a part, as a sequential
/// part_source (text, GDAL rasters and vectors); asked for part 0 again, it opens the source anew.
/// `declared` is passed on as declared_bounds().
[[nodiscard]] std::unique_ptr<part_source> sequential_parts(std::function<std::unique_ptr<point_source>()> open,
                                                            std::size_t part_points,
                                                            std::optional<bounds> declared = std::nullopt);

}  // namespace heightgrid::app
