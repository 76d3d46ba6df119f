#pragma once
// Native ASPRS LAS 1.0-1.4 reading: point data record formats 0-10 (waveform formats without
// their waveforms), extra bytes, 64-bit counts, VLRs and EVLRs, CRS from WKT or GeoTIFF keys.
// LAZ (LASzip-compressed) files are decoded natively (io/src/laz), chunks in parallel.

#include "heightgrid/core/point_source.hpp"
#include "heightgrid/io/las_crs.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid::io {

struct las_read_options {
  /// Points decoded per block: the reader reads chunk_points records with one system call into
  /// one buffer and decodes them from there. Must be > 0.
  std::size_t chunk_points{default_chunk_points};
  /// LAZ only: threads decoding chunks in parallel (0: one per core). Points still arrive in
  /// file order; at most about 2 * threads decoded chunks are held at a time.
  std::size_t threads{0};
};

/// What the LASzip VLR of a LAZ file says about its compression.
struct las_laz_info {
  std::uint16_t compressor{0};  ///< 1 pointwise, 2 pointwise chunked, 3 layered chunked
  std::uint32_t chunk_size{0};  ///< points per chunk; 0xFFFFFFFF: variable-size chunks
  std::string laszip_version;   ///< of the writer, "3.4r3"
  std::string items;            ///< "point10 v2, gpstime11 v2, rgb12 v2"
  std::uint64_t vlr_data_offset{0};  ///< file offset of the VLR's payload
  std::uint64_t vlr_data_length{0};
  /// Chunks in the file: from the chunk table's header when it can be read, else computed from
  /// the point count for fixed-size chunks; 0 when unknown.
  std::uint64_t chunk_count{0};
  bool chunk_size_zero{false};  ///< the VLR said 0 (LASlib's COPC): read as variable-size chunks

  [[nodiscard]] bool variable_chunks() const noexcept { return chunk_size == 0xFFFFFFFFu; }
  /// "LAZ (LASzip compressor 2, fixed chunks of 50000 points), items: point10 v2, ..."
  [[nodiscard]] std::string describe() const;
};

/// One variable length record (VLR, before the points) or extended VLR (EVLR, after them).
struct las_vlr_info {
  std::string user_id;
  std::uint16_t record_id{0};
  std::uint64_t offset{0};  ///< byte offset of the record's header in the file
  std::uint64_t length{0};  ///< bytes of data after the record's header
  std::string description;
  bool extended{false};  ///< an EVLR
};

/// Everything the public header block and the VLRs/EVLRs say, validated against the file size.
/// Header bounds are reported as written; extents must come from the points.
struct las_header_info {
  std::string path;
  std::uint64_t file_size{0};
  int version_major{0};
  int version_minor{0};
  std::uint16_t file_source_id{0};
  std::uint16_t global_encoding{0};
  std::string system_id;
  std::string generating_software;
  std::uint16_t creation_day{0};
  std::uint16_t creation_year{0};
  std::uint16_t header_size{0};
  std::uint32_t offset_to_point_data{0};
  int point_format{0};  ///< 0-10, with the LAZ compression bits removed
  std::uint8_t point_format_byte{0};  ///< as written: LAZ sets bit 7 (and 6)
  std::uint16_t record_length{0};
  std::uint16_t extra_bytes{0};  ///< record_length minus the format's base size
  /// The number of points: the 64-bit count of LAS 1.4 when set, else the legacy 32-bit count.
  std::uint64_t point_count{0};
  std::uint32_t legacy_point_count{0};
  std::array<std::uint64_t, 15> points_by_return{};
  std::array<double, 3> scale{};
  std::array<double, 3> offset{};
  std::array<double, 3> header_min{};  ///< as written in the header: often wrong
  std::array<double, 3> header_max{};
  std::uint64_t waveform_data_start{0};  ///< LAS 1.3+
  std::uint64_t evlr_start{0};           ///< LAS 1.4
  std::uint32_t evlr_count{0};           ///< LAS 1.4
  std::vector<las_vlr_info> vlrs;        ///< VLRs in file order, then EVLRs
  std::vector<std::string> notes;        ///< oddities worth a warning (e.g. more records than counted)
  /// A LAZ file: compression bits in the format byte or a LASzip VLR.
  bool compressed{false};
  /// The parsed LASzip VLR (set when the file has one; its items are checked against the point
  /// format and record length).
  std::optional<las_laz_info> laz;

  /// The CRS records as found (filled by parse_las_header, not interpreted).
  std::string wkt_record;
  bool wkt_record_in_evlr{false};
  las_geotiff_keys geotiff_keys;

  /// The CRS as interpreted (filled by read_las_header and open_las_source, through GDAL; see
  /// las_crs for the meaning of each field).
  std::string crs_wkt;
  std::string crs_source{"none"};  ///< "WKT VLR", "WKT EVLR", "GeoTIFF keys" or "none"
  std::string vertical_units;
  std::string crs_note;  ///< why a CRS record in the file was not used; empty when none was skipped

