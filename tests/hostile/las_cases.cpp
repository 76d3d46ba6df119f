// LAS and LAZ files with lying or broken headers, truncated anywhere, built in code.

#include "hostile_cases.hpp"
#include "las_test_helpers.hpp"
#include "test_paths.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

std::vector<raw_point> some_points(std::size_t n)
{
  std::vector<raw_point> pts;
  for (std::size_t i = 0; i < n; ++i) {
    auto const k = static_cast<std::int32_t>(i);
    pts.push_back(raw_point{k * 37 % 1000, k * 91 % 1000, k * 13 % 500, 1, 1, 2, 0, 0, false, false});
  }
  return pts;
}

/// A valid LAS file of `minor` (1.2: format 1, 1.4: format 6) with 50 points.
std::vector<std::uint8_t> base_las(int minor)
{
  las_spec spec;
  spec.minor = minor;
  spec.format = minor >= 4 ? 6 : 1;
  return build_las(spec, some_points(50));
}

template <typename T>
std::function<void(std::vector<std::uint8_t>&)> set(std::size_t at, T value)
{
  return [at, value](std::vector<std::uint8_t>& b) {
    if (b.size() < at + sizeof(T)) { b.resize(at + sizeof(T)); }
    put(b, at, value);
  };
}

hostile_case las_mutation(std::string name, int minor, std::function<void(std::vector<std::uint8_t>&)> edit,
                          std::vector<std::string> says = {})
{
  hostile_case c;
  c.name = "las1" + std::to_string(minor) + "_" + name;
  c.make = [minor, edit](fs::path const& dir) {
    auto bytes = base_las(minor);
    edit(bytes);
    auto const path = dir / "in.las";
    write_bytes(path, bytes);
    return path.string();
  };
  c.code = 3;
  says.insert(says.begin(), "{in}");
  c.says = says;
  c.args = {"grid", "{in}", "-o", "{out}", "--res", "1"};
  return c;
}

std::string hex(std::uint64_t v)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string double_name(double v)
{
  if (std::isnan(v)) { return "nan"; }
  if (std::isinf(v)) { return v > 0 ? "inf" : "minus_inf"; }
  std::string s = std::to_string(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  s = buf;
  for (auto& ch : s) {
    if (ch == '-') { ch = 'm'; }
    if (ch == '.' || ch == '+') { ch = '_'; }
  }
  return s;
}

}  // namespace

