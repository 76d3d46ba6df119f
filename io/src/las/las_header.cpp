// Opening a LAS/LAZ file and reading its header: validation (every malformed field named with its
// byte), the VLRs and EVLRs, the CRS records, and the LASzip VLR of compressed files. The file
// handle (local or remote) is in las_file.cpp; the point sources that read the records are in
// las_parts.cpp and laz/laz_parts.cpp.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/error.hpp"
#include "las/las_byte_readers.hpp"
#include "las/las_internal.hpp"
#include "las/las_layout.hpp"
#include "laz/laz_arith.hpp"
#include "laz/laz_source.hpp"
#include "laz/laz_vlr.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <utility>
#include <vector>

namespace heightgrid::io {
namespace {

namespace layout = las_layout;
using detail::file_bytes;
using detail::las_file;
using detail::memory_bytes;

/// CRS records larger than this are not plausible (a WKT string is a few kB); refusing them
/// keeps a corrupt EVLR length from turning into a multi-gigabyte allocation.
constexpr std::uint64_t max_crs_record_bytes = std::uint64_t{16} << 20;

/// Accepted scale factors (generous: real files use 1e-9 .. 1).
constexpr double min_scale = 1e-12;
constexpr double max_scale = 1e6;

std::string format_double(double v)
{
  std::ostringstream s;
  s << std::setprecision(17) << v;
  return s.str();
}

/// A fixed-size character field: up to the first NUL, trailing blanks removed.
std::string fixed_string(std::uint8_t const* p, std::size_t n)
{
  auto const* end = static_cast<std::uint8_t const*>(std::memchr(p, 0, n));
  std::string s(reinterpret_cast<char const*>(p), end ? static_cast<std::size_t>(end - p) : n);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) { s.pop_back(); }
  return s;
}

/// Bytes quoted for a message: printable ASCII as is, the rest as \xNN.
std::string printable(std::uint8_t const* p, std::size_t n)
{
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\') {
      s += static_cast<char>(p[i]);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", p[i]);
      s += buf;
    }
  }
  return s;
}

/// The whole elements in `data` (a trailing partial element is dropped). A record shorter than
/// one element leaves `out` empty: memcpy must not see the null data() of an empty vector.
template <class T>
void copy_array(std::vector<std::uint8_t> const& data, std::vector<T>& out)
{
  out.resize(data.size() / sizeof(T));
  if (!out.empty()) { std::memcpy(out.data(), data.data(), out.size() * sizeof(T)); }
}

class header_parser {
 public:
  header_parser(las_byte_reader const& bytes, std::string const& path) : bytes_(bytes), path_(path)
  {
  }

  las_header_info parse()
  {
    las_header_info h;
    h.path = path_;
    h.file_size = bytes_.size();
    parse_public_header(h);
    parse_vlrs(h);
    check_point_data(h);
    parse_evlrs(h);
    check_laz(h);
    return h;
  }

 private:
  [[noreturn]] void fail(std::uint64_t at, std::string const& what) const
  {
    throw error(error_kind::input, path_ + ": byte " + std::to_string(at) + ": " + what);
  }

