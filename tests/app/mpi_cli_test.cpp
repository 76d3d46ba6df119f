// `heightgrid grid --tile-size` over MPI ranks (app/pipeline/tiles_mpi.hpp), end to end: three
// ranks under mpiexec write the same bytes as one process, and a bad input or a failed tile fails
// every rank with rank 0 naming it and no VRT. Built only with MPI (HEIGHTGRID_MPI).

#include "cli_run.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace fs = std::filesystem;
using heightgrid::test::cli_result;
using heightgrid::test::run_cli;
using heightgrid::test::file_bytes;

namespace {

/// The launcher: HEIGHTGRID_MPIEXEC, else the one CMake found, with Open MPI's flags: CI runs as
/// root, and three ranks on a two-core machine oversubscribe it. In sanitizer builds the ranks
/// unwind fully on malloc: Open MPI's leaks at MPI_Finalize are suppressed by its libraries' names
/// (tests/lsan_suppressions.txt), which the fast unwinder does not reach.
std::string launcher()
{
  std::string env;
  if (char const* asan = std::getenv("ASAN_OPTIONS")) {
    env = "ASAN_OPTIONS=" + heightgrid::test::shell_quote(std::string(asan) + ":fast_unwind_on_malloc=0") + " ";
  }
  char const* p = std::getenv("HEIGHTGRID_MPIEXEC");
  return env + heightgrid::test::shell_quote(p ? p : HEIGHTGRID_MPIEXEC_DEFAULT) + " --oversubscribe --allow-run-as-root";
}

cli_result run_ranks(int ranks, std::string const& args)
{
  return run_cli(args, launcher() + " -n " + std::to_string(ranks));
}

/// The tiles and the VRT of an output directory, by name (the manifest and log are hidden files).
std::map<std::string, std::string> outputs(fs::path const& dir)
{
  std::map<std::string, std::string> files;
  for (auto const& e : fs::directory_iterator(dir)) {
    auto const name = e.path().filename().string();
    if (name.front() != '.') { files[name] = file_bytes(e.path()); }
  }
  return files;
}

std::size_t count_of(std::string const& text, std::string const& what)
{
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) { ++n; }
  return n;
}

class MpiTiles : public ::testing::Test {
 protected:
  void SetUp() override
  {
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = heightgrid::test::scratch_dir(std::string("mpi-") + info->name());
    // A catalogue of 3 x 3 LAS files of 100 x 100 m, 3 points per m^2, each its own seed.
    fs::create_directories(out("las"));
    for (int j = 0; j < 3; ++j) {
      for (int i = 0; i < 3; ++i) {
        double const x0 = 500000.0 + 100.0 * i;
        double const y0 = 4100000.0 + 100.0 * j;
        auto const las = out("las/t_" + std::to_string(i) + "_" + std::to_string(j) + ".las");
        auto const r = run_cli("synth lidar --points 30000 --extent " + std::to_string(x0) + " " + std::to_string(y0) +
                               " " + std::to_string(x0 + 100.0) + " " + std::to_string(y0 + 100.0) + " --seed " +
                               std::to_string(1 + i + 3 * j) + " --a_srs EPSG:32633 -q -o " + las.string());
        ASSERT_EQ(r.code, 0) << r.output;
      }
    }
  }
  [[nodiscard]] fs::path out(std::string const& name) const { return dir_ / name; }
  [[nodiscard]] std::string grid(fs::path const& to, std::string const& more = "", std::string const& inputs = "las") const
  {
    return "grid " + out(inputs).string() + " -o " + to.string() +
           " --res 1 --tile-size 64 --device cpu --threads 1 --metrics range,count " + more;
  }
  fs::path dir_;
};

TEST_F(MpiTiles, ThreeRanksWriteTheBytesOfOneProcess)
{
  // Same directory name under two parents: the tiles' names and the VRT's text can be compared.
  auto const one = run_cli(grid(out("one/dsm")));
  ASSERT_EQ(one.code, 0) << one.output;
  auto const three = run_ranks(3, grid(out("three/dsm")));
  ASSERT_EQ(three.code, 0) << three.output;

  auto const expected = outputs(out("one/dsm"));
  auto const got = outputs(out("three/dsm"));
  ASSERT_EQ(expected.count("dsm.vrt"), 1u);
  EXPECT_GT(expected.size(), 20u);  // 5 x 5 tiles of 64 cells over the 300 x 300 m grid, and the VRT
  ASSERT_EQ(got.size(), expected.size());
  for (auto const& [name, bytes] : expected) {
    auto const it = got.find(name);
    ASSERT_NE(it, got.end()) << name << " is missing from the MPI run's output";
    EXPECT_TRUE(it->second == bytes) << name << " differs between one process and three ranks";
  }
  EXPECT_EQ(file_bytes(out("one/dsm/.heightgrid-tiles")), file_bytes(out("three/dsm/.heightgrid-tiles")));
  // Only rank 0 reports: one summary line, naming the three ranks (rank 0 grids too).
  EXPECT_EQ(count_of(three.output, "tiles of 64 x 64 cells"), 1u) << three.output;
  EXPECT_NE(three.output.find("rank 0 on "), std::string::npos) << three.output;
  EXPECT_NE(three.output.find("rank 1 on "), std::string::npos) << three.output;
  EXPECT_NE(three.output.find("rank 2 on "), std::string::npos) << three.output;
}

