#pragma once
// The reader side of the pipeline: every input format is a point_source that streams chunks.

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/las_record.hpp"
#include "heightgrid/core/point_batch.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/core/point_filter.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid {

class bulk_chunk_decoder;

/// What a source knows about itself before (or while) its points are read.
struct source_info {
  std::string path;                          ///< the file (or dataset) name, for messages
  std::string format;                        ///< e.g. "LAS 1.4 PDRF 6", "GTiff raster", "CSV"
  std::string crs_wkt;                       ///< empty when the source has no CRS
  std::string vertical_units;                ///< e.g. "metre", "US survey foot"; empty if unknown
  std::optional<std::uint64_t> point_count;  ///< known up front (LAS header), else empty
  std::vector<std::string> notes;            ///< what the reader found odd; the app shows them as warnings
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

/// Default points per part of a part_source: a part is one unit of parallel reading and one batch
/// for binning (3 MB as LAS integers, 6 MB as doubles), small enough that a ring of a few dozen
/// batches stays cheap to pin, large enough to amortise a GPU launch and a copy per batch.
inline constexpr std::size_t default_part_points = std::size_t{1} << 18;

/// What reading one part learnt about its points (the kept ones, for bounds and z).
struct part_result {
  filter_stats filtered;  ///< points_in = records read; removed() = points filtered out
  bounds extent;          ///< x/y bounds of the kept points (empty when none was kept)
  double z_min{HUGE_VAL};
  double z_max{-HUGE_VAL};
  bool last{false};  ///< sequential sources: this was the source's last part

  void add(part_result const& o) noexcept
  {
    filtered.add(o.filtered);
    extent.extend(o.extent);
    z_min = o.z_min < z_min ? o.z_min : z_min;
    z_max = o.z_max > z_max ? o.z_max : z_max;
  }
};

/// Copies the (already filtered) points of `chunk` into `out` as float64 (out.capacity >= chunk
/// size), setting out.size and out.encoding and adding the points' bounds and z range to `r`: how a
/// source that reads point_chunks fills a batch. When `rules` tag (tagged count bands), each point's
/// tag too; a chunk without the attributes a band counts by is an input error naming `path`.
void copy_to_batch(point_chunk const& chunk, point_batch& out, part_result& r, filter_rules const* rules = nullptr,
                   std::string const& path = {});

/// Adds to `r` the extent (x, y) and z range of kept points whose stored integers span [lo, hi] on
/// each axis: the transform maps the ends (a negative scale swaps them); z only when `with_z`.
void add_integer_extent(part_result& r, std::int32_t const (&lo)[3], std::int32_t const (&hi)[3],
                        scaled_coords const& t, bool with_z);

/// What binning a las_records batch found (its filter counts, its kept points' bounds) as a
/// part_result; points_in stays 0 (the reader counted the records it delivered).
[[nodiscard]] part_result records_result(las_record_stats const& s, scaled_coords const& t);

/// Decodes a las_records batch on the CPU into `out` (scaled_int32, out.capacity >= raw.size),
/// keeping what `rules` keeps, in record order, and adds what it removed and the kept points'
/// bounds to `stats`: the same verdicts and integers as the GPU's binning of the records (used when
/// such a batch must be binned on the CPU after all).
void decode_las_records(point_batch const& raw, filter_rules const& rules, point_batch& out, las_record_stats& stats);

/// A source that the streaming pipeline reads in parts: independent units of reading work, each
/// delivering at most max_part_points() filtered points into one point_batch. Readers filter while
/// they decode, so removed points never reach a batch.
///
/// Two kinds, told apart by concurrent_parts():
///  - concurrent (LAS record ranges, LAZ chunk runs, synthetic index ranges): parts 0..part_count()-1
///    may be read by several threads at once, in any order;
///  - sequential (text, GDAL rasters and vectors, LAZ files without a chunk table): parts must be
///    read in order 0, 1, 2, ... by one thread at a time, until a part reports `last`.
/// What a job reads of a source that can skip parts by place or by detail (COPC: the nodes of its
/// octree, each a chunk): part_source::restrict_to.
struct read_region {
  std::optional<bounds> window;  ///< only what can hold points in these x/y bounds (edges included)
  std::optional<int> max_level;  ///< only octree levels 0..max_level (coarser levels: fewer points)
  double auto_level_cell{0.0};   ///< > 0: max_level from this cell size (--copc-level auto)
};

/// What restrict_to() kept of a source with a hierarchy (all zero for other sources).
struct region_report {
  std::uint64_t sources{0};  ///< sources with a hierarchy (COPC files)
  std::uint64_t nodes{0}, nodes_read{0};
  std::uint64_t points{0}, points_read{0};
  std::uint64_t bytes{0}, bytes_read{0};  ///< of the nodes' chunks
  int deepest{-1};                        ///< the deepest level with points
  int deepest_read{-1};                   ///< the deepest level read