  void parse_public_header(las_header_info& h)
  {
    std::uint64_t const size = h.file_size;
    if (size < 4) {
      fail(0, "the file is " + std::to_string(size) + " bytes long: not a LAS file");
    }
    std::array<std::uint8_t, layout::header_size_1_4> hdr{};
    bytes_.read(0, static_cast<std::size_t>(std::min<std::uint64_t>(size, hdr.size())), hdr.data());
    std::uint8_t const* p = hdr.data();
    if (std::memcmp(p, "LASF", 4) != 0) {
      fail(0, "not a LAS file: the signature is \"" + printable(p, 4) + "\", not \"LASF\"");
    }
    if (size < layout::header_size_1_0) {
      fail(size, "the file ends inside the LAS header (" + std::to_string(size) + " of at least " +
                   std::to_string(layout::header_size_1_0) + " bytes)");
    }

    h.version_major = p[layout::at::version_major];
    h.version_minor = p[layout::at::version_minor];
    if (h.version_major != 1 || h.version_minor > 4) {
      fail(layout::at::version_major, "LAS version " + std::to_string(h.version_major) + "." +
                                        std::to_string(h.version_minor) +
                                        " is not supported (1.0 to 1.4)");
    }
    h.file_source_id = layout::load<std::uint16_t>(p + layout::at::file_source_id);
    h.global_encoding = layout::load<std::uint16_t>(p + layout::at::global_encoding);
    h.system_id = fixed_string(p + layout::at::system_id, layout::string_field_size);
    h.generating_software = fixed_string(p + layout::at::generating_software, layout::string_field_size);
    h.creation_day = layout::load<std::uint16_t>(p + layout::at::creation_day);
    h.creation_year = layout::load<std::uint16_t>(p + layout::at::creation_year);

    h.header_size = layout::load<std::uint16_t>(p + layout::at::header_size);
    std::size_t const min_header = layout::min_header_size(h.version_minor);
    if (h.header_size < min_header) {
      fail(layout::at::header_size,
           "header size " + std::to_string(h.header_size) + " is smaller than the " +
             std::to_string(min_header) + " bytes of a LAS 1." + std::to_string(h.version_minor) +
             " header");
    }
    if (h.header_size > size) {
      fail(layout::at::header_size, "header size " + std::to_string(h.header_size) +
                                      " runs past the end of the file (" + std::to_string(size) +
                                      " bytes)");
    }
    h.offset_to_point_data = layout::load<std::uint32_t>(p + layout::at::offset_to_point_data);
    if (h.offset_to_point_data < h.header_size) {
      fail(layout::at::offset_to_point_data,
           "offset to point data " + std::to_string(h.offset_to_point_data) +
             " is inside the header (" + std::to_string(h.header_size) + " bytes)");
    }
    if (h.offset_to_point_data > size) {
      fail(layout::at::offset_to_point_data,
           "offset to point data " + std::to_string(h.offset_to_point_data) +
             " is past the end of the file (" + std::to_string(size) + " bytes)");
    }
    vlr_count_ = layout::load<std::uint32_t>(p + layout::at::vlr_count);

    std::uint8_t const format_byte = p[layout::at::point_format];
    h.point_format_byte = format_byte;
    h.compressed = (format_byte & layout::compressed_format_bits) != 0;
    int const format = format_byte & ~layout::compressed_format_bits & 0xFF;
    if (format > layout::max_point_format) {
      fail(layout::at::point_format, "point data record format " + std::to_string(format_byte) +
                                       " is not a LAS format (0-10)");
    }
    h.point_format = format;
    h.record_length = layout::load<std::uint16_t>(p + layout::at::record_length);
    std::uint16_t const base = layout::base_record_size[static_cast<std::size_t>(format)];
    if (h.record_length < base) {
      fail(layout::at::record_length,
           "point data record length " + std::to_string(h.record_length) +
             " is smaller than the " + std::to_string(base) + " bytes of point data record format " +
             std::to_string(format));
    }
    h.extra_bytes = static_cast<std::uint16_t>(h.record_length - base);

    h.legacy_point_count = layout::load<std::uint32_t>(p + layout::at::legacy_point_count);
    for (std::size_t r = 0; r < 5; ++r) {
      h.points_by_return[r] =
        layout::load<std::uint32_t>(p + layout::at::legacy_points_by_return + 4 * r);
    }

    static constexpr char const* axis_names[3] = {"x", "y", "z"};
    for (std::size_t a = 0; a < 3; ++a) {
      std::size_t const scale_at = layout::at::scale + 8 * a;
      std::size_t const offset_at = layout::at::offset + 8 * a;
      h.scale[a] = layout::load<double>(p + scale_at);
      h.offset[a] = layout::load<double>(p + offset_at);
      // Real scales are powers of ten from 1e-9 (nanometres) to 1; past these bounds the
      // coordinates are noise (1e-300) or integers step by kilometres, and a negative scale
      // mirrors the data: a corrupted header, not a survey.
      if (!(std::isfinite(h.scale[a]) && h.scale[a] >= min_scale && h.scale[a] <= max_scale)) {
        fail(scale_at, std::string(axis_names[a]) + " scale factor is " + format_double(h.scale[a]) +
                         "; it must be positive, from " + format_double(min_scale) + " to " +
                         format_double(max_scale));
      }
      if (!std::isfinite(h.offset[a])) {
        fail(offset_at, std::string(axis_names[a]) + " offset is " + format_double(h.offset[a]) +
                          "; it must be finite");
      }
      // Max X, Min X, Max Y, Min Y, Max Z, Min Z.
      h.header_max[a] = layout::load<double>(p + layout::at::max_x + 16 * a);
      h.header_min[a] = layout::load<double>(p + layout::at::max_x + 16 * a + 8);
    }

    h.point_count = h.legacy_point_count;
    count_at_ = layout::at::legacy_point_count;
    if (h.version_minor >= 3) {
      h.waveform_data_start = layout::load<std::uint64_t>(p + layout::at::waveform_start);
    }
    if (h.version_minor >= 4) {
      h.evlr_start = layout::load<std::uint64_t>(p + layout::at::evlr_start);
      h.evlr_count = layout::load<std::uint32_t>(p + layout::at::evlr_count);
      std::uint64_t const count64 = layout::load<std::uint64_t>(p + layout::at::point_count);
      // LAS 1.4 makes the 64-bit count authoritative and lets the legacy one be 0; some writers
      // fill only the legacy count, so 0 in the 64-bit field defers to it.
      if (count64 != 0) {
        if (h.legacy_point_count != 0 && h.legacy_point_count != count64) {
          fail(layout::at::legacy_point_count,
               "legacy point count " + std::to_string(h.legacy_point_count) +
                 " disagrees with the 64-bit point count " + std::to_string(count64) + " at byte " +
                 std::to_string(layout::at::point_count));
        }
        h.point_count = count64;
        count_at_ = layout::at::point_count;
      }
      std::array<std::uint64_t, 15> by_return{};
      bool any = false;
      for (std::size_t r = 0; r < by_return.size(); ++r) {
        by_return[r] = layout::load<std::uint64_t>(p + layout::at::points_by_return + 8 * r);
        any = any || by_return[r] != 0;
      }
      if (any) { h.points_by_return = by_return; }
    }
  }

