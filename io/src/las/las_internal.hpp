#pragma once
// What the LAS readers share: the sequential point_source (las_reader.cpp) and the part_source
// (las_parts.cpp) open files, decode record attributes and describe themselves the same way.

#include "heightgrid/io/las_reader.hpp"
#include "las/las_layout.hpp"
#include "laz/laz_source.hpp"
#include "laz/laz_vlr.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace heightgrid::io::detail {

/// A read-only file descriptor with positioned reads (no shared file position, no stdio
/// buffering between the page cache and our block buffer), so that several threads may read
/// through one descriptor at once. A remote input (io/remote.hpp: a URL, s3://, /vsi...) is read
/// through GDAL's VSI layer instead: a handle per concurrent reader (kept for reuse), each read a
/// seek and a read, i.e. range requests for /vsicurl/.
class las_file {
 public:
  /// Opens `path`; throws error_kind::input naming it when it cannot be opened or is not a file.
  explicit las_file(std::string path);
  ~las_file();
  las_file(las_file const&) = delete;
  las_file& operator=(las_file const&) = delete;
  las_file(las_file&& other) noexcept;
  las_file& operator=(las_file&&) = delete;

  [[nodiscard]] std::string const& path() const noexcept { return path_; }
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

  /// Copies bytes [offset, offset + count) into `out`; throws error_kind::input naming the file
  /// and the byte where reading failed or the file ended.
  void read_exact(std::uint64_t offset, std::size_t count, std::uint8_t* out) const;

  /// Copies up to `count` bytes from `offset` into `out`, fewer only where the file ends; returns
  /// how many. Throws error_kind::input when reading fails.
  std::size_t read_upto(std::uint64_t offset, std::size_t count, std::uint8_t* out) const;

 private:
  std::size_t read_remote(std::uint64_t offset, std::size_t count, std::uint8_t* out) const;

  std::string path_;
  int fd_{-1};
  std::uint64_t size_{0};
  std::string vsi_path_;  ///< remote inputs: the GDAL path; empty for local files
  struct vsi_handles;
  std::unique_ptr<vsi_handles> vsi_;
};

/// A LAS or LAZ file opened and its header parsed and validated, its CRS interpreted; for LAZ
/// the LASzip VLR in the decoder's form.
struct opened_las {
  las_file file;
  las_header_info header;
  std::optional<laz::laz_vlr_info> laz_vlr;  ///< set exactly for compressed files
};

/// Opens `path` for reading its points. Throws error_kind::input naming the file and the byte of
/// anything malformed in the header (a zero scale, more points than the file holds, a LAZ file
/// without a LASzip VLR, ...).
[[nodiscard]] opened_las open_las_file(std::string const& path);

/// What a LAS/LAZ source says about itself, from its header.
[[nodiscard]] source_info source_info_of(las_header_info const& h);

/// Where a LAZ file's compressed points are, for the decoder.
[[nodiscard]] laz::laz_file_layout laz_layout_of(las_header_info const& h);

/// The attributes of one point record that filtering looks at, as point_chunk holds them.
using record_attributes = las_record_attributes;

/// Decodes the attributes of the record at `p`; Extended selects the layout of formats 6-10.
template <bool Extended>
[[nodiscard]] inline record_attributes load_attributes(std::uint8_t const* p) noexcept
{
  return las_attributes(p, Extended);
}

}  // namespace heightgrid::io::detail