TEST_F(MpiTiles, InputsPastTheirHeadersRegridAndReplanAsInOneProcess)
{
  // The eastern column's headers claim 50 m less than their points reach: the grid planned from the
  // headers misses them, rank 0 plans it again (a second round for the ranks), and the tiles the
  // points reach are gridded with those inputs.
  for (int j = 0; j < 3; ++j) {
    std::fstream las(out("las/t_2_" + std::to_string(j) + ".las"), std::ios::in | std::ios::out | std::ios::binary);
    double const max_x = 500250.0;
    las.seekp(179);  // LAS header: Max X
    las.write(reinterpret_cast<char const*>(&max_x), sizeof max_x);
    ASSERT_TRUE(las.good());
  }
  auto const one = run_cli(grid(out("one/dsm")));
  ASSERT_EQ(one.code, 0) << one.output;
  ASSERT_NE(one.output.find("planning the grid again"), std::string::npos) << one.output;
  auto const three = run_ranks(3, grid(out("three/dsm")));
  ASSERT_EQ(three.code, 0) << three.output;
  EXPECT_NE(three.output.find("planning the grid again"), std::string::npos) << three.output;
  EXPECT_TRUE(outputs(out("three/dsm")) == outputs(out("one/dsm"))) << "the tiles or the VRT differ";
}

TEST_F(MpiTiles, CorruptInputFailsEveryRankAndLeavesNoVrt)
{
  auto const bad = out("las/t_1_1.las");
  fs::resize_file(bad, 5000);
  auto const r = run_ranks(3, grid(out("dsm")));
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(bad.string()), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out("dsm/dsm.vrt"))) << r.output;
}

TEST_F(MpiTiles, SkipBadLeavesTheInputOutAndExitsSeven)
{
  auto const bad = out("las/t_1_1.las");
  fs::resize_file(bad, 5000);
  auto const r = run_ranks(3, grid(out("dsm"), "--skip-bad"));
  EXPECT_EQ(r.code, 7) << r.output;
  EXPECT_NE(r.output.find("skipped " + bad.string()), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out("dsm/dsm.vrt"))) << r.output;
}

TEST_F(MpiTiles, TileThatFailsOnAWorkerRankFailsTheJob)
{
  // A directory where a tile's file goes: the rank that grids the tile (rank 0 or another) cannot
  // write it.
  fs::create_directories(out("dsm/dsm_2_2.tif"));
  auto const r = run_ranks(3, grid(out("dsm"), "--overwrite"));
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("dsm_2_2.tif"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("error: rank "), std::string::npos) << r.output;  // which rank failed
  EXPECT_FALSE(fs::exists(out("dsm/dsm.vrt"))) << r.output;
  EXPECT_EQ(count_of(r.output, "tiles of 64 x 64 cells"), 0u) << r.output;
}

TEST_F(MpiTiles, RanksThatCannotOpenTheInputsOrSeeOthersFailTheJob)
{
  // Ranks 1 and 2 are given a copy of the catalogue with one input cut short (mpiexec's
  // "A : B" form runs other arguments on other ranks), as if another host saw other files.
  fs::copy(out("las"), out("las-elsewhere"));
  auto const bad = out("las-elsewhere/t_1_1.las");
  fs::resize_file(bad, 5000);
  auto const split = [&](std::string const& more) {
    return run_cli(grid(out("dsm"), more) + " : -n 2 " + heightgrid::test::shell_quote(heightgrid::test::exe()) + " " +
                     grid(out("dsm"), more, "las-elsewhere"),
                   launcher() + " -n 1");
  };
  // They cannot open it: rank 0 says which rank and why.
  auto const unopened = split("");
  EXPECT_EQ(unopened.code, 3) << unopened.output;
  EXPECT_NE(unopened.output.find("rank 1 on "), std::string::npos) << unopened.output;
  EXPECT_NE(unopened.output.find(bad.string()), std::string::npos) << unopened.output;
  EXPECT_FALSE(fs::exists(out("dsm"))) << unopened.output;
  // With --skip-bad they leave it out, and their catalogue is not rank 0's: tile numbers would
  // name other inputs there.
  auto const other = split("--skip-bad");
  EXPECT_EQ(other.code, 3) << other.output;
  EXPECT_NE(other.output.find("opened other inputs than rank 0 (8 there, 9 here)"), std::string::npos) << other.output;
  EXPECT_FALSE(fs::exists(out("dsm"))) << other.output;
}

TEST_F(MpiTiles, OneRankRunsLikeAPlainRun)
{
  auto const r = run_ranks(1, grid(out("dsm")));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::exists(out("dsm/dsm.vrt")));
  EXPECT_EQ(r.output.find("rank "), std::string::npos) << r.output;
}

}  // namespace