  void parse_vlrs(las_header_info& h)
  {
    std::uint64_t const end = h.offset_to_point_data;
    std::uint64_t pos = h.header_size;
    for (std::uint32_t i = 0; i < vlr_count_; ++i) {
      std::string const which = "VLR " + std::to_string(i + 1) + " of " + std::to_string(vlr_count_);
      if (end - pos < layout::vlr_header_size) {
        // A count larger than the records that fit (PDAL's bad_vlr_count.las): laspy and PDAL read
        // the records that fit and the points; so does this reader, and says so.
        h.notes.push_back(h.path + ": the header counts " + std::to_string(vlr_count_) + " VLRs, but only " +
                          std::to_string(i) + " fit before the point data at byte " + std::to_string(end) +
                          " (VLR " + std::to_string(i + 1) + "'s " + std::to_string(layout::vlr_header_size) +
                          "-byte header would run past it); the points were read after the " +
                          std::to_string(i) + " that fit");
        break;
      }
      std::array<std::uint8_t, layout::vlr_header_size> rec{};
      bytes_.read(pos, rec.size(), rec.data());
      las_vlr_info v;
      v.offset = pos;
      v.user_id = fixed_string(rec.data() + layout::vlr_at::user_id, layout::user_id_size);
      v.record_id = layout::load<std::uint16_t>(rec.data() + layout::vlr_at::record_id);
      v.length = layout::load<std::uint16_t>(rec.data() + layout::vlr_at::length);
      v.description =
        fixed_string(rec.data() + layout::vlr_at::vlr_description, layout::string_field_size);
      std::uint64_t const data_at = pos + layout::vlr_header_size;
      if (v.length > end - data_at) {
        fail(pos, which + " (user \"" + v.user_id + "\", record " + std::to_string(v.record_id) +
                    "): its " + std::to_string(v.length) +
                    " bytes of data run past the start of the point data at byte " +
                    std::to_string(end));
      }
      collect_record(h, v, data_at);
      pos = data_at + v.length;
      h.vlrs.push_back(std::move(v));
    }
  }

