#pragma once
// The Cli fixture of the end-to-end tests of `heightgrid grid` (cli_test.cpp, las_cli_test.cpp,
// cli_errors_test.cpp) and what they share: the sample data, and reading a written raster back
// with GDAL. The fixture is not in an anonymous namespace on purpose: GoogleTest requires every
// test of the suite "Cli" to use one fixture class, and an anonymous one would be a different
// class in each file.

#include "cli_run.hpp"
#include "test_paths.hpp"

#include <gdal_priv.h>
#include <ogr_spatialref.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace heightgrid::test {

/// Runs `heightgrid args` through the shell (run_cli with no environment).
inline cli_result run(std::string const& args) { return run_cli(args); }

struct raster {
  int cols{0}, rows{0}, bands{0};
  std::array<double, 6> gt{};
  std::string wkt;
  std::vector<std::vector<double>> values;  // per band, row-major
  std::vector<std::string> descriptions;
  std::vector<double> nodata;
  std::vector<GDALDataType> types;
};

inline raster read_raster(std::filesystem::path const& path)
{
  GDALAllRegister();
  raster r;
  GDALDatasetUniquePtr ds(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  if (!ds) { return r; }
  r.cols = ds->GetRasterXSize();
  r.rows = ds->GetRasterYSize();
  r.bands = ds->GetRasterCount();
  ds->GetGeoTransform(r.gt.data());
  if (auto const* srs = ds->GetSpatialRef()) {
    char* w = nullptr;
    srs->exportToWkt(&w);
    r.wkt = w;
    CPLFree(w);
  }
  for (int b = 1; b <= r.bands; ++b) {
    auto* band = ds->GetRasterBand(b);
    std::vector<double> v(static_cast<std::size_t>(r.cols) * static_cast<std::size_t>(r.rows));
    if (band->RasterIO(GF_Read, 0, 0, r.cols, r.rows, v.data(), r.cols, r.rows, GDT_Float64, 0, 0) != CE_None) {
      ADD_FAILURE() << "RasterIO failed on " << path;
    }
    r.values.push_back(v);
    r.descriptions.emplace_back(band->GetDescription());
    int has = 0;
    r.nodata.push_back(band->GetNoDataValue(&has));
    r.types.push_back(band->GetRasterDataType());
  }
  return r;
}

/// A file of the project's data/ directory.
inline std::filesystem::path data(std::string const& name) { return data_dir() / name; }

inline bool is_nan(double v) { return std::isnan(v); }

/// The raster of data/sample.xyz at --res 1 with --metrics range,min,max,count.
inline void expect_sample_bands(raster const& r)
{
  // data/README.md: 3 x 2 cells, origin (500000, 4100002); bands range,min,max,count
  ASSERT_EQ(r.cols, 3);
  ASSERT_EQ(r.rows, 2);
  ASSERT_EQ(r.bands, 4);
  EXPECT_EQ(r.gt[0], 500000.0);
  EXPECT_EQ(r.gt[3], 4100002.0);
  EXPECT_EQ(r.gt[1], 1.0);
  EXPECT_EQ(r.gt[5], -1.0);
  EXPECT_EQ(r.descriptions, (std::vector<std::string>{"range", "min", "max", "count"}));
  std::vector<double> const range{2.5, 0.0, NAN, 0.5, 2.5, 2.25};
  std::vector<double> const min{10.0, 20.0, NAN, 5.25, 7.0, 98.75};
  std::vector<double> const max{12.5, 20.0, NAN, 5.75, 9.5, 101.0};
  std::vector<double> const count{4, 1, NAN, 2, 4, 3};
  std::vector<std::vector<double>> const expected{range, min, max, count};
  for (int b = 0; b < 4; ++b) {
    for (std::size_t i = 0; i < 6; ++i) {
      if (is_nan(expected[b][i])) {
        EXPECT_TRUE(is_nan(r.values[b][i])) << "band " << b << " cell " << i;
      } else {
        EXPECT_EQ(r.values[b][i], expected[b][i]) << "band " << b << " cell " << i;
      }
    }
  }
}

/// A fresh scratch directory per test ("cli-<test name>"); out(name) is a path in it.
class Cli : public ::testing::Test {
 protected:
  void SetUp() override
  {
    GDALAllRegister();
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = scratch_dir(std::string("cli-") + info->name());
  }
  std::filesystem::path out(std::string const& name) const { return dir_ / name; }
  std::filesystem::path dir_;
};

}  // namespace heightgrid::test
