// GeoTIFF and vector inputs that GDAL cannot read, and inputs that are not regular files.

#include "hostile_cases.hpp"
#include "las_test_helpers.hpp"

#include <gdal_priv.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <fstream>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

/// A valid 40 x 30 Float32 GeoTIFF DEM, as bytes.
std::vector<std::uint8_t> dem_bytes(fs::path const& dir)
{
  GDALAllRegister();
  auto const path = dir / "dem_source.tif";
  {
    GDALDatasetUniquePtr ds(GetGDALDriverManager()->GetDriverByName("GTiff")->Create(path.c_str(), 40, 30, 1, GDT_Float32,
                                                                                     nullptr));
    double gt[6] = {1000.0, 2.0, 0.0, 5000.0, 0.0, -2.0};
    ds->SetGeoTransform(gt);
    std::vector<float> v(40 * 30);
    for (std::size_t i = 0; i < v.size(); ++i) { v[i] = static_cast<float>(i % 97); }
    if (ds->GetRasterBand(1)->RasterIO(GF_Write, 0, 0, 40, 30, v.data(), 40, 30, GDT_Float32, 0, 0) != CE_None) {
      ADD_FAILURE() << "cannot write " << path;
    }
  }
  auto bytes = file_bytes(path);
  fs::remove(path);
  return bytes;
}

hostile_case tiff_case(std::string name, std::function<void(std::vector<std::uint8_t>&)> edit,
                       std::vector<std::string> extra = {})
{
  hostile_case c;
  c.name = "tiff_" + name;
  c.make = [edit](fs::path const& dir) {
    auto bytes = dem_bytes(dir);
    edit(bytes);
    auto const path = dir / "in.tif";
    write_bytes(path, bytes);
    return path.string();
  };
  c.args = {"grid", "{in}", "-o", "{out}", "--res", "5"};
  c.args.insert(c.args.end(), extra.begin(), extra.end());
  c.says = {"{in}"};
  return c;
}

hostile_case file_case(std::string name, std::string file, std::string content, std::vector<std::string> says = {})
{
  hostile_case c;
  c.name = name;
  c.make = [file, content](fs::path const& dir) {
    auto const path = dir / file;
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  };
  c.args = {"grid", "{in}", "-o", "{out}", "--res", "1"};
  says.insert(says.begin(), "{in}");
  c.says = says;
  return c;
}

/// Inputs that are not regular files: refused at once (never opened: a FIFO would block).
hostile_case special_case(std::string name, std::function<std::string(fs::path const&)> make,
                          std::vector<std::string> extra)
{
  hostile_case c;
  c.name = name;
  c.make = std::move(make);
  c.args = {"grid", "{in}", "-o", "{out}", "--res", "1"};
  c.args.insert(c.args.end(), extra.begin(), extra.end());
  c.says = {"{in}", "not a regular file"};
  return c;
}

}  // namespace

std::vector<hostile_case> gdal_cases()
{
  std::vector<hostile_case> out;
  for (std::size_t keep : {0, 1, 4, 8, 16, 100, 1000, 3000}) {
    out.push_back(tiff_case("truncated_" + std::to_string(keep), [keep](auto& b) { b.resize(std::min(b.size(), keep)); }));
  }
  out.push_back(tiff_case("bad_magic", [](auto& b) { b[2] = 0x2b; b[3] = 0x01; }));
  out.push_back(tiff_case("ifd_offset_past_end", [](auto& b) { put(b, 4, std::uint32_t{0x7fffffff}); }));
  out.push_back(tiff_case("ifd_offset_zero", [](auto& b) { put(b, 4, std::uint32_t{0}); }));
  out.push_back(tiff_case("band_99", [](auto&) {}, {"--band", "99"}));
  out.push_back(tiff_case("band_0", [](auto&) {}, {"--band", "0"}));
  // Unknown formats and broken vector files.
  out.push_back(file_case("unknown_binary", "in.bin", std::string("\x01\x02\x03\x04garbage", 11), {"unknown format"}));
  out.push_back(file_case("unknown_text_ext", "in.dat", "hello world\n", {"unknown format"}));
  out.push_back(file_case("geojson_truncated", "in.geojson", "{\"type\":\"FeatureCollection\",\"features\":[{"));
  out.push_back(file_case("geojson_empty_collection", "in.geojson", "{\"type\":\"FeatureCollection\",\"features\":[]}"));
  out.push_back(file_case("geojson_lines_only", "in.geojson",
                          "{\"type\":\"FeatureCollection\",\"features\":[{\"type\":\"Feature\",\"properties\":{},"
                          "\"geometry\":{\"type\":\"LineString\",\"coordinates\":[[0,0,1],[1,1,2]]}}]}"));
  out.push_back(file_case("gpkg_garbage", "in.gpkg", "SQLite format 3\0garbage"));
  out.push_back(file_case("las_extension_on_text", "in.las", "1 2 3\n"));
  out.push_back(file_case("laz_extension_on_zeros", "in.laz", std::string(4096, '\0')));
  // Not regular files, with every reader.
  for (std::string const format : {"auto", "las", "text", "raster", "vector"}) {
    std::vector<std::string> const extra =
      format == "auto" ? std::vector<std::string>{} : std::vector<std::string>{"--input-format", format};
    out.push_back(special_case("fifo_" + format, [](fs::path const& dir) {
      auto const p = dir / "in.las";
      ::mkfifo(p.c_str(), 0600);
      return p.string();
    }, extra));
    out.push_back(special_case("socket_" + format, [](fs::path const& dir) {
      auto const p = dir / "in.xyz";
      int const fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", p.c_str());
      (void)::bind(fd, reinterpret_cast<sockaddr const*>(&addr), sizeof addr);
      ::close(fd);
      return p.string();
    }, extra));
    hostile_case dev = special_case("char_device_" + format, [](fs::path const&) { return std::string("/dev/zero"); }, extra);
    out.push_back(dev);
  }
  return out;
}

}  // namespace heightgrid::test
