// `heightgrid synth` end to end: the LAS it writes, what grid makes of it, and its output rules.

#include "cli_run.hpp"
#include "test_paths.hpp"

#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/io/las_reader.hpp"

#include <gdal_priv.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using heightgrid::test::run_cli;

namespace {

/// Band 1 of a raster as doubles (empty when it cannot be read).
std::vector<double> read_band(fs::path const& path, int* cols = nullptr, int* rows = nullptr)
{
  GDALAllRegister();
  GDALDatasetUniquePtr ds(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  if (!ds) { return {}; }
  int const c = ds->GetRasterXSize(), r = ds->GetRasterYSize();
  if (cols) { *cols = c; }
  if (rows) { *rows = r; }
  std::vector<double> v(static_cast<std::size_t>(c) * static_cast<std::size_t>(r));
  if (ds->GetRasterBand(1)->RasterIO(GF_Read, 0, 0, c, r, v.data(), c, r, GDT_Float64, 0, 0) != CE_None) { return {}; }
  return v;
}

void expect_no_temporaries(fs::path const& dir)
{
  for (auto const& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "temporary left: " << e.path();
  }
}

class SynthCli : public ::testing::Test {
 protected:
  void SetUp() override
  {
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = heightgrid::test::scratch_dir(std::string("synth-") + info->name());
  }
  fs::path out(std::string const& name) const { return dir_ / name; }
  fs::path dir_;
};

TEST_F(SynthCli, LidarLasHasAttributesAndGridsLikeTheInMemoryCloud)
{
  auto const las = out("lidar.las");
  // 1 point per square unit: 173 m a side, a few dozen 50 m lots of buildings, trees and ground
  auto const r = run_cli("synth lidar --points 30000 --density 1 --seed 4 -o " + las.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote 30,000 lidar points"), std::string::npos) << r.output;
  auto const h = heightgrid::io::read_las_header(las.string());
  EXPECT_EQ(h.version_minor, 4);
  EXPECT_EQ(h.point_format, 6);
  EXPECT_EQ(h.point_count, 30000U);
  auto src = heightgrid::io::open_las_source(las.string());
  heightgrid::point_chunk c;
  std::set<int> classes;
  std::uint64_t multi = 0, overlap = 0, n = 0;
  while (src->read(c, 1 << 14)) {
    for (std::size_t i = 0; i < c.size(); ++i) {
      classes.insert(c.classification[i]);
      multi += c.number_of_returns[i] > 1;
      overlap += (c.flags[i] & heightgrid::point_flag::overlap) != 0;
      ++n;
    }
  }
  EXPECT_EQ(n, 30000U);
  EXPECT_TRUE(classes.count(2) && classes.count(5) && classes.count(6)) << "ground, canopy and roofs";
  EXPECT_GT(multi, 3000U);
  EXPECT_GT(overlap, 0U);
  expect_no_temporaries(dir_);

  // The same cloud in memory and through the LAS file (mm coordinates, and the default filter
  // drops the same noise points on both sides): the same count raster.
  std::string const opts = " --res 2 --metrics count --device cpu -q";
  ASSERT_EQ(run_cli("grid " + las.string() + " -o " + out("from_las.tif").string() + opts).code, 0);
  auto const m = run_cli("grid --synth lidar --points 30000 --density 1 --seed 4 -o " + out("in_memory.tif").string() + opts);
  ASSERT_EQ(m.code, 0) << m.output;
  int c1 = 0, r1 = 0, c2 = 0, r2 = 0;
  auto const a = read_band(out("from_las.tif"), &c1, &r1);
  auto const b = read_band(out("in_memory.tif"), &c2, &r2);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(c1, c2);
  EXPECT_EQ(r1, r2);
  // Rounding to millimetres moves the few points within half a millimetre of a cell edge across
  // it (~1 in 1000 here): the counts agree cell for cell but for a handful of cells, in total exactly.
  std::size_t differ = 0;
  double total_a = 0.0, total_b = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    differ += a[i] != b[i];
    total_a += std::isnan(a[i]) ? 0.0 : a[i];
    total_b += std::isnan(b[i]) ? 0.0 : b[i];
  }
  EXPECT_LT(static_cast<double>(differ), 0.01 * static_cast<double>(a.size()));
  EXPECT_EQ(total_a, total_b);
  EXPECT_GT(total_a, 29900.0);  // minus the low noise (class 7) the default filter drops
}

TEST_F(SynthCli, SkewedLasGridsExactlyLikeTheInMemoryCloud)
{
  // skewed points sit 1 % inside their cells: millimetre rounding cannot move them
  auto const las = out("skewed.las");
  ASSERT_EQ(run_cli("synth skewed --points 20000 --cell-size 0.5 --las-version 1.2 -o " + las.string()).code, 0);
  auto const h = heightgrid::io::read_las_header(las.string());
  EXPECT_EQ(h.version_minor, 2);
  EXPECT_EQ(h.point_format, 1);
  std::string const opts = " --res 0.5 --metrics count --device cpu -q";
  ASSERT_EQ(run_cli("grid " + las.string() + " -o " + out("a.tif").string() + opts).code, 0);
  auto const m = run_cli("grid --synth skewed --points 20000 -o " + out("b.tif").string() + opts);
  ASSERT_EQ(m.code, 0) << m.output;
  int c1 = 0, c2 = 0;
  auto const a = read_band(out("a.tif"), &c1);
  auto const b = read_band(out("b.tif"), &c2);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(c1, 100);  // 2 points per cell by default: 10,000 cells of 0.5, 100 a side
  EXPECT_EQ(c1, c2);
  EXPECT_EQ(a, b);
}

// LAS 1.2's point format 1 has no overlap flag: the lidar cloud's overlap points become class 12.
TEST_F(SynthCli, LidarAsLas12KeepsOverlapAsClass12)
{
  auto const las = out("lidar12.las");
  auto const r = run_cli("synth lidar --points 20000 --las-version 1.2 -o " + las.string());
  ASSERT_EQ(r.code, 0) << r.output;
  auto source = heightgrid::io::open_las_source(las.string());
  heightgrid::point_chunk chunk;
  std::size_t class12 = 0;
  std::size_t points = 0;
  while (source->read(chunk, 4096)) {
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      EXPECT_EQ(chunk.flags[i] & heightgrid::point_flag::overlap, 0);
      class12 += chunk.classification[i] == 12 ? 1 : 0;
    }
    points += chunk.size();
  }
  EXPECT_EQ(points, 20000U);
  EXPECT_GT(class12, 1000U);  // the strips overlap by 30 %
}

TEST_F(SynthCli, OverwriteRules)
{
  auto const las = out("u.las");
  std::ofstream(las) << "precious";
  auto const r = run_cli("synth uniform --points 100 -o " + las.string());
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("--overwrite"), std::string::npos) << r.output;
  EXPECT_EQ(fs::file_size(las), 8U);
  ASSERT_EQ(run_cli("synth uniform --points 100 --overwrite -o " + las.string()).code, 0);
  EXPECT_EQ(heightgrid::io::read_las_header(las.string()).point_count, 100U);
  expect_no_temporaries(dir_);
}

