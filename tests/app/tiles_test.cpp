// Tiled output (grid --tile-size): the mosaic of the tiles equals the single run cell for cell,
// inputs whose points lie past their header bounds still reach every tile, --resume, --skip-bad,
// and the directory rules.

#include "cli_run.hpp"

#include <gdal.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace heightgrid::test {
namespace {

namespace fs = std::filesystem;

struct raster {
  int cols{0}, rows{0};
  std::array<double, 6> gt{};
  std::vector<std::vector<double>> bands;
};

raster read_raster(fs::path const& p)
{
  GDALAllRegister();
  raster r;
  GDALDatasetH ds = GDALOpen(p.string().c_str(), GA_ReadOnly);
  if (ds == nullptr) { return r; }
  r.cols = GDALGetRasterXSize(ds);
  r.rows = GDALGetRasterYSize(ds);
  GDALGetGeoTransform(ds, r.gt.data());
  for (int b = 1; b <= GDALGetRasterCount(ds); ++b) {
    std::vector<double> v(static_cast<std::size_t>(r.cols) * r.rows);
    if (GDALRasterIO(GDALGetRasterBand(ds, b), GF_Read, 0, 0, r.cols, r.rows, v.data(), r.cols, r.rows, GDT_Float64, 0,
                     0) != CE_None) {
      v.clear();
    }
    r.bands.push_back(std::move(v));
  }
  GDALClose(ds);
  return r;
}

/// Same size, georeferencing and every cell (NaN equals NaN; values compared bit for bit).
::testing::AssertionResult same_cells(fs::path const& a, fs::path const& b)
{
  auto const x = read_raster(a);
  auto const y = read_raster(b);
  if (x.bands.empty()) { return ::testing::AssertionFailure() << a << " cannot be read"; }
  if (x.cols != y.cols || x.rows != y.rows || x.bands.size() != y.bands.size()) {
    return ::testing::AssertionFailure() << "shapes differ: " << x.cols << "x" << x.rows << "x" << x.bands.size() << " vs "
                                         << y.cols << "x" << y.rows << "x" << y.bands.size();
  }
  for (int i = 0; i < 6; ++i) {
    if (std::abs(x.gt[i] - y.gt[i]) > 1e-9 * std::max(1.0, std::abs(x.gt[i]))) {
      return ::testing::AssertionFailure() << "geotransform " << i << " differs: " << x.gt[i] << " vs " << y.gt[i];
    }
  }
  for (std::size_t b = 0; b < x.bands.size(); ++b) {
    std::size_t differ = 0;
    for (std::size_t i = 0; i < x.bands[b].size(); ++i) {
      double const p = x.bands[b][i], q = y.bands[b][i];
      if (!(std::isnan(p) && std::isnan(q)) && std::memcmp(&p, &q, sizeof p) != 0) { ++differ; }
    }
    if (differ > 0) { return ::testing::AssertionFailure() << "band " << b + 1 << ": " << differ << " cells differ"; }
  }
  return ::testing::AssertionSuccess();
}

class TiledOutput : public ::testing::Test {
 protected:
  void SetUp() override
  {
    dir_ = fs::temp_directory_path() / ("hg_tiles_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "cat");
    // A 3 x 3 catalogue of 100 m lidar tiles, each its own seed.
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        auto const r = run_cli("synth lidar --points 8000 --threads 1 --extent " + std::to_string(i * 100) + " " +
                               std::to_string(j * 100) + " " + std::to_string(i * 100 + 100) + " " +
                               std::to_string(j * 100 + 100) + " --seed " + std::to_string(3 * i + j + 1) +
                               " --a_srs EPSG:32633 -o " + file(i, j).string());
        ASSERT_EQ(r.code, 0) << r.output;
      }
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path file(int i, int j) const { return dir_ / "cat" / ("t_" + std::to_string(i) + "_" + std::to_string(j) + ".las"); }
  fs::path out(std::string const& name) const { return dir_ / name; }
  std::string cat() const { return shell_quote((dir_ / "cat").string()); }

  /// Moves header bound (max X at byte 179, max Y at 195 of a LAS header) of file (i, j).
  void lie(int i, int j, double max_x, double max_y) const
  {
    std::fstream f(file(i, j), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(179);
    f.write(reinterpret_cast<char const*>(&max_x), 8);
    f.seekp(195);
    f.write(reinterpret_cast<char const*>(&max_y), 8);
  }

  fs::path dir_;
};

std::size_t count_tiles(fs::path const& dir)
{
  std::size_t n = 0;
  for (auto const& e : fs::directory_iterator(dir)) { n += e.path().extension() == ".tif"; }
  return n;
}

constexpr char const* metrics = " --metrics range,min,max,count,mean --device cpu";

TEST_F(TiledOutput, MosaicEqualsTheSingleRunCellForCell)
{
  auto const single = run_cli("grid " + cat() + " -o " + out("single.tif").string() + " --res 1" + metrics);
  ASSERT_EQ(single.code, 0) << single.output;
  // Tiles that cut the input files anywhere, at a resolution that is not a power of two.
  for (std::string const geometry : {"--res 1 --tile-size 64", "--res 1 --tile-size 70x33"}) {
    fs::remove_all(out("tiles"));
    auto const r = run_cli("grid " + cat() + " -o " + out("tiles").string() + " " + geometry + metrics);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(same_cells(out("single.tif"), out("tiles") / "tiles.vrt")) << geometry;
    EXPECT_GT(count_tiles(out("tiles")), 9u);
  }
}

TEST_F(TiledOutput, MosaicEqualsTheSingleRunAtAnAwkwardResolution)
{
  auto const single = run_cli("grid " + cat() + " -o " + out("single.tif").string() + " --res 0.7" + metrics);
  ASSERT_EQ(single.code, 0) << single.output;
  auto const r = run_cli("grid " + cat() + " -o " + out("tiles").string() + " --res 0.7 --tile-size 137" + metrics);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(same_cells(out("single.tif"), out("tiles") / "tiles.vrt"));
}

TEST_F(TiledOutput, EveryGpuCountGivesTheSameTiles)
{
  auto const probe = run_cli("grid " + cat() + " -o " + out("probe").string() + " --res 1 --tile-size 64 --gpus 1");
  if (probe.code == 6) { GTEST_SKIP() << "no usable GPU: " << probe.output; }
  ASSERT_EQ(probe.code, 0) << probe.output;
  auto const cpu = run_cli("grid " + cat() + " -o " + out("cpu").string() + " --res 1 --tile-size 64 --device cpu");
  ASSERT_EQ(cpu.code, 0) << cpu.output;
  EXPECT_TRUE(same_cells(out("cpu") / "cpu.vrt", out("probe") / "probe.vrt"));
  auto const all = run_cli("grid " + cat() + " -o " + out("all").string() + " --res 1 --tile-size 64 --gpus all");
  ASSERT_EQ(all.code, 0) << all.output;
  EXPECT_TRUE(same_cells(out("cpu") / "cpu.vrt", out("all") / "all.vrt"));
  // One tile at a time on each GPU, and more workers on a GPU than there are tiles for them.
  for (std::string const per_gpu : {"1", "16"}) {
    std::string const name = "per" + per_gpu;
    auto const r = run_cli("grid " + cat() + " -o " + out(name).string() + " --res 1 --tile-size 64 --gpus all -v " +
                           "--tiles-per-gpu " + per_gpu);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(same_cells(out("cpu") / "cpu.vrt", out(name) / (name + ".vrt"))) << per_gpu;
    EXPECT_EQ(r.output.find("worker 2,") != std::string::npos, per_gpu != "1") << r.output;
  }
}

TEST_F(TiledOutput, PointsPastTheirHeaderBoundsReachEveryTile)
{
  lie(0, 0, 40.0, 40.0);  // the header claims a quarter of the tile's extent
  auto const single = run_cli("grid " + cat() + " -o " + out("single.tif").string() + " --res 1" + metrics);
  ASSERT_EQ(single.code, 0) << single.output;
  auto const r = run_cli("grid " + cat() + " -o " + out("tiles").string() + " --res 1 --tile-size 48" + metrics);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("t_0_0.las: points lie outside the bounds its header declares"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gridded again"), std::string::npos) << r.output;
  EXPECT_TRUE(same_cells(out("single.tif"), out("tiles") / "tiles.vrt"));
}

TEST_F(TiledOutput, PointsPastEveryHeaderGrowTheGrid)
{
  lie(2, 2, 250.0, 250.0);  // the file's header, the only one, is 50 m short to the north-east
  std::string const in = shell_quote(file(2, 2).string());
  auto const single = run_cli("grid " + in + " -o " + out("single.tif").string() + " --res 1" + metrics);
  ASSERT_EQ(single.code, 0) << single.output;
  auto const r = run_cli("grid " + in + " -o " + out("tiles").string() + " --res 1 --tile-size 16" + metrics);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("planning the grid again"), std::string::npos) << r.output;
  EXPECT_TRUE(same_cells(out("single.tif"), out("tiles") / "tiles.vrt"));
}

TEST_F(TiledOutput, ResumeGridsOnlyTheTilesNotFinished)
{
  auto const single = run_cli("grid " + cat() + " -o " + out("single.tif").string() + " --res 1" + metrics);
  ASSERT_EQ(single.code, 0) << single.output;
  auto const first = run_cli("grid " + cat() + " -o " + out("tiles").string() + " --res 1 --tile-size 64" + metrics);
  ASSERT_EQ(first.code, 0) << first.output;
  // A killed run: one tile never written, the VRT never built, the tile's temporary left behind
  // by the dead process; a temporary of a process still running (this one) is left alone.
  fs::remove(out("tiles") / "tiles_2_3.tif");
  fs::remove(out("tiles") / "tiles.vrt");
  pid_t const dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) { ::_exit(0); }
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  fs::path const stale = out("tiles") / (".tiles_2_3.tif.tmp-" + std::to_string(dead));
  fs::path const live = out("tiles") / (".tiles_2_3.tif.tmp-" + std::to_string(::getpid()));
  { std::ofstream(stale) << "partial"; }
  { std::ofstream(live) << "in progress"; }
  auto const again = run_cli("grid " + cat() + " -o " + out("tiles").string() + " --res 1 --tile-size 64 --resume" + metrics);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("1 written, 0 empty, 24 resumed"), std::string::npos) << again.output;
  EXPECT_FALSE(fs::exists(stale)) << "a dead process's temporary stays";
  EXPECT_TRUE(fs::exists(live)) << "a running process's temporary was removed";
  fs::remove(live);
  EXPECT_TRUE(same_cells(out("single.tif"), out("tiles") / "tiles.vrt"));
  // Another job's options may not continue these tiles.
  auto const other = run_cli("grid " + cat() + " -o " + out("tiles").string() + " --res 1 --tile-size 64 --resume");
  EXPECT_EQ(other.code, 4) << other.output;
  EXPECT_NE(other.output.find("made by a different job"), std::string::npos) << other.output;
}

TEST_F(TiledOutput, PercentileTilesMosaicTheSingleRunAndKeepTheirPrange)
{
  std::string const p = " --res 1 --metrics p5,median,prange --prange 10,90";
  auto const single = run_cli("grid " + cat() + " -o " + out("single.tif").string() + p);
  ASSERT_EQ(single.code, 0) << single.output;
  auto const tiled = run_cli("grid " + cat() + " -o " + out("tiles").string() + " --tile-size 64" + p);
  ASSERT_EQ(tiled.code, 0) << tiled.output;
  EXPECT_TRUE(same_cells(out("single.tif"), out("tiles") / "tiles.vrt"));
  // prange of other percentiles is another job: --resume refuses it.
  auto const other = run_cli("grid " + cat() + " -o " + out("tiles").string() +
                             " --res 1 --metrics p5,median,prange --prange 5,95 --tile-size 64 --resume");
  EXPECT_EQ(other.code, 4) << other.output;
  EXPECT_NE(other.output.find("made by a different job"), std::string::npos) << other.output;
}

TEST_F(TiledOutput, AnExistingDirectoryNeedsOverwriteOrResume)
{
  fs::create_directories(out("tiles"));
  { std::ofstream(out("tiles") / "keep.txt") << "mine"; }
  auto const r = run_cli("grid " + cat() + " -o " + out("tiles").string() + " --res 1 --tile-size 64");
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("output directory exists; use --overwrite"), std::string::npos) << r.output;
  EXPECT_EQ(count_tiles(out("tiles")), 0u);
  auto const resume = run_cli("grid " + cat() + " -o " + out("fresh").string() + " --res 1 --tile-size 64 --resume");
  EXPECT_EQ(resume.code, 4) << resume.output;
  auto const over = run_cli("grid " + cat() + " -o " + out("tiles").string() + " --res 1 --tile-size 64 --overwrite");
  EXPECT_EQ(over.code, 0) << over.output;
  EXPECT_TRUE(fs::exists(out("tiles") / "keep.txt"));  // not ours: left alone
  auto const file = run_cli("grid " + cat() + " -o " + out("tiles/tiles_0_0.tif").string() + " --res 1 --tile-size 64");
  EXPECT_EQ(file.code, 4) << file.output;
  EXPECT_NE(file.output.find("not a directory"), std::string::npos) << file.output;
}