  void check_point_data(las_header_info& h)
  {
    // LAZ point data is compressed: its size says nothing about the point count.
    if (h.compressed) { return; }
    std::uint64_t limit = h.file_size;
    std::string limit_name = "the end of the file";
    if (h.version_minor >= 4 && h.evlr_count > 0 && h.evlr_start >= h.offset_to_point_data &&
        h.evlr_start <= h.file_size) {
      limit = h.evlr_start;
      limit_name = "the first EVLR";
    }
    std::uint64_t const available = limit - h.offset_to_point_data;
    if (h.point_count > available / h.record_length) {
      fail(count_at_, "the header says " + std::to_string(h.point_count) + " points of " +
                        std::to_string(h.record_length) + " bytes from byte " +
                        std::to_string(h.offset_to_point_data) + ", but only " +
                        std::to_string(available) + " bytes (" +
                        std::to_string(available / h.record_length) + " points) are there before " +
                        limit_name + " at byte " + std::to_string(limit) +
                        " (truncated file or wrong point count)");
    }
    // More whole records than the header counts: only the counted ones are read. Waveform data
    // stored after the points (LAS 1.3+, internal) is not records, so it is not counted.
    bool const waveform_after = h.version_minor >= 3 && h.waveform_data_start > h.offset_to_point_data;
    if (!waveform_after && h.point_count < available / h.record_length) {
      h.notes.push_back(h.path + ": the header says " + std::to_string(h.point_count) + " points, but " +
                        std::to_string(available / h.record_length) + " whole records of " +
                        std::to_string(h.record_length) + " bytes lie before " + limit_name +
                        "; only the first " + std::to_string(h.point_count) + " are read (wrong point count at byte " +
                        std::to_string(count_at_) + "?)");
    }
  }

  void parse_evlrs(las_header_info& h)
  {
    if (h.version_minor < 4 || h.evlr_count == 0) { return; }
    std::uint64_t const size = h.file_size;
    std::uint64_t const points_end =
      h.offset_to_point_data + (h.compressed ? 0 : h.point_count * h.record_length);
    if (h.evlr_start < points_end) {
      fail(layout::at::evlr_start, "start of the first EVLR " + std::to_string(h.evlr_start) +
                                     " is before the end of the point data at byte " +
                                     std::to_string(points_end));
    }
    if (h.evlr_start > size) {
      fail(layout::at::evlr_start, "start of the first EVLR " + std::to_string(h.evlr_start) +
                                     " is past the end of the file (" + std::to_string(size) +
                                     " bytes)");
    }
    std::uint64_t pos = h.evlr_start;
    for (std::uint32_t i = 0; i < h.evlr_count; ++i) {
      std::string const which =
        "EVLR " + std::to_string(i + 1) + " of " + std::to_string(h.evlr_count);
      if (size - pos < layout::evlr_header_size) {
        fail(pos, which + ": its " + std::to_string(layout::evlr_header_size) +
                    "-byte header runs past the end of the file (" + std::to_string(size) +
                    " bytes)");
      }
      std::array<std::uint8_t, layout::evlr_header_size> rec{};
      bytes_.read(pos, rec.size(), rec.data());
      las_vlr_info v;
      v.offset = pos;
      v.extended = true;
      v.user_id = fixed_string(rec.data() + layout::vlr_at::user_id, layout::user_id_size);
      v.record_id = layout::load<std::uint16_t>(rec.data() + layout::vlr_at::record_id);
      v.length = layout::load<std::uint64_t>(rec.data() + layout::vlr_at::length);
      v.description =
        fixed_string(rec.data() + layout::vlr_at::evlr_description, layout::string_field_size);
      std::uint64_t const data_at = pos + layout::evlr_header_size;
      if (v.length > size - data_at) {
        fail(pos, which + " (user \"" + v.user_id + "\", record " + std::to_string(v.record_id) +
                    "): its " + std::to_string(v.length) +
                    " bytes of data run past the end of the file (" + std::to_string(size) +
                    " bytes)");
      }
      collect_record(h, v, data_at);
      pos = data_at + v.length;
      h.vlrs.push_back(std::move(v));
    }
  }

