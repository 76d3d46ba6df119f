// --dimension: grid a LAS attribute instead of Z (issue 23), as PDAL's writers.gdal `dimension`,
// on every backend; extra bytes by name; a clear error for a dimension an input lacks.

#include "cli_run.hpp"
#include "test_paths.hpp"

#include "heightgrid/io/las_reader.hpp"
#include "heightgrid/io/las_writer.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <gdal_priv.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

using heightgrid::test::run_cli;
using heightgrid::test::file_bytes;

/// Band `b` (1-based) of a raster as doubles, row-major.
std::vector<double> band(fs::path const& tif, int b)
{
  GDALDatasetUniquePtr ds(GDALDataset::Open(tif.c_str(), GDAL_OF_RASTER));
  if (!ds) {
    ADD_FAILURE() << "cannot open " << tif;
    return {};
  }
  int const w = ds->GetRasterXSize(), h = ds->GetRasterYSize();
  std::vector<double> v(static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
  if (ds->GetRasterBand(b)->RasterIO(GF_Read, 0, 0, w, h, v.data(), w, h, GDT_Float64, 0, 0) != CE_None) {
    ADD_FAILURE() << "RasterIO on " << tif;
  }
  return v;
}

class Dimension : public ::testing::Test {
 protected:
  void SetUp() override
  {
    GDALAllRegister();
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = heightgrid::test::scratch_dir(std::string("dimension-") + info->name());
    // 2 x 2 cells of 1 m over (0..2, 0..2); four points a cell, attributes a function of the index.
    for (int i = 0; i < 16; ++i) {
      heightgrid::io::las_point p;
      int const cell = i / 4;
      p.x = 0.25 + (cell % 2) + 0.5 * (i % 2);
      p.y = 1.75 - (cell / 2) - 0.5 * ((i / 2) % 2);
      p.z = 100.0 + i;
      p.intensity = static_cast<std::uint16_t>(1000 + 37 * i);
      p.return_number = static_cast<std::uint8_t>(1 + i % 3);
      p.number_of_returns = 3;
      p.classification = static_cast<std::uint8_t>(2 + i % 4);
      p.gps_time = 1.0e9 + 100.0 * i;  // beyond Float32's spacing of 64 there
      points_.push_back(p);
    }
  }

  /// Writes the points as LAS 1.4 format 6 with 4 extra bytes described as a float "Amplitude" with
  /// scale 0.5 (patched into the writer's undocumented descriptor), value 3 * i.
  fs::path write_las() const
  {
    auto const path = dir_ / "pts.las";
    heightgrid::io::las_write_options o;
    o.version_minor = 4;
    o.point_format = 6;
    o.extra_bytes = 4;
    heightgrid::io::write_las(path.string(), points_, o);
    auto const h = heightgrid::io::read_las_header(path.string());
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    for (auto const& v : h.vlrs) {
      if (v.user_id != "LASF_Spec" || v.record_id != 4) { continue; }
      auto const d = static_cast<std::streamoff>(v.offset + 54);
      char const type[2] = {9, 0x08};  // float, scale given
      f.seekp(d + 2);
      f.write(type, 2);
      char name[32]{};
      std::strcpy(name, "Amplitude");
      f.seekp(d + 4);
      f.write(name, 32);
      double const scale = 0.5;
      f.seekp(d + 112);
      f.write(reinterpret_cast<char const*>(&scale), sizeof scale);
    }
    for (std::size_t i = 0; i < points_.size(); ++i) {
      float const value = 3.0F * static_cast<float>(i);
      f.seekp(static_cast<std::streamoff>(h.offset_to_point_data + i * h.record_length + (h.record_length - 4)));
      f.write(reinterpret_cast<char const*>(&value), sizeof value);
    }
    return path;
  }

  /// Per cell (row-major, 2 x 2) the min and max of `value(i)` over the points, as the bands hold
  /// them: reduced in double, rounded once to Float32 (whatever -ot; GpsTime loses its fraction).
  template <typename F>
  std::pair<std::vector<double>, std::vector<double>> expected(F value) const
  {
    std::vector<double> lo(4, INFINITY), hi(4, -INFINITY);
    for (std::size_t i = 0; i < points_.size(); ++i) {
      auto const c = i / 4;
      lo[c] = std::min(lo[c], value(i));
      hi[c] = std::max(hi[c], value(i));
    }
    for (std::size_t c = 0; c < 4; ++c) {
      lo[c] = static_cast<float>(lo[c]);
      hi[c] = static_cast<float>(hi[c]);
    }
    return {lo, hi};
  }

  fs::path dir_;
  std::vector<heightgrid::io::las_point> points_;
};

TEST_F(Dimension, LasAttributesAndExtraBytesOnEveryBackend)
{
  auto const las = write_las();
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> const cases{
    {"Intensity", expected([&](std::size_t i) { return double(points_[i].intensity); })},
    {"ReturnNumber", expected([&](std::size_t i) { return double(points_[i].return_number); })},
    {"classification", expected([&](std::size_t i) { return double(points_[i].classification); })},
    {"GpsTime", expected([&](std::size_t i) { return points_[i].gps_time; })},
    {"Amplitude", expected([&](std::size_t i) { return 1.5 * double(i); })},
    {"Z", expected([&](std::size_t i) { return points_[i].z; })},
  };
  std::vector<std::string> devices{"--device cpu"};
  if (heightgrid::gpu_available()) {
    devices.emplace_back("--device gpu --mode atomic");
    devices.emplace_back("--device gpu --mode thread");
  }
  for (auto const& [dim, want] : cases) {
    std::string first;
    for (auto const& device : devices) {
      auto const tif = dir_ / (dim + std::to_string(&device - devices.data()) + ".tif");
      auto const r = run_cli("grid " + las.string() + " -o " + tif.string() + " -tr 1 1 --metrics min,max,count -ot Float64 " +
                             "--keep-all --dimension " + dim + " " + device);
      ASSERT_EQ(r.code, 0) << dim << " " << device << "\n" << r.output;
      EXPECT_EQ(band(tif, 1), want.first) << dim << " " << device;
      EXPECT_EQ(band(tif, 2), want.second) << dim << " " << device;
      EXPECT_EQ(band(tif, 3), (std::vector<double>{4, 4, 4, 4})) << dim << " " << device;
      // Every backend writes the same bytes.
      if (first.empty()) {
        first = file_bytes(tif);
      } else {
        EXPECT_TRUE(first == file_bytes(tif)) << dim << ": " << device << " differs from --device cpu";
      }
    }
  }
}

TEST_F(Dimension, LazGivesWhatItsLasTwinGives)
{
  auto const data = heightgrid::test::data_dir();
  for (auto const* dim : {"Intensity", "GpsTime"}) {
    std::string bytes[2];
    int k = 0;
    for (auto const* ext : {".las", ".laz"}) {
      auto const tif = dir_ / (std::string(dim) + ext + ".tif");
      auto const r = run_cli("grid " + (data / (std::string("wavepacket_pdrf4") + ext)).string() + " -o " + tif.string() +
                             " --res 5 --metrics min,max -ot Float64 --device cpu --dimension " + dim);
      ASSERT_EQ(r.code, 0) << r.output;
      bytes[k++] = file_bytes(tif);
    }
    EXPECT_TRUE(bytes[0] == bytes[1]) << dim;
  }
}

TEST_F(Dimension, ADimensionTheInputLacksIsAClearError)
{
  auto const las = write_las();
  auto const o = dir_ / "o.tif";
  auto const r = run_cli("grid " + las.string() + " -o " + o.string() + " --res 1 --dimension Infrared");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("pts.las: no dimension 'Infrared'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Amplitude"), std::string::npos) << r.output;  // the list names what there is
  EXPECT_FALSE(fs::exists(o));
  auto const xyz = run_cli("grid " + (heightgrid::test::data_dir() / "sample.xyz").string() + " -o " + o.string() +
                           " --res 1 --dimension Intensity");
  EXPECT_EQ(xyz.code, 3) << xyz.output;
  EXPECT_NE(xyz.output.find("sample.xyz: XYZ/CSV text has no dimension 'Intensity'"), std::string::npos) << xyz.output;
  EXPECT_FALSE(fs::exists(o));
}

}  // namespace