TEST_F(SynthCli, BadKindAndOptionsAreUsageErrors)
{
  auto const las = out("x.las");
  auto r = run_cli("synth bogus --points 100 -o " + las.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("'bogus'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("uniform, lidar, skewed, clustered"), std::string::npos) << r.output;
  r = run_cli("synth uniform --points 100 --density 5 --extent 0 0 10 10 -o " + las.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("at most two"), std::string::npos) << r.output;
  EXPECT_EQ(run_cli("synth uniform --las-version 1.3 -o " + las.string()).code, 2);
  EXPECT_EQ(run_cli("synth uniform -o " + out("x.laz").string()).code, 2);
  EXPECT_EQ(run_cli("synth skewed --zipf-s -2 -o " + las.string()).code, 2);
  EXPECT_EQ(run_cli("grid --synth nope --res 1 -o " + out("x.tif").string()).code, 2);
  EXPECT_FALSE(fs::exists(las));
  expect_no_temporaries(dir_);
}

TEST_F(SynthCli, DensityAndExtentGiveThePointCount)
{
  auto const las = out("d.las");
  auto const r = run_cli("synth clustered --extent 1000 2000 1100 2050 --density 3 -o " + las.string());
  ASSERT_EQ(r.code, 0) << r.output;
  auto const h = heightgrid::io::read_las_header(las.string());
  EXPECT_EQ(h.point_count, 15000U);
  EXPECT_GE(h.header_min[0], 1000.0);
  EXPECT_LT(h.header_max[0], 1100.0);
  EXPECT_NE(run_cli("synth --help").output.find("Zipf"), std::string::npos);
}

}  // namespace
