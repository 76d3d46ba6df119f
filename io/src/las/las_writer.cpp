#include "heightgrid/io/las_writer.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/las_crs.hpp"
#include "las/las_layout.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <iomanip>
#include <limits>
#include <sstream>
#include <system_error>
#include <utility>

namespace heightgrid::io {
namespace {

namespace layout = las_layout;

/// Records encoded per fwrite.
constexpr std::size_t block_records = std::size_t{1} << 16;

std::string format_double(double v)
{
  std::ostringstream s;
  s << std::setprecision(17) << v;
  return s.str();
}

/// A VLR or EVLR to be written: its identity and payload.
struct record {
  std::string user_id;
  std::uint16_t record_id;
  std::string description;
  std::vector<std::uint8_t> data;
};

void put_string(std::uint8_t* p, std::size_t field_size, std::string const& s)
{
  std::memcpy(p, s.data(), std::min(field_size, s.size()));
}

std::vector<std::uint8_t> encode_record_header(record const& r, bool extended)
{
  std::vector<std::uint8_t> h(extended ? layout::evlr_header_size : layout::vlr_header_size, 0);
  put_string(h.data() + layout::vlr_at::user_id, layout::user_id_size, r.user_id);
  layout::store(h.data() + layout::vlr_at::record_id, r.record_id);
  if (extended) {
    layout::store(h.data() + layout::vlr_at::length, static_cast<std::uint64_t>(r.data.size()));
    put_string(h.data() + layout::vlr_at::evlr_description, layout::string_field_size, r.description);
  } else {
    layout::store(h.data() + layout::vlr_at::length, static_cast<std::uint16_t>(r.data.size()));
    put_string(h.data() + layout::vlr_at::vlr_description, layout::string_field_size, r.description);
  }
  return h;
}

template <class T>
std::vector<std::uint8_t> bytes_of(std::vector<T> const& v)
{
  std::vector<std::uint8_t> out(v.size() * sizeof(T));
  if (!out.empty()) { std::memcpy(out.data(), v.data(), out.size()); }
  return out;
}

std::vector<std::uint8_t> nul_terminated(std::string const& s)
{
  std::vector<std::uint8_t> out(s.begin(), s.end());
  out.push_back(0);
  return out;
}

/// Extra Bytes VLR describing `n` zero bytes as "undocumented extra bytes" (data type 0, the
/// byte count in the options field, at most 255 per descriptor).
record extra_bytes_record(std::uint16_t n)
{
  record r{layout::spec_user_id, layout::extra_bytes_record_id, "Extra Bytes Record", {}};
  for (std::size_t done = 0, i = 0; done < n; ++i) {
    std::size_t const count = std::min<std::size_t>(255, n - done);
    std::vector<std::uint8_t> d(layout::extra_bytes_descriptor_size, 0);
    d[2] = 0;  // data type: undocumented bytes
    d[3] = static_cast<std::uint8_t>(count);
    put_string(d.data() + 4, 32, "heightgrid_unused_" + std::to_string(i));
    put_string(d.data() + 160, 32, "zero padding");
    r.data.insert(r.data.end(), d.begin(), d.end());
    done += count;
  }
  return r;
}

}  // namespace

struct las_writer::impl {
  impl() = default;
  impl(impl const&) = delete;
  impl& operator=(impl const&) = delete;
  /// Only reached with the file still open when construction failed or the writer was
  /// abandoned: the partial file is closed and removed.
  ~impl()
  {
    if (file != nullptr) {
      std::fclose(file);
      std::remove(path.c_str());
    }
  }

  std::string path;
  las_write_options options;
  std::FILE* file{nullptr};
  int uncaught_at_open{0};
  bool closed{false};
  bool extended{false};
  std::size_t record_length{0};
  std::size_t header_size{0};
  std::uint32_t offset_to_point_data{0};
  std::uint32_t vlr_count{0};
  std::vector<record> evlrs;
  std::vector<std::uint8_t> block;
  std::size_t block_used{0};  // records in `block`
  std::uint64_t count{0};
  std::array<std::uint64_t, 15> by_return{};
  std::array<std::int32_t, 3> min_int{};
  std::array<std::int32_t, 3> max_int{};