std::vector<hostile_case> las_cases()
{
  std::vector<hostile_case> out;
  for (int minor : {2, 4}) {
    std::size_t const header = minor <= 2 ? 227 : 375;
    std::size_t const record = minor <= 2 ? 28 : 30;
    std::size_t const size = header + 50 * record;
    // The signature and version.
    out.push_back(las_mutation("signature_lasg", minor, [](auto& b) { b[3] = 'G'; }));
    for (std::uint8_t major : {0, 2, 255}) {
      out.push_back(las_mutation("major_" + std::to_string(major), minor, set<std::uint8_t>(24, major), {"version"}));
    }
    for (std::uint8_t m : {5, 9, 255}) {
      out.push_back(las_mutation("minor_" + std::to_string(m), minor, set<std::uint8_t>(25, m), {"version"}));
    }
    // Header size, offset to the points, VLR count.
    for (std::uint16_t v : {0, 1, 100, 226, 65535}) {
      out.push_back(las_mutation("header_size_" + std::to_string(v), minor, set<std::uint16_t>(94, v)));
    }
    for (std::uint32_t v : {0u, 100u, static_cast<std::uint32_t>(size + 1), 0x7fffffffu, 0xffffffffu}) {
      out.push_back(las_mutation("point_offset_" + hex(v), minor, set<std::uint32_t>(96, v)));
    }
    // A VLR count past the records that fit is read as laspy and PDAL read it, with a warning
    // (tests/io/las_bad_input_test.cpp, las_quirks_test.cpp): no longer a hostile case.
    // Point format and record length.
    for (int const v : {11, 63, 127, 128 + (minor >= 4 ? 6 : 1)}) {
      out.push_back(las_mutation("format_" + std::to_string(v), minor, set<std::uint8_t>(104, static_cast<std::uint8_t>(v))));
    }
    for (std::uint16_t v : {0, 1, 19, 65535}) {
      out.push_back(las_mutation("record_length_" + std::to_string(v), minor, set<std::uint16_t>(105, v)));
    }
    // Counts larger than the data.
    for (std::uint32_t v : {51u, 1000u, 0x7fffffffu, 0xffffffffu}) {
      out.push_back(las_mutation("legacy_count_" + hex(v), minor, set<std::uint32_t>(107, v), {"point"}));
    }
    // Scales and offsets.
    for (int axis = 0; axis < 3; ++axis) {
      std::string const names[3] = {"x", "y", "z"};
      for (double v : {0.0, -0.01, 1e-300, 1e-13, 1e7, 1e300, std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::denorm_min()}) {
        out.push_back(las_mutation("scale_" + names[axis] + "_" + double_name(v), minor,
                                   set<double>(131 + 8 * static_cast<std::size_t>(axis), v),
                                   {names[axis] + " scale factor"}));
      }
      for (double v : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
        out.push_back(las_mutation("offset_" + names[axis] + "_" + double_name(v), minor,
                                   set<double>(155 + 8 * static_cast<std::size_t>(axis), v), {names[axis] + " offset"}));
      }
    }
    // Truncated anywhere.
    for (std::size_t keep : {std::size_t{0}, std::size_t{1}, std::size_t{4}, std::size_t{50}, std::size_t{94},
                             header - 1, header, header + 1, header + record - 1, size / 2, size - 1}) {
      out.push_back(las_mutation("truncated_" + std::to_string(keep), minor, [keep](auto& b) { b.resize(keep); }));
    }
    if (minor >= 4) {
      // The 64-bit count and the EVLRs of LAS 1.4.
      for (std::uint64_t v : {std::uint64_t{51}, std::uint64_t{1} << 40, std::uint64_t{1} << 63, ~std::uint64_t{0}}) {
        out.push_back(las_mutation("count64_" + hex(v), minor,
                                   [v](auto& b) {
                                     put(b, 107, std::uint32_t{0});
                                     put(b, 247, v);
                                   },
                                   {"point"}));
      }
      out.push_back(las_mutation("count64_disagrees_with_legacy", minor, set<std::uint64_t>(247, 49), {"disagrees"}));
      for (std::uint64_t v : {std::uint64_t{1}, std::uint64_t{size + 1}, std::uint64_t{1} << 62}) {
        out.push_back(las_mutation("evlr_start_" + hex(v), minor,
                                   [v](auto& b) {
                                     put(b, 235, v);
                                     put(b, 243, std::uint32_t{1});
                                   },
                                   {"EVLR"}));
      }
      out.push_back(las_mutation("evlr_count_huge", minor,
                                 [size](auto& b) {
                                   put(b, 235, std::uint64_t{size});
                                   put(b, 243, std::uint32_t{0xffffffffu});
                                 },
                                 {"EVLR"}));
    }
  }
  // A VLR whose length runs past the point data, and one whose user id is binary garbage.
  for (std::uint16_t len : {std::uint16_t{1}, std::uint16_t{1000}, std::uint16_t{65535}}) {
    out.push_back(las_mutation("vlr_length_" + std::to_string(len), 2, [len](auto& b) {
      std::vector<std::uint8_t> vlr(54, 0);
      std::memcpy(vlr.data() + 2, "\x01\x02garbage\x00\xff\xfe", 12);
      put(vlr, 20, len);
      b.insert(b.begin() + 227, vlr.begin(), vlr.end());
      put(b, 96, std::uint32_t{227 + 54});
      put(b, 100, std::uint32_t{1});
    }, {"VLR 1 of 1"}));
  }
  return out;
}

std::vector<hostile_case> laz_cases()
{
  std::vector<hostile_case> out;
  auto const laz = [](std::string name, std::function<void(std::vector<std::uint8_t>&)> edit, bool real = false,
                      std::string file = "wavepacket_pdrf4.laz") {
    hostile_case c;
    c.name = "laz_" + name;
    c.real_data = real;
    c.make = [edit, real, file](fs::path const& dir) {
      auto bytes = file_bytes((real ? real_data_dir() : data_dir()) / file);
      edit(bytes);
      auto const path = dir / "in.laz";
      write_bytes(path, bytes);
      return path.string();
    };
    c.args = {"grid", "{in}", "-o", "{out}", "--res", "1"};
    c.says = {"{in}"};
    return c;
  };
  // data/wavepacket_pdrf4.laz: LAS 1.3, 9,194 bytes.
  for (std::size_t keep : {0, 100, 235, 300, 1000, 2000, 4000, 6000, 8000, 9000}) {
    out.push_back(laz("truncated_" + std::to_string(keep),
                      [keep](auto& b) { b.resize(std::min(b.size(), static_cast<std::size_t>(keep))); }));
  }
  for (std::uint32_t v : {0xffffffffu, 0x7fffffffu, 100000000u}) {
    out.push_back(laz("legacy_count_" + hex(v), set<std::uint32_t>(107, v)));
  }
  out.push_back(laz("record_length_0", set<std::uint16_t>(105, 0)));
  out.push_back(laz("record_length_65535", set<std::uint16_t>(105, 65535)));
  out.push_back(laz("point_offset_past_end", set<std::uint32_t>(96, 100000)));
  // (A truncated or garbage chunk table is not an error: fixed-size chunks are found without it,
  // and every point is still read. Those cases are in tests/io.)
  // A LAZ 1.4 file from the real data whose 64-bit count is absurd: refused before any allocation.
  for (std::uint64_t v : {std::uint64_t{1} << 60, std::uint64_t{1} << 40, std::uint64_t{1000000000}, ~std::uint64_t{0}}) {
    out.push_back(laz("las14_count64_" + hex(v), set<std::uint64_t>(247, v), true, "lasR/las14_pdrf6.laz"));
  }
  return out;
}

}  // namespace heightgrid::test
