// Tagged counts through the command line (issue #38): count:CLASSES, first and last equal the count
// of a run filtered to those points, empty cells stay nodata while cells without such points hold 0,
// bad spellings and inputs without the attributes are errors, and every backend (GPU runs where a
// GPU is present: LAS records, columns, LAZ decoded on the device, sorted and order reductions)
// writes the CPU's bytes.

#include "cli_run.hpp"
#include "test_paths.hpp"

#include "heightgrid/kernels/gpu.hpp"

#include <gdal_priv.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

using heightgrid::test::file_bytes;
using heightgrid::test::run_cli;

class TaggedCountCli : public ::testing::Test {
 protected:
  void SetUp() override
  {
    GDALAllRegister();
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = heightgrid::test::scratch_dir(std::string("tagged-count-cli-") + info->name());
  }
  fs::path out(std::string const& name) const { return dir_ / name; }

  /// A synthetic lidar LAS (classes 1-6 and returns 1..n of n) of `points` points, made once.
  std::string lidar(std::size_t points)
  {
    auto const path = out("lidar.las");
    if (!fs::exists(path)) {
      auto const r = run_cli("synth lidar --points " + std::to_string(points) + " --seed 38 -o " + path.string());
      EXPECT_EQ(r.code, 0) << r.output;
    }
    return path.string();
  }

  /// Every band of `path` as doubles, and the file's sample type and nodata.
  struct raster {
    std::vector<std::vector<double>> bands;
    GDALDataType type{GDT_Unknown};
    double nodata{0.0};
    bool has_nodata{false};
  };
  static raster read(fs::path const& path)
  {
    raster r;
    auto ds = std::unique_ptr<GDALDataset>(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
    EXPECT_NE(ds, nullptr) << path;
    if (ds == nullptr) { return r; }
    int const cols = ds->GetRasterXSize(), rows = ds->GetRasterYSize();
    for (int b = 1; b <= ds->GetRasterCount(); ++b) {
      auto* band = ds->GetRasterBand(b);
      std::vector<double> v(static_cast<std::size_t>(cols) * rows);
      EXPECT_EQ(band->RasterIO(GF_Read, 0, 0, cols, rows, v.data(), cols, rows, GDT_Float64, 0, 0), CE_None);
      r.bands.push_back(std::move(v));
      int ok = 0;
      r.nodata = band->GetNoDataValue(&ok);
      r.has_nodata = ok != 0;
      r.type = band->GetRasterDataType();
    }
    return r;
  }

  fs::path dir_;
};

TEST_F(TaggedCountCli, EachEqualsTheCountOfARunFilteredToItsPoints)
{
  std::string const las = lidar(300000);
  std::string const grid = " --res 0.5 --device cpu --te 0 0 200 200";  // one grid for every run
  auto const r = run_cli("grid " + las + " -o " + out("tags.tif").string() + grid +
                         " --metrics count,count:2,count:3,4,5,first,last --ot Float32");
  ASSERT_EQ(r.code, 0) << r.output;
  struct filtered {
    char const* options;
    std::size_t band;  // of tags.tif
  };
  filtered const runs[] = {
    {"--classes 2", 1}, {"--classes 3,4,5", 2}, {"--returns first", 3}, {"--returns last", 4}};
  auto const tags = read(out("tags.tif"));
  ASSERT_EQ(tags.bands.size(), 5U);
  ASSERT_EQ(tags.type, GDT_Float32);
  ASSERT_TRUE(tags.has_nodata && std::isnan(tags.nodata));
  auto const& all = tags.bands[0];
  for (auto const& f : runs) {
    auto const path = out("filtered.tif");
    auto const fr = run_cli("grid " + las + " -o " + path.string() + grid + " --metrics count --ot Float32 --overwrite " +
                            f.options);
    ASSERT_EQ(fr.code, 0) << fr.output;
    auto const want = read(path);
    ASSERT_EQ(want.bands.size(), 1U);
    auto const& got = tags.bands[f.band];
    ASSERT_EQ(got.size(), all.size());
    std::size_t zeros = 0, counted = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (std::isnan(all[i])) {
        ASSERT_TRUE(std::isnan(got[i])) << f.options << " cell " << i << ": an empty cell is nodata";
        continue;
      }
      double const expect = std::isnan(want.bands[0][i]) ? 0.0 : want.bands[0][i];
      ASSERT_EQ(got[i], expect) << f.options << " cell " << i;
      zeros += expect == 0.0;
      counted += expect > 0.0;
    }
    EXPECT_GT(counted, 1000U) << f.options << ": the test needs cells with such points";
    if (f.band <= 2) { EXPECT_GT(zeros, 0U) << f.options << ": the test needs cells with points but none of those"; }
  }
}