  [[noreturn]] void fail_io(char const* what) const
  {
    throw error(error_kind::output,
                path + ": " + what + ": " + std::error_code(errno, std::generic_category()).message());
  }

  void write_bytes(void const* data, std::size_t n)
  {
    if (n > 0 && std::fwrite(data, 1, n, file) != n) { fail_io("write failed"); }
  }

  [[noreturn]] void fail_point(std::string const& what) const
  {
    throw error(error_kind::output, path + ": point " + std::to_string(count + block_used) + ": " + what);
  }

  std::int32_t quantize(double v, std::size_t axis) const
  {
    static constexpr char const* names[3] = {"x", "y", "z"};
    double const q = std::nearbyint((v - options.offset[axis]) / options.scale[axis]);
    if (!(q >= std::numeric_limits<std::int32_t>::min() && q <= std::numeric_limits<std::int32_t>::max())) {
      fail_point(std::string(names[axis]) + " = " + format_double(v) +
                 " does not fit a 32-bit LAS coordinate with scale " +
                 format_double(options.scale[axis]) + " and offset " +
                 format_double(options.offset[axis]));
    }
    return static_cast<std::int32_t>(q);
  }

  void check_attribute(bool fits, char const* name, unsigned value, char const* range) const
  {
    if (!fits) {
      fail_point(std::string(name) + " " + std::to_string(value) + " does not fit point data record format " +
                 std::to_string(options.point_format) + " (" + range + ")");
    }
  }

  void encode(las_point const& p)
  {
    if (extended) {
      check_attribute(p.return_number <= 15, "return number", p.return_number, "0-15");
      check_attribute(p.number_of_returns <= 15, "number of returns", p.number_of_returns, "0-15");
      check_attribute(p.flags <= 0x0F, "flags", p.flags, "point_flag bits");
    } else {
      check_attribute(p.return_number <= 7, "return number", p.return_number, "0-7");
      check_attribute(p.number_of_returns <= 7, "number of returns", p.number_of_returns, "0-7");
      check_attribute(p.classification <= 31, "classification", p.classification, "0-31");
      // Formats 0-5 have no overlap bit (overlap is class 12 there).
      check_attribute(p.flags <= 0x07, "flags", p.flags, "synthetic, key-point and withheld only");
    }
    if (options.version_minor < 4 && count + block_used >= std::numeric_limits<std::uint32_t>::max()) {
      fail_point("LAS 1.2 holds at most 4294967295 points; write LAS 1.4");
    }
    // Every check comes before any state changes, so a rejected point leaves no trace.
    std::array<std::int32_t, 3> const xyz{quantize(p.x, 0), quantize(p.y, 1), quantize(p.z, 2)};
    if (block_used == block_records) { flush(); }
    bool const first = count + block_used == 0;
    for (std::size_t a = 0; a < 3; ++a) {
      min_int[a] = first ? xyz[a] : std::min(min_int[a], xyz[a]);
      max_int[a] = first ? xyz[a] : std::max(max_int[a], xyz[a]);
    }
    std::uint8_t* r = block.data() + block_used * record_length;
    std::fill(r, r + record_length, std::uint8_t{0});
    layout::store(r + layout::point_at::x, xyz[0]);
    layout::store(r + layout::point_at::y, xyz[1]);
    layout::store(r + layout::point_at::z, xyz[2]);
    layout::store(r + layout::point_at::intensity, p.intensity);
    if (extended) {
      r[layout::point_at::returns] = static_cast<std::uint8_t>(p.return_number | (p.number_of_returns << 4));
      r[layout::point_at::extended_flags] = p.flags;
      r[layout::point_at::extended_classification] = p.classification;
    } else {
      r[layout::point_at::returns] = static_cast<std::uint8_t>(p.return_number | (p.number_of_returns << 3));
      r[layout::point_at::legacy_classification] = static_cast<std::uint8_t>(p.classification | (p.flags << 5));
    }
    if (std::size_t const at = layout::gps_time_offset(options.point_format); at != 0) {
      layout::store(r + at, p.gps_time);
    }
    if (std::size_t const at = layout::rgb_offset(options.point_format); at != 0) {
      layout::store(r + at, p.red);
      layout::store(r + at + 2, p.green);
      layout::store(r + at + 4, p.blue);
    }
    if (p.return_number >= 1 && p.return_number <= 15) { ++by_return[p.return_number - 1U]; }
    ++block_used;
  }