  /// The LASzip VLR's items must describe this file's records; the chunk count is read from
  /// the chunk table's header when it is where the file says (cheap: two 8-byte reads).
  void check_laz(las_header_info& h)
  {
    if (!h.laz) { return; }
    las_laz_info& z = *h.laz;
    laz::laz_vlr_info vlr;
    try {
      std::vector<std::uint8_t> data(static_cast<std::size_t>(z.vlr_data_length));
      bytes_.read(z.vlr_data_offset, data.size(), data.data());
      vlr = laz::parse_laz_vlr(data.data(), data.size());
      laz::check_laz_items(vlr, static_cast<unsigned>(h.point_format), h.record_length);
    } catch (laz::decode_error const& e) {
      fail(z.vlr_data_offset, e.what());
    }
    if (h.point_count == 0) { return; }
    if (vlr.compressor == laz::compressor_pointwise) {
      z.chunk_count = 1;
      return;
    }
    if (!vlr.variable_chunks()) {
      z.chunk_count = h.point_count / vlr.chunk_size + (h.point_count % vlr.chunk_size != 0 ? 1 : 0);
    }
    std::uint64_t const at = h.offset_to_point_data;
    if (h.file_size < 16 || at > h.file_size - 16) { return; }
    std::int64_t table = 0;
    bytes_.read(at, sizeof table, reinterpret_cast<std::uint8_t*>(&table));
    if (table <= static_cast<std::int64_t>(at + 8) ||
        static_cast<std::uint64_t>(table) > h.file_size - 8) {
      return;
    }
    std::uint8_t head[8];
    bytes_.read(static_cast<std::uint64_t>(table), sizeof head, head);
    if (layout::load<std::uint32_t>(head) == 0) { z.chunk_count = layout::load<std::uint32_t>(head + 4); }
  }

  /// Keeps the payloads the reader needs: CRS records (the first of each kind wins) and the
  /// LASzip VLR. Other records are only listed.
  void collect_record(las_header_info& h, las_vlr_info const& v, std::uint64_t data_at)
  {
    if (v.user_id == layout::laszip_user_id && v.record_id == layout::laszip_record_id) {
      h.compressed = true;
      if (h.laz) { fail(v.offset, "a second LASzip VLR"); }
      std::vector<std::uint8_t> data(static_cast<std::size_t>(std::min<std::uint64_t>(v.length, 1 << 20)));
      bytes_.read(data_at, data.size(), data.data());
      laz::laz_vlr_info vlr;
      try {
        vlr = laz::parse_laz_vlr(data.data(), data.size());
      } catch (laz::decode_error const& e) {
        fail(data_at, e.what());
      }
      las_laz_info z;
      z.compressor = vlr.compressor;
      z.chunk_size = vlr.chunk_size;
      z.chunk_size_zero = vlr.chunk_size_zero;
      z.laszip_version = std::to_string(vlr.version_major) + "." + std::to_string(vlr.version_minor) + "r" +
                         std::to_string(vlr.version_revision);
      z.items = laz::describe_items(vlr);
      z.vlr_data_offset = data_at;
      z.vlr_data_length = data.size();
      h.laz = std::move(z);
      return;
    }
    if (v.user_id != layout::projection_user_id) { return; }
    bool const wanted =
      (v.record_id == layout::wkt_record_id && h.wkt_record.empty()) ||
      (v.record_id == layout::geo_key_directory_record_id && h.geotiff_keys.directory.empty()) ||
      (v.record_id == layout::geo_double_params_record_id && h.geotiff_keys.doubles.empty()) ||
      (v.record_id == layout::geo_ascii_params_record_id && h.geotiff_keys.ascii.empty());
    if (!wanted || v.length == 0) { return; }
    if (v.length > max_crs_record_bytes) {
      fail(v.offset, std::string(v.extended ? "EVLR" : "VLR") + " LASF_Projection " +
                       std::to_string(v.record_id) + " is " + std::to_string(v.length) +
                       " bytes long, more than a CRS record can plausibly be (16 MiB)");
    }
    std::vector<std::uint8_t> data(static_cast<std::size_t>(v.length));
    bytes_.read(data_at, data.size(), data.data());
    switch (v.record_id) {
      case layout::wkt_record_id:
        h.wkt_record = fixed_string(data.data(), data.size());
        h.wkt_record_in_evlr = v.extended;
        break;
      case layout::geo_key_directory_record_id:
        copy_array(data, h.geotiff_keys.directory);
        break;
      case layout::geo_double_params_record_id:
        copy_array(data, h.geotiff_keys.doubles);
        break;
      default:
        // GeoAsciiParams: '|'-separated strings; keep all bytes, NULs included, because key
        // offsets index into them.
        h.geotiff_keys.ascii.assign(reinterpret_cast<char const*>(data.data()), data.size());
        break;
    }
  }

  las_byte_reader const& bytes_;
  std::string const& path_;
  std::uint32_t vlr_count_{0};
  std::uint64_t count_at_{layout::at::legacy_point_count};
};