TEST_F(TiledOutput, ACorruptInputFailsTheJobOrIsSkipped)
{
  fs::resize_file(file(1, 1), 5000);
  auto const r = run_cli("grid " + cat() + " -o " + out("tiles").string() + " --res 1 --tile-size 64");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("t_1_1.las"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out("tiles") / "tiles.vrt"));
  auto const skip = run_cli("grid " + cat() + " -o " + out("skip").string() + " --res 1 --tile-size 64 --skip-bad");
  EXPECT_EQ(skip.code, 7) << skip.output;
  EXPECT_NE(skip.output.find("skipped " + file(1, 1).string()), std::string::npos) << skip.output;
  EXPECT_TRUE(fs::exists(out("skip") / "skip.vrt"));
}

TEST_F(TiledOutput, SyntheticTilesHoldEveryPointOnce)
{
  auto const r = run_cli("grid --synth uniform --points 100000 --synth-extent 0 0 100 100 --res 1 --tile-size 30 -o " +
                         out("syn").string() + " --metrics count --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  auto const m = read_raster(out("syn") / "syn.vrt");
  ASSERT_EQ(m.bands.size(), 1u);
  double total = 0.0;
  for (double const v : m.bands[0]) { total += v; }
  EXPECT_EQ(total, 100000.0);
  EXPECT_EQ(count_tiles(out("syn")), 16u);
}

TEST_F(TiledOutput, BadTileOptionsAreUsageErrors)
{
  for (std::string const bad : {"--tile-size 0", "--tile-size 10x", "--tile-size -5", "--tile-size-m 2.5 --res 1",
                                "--tile-size 10 --tile-size-m 10", "--tile-size 10 --resume --overwrite",
                                "--tile-size 10 --gpus zero", "--tile-size 10 --gpus 0,0",
                                "--tile-size 10 --tiles-per-gpu 0", "--tile-size 10 --tiles-per-gpu 17",
                                "--tile-size 10 --tiles-per-gpu two", "--tile-size 10 --device cpu --tiles-per-gpu 2"}) {
    auto const r = run_cli("grid " + cat() + " -o " + out("x").string() + " --res 1 " + bad);
    EXPECT_TRUE(r.code == 2 || (r.code == 6 && bad.find("--gpus") != std::string::npos)) << bad << ": " << r.output;
    EXPECT_FALSE(fs::exists(out("x"))) << bad;
  }
  auto const resume = run_cli("grid " + cat() + " -o " + out("x.tif").string() + " --res 1 --resume");
  EXPECT_EQ(resume.code, 2) << resume.output;
  auto const untiled = run_cli("grid " + cat() + " -o " + out("x.tif").string() + " --res 1 --tiles-per-gpu 2");
  EXPECT_EQ(untiled.code, 2) << untiled.output;
  EXPECT_NE(untiled.output.find("--tiles-per-gpu applies to tiled output"), std::string::npos) << untiled.output;
  EXPECT_FALSE(fs::exists(out("x.tif")));
}

}  // namespace
}  // namespace heightgrid::test