  void flush()
  {
    write_bytes(block.data(), block_used * record_length);
    count += block_used;
    block_used = 0;
  }

  /// The public header for the current state: written once as a placeholder, again at close.
  std::vector<std::uint8_t> header_bytes(std::uint64_t evlr_start) const
  {
    std::vector<std::uint8_t> h(header_size, 0);
    std::uint8_t* p = h.data();
    std::memcpy(p, "LASF", 4);
    if (options.version_minor >= 4) {
      layout::store(p + layout::at::global_encoding, layout::global_encoding_wkt);
    }
    p[layout::at::version_major] = 1;
    p[layout::at::version_minor] = static_cast<std::uint8_t>(options.version_minor);
    put_string(p + layout::at::system_id, layout::string_field_size, options.system_id);
    put_string(p + layout::at::generating_software, layout::string_field_size, options.generating_software);
    std::time_t const now = std::time(nullptr);
    std::tm utc{};
    if (gmtime_r(&now, &utc) != nullptr) {
      layout::store(p + layout::at::creation_day, static_cast<std::uint16_t>(utc.tm_yday + 1));
      layout::store(p + layout::at::creation_year, static_cast<std::uint16_t>(utc.tm_year + 1900));
    }
    layout::store(p + layout::at::header_size, static_cast<std::uint16_t>(header_size));
    layout::store(p + layout::at::offset_to_point_data, offset_to_point_data);
    layout::store(p + layout::at::vlr_count, vlr_count);
    p[layout::at::point_format] = static_cast<std::uint8_t>(options.point_format);
    layout::store(p + layout::at::record_length, static_cast<std::uint16_t>(record_length));
    // LAS 1.4 keeps the legacy counts only where a legacy reader could use them: formats 0-5
    // and fewer than 2^32 points. Format 6 files carry 0 there.
    bool const legacy = !extended && count <= std::numeric_limits<std::uint32_t>::max();
    if (legacy) {
      layout::store(p + layout::at::legacy_point_count, static_cast<std::uint32_t>(count));
      for (std::size_t r = 0; r < 5; ++r) {
        layout::store(p + layout::at::legacy_points_by_return + 4 * r,
                      static_cast<std::uint32_t>(by_return[r]));
      }
    }
    for (std::size_t a = 0; a < 3; ++a) {
      layout::store(p + layout::at::scale + 8 * a, options.scale[a]);
      layout::store(p + layout::at::offset + 8 * a, options.offset[a]);
      // The bounds a reader computes from the stored integers (scale > 0 keeps the order).
      double const lo = count == 0 ? 0.0 : static_cast<double>(min_int[a]) * options.scale[a] + options.offset[a];
      double const hi = count == 0 ? 0.0 : static_cast<double>(max_int[a]) * options.scale[a] + options.offset[a];
      layout::store(p + layout::at::max_x + 16 * a, hi);
      layout::store(p + layout::at::max_x + 16 * a + 8, lo);
    }
    if (options.version_minor >= 4) {
      layout::store(p + layout::at::evlr_start, evlr_start);
      layout::store(p + layout::at::evlr_count, static_cast<std::uint32_t>(evlrs.size()));
      layout::store(p + layout::at::point_count, count);
      for (std::size_t r = 0; r < by_return.size(); ++r) {
        layout::store(p + layout::at::points_by_return + 8 * r, by_return[r]);
      }
    }
    return h;
  }
};

las_writer::las_writer(std::string path, las_write_options options) : impl_(std::make_unique<impl>())
{
  impl& w = *impl_;
  w.path = std::move(path);
  w.options = std::move(options);
  las_write_options const& o = w.options;
  auto usage = [&](std::string const& what) { return error(error_kind::usage, w.path + ": " + what); };
  if (o.version_minor != 2 && o.version_minor != 4) {
    throw usage("LAS 1." + std::to_string(o.version_minor) + " cannot be written (1.2 or 1.4)");
  }
  if (o.point_format != 0 && o.point_format != 1 && o.point_format != 3 && o.point_format != 6) {
    throw usage("point data record format " + std::to_string(o.point_format) +
                " cannot be written (0, 1, 3 or 6)");
  }
  if (o.point_format == 6 && o.version_minor != 4) {
    throw usage("point data record format 6 needs LAS 1.4");
  }
  for (std::size_t a = 0; a < 3; ++a) {
    if (!(std::isfinite(o.scale[a]) && o.scale[a] > 0) || !std::isfinite(o.offset[a])) {
      throw usage("scale " + format_double(o.scale[a]) + " / offset " + format_double(o.offset[a]) +
                  ": scales must be finite and positive, offsets finite");
    }
  }
  if (o.crs_in_evlr && o.version_minor != 4) { throw usage("EVLRs need LAS 1.4"); }
  std::size_t const base = layout::base_record_size[static_cast<std::size_t>(o.point_format)];
  if (base + o.extra_bytes > std::numeric_limits<std::uint16_t>::max()) {
    throw usage(std::to_string(o.extra_bytes) + " extra bytes make records longer than 65535 bytes");
  }
  w.extended = layout::is_extended_format(o.point_format);
  w.record_length = base + o.extra_bytes;
  w.header_size = o.version_minor >= 4 ? layout::header_size_1_4 : layout::header_size_1_0;

  std::vector<record> vlrs;
  if (!o.crs_wkt.empty()) {
    if (o.version_minor >= 4) {
      record wkt{layout::projection_user_id, layout::wkt_record_id, "OGC WKT",
                 nul_terminated(las_wkt_from_crs(o.crs_wkt))};
      if (o.crs_in_evlr) {
        w.evlrs.push_back(std::move(wkt));
      } else {
        vlrs.push_back(std::move(wkt));
      }
    } else {
      // LAS 1.2 knows only GeoTIFF keys.
      las_geotiff_keys const keys = geotiff_keys_from_crs(o.crs_wkt);
      vlrs.push_back({layout::projection_user_id, layout::geo_key_directory_record_id,
                      "GeoTIFF GeoKeyDirectoryTag", bytes_of(keys.directory)});
      if (!keys.doubles.empty()) {
        vlrs.push_back({layout::projection_user_id, layout::geo_double_params_record_id,
                        "GeoTIFF GeoDoubleParamsTag", bytes_of(keys.doubles)});
      }
      if (!keys.ascii.empty()) {
        vlrs.push_back({layout::projection_user_id, layout::geo_ascii_params_record_id,
                        "GeoTIFF GeoAsciiParamsTag",
                        std::vector<std::uint8_t>(keys.ascii.begin(), keys.ascii.end())});
      }
    }
  }
  if (o.extra_bytes > 0) { vlrs.push_back(extra_bytes_record(o.extra_bytes)); }

  std::uint64_t offset = w.header_size;
  for (auto const& v : vlrs) {
    if (v.data.size() > std::numeric_limits<std::uint16_t>::max()) {
      throw usage("VLR " + v.user_id + " " + std::to_string(v.record_id) + " is " +
                  std::to_string(v.data.size()) + " bytes, more than a VLR holds (65535)" +
                  (v.record_id == layout::wkt_record_id ? "; use crs_in_evlr" : ""));
    }
    offset += layout::vlr_header_size + v.data.size();
  }
  w.offset_to_point_data = static_cast<std::uint32_t>(offset);
  w.vlr_count = static_cast<std::uint32_t>(vlrs.size());
  w.block.resize(block_records * w.record_length);

  w.file = std::fopen(w.path.c_str(), "wb");
  if (w.file == nullptr) { w.fail_io("cannot create"); }
  w.uncaught_at_open = std::uncaught_exceptions();
  auto const header = w.header_bytes(0);
  w.write_bytes(header.data(), header.size());
  for (auto const& v : vlrs) {
    auto const h = encode_record_header(v, false);
    w.write_bytes(h.data(), h.size());
    w.write_bytes(v.data.data(), v.data.size());
  }
}

las_writer::~las_writer() { finish_quietly(); }

las_writer::las_writer(las_writer&&) noexcept = default;

las_writer& las_writer::operator=(las_writer&& other) noexcept
{
  if (this != &other) {
    finish_quietly();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void las_writer::finish_quietly() noexcept
{
  if (!impl_ || impl_->closed) { return; }
  // Unwinding: the file is incomplete, so ~impl removes it rather than giving it a valid header.
  if (std::uncaught_exceptions() > impl_->uncaught_at_open) { return; }
  try {
    close();
  } catch (...) {
    // Destructors must not throw; callers who need the error call close() themselves.
  }
}

void las_writer::write(las_point const* points, std::size_t count)
{
  HG_EXPECTS(impl_ && !impl_->closed, error_kind::internal, "las_writer::write after close");
  for (std::size_t i = 0; i < count; ++i) { impl_->encode(points[i]); }
}

void las_writer::write(point_chunk const& chunk)
{
  HG_EXPECTS(impl_ && !impl_->closed, error_kind::internal, "las_writer::write after close");
  std::size_t const n = chunk.size();
  bool const has_class = chunk.classification.size() == n;
  bool const has_return = chunk.return_number.size() == n;
  bool const has_returns = chunk.number_of_returns.size() == n;
  bool const has_flags = chunk.flags.size() == n;
  las_point p;
  for (std::size_t i = 0; i < n; ++i) {
    p.x = chunk.x[i];
    p.y = chunk.y[i];
    p.z = chunk.z[i];
    p.classification = has_class ? chunk.classification[i] : std::uint8_t{0};
    p.return_number = has_return ? chunk.return_number[i] : std::uint8_t{1};
    p.number_of_returns = has_returns ? chunk.number_of_returns[i] : std::uint8_t{1};
    p.flags = has_flags ? chunk.flags[i] : std::uint8_t{0};
    impl_->encode(p);
  }
}

void las_writer::close()
{
  if (!impl_ || impl_->closed) { return; }
  impl& w = *impl_;
  // Whatever happens below, the writer is done: the destructor must not try again.
  w.closed = true;
  try {
    w.flush();
    std::uint64_t evlr_start = 0;
    if (!w.evlrs.empty()) {
      evlr_start = w.offset_to_point_data + w.count * w.record_length;
      for (auto const& v : w.evlrs) {
        auto const h = encode_record_header(v, true);
        w.write_bytes(h.data(), h.size());
        w.write_bytes(v.data.data(), v.data.size());
      }
    }
    auto const header = w.header_bytes(evlr_start);
    if (std::fseek(w.file, 0, SEEK_SET) != 0) { w.fail_io("seek failed"); }
    w.write_bytes(header.data(), header.size());
  } catch (...) {
    std::fclose(std::exchange(w.file, nullptr));
    std::remove(w.path.c_str());
    throw;
  }
  if (std::fclose(std::exchange(w.file, nullptr)) != 0) {
    int const err = errno;
    std::remove(w.path.c_str());
    errno = err;
    w.fail_io("close failed");
  }
}

std::uint64_t las_writer::point_count() const noexcept
{
  return impl_ ? impl_->count + impl_->block_used : 0;
}

void write_las(std::string const& path, std::vector<las_point> const& points, las_write_options const& options)
{
  las_writer writer(path, options);
  writer.write(points);
  writer.close();
}

}  // namespace heightgrid::io