/// Where to point a LAZ error: the compression bits of the format byte, else the LASzip VLR.
std::uint64_t compression_marker_offset(las_header_info const& h)
{
  if ((h.point_format_byte & layout::compressed_format_bits) != 0) {
    return layout::at::point_format;
  }
  for (auto const& v : h.vlrs) {
    if (v.user_id == layout::laszip_user_id && v.record_id == layout::laszip_record_id) {
      return v.offset;
    }
  }
  return layout::at::point_format;
}

void apply_crs(las_header_info& h)
{
  las_crs crs = interpret_las_crs(h.wkt_record, h.wkt_record_in_evlr, h.geotiff_keys);
  h.crs_wkt = std::move(crs.wkt);
  h.crs_source = std::move(crs.source);
  h.vertical_units = std::move(crs.vertical_units);
  h.crs_note = std::move(crs.note);
}

}  // namespace

std::string las_laz_info::describe() const
{
  std::string chunks;
  if (compressor == laz::compressor_pointwise) {
    chunks = "one stream";
  } else if (variable_chunks()) {
    chunks = chunk_size_zero ? "variable chunks (the VLR's chunk size is 0, as LASlib writes COPC)" : "variable chunks";
  } else {
    chunks = "fixed chunks of " + std::to_string(chunk_size) + " points";
  }
  if (chunk_count > 0) { chunks += ", " + std::to_string(chunk_count) + (chunk_count == 1 ? " chunk" : " chunks"); }
  return "LAZ (LASzip " + laszip_version + ", compressor " + std::to_string(compressor) + ", " + chunks +
         "), items: " + items;
}

std::string las_header_info::format_name() const
{
  return "LAS " + std::to_string(version_major) + "." + std::to_string(version_minor) + " PDRF " +
         std::to_string(point_format) + (compressed ? " (LAZ)" : "");
}

las_header_info parse_las_header(las_byte_reader const& bytes, std::string const& path_for_messages)
{
  return header_parser(bytes, path_for_messages).parse();
}

las_header_info parse_las_header(std::uint8_t const* data, std::size_t size,
                                 std::string const& path_for_messages)
{
  return parse_las_header(memory_bytes(data, size), path_for_messages);
}

las_header_info read_las_header(std::string const& path)
{
  las_file const file(path);
  las_header_info h = parse_las_header(file_bytes(file), path);
  apply_crs(h);
  return h;
}

namespace detail {

opened_las open_las_file(std::string const& path)
{
  las_file file(path);
  las_header_info h = parse_las_header(file_bytes(file), path);
  std::optional<laz::laz_vlr_info> vlr;
  if (h.compressed) {
    if (!h.laz) {
      throw error(error_kind::input,
                  path + ": byte " + std::to_string(compression_marker_offset(h)) +
                    ": the point format byte marks the file as LAZ (compressed), but it has no "
                    "LASzip VLR (user \"laszip encoded\", record 22204) saying how");
    }
    // The header parser validated the VLR; parse it again into the decoder's form.
    std::vector<std::uint8_t> data(static_cast<std::size_t>(h.laz->vlr_data_length));
    file.read_exact(h.laz->vlr_data_offset, data.size(), data.data());
    try {
      vlr = laz::parse_laz_vlr(data.data(), data.size());
    } catch (laz::decode_error const& e) {
      throw error(error_kind::input, path + ": byte " + std::to_string(h.laz->vlr_data_offset) + ": " + e.what());
    }
  }
  apply_crs(h);
  return opened_las{std::move(file), std::move(h), std::move(vlr)};
}

source_info source_info_of(las_header_info const& h)
{
  source_info info;
  info.path = h.path;
  info.format = h.format_name();
  info.crs_wkt = h.crs_wkt;
  info.vertical_units = h.vertical_units;
  info.point_count = h.point_count;
  info.notes = h.notes;
  return info;
}

laz::laz_file_layout laz_layout_of(las_header_info const& h)
{
  laz::laz_file_layout where;
  where.path = h.path;
  where.file_size = h.file_size;
  where.point_data_start = h.offset_to_point_data;
  where.point_data_limit = h.file_size;
  if (h.version_minor >= 4 && h.evlr_count > 0 && h.evlr_start > h.offset_to_point_data) {
    where.point_data_limit = std::min(h.evlr_start, h.file_size);
  }
  where.point_count = h.point_count;
  where.record_length = h.record_length;
  return where;
}

}  // namespace detail

}  // namespace heightgrid::io