  void add(region_report const& o) noexcept
  {
    sources += o.sources;
    nodes += o.nodes;
    nodes_read += o.nodes_read;
    points += o.points;
    points_read += o.points_read;
    bytes += o.bytes;
    bytes_read += o.bytes_read;
    deepest = o.deepest > deepest ? o.deepest : deepest;
    deepest_read = o.deepest_read > deepest_read ? o.deepest_read : deepest_read;
  }
};

/// A job may read a source several times (a bounds pass, then binning; one pass per band of a large
/// grid): concurrent sources read any part again; a sequential source starts over when asked for
/// part 0 again.
/// Chunk boundaries (and so every result that depends on them) are fixed by the source and the
/// part size, never by the thread count.
class part_source {
 public:
  virtual ~part_source() = default;

  [[nodiscard]] virtual source_info const& info() const = 0;

  /// Bounds every point claims to lie in (a LAS header, a raster's extent, a synthetic extent), or
  /// nothing. Never trusted to drop a point: the pipeline only uses them to guess the grid, and
  /// checks the guess against the points it reads.
  [[nodiscard]] virtual std::optional<bounds> declared_bounds() const { return std::nullopt; }

  /// Parts to read when known up front (concurrent sources always know it).
  [[nodiscard]] virtual std::optional<std::uint64_t> part_count() const = 0;

  /// See the class comment.
  [[nodiscard]] virtual bool concurrent_parts() const = 0;

  /// The most points one part can deliver (batches are sized for it).
  [[nodiscard]] virtual std::size_t max_part_points() const = 0;

  /// Whether every part arrives as coord_encoding::scaled_int32 (stored integers and their rule),
  /// as LAS/LAZ Z and small integer dimensions do: the pipeline then maps the pages of the host
  /// grid's integer words, not of its doubles, before binning (host_grid::prefault).
  [[nodiscard]] virtual bool integer_parts() const { return false; }

  /// Reads part k into `out` (out.capacity >= max_part_points()), keeping what `filter` keeps,
  /// and sets out.size and out.encoding (and out.transform for scaled_int32).
  /// Malformed input throws heightgrid::error(error_kind::input, ...) naming the file and where.
  virtual part_result read_part(std::uint64_t k, filter_rules const& filter, point_batch& out) = 0;

  /// Hands the source's compressed chunks to a bulk decoder (the GPU) when it has chunks that
  /// `decoder` can decode for this source's job (layered LAZ asked for Z, classification or flags):
  /// registers them and returns true; read_part then takes their records from `decoder`. Call
  /// before the first read_part; the decoder must outlive the reads. nullptr takes the chunks back
  /// (the job is over): later reads decode them as before.
  virtual bool offload_chunks(bulk_chunk_decoder* decoder)
  {
    (void)decoder;
    return false;
  }

  /// Switches read_part to delivering raw LAS records (coord_encoding::las_records: unfiltered,
  /// undecoded, straight from the file into the batch) for a binner that decodes and filters them
  /// itself (the GPU), and returns true; sources that cannot (anything but uncompressed LAS read
  /// for Z) return false and stay as they are. While on, a part is as many records as fit the
  /// bytes of a batch of max_part_points() points (part_count() says how many parts that makes;
  /// max_part_points() does not change); a read into a batch marked decode_records decodes that
  /// part's records instead. `on` false switches back. Call between passes, never during one.
  virtual bool deliver_records(bool on)
  {
    (void)on;
    return false;
  }

  /// What binning this source's records found (filter counts, the kept points' stored-integer
  /// bounds), as the part_result read_part would have given (points_in 0: counted when read).
  [[nodiscard]] virtual part_result result_of_records(las_record_stats const& stats) const
  {
    (void)stats;
    return {};
  }

  /// Reads from now on only the parts that `region` needs (COPC: the octree nodes whose cube meets
  /// region.window, of levels up to region.max_level), replacing any earlier restriction, and says
  /// what that kept. Sources without a hierarchy read everything and return an empty report. Points
  /// outside the window may still be read (a node reaching into it is read whole). info().point_count
  /// becomes the points kept. Call before the first read_part and before offload_chunks.
  virtual region_report restrict_to(read_region const& region)
  {
    (void)region;
    return {};
  }

  /// Called once every part has been read: release file handles and buffers (a job over thousands
  /// of files must not hold them all open). A later read_part may reopen.
  virtual void release() {}
};

}  // namespace heightgrid
