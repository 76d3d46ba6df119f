#include "las/las_dimension.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/quote.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

namespace heightgrid::io::detail {
namespace {

namespace layout = las_layout;

bool same_name(std::string const& a, std::string const& b)
{
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

/// The standard dimensions of a point format, by PDAL's names (LAS 1.4 R15, "Point Data Records").
std::vector<las_dimension> standard_dimensions(las_header_info const& h)
{
  namespace at = layout::point_at;
  int const format = h.point_format;
  bool const extended = layout::is_extended_format(format);
  std::vector<las_dimension> d{
    {"X", at::x, las_value_type::i32, h.scale[0], h.offset[0], false},
    {"Y", at::y, las_value_type::i32, h.scale[1], h.offset[1], false},
    {"Z", at::z, las_value_type::i32, h.scale[2], h.offset[2], true},
    {"Intensity", at::intensity, las_value_type::u16, 1.0, 0.0, false},
    {"ReturnNumber", at::returns, las_value_type::return_number, 1.0, 0.0, false},
    {"NumberOfReturns", at::returns, las_value_type::number_of_returns, 1.0, 0.0, false},
    {"Classification", extended ? at::extended_classification : at::legacy_classification,
     las_value_type::classification, 1.0, 0.0, false},
    // Formats 6-10 store the angle in steps of 0.006 degree; PDAL reports degrees under this name.
    extended ? las_dimension{"ScanAngleRank", 18, las_value_type::i16, 0.006, 0.0, false}
             : las_dimension{"ScanAngleRank", 16, las_value_type::i8, 1.0, 0.0, false},
    {"UserData", 17, las_value_type::u8, 1.0, 0.0, false},
    {"PointSourceId", extended ? std::size_t{20} : std::size_t{18}, las_value_type::u16, 1.0, 0.0, false},
  };
  if (auto const gps = layout::gps_time_offset(format); gps != 0) {
    d.push_back({"GpsTime", gps, las_value_type::f64, 1.0, 0.0, false});
  }
  if (auto const rgb = layout::rgb_offset(format); rgb != 0) {
    d.push_back({"Red", rgb, las_value_type::u16, 1.0, 0.0, false});
    d.push_back({"Green", rgb + 2, las_value_type::u16, 1.0, 0.0, false});
    d.push_back({"Blue", rgb + 4, las_value_type::u16, 1.0, 0.0, false});
    if (format == 8 || format == 10) { d.push_back({"Infrared", rgb + 6, las_value_type::u16, 1.0, 0.0, false}); }
  }
  return d;
}

/// The extra bytes the Extra Bytes VLR describes, in record order after the standard fields. An
/// unreadable or inconsistent VLR gives none (the file's points are still readable).
std::vector<las_dimension> extra_byte_dimensions(las_header_info const& h, las_file const& file)
{
  std::vector<las_dimension> out;
  for (auto const& v : h.vlrs) {
    if (v.user_id != layout::spec_user_id || v.record_id != layout::extra_bytes_record_id) { continue; }
    std::size_t const n = static_cast<std::size_t>(v.length / layout::extra_bytes_descriptor_size);
    if (n == 0 || n > 1024) { return out; }
    std::vector<std::uint8_t> bytes(n * layout::extra_bytes_descriptor_size);
    file.read_exact(v.offset + (v.extended ? layout::evlr_header_size : layout::vlr_header_size), bytes.size(),
                    bytes.data());
    std::size_t at = layout::base_record_size[static_cast<std::size_t>(h.point_format)];
    static constexpr std::array<las_value_type, 10> types{las_value_type::u8,  las_value_type::i8,  las_value_type::u16,
                                                          las_value_type::i16, las_value_type::u32, las_value_type::i32,
                                                          las_value_type::u64, las_value_type::i64, las_value_type::f32,
                                                          las_value_type::f64};
    static constexpr std::array<std::size_t, 10> sizes{1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
    for (std::size_t i = 0; i < n; ++i) {
      std::uint8_t const* d = bytes.data() + i * layout::extra_bytes_descriptor_size;
      unsigned const type = d[2];
      unsigned const options = d[3];
      char name[33]{};
      std::memcpy(name, d + 4, 32);
      std::size_t size = 0;
      if (type == 0) {
        size = options;  // undocumented bytes: options holds their count
      } else if (type <= 10) {
        size = sizes[type - 1];
      } else if (type <= 30) {
        size = sizes[(type - 1) % 10] * (type <= 20 ? 2 : 3);  // deprecated arrays of 2 or 3
      } else {
        return out;
      }
      if (at + size > h.record_length) { return out; }
      if (type >= 1 && type <= 10) {
        las_dimension dim;
        dim.name = name;
        dim.at = at;
        dim.type = types[type - 1];
        dim.scale = (options & 0x08) != 0 ? layout::load<double>(d + 112) : 1.0;
        dim.offset = (options & 0x10) != 0 ? layout::load<double>(d + 136) : 0.0;
        dim.is_z = false;
        if (!dim.name.empty()) { out.push_back(std::move(dim)); }
      }
      at += size;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> las_dimension_names(las_header_info const& h, las_file const& file)
{
  std::vector<std::string> names;
  for (auto const& d : standard_dimensions(h)) { names.push_back(d.name); }
  for (auto const& d : extra_byte_dimensions(h, file)) { names.push_back(printable(d.name)); }
  return names;
}

las_dimension find_las_dimension(std::string const& name, las_header_info const& h, las_file const& file)
{
  auto standard = standard_dimensions(h);
  if (name.empty()) { return standard[2]; }
  // Other spellings users bring from LAS tools.
  std::string wanted = name;
  if (same_name(name, "ScanAngle")) { wanted = "ScanAngleRank"; }
  if (same_name(name, "NIR")) { wanted = "Infrared"; }
  if (same_name(name, "GPSTime") || same_name(name, "gps_time")) { wanted = "GpsTime"; }
  for (auto const& d : standard) {
    if (same_name(d.name, wanted)) { return d; }
  }
  auto extra = extra_byte_dimensions(h, file);
  for (auto const& d : extra) {
    if (d.name == name) { return d; }
  }
  for (auto const& d : extra) {
    if (same_name(d.name, name)) { return d; }
  }
  std::string list;
  for (auto const& n : las_dimension_names(h, file)) { list += (list.empty() ? "" : ", ") + n; }
  throw error(error_kind::input, h.path + ": no dimension '" + printable(name) + "' (point format " +
                                   std::to_string(h.point_format) + " here has " + list + ")");
}

}  // namespace heightgrid::io::detail
