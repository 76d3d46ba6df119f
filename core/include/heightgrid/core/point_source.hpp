#pragma once
// The reader side of the pipeline: every input format is a point_source that streams chunks.

#include "heightgrid/core/point_chunk.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace heightgrid {

/// What a source knows about itself before (or while) its points are read.
struct source_info {
  std::string path;                          ///< the file (or dataset) name, for messages
  std::string format;                        ///< e.g. "LAS 1.4 PDRF 6", "GTiff raster", "CSV"
  std::string crs_wkt;                       ///< empty when the source has no CRS
  std::string vertical_units;                ///< e.g. "metre", "US survey foot"; empty if unknown
  std::optional<std::uint64_t> point_count;  ///< known up front (LAS header), else empty
};

/// A stream of point chunks. Implementations read sequentially; one virtual call per chunk.
class point_source {
 public:
  virtual ~point_source() = default;

  [[nodiscard]] virtual source_info const& info() const = 0;

  /// Replaces the contents of `chunk` with the next points, at most `max_points` of them.
  /// Returns false (and leaves `chunk` empty) once the source is exhausted.
  /// Malformed input throws heightgrid::error(error_kind::input, ...) naming the file.
  virtual bool read(point_chunk& chunk, std::size_t max_points) = 0;
};

/// Default number of points per chunk: large enough to amortise per-chunk work, small enough
/// to stay in cache-friendly buffers (24 MB for x, y, z).
inline constexpr std::size_t default_chunk_points = std::size_t{1} << 20;

}  // namespace heightgrid
