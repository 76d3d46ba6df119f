#pragma once
// Writing ASPRS LAS 1.2 and 1.4 files (point data record formats 0, 1, 3 and 6): synthetic test
// data and benchmark inputs. The header (counts, bounds) is fixed up when the writer closes.

#include "heightgrid/core/point_chunk.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace heightgrid::io {

/// One point with the attributes formats 0, 1, 3 and 6 can hold.
struct las_point {
  double x{0};
  double y{0};
  double z{0};
  std::uint16_t intensity{0};
  std::uint8_t return_number{1};
  std::uint8_t number_of_returns{1};
  std::uint8_t classification{0};
  std::uint8_t flags{0};  ///< point_flag bits; overlap only in format 6
  double gps_time{0};     ///< formats 1, 3, 6
  std::uint16_t red{0};   ///< format 3
  std::uint16_t green{0};
  std::uint16_t blue{0};
};

struct las_write_options {
  int version_minor{2};  ///< 2 or 4
  int point_format{0};   ///< 0, 1, 3 (LAS 1.2 or 1.4) or 6 (LAS 1.4)
  /// Coordinates are stored as round((v - offset) / scale) in 32 bits.
  std::array<double, 3> scale{0.01, 0.01, 0.01};
  std::array<double, 3> offset{0, 0, 0};
  /// CRS (anything OGRSpatialReference::SetFromUserInput reads). LAS 1.4 stores it verbatim in
  /// a WKT record; LAS 1.2 as the GeoTIFF keys GDAL derives from it. Empty: no CRS.
  std::string crs_wkt;
  bool crs_in_evlr{false};  ///< LAS 1.4 only: put the WKT record after the points
  /// Zero bytes appended to every record, described by an Extra Bytes VLR as undocumented bytes.
  std::uint16_t extra_bytes{0};
  std::string system_id{"heightgrid"};
  std::string generating_software{"heightgrid"};
};

/// A streaming LAS writer. Records are encoded into a block buffer and written in large
/// writes; close() writes the EVLRs and the final header. Destroying (or assigning over) an open
/// writer closes it, except during stack unwinding, when the partial file is removed instead;
/// so is the file of a writer whose constructor or close() failed.
class las_writer {
 public:
  /// Creates `path` (replacing it). Invalid options throw error_kind::usage; I/O failures
  /// throw error_kind::output.
  las_writer(std::string path, las_write_options options);
  ~las_writer();
  las_writer(las_writer const&) = delete;
  las_writer& operator=(las_writer const&) = delete;
  las_writer(las_writer&&) noexcept;
  las_writer& operator=(las_writer&&) noexcept;

  /// Appends points. A coordinate that does not fit the 32-bit integer range with the chosen
  /// scale and offset, or an attribute the format cannot hold, throws error_kind::output.
  void write(las_point const* points, std::size_t count);
  void write(std::vector<las_point> const& points) { write(points.data(), points.size()); }
  /// Appends a chunk; absent attribute columns are written as class 0, return 1 of 1, no flags.
  void write(point_chunk const& chunk);

  /// Writes the EVLRs, fixes up the header and closes the file. Idempotent.
  void close();

  [[nodiscard]] std::uint64_t point_count() const noexcept;

 private:
  /// close() unless already closed; during stack unwinding the partial file is removed instead.
  void finish_quietly() noexcept;

  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Writes `points` to `path` in one go.
void write_las(std::string const& path, std::vector<las_point> const& points,
               las_write_options const& options = {});

}  // namespace heightgrid::io
