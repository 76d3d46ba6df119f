// Percentile and shape metrics through the command line: bands, descriptions, usage errors, and
// every backend (GPU runs where a GPU is present) byte for byte.

#include "cli_run.hpp"
#include "test_paths.hpp"

#include "heightgrid/kernels/gpu.hpp"

#include <gdal_priv.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace fs = std::filesystem;

namespace {

using heightgrid::test::run_cli;
using heightgrid::test::file_bytes;

class PercentileCli : public ::testing::Test {
 protected:
  void SetUp() override
  {
    GDALAllRegister();
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = heightgrid::test::scratch_dir(std::string("percentile-cli-") + info->name());
  }
  fs::path out(std::string const& name) const { return dir_ / name; }
  static std::string sample() { return (heightgrid::test::data_dir() / "sample.xyz").string(); }
  fs::path dir_;
};

TEST_F(PercentileCli, BandsAreNamedAndDescribed)
{
  auto const r = run_cli("grid " + sample() + " -o " + out("p.tif").string() +
                         " --res 1 --metrics p5,median,p97.5,prange,count --prange 10,90 --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  auto ds = std::unique_ptr<GDALDataset>(GDALDataset::Open(out("p.tif").c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  ASSERT_NE(ds, nullptr);
  ASSERT_EQ(ds->GetRasterCount(), 5);
  char const* names[] = {"p5", "median", "p97.5", "prange", "count"};
  for (int b = 0; b < 5; ++b) { EXPECT_STREQ(ds->GetRasterBand(b + 1)->GetDescription(), names[b]); }
  char const* prange = ds->GetRasterBand(4)->GetMetadataItem("METRIC_DESCRIPTION");
  ASSERT_NE(prange, nullptr);
  EXPECT_NE(std::string(prange).find("90th - 10th"), std::string::npos) << prange;
  // sample.xyz: every non-empty cell's p5 <= median <= p97.5, prange >= 0.
  float v[4]{};
  for (int b = 0; b < 4; ++b) {
    ASSERT_EQ(ds->GetRasterBand(b + 1)->RasterIO(GF_Read, 0, 0, 1, 1, &v[b], 1, 1, GDT_Float32, 0, 0), CE_None);
  }
  EXPECT_LE(v[0], v[1]);
  EXPECT_LE(v[1], v[2]);
  EXPECT_GE(v[3], 0.0F);
}

TEST_F(PercentileCli, BadPercentilesAreUsageErrorsNamingTheValue)
{
  struct bad {
    char const* options;
    char const* named;
  };
  bad const cases[] = {
    {"--metrics p101", "'p101'"},       {"--metrics p-1", "'p-1'"},
    {"--metrics pNaN", "'pNaN'"},       {"--metrics prange --prange 95,5", "'95,5'"},
    {"--metrics p95 -ot UInt32", "--ot UInt32"},  // a count-only output type for a percentile band
    {"--metrics p5,p5", "'p5'"},
  };
  for (auto const& c : cases) {
    auto const r = run_cli("grid " + sample() + " -o " + out("bad.tif").string() + " --res 1 " + c.options);
    EXPECT_EQ(r.code, 2) << c.options << ": " << r.output;
    EXPECT_NE(r.output.find(c.named), std::string::npos) << c.options << ": " << r.output;
    EXPECT_FALSE(fs::exists(out("bad.tif"))) << c.options;
  }
}

TEST_F(PercentileCli, TheGpuWritesTheCpusBytes)
{
  if (!heightgrid::gpu_available()) { GTEST_SKIP() << "no usable GPU: checked on the GPU machine"; }
  std::string const common = " --metrics p5,median,p95,p2.5,prange,count,range --res 0.5 --synth lidar --points 300000";
  ASSERT_EQ(run_cli("grid -o " + out("cpu.tif").string() + common + " --device cpu").code, 0);
  ASSERT_EQ(run_cli("grid -o " + out("gpu.tif").string() + common + " --device gpu").code, 0);
  ASSERT_EQ(run_cli("grid -o " + out("gpu_sorted.tif").string() + common + " --device gpu --mode hybrid").code, 0);
  EXPECT_EQ(file_bytes(out("cpu.tif")), file_bytes(out("gpu.tif")));
  EXPECT_EQ(file_bytes(out("cpu.tif")), file_bytes(out("gpu_sorted.tif")));
}

TEST_F(PercentileCli, ShapeMetricsAreNamedAndBadOnesAreUsageErrors)
{
  auto const r = run_cli("grid " + sample() + " -o " + out("s.tif").string() +
                         " --res 1 --metrics skewness,kurtosis,cover,above:1.5,zbin:0,1,2,entropy,density"
                         " --cover-above 0.5 --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  auto ds = std::unique_ptr<GDALDataset>(GDALDataset::Open(out("s.tif").c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  ASSERT_NE(ds, nullptr);
  char const* names[] = {"skewness", "kurtosis", "cover", "above:1.5", "zbin:0..1", "zbin:1..2", "entropy", "density"};
  ASSERT_EQ(ds->GetRasterCount(), 8);
  for (int b = 0; b < 8; ++b) { EXPECT_STREQ(ds->GetRasterBand(b + 1)->GetDescription(), names[b]); }
  char const* cover = ds->GetRasterBand(3)->GetMetadataItem("METRIC_DESCRIPTION");
  ASSERT_NE(cover, nullptr);
  EXPECT_STREQ(cover, "share of points above 0.5 (--cover-above)");
  struct bad {
    char const* options;
    char const* named;
  };
  bad const cases[] = {
    {"--metrics zbin:2,1", "zbin: the heights must increase (1 after 2)"},
    {"--metrics zbin:2", "zbin: needs at least two heights"},
    {"--metrics above:high", "'above:high': above:H takes a height"},
    {"--metrics cover --cover-above nan", "--cover-above: nan is not a finite height"},
    {"--metrics kurt", "unknown metric 'kurt'"},
  };
  for (auto const& c : cases) {
    auto const b = run_cli("grid " + sample() + " -o " + out("bad.tif").string() + " --res 1 " + c.options);
    EXPECT_EQ(b.code, 2) << c.options << ": " << b.output;
    EXPECT_NE(b.output.find(c.named), std::string::npos) << c.options << ": " << b.output;
    EXPECT_FALSE(fs::exists(out("bad.tif"))) << c.options;
  }
}

TEST_F(PercentileCli, TheGpuWritesTheCpusShapeBytes)
{
  if (!heightgrid::gpu_available()) { GTEST_SKIP() << "no usable GPU: checked on the GPU machine"; }
  std::string const common =
    " --metrics skewness,kurtosis,cover,above:10,zbin:0,2,5,20,entropy,density,p50 --res 0.5 --synth lidar --points 300000";
  ASSERT_EQ(run_cli("grid -o " + out("cpu.tif").string() + common + " --device cpu").code, 0);
  ASSERT_EQ(run_cli("grid -o " + out("gpu.tif").string() + common + " --device gpu").code, 0);
  ASSERT_EQ(run_cli("grid -o " + out("gpu_sorted.tif").string() + common + " --device gpu --mode hybrid").code, 0);
  EXPECT_EQ(file_bytes(out("cpu.tif")), file_bytes(out("gpu.tif")));
  EXPECT_EQ(file_bytes(out("cpu.tif")), file_bytes(out("gpu_sorted.tif")));
}

TEST_F(PercentileCli, CompareTimesTheSortsAndAgrees)
{
  auto const r = run_cli("compare --synth skewed --points 200000 --res 1 --metrics p5,median,prange,range --repeat 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("outputs identical"), std::string::npos) << r.output;
  if (heightgrid::gpu_available()) {
    EXPECT_NE(r.output.find("sort-segmented"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("sort-radix"), std::string::npos) << r.output;
  }
  auto const wrong = run_cli("compare --synth skewed --points 1000 --res 1 --metrics range --modes sort-radix");
  EXPECT_EQ(wrong.code, 2) << wrong.output;
}

}  // namespace