TEST_F(TaggedCountCli, CountsAloneAreUInt32WithZeroInEmptyCells)
{
  std::string const las = lidar(300000);
  auto const r = run_cli("grid " + las + " -o " + out("u.tif").string() +
                         " --res 0.5 --te 0 0 200 200 --device cpu --metrics count,count:2,first --ot UInt32");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const u = read(out("u.tif"));
  ASSERT_EQ(u.type, GDT_UInt32);
  auto const f = run_cli("grid " + las + " -o " + out("f.tif").string() +
                         " --res 0.5 --te 0 0 200 200 --device cpu --metrics count,count:2,first");
  ASSERT_EQ(f.code, 0) << f.output;
  auto const fl = read(out("f.tif"));
  ASSERT_EQ(fl.bands.size(), 3U);
  for (std::size_t b = 0; b < 3; ++b) {
    for (std::size_t i = 0; i < fl.bands[b].size(); ++i) {
      double const want = std::isnan(fl.bands[b][i]) ? 0.0 : fl.bands[b][i];
      ASSERT_EQ(u.bands[b][i], want) << "band " << b + 1 << " cell " << i;
    }
  }
  // UInt32 holds counts alone.
  auto const bad = run_cli("grid " + las + " -o " + out("bad.tif").string() +
                           " --res 2 --device cpu --metrics count:2,range --ot UInt32");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--ot UInt32 holds count bands alone"), std::string::npos) << bad.output;
}

TEST_F(TaggedCountCli, BadSpellingsAndInputsWithoutTheAttributesAreErrors)
{
  std::string const las = lidar(20000);
  struct bad {
    char const* options;
    char const* named;
  };
  bad const cases[] = {
    {"--metrics count:256", "count: '256' is not a class"},
    {"--metrics count:two", "count: 'two' is not a class"},
    {"--metrics count:", "count: '' is not a class"},
    {"--metrics count:2,2", "count: class 2 is listed twice"},
    {"--metrics count:2,first,count:2", "metric 'count:2' is listed twice"},
    {"--metrics count:1,count:2,count:3,count:4,count:5,count:6,count:8,first,last", "at most 8 bands"},
  };
  for (auto const& c : cases) {
    auto const r = run_cli("grid " + las + " -o " + out("bad.tif").string() + " --res 1 " + c.options);
    EXPECT_EQ(r.code, 2) << c.options << ": " << r.output;
    EXPECT_NE(r.output.find(c.named), std::string::npos) << c.options << ": " << r.output;
    EXPECT_FALSE(fs::exists(out("bad.tif"))) << c.options;
  }
  // x y z text has neither classes nor returns: an input error naming the file, no output.
  std::string const xyz = (heightgrid::test::data_dir() / "sample.xyz").string();
  for (char const* metrics : {"count:2", "first", "range,last"}) {
    for (char const* device : {"cpu", "auto"}) {
      auto const r = run_cli("grid " + xyz + " -o " + out("bad.tif").string() + " --res 1 --device " + device +
                             " --metrics " + metrics);
      EXPECT_EQ(r.code, 3) << metrics << ": " << r.output;
      EXPECT_NE(r.output.find("sample.xyz"), std::string::npos) << metrics << ": " << r.output;
      EXPECT_FALSE(fs::exists(out("bad.tif"))) << metrics;
    }
  }
}

TEST_F(TaggedCountCli, TheGpuWritesTheCpusBytes)
{
  if (!heightgrid::gpu_available()) { GTEST_SKIP() << "no usable GPU: checked on the GPU machine"; }
  std::string const las = lidar(2000000);
  std::string const tags = "count:2,count:3,4,5,first,last";
  struct run {
    std::string input;
    std::string options;
  };
  std::vector<run> runs = {
    {las, "--metrics range," + tags},                                        // LAS records decoded on the device
    {las, "--metrics range," + tags + " --las-decoder cpu"},                 // columns and their tags uploaded
    {"--synth lidar --points 500000", "--metrics " + tags + ",count"},      // float64 columns
    {las, "--metrics mean,stddev," + tags},                                  // the sorted reduction
    {las, "--metrics p50," + tags},                                          // order statistics kept
    {las, "--metrics max," + tags + " --tile-size 300 -o"},                  // tiles (the output is a folder)
  };
  auto const real = heightgrid::test::real_data_dir();
  if (!real.empty()) {
    // LAZ decoded on the device and folded where it was decoded: layered (PDRF 6) and pointwise (PDRF 3).
    runs.push_back({(real / "lasR" / "las14_pdrf6.laz").string(), "--metrics range," + tags});
    runs.push_back({(real / "pdal" / "laz_autzen_trim.laz").string(), "--metrics range," + tags});
  }
  int k = 0;
  for (auto const& r : runs) {
    bool const tiled = r.options.find("--tile-size") != std::string::npos;
    std::string const options = " --res 1 " + r.options + " ";
    fs::path const cpu = out("cpu" + std::to_string(k) + (tiled ? "" : ".tif"));
    fs::path const gpu = out("gpu" + std::to_string(k) + (tiled ? "" : ".tif"));
    ++k;
    auto const o = [&](fs::path const& p) { return tiled ? p.string() : "-o " + p.string(); };
    auto const c = run_cli("grid " + r.input + options + o(cpu) + " --device cpu");
    ASSERT_EQ(c.code, 0) << r.options << ": " << c.output;
    auto const g = run_cli("grid " + r.input + options + o(gpu) + " --device gpu");
    ASSERT_EQ(g.code, 0) << r.options << ": " << g.output;
    if (!tiled) {
      EXPECT_EQ(file_bytes(cpu), file_bytes(gpu)) << r.input << " " << r.options;
      continue;
    }
    std::size_t tiles = 0;
    for (auto const& e : fs::directory_iterator(cpu)) {
      if (e.path().extension() != ".tif") { continue; }
      ++tiles;
      auto const other = gpu / e.path().filename().string().replace(0, 3, "gpu");
      EXPECT_EQ(file_bytes(e.path()), file_bytes(other)) << e.path();
    }
    EXPECT_GT(tiles, 1U);
  }
}

}  // namespace