  /// "LAS 1.4 PDRF 6", as in source_info::format.
  [[nodiscard]] std::string format_name() const;
};

/// Random access to the bytes of a LAS file, so that one parser serves files and memory.
class las_byte_reader {
 public:
  virtual ~las_byte_reader() = default;
  [[nodiscard]] virtual std::uint64_t size() const = 0;
  /// Copies bytes [offset, offset + count) into `out`. Callers guarantee offset + count <= size().
  virtual void read(std::uint64_t offset, std::size_t count, std::uint8_t* out) const = 0;
};

/// Parses and validates the public header, VLRs and EVLRs. Pure: no GDAL, no threads, no file
/// access beyond `bytes`; the CRS records are collected but crs_wkt stays empty. Compressed (LAZ)
/// files parse with compressed = true and `laz` describing the LASzip VLR. Malformed input
/// throws error(error_kind::input, "<path>: byte <offset>: <what is wrong>"); nothing is read
/// outside [0, bytes.size()).
[[nodiscard]] las_header_info parse_las_header(las_byte_reader const& bytes,
                                               std::string const& path_for_messages);

/// parse_las_header on a whole file held in memory.
[[nodiscard]] las_header_info parse_las_header(std::uint8_t const* data, std::size_t size,
                                               std::string const& path_for_messages);

/// Opens `path`, parses its header and interprets its CRS. Works on LAZ files too.
[[nodiscard]] las_header_info read_las_header(std::string const& path);

/// A COPC file's octree as `info` shows it: the root cube, the root's point spacing, and per level
/// with points its nodes, points and chunk bytes.
struct copc_summary {
  double center[3]{0.0, 0.0, 0.0};
  double halfsize{0.0};
  double spacing{0.0};
  struct level {
    int depth{0};
    double spacing{0.0};  ///< the root's / 2^depth
    std::uint64_t nodes{0}, points{0}, bytes{0};
  };
  std::vector<level> levels;  ///< increasing depth, levels with points only
};

/// The octree of a COPC file (its `copc` info VLR and hierarchy), or nothing when `path` is not a
/// COPC file. Throws error_kind::input naming the file for a malformed info VLR or hierarchy.
[[nodiscard]] std::optional<copc_summary> read_copc_summary(std::string const& path);

/// A point_source over a LAS or LAZ file. Every record is delivered (no filtering), in file
/// order, with x/y/z = integer * scale + offset in double and classification, return_number,
/// number_of_returns and flags (point_flag bits) filled. LAZ chunks are decoded on
/// options.threads worker threads; a corrupt chunk throws error_kind::input from read(),
/// "<path>: chunk <i> (bytes <a>-<b>): <what>".
[[nodiscard]] std::unique_ptr<point_source> open_las_source(std::string const& path,
                                                            las_read_options const& options = {});

/// A part_source over a LAS or LAZ file, parts read concurrently where the file allows.
///
/// Points travel as the file's int32 X, Y, Z (coord_encoding::scaled_int32, transform = the
/// header's scale and offset), filtered while they are decoded, in file order within a part:
///  - uncompressed LAS: concurrent; part k is records [k * part_points, (k + 1) * part_points),
///    read with one positioned read; max_part_points() = part_points;
///  - LAZ with a usable chunk table: concurrent; a part is a run of whole consecutive chunks
///    holding at most part_points points, or one chunk alone when it holds more (then
///    max_part_points() is the largest chunk's size); each part decodes its own chunks;
///  - LAZ without one (compressor 1, a missing or damaged table): sequential parts of
///    part_points points, decoded on the reading thread, starting over at part 0.
/// The header is validated at open (a zero scale, more points than the file holds: errors naming
/// the file and byte); a file that shrinks later gives "<path>: record <i>: ..." from read_part,
/// a corrupt LAZ chunk "<path>: chunk <i> (bytes <a>-<b>): <what>". info() is open_las_source's.
///
/// `dimension` (--dimension; "" or "Z": Z) names another attribute to carry in the z slot: a
/// standard one by PDAL's name (Intensity, ReturnNumber, NumberOfReturns, Classification,
/// ScanAngleRank, UserData, PointSourceId, GpsTime, Red, Green, Blue, Infrared, X, Y) or an extra
/// byte by the name its Extra Bytes descriptor gives, case-insensitively. Integer attributes that
/// fit int32 travel as scaled_int32 with the attribute's scale and offset as the z transform;
/// GpsTime, floats and 32/64-bit unsigned or 64-bit integers as float64 batches (x, y the same
/// doubles). Filters still judge the point's own Z. A name the file lacks is error_kind::input,
/// listing the file's dimensions.
[[nodiscard]] std::unique_ptr<part_source> open_las_parts(std::string const& path,
                                                         std::size_t part_points = default_part_points,
                                                         std::string const& dimension = {});

}  // namespace heightgrid::io
