// Regressions of issue 24 that need more than one run or a look at what was written: signals,
// a surviving --overwrite target, warnings that must be given, and messages that must be true.

#include "hostile_run.hpp"
#include "las_test_helpers.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <thread>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

bool has_temporary(fs::path const& dir)
{
  for (auto const& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp-") != std::string::npos) { return true; }
  }
  return false;
}

std::string read_text(fs::path const& p)
{
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class stopped_by : public ::testing::TestWithParam<int> {};

// A long job that writes its GeoTIFF band by band (--memory 2M: one pass over the points for each
// of ~40 bands of rows),
// so the temporary exists while it runs; the signal arrives then. The old output must survive.
TEST_P(stopped_by, removes_the_temporary_keeps_the_old_output_and_exits_128_plus_the_signal)
{
  int const sig = GetParam();
  auto const dir = scratch_dir("signal-" + std::to_string(sig));
  auto const out = dir / "out.tif";
  std::ofstream(out) << "precious";
  bool saw_temporary = false;
  auto const r = run_bounded(
    {"grid", "--synth", "uniform", "--points", "20000000", "--synth-extent", "0", "0", "2000", "2000", "--res", "1",
     "-o", out.string(), "--overwrite", "--memory", "2M", "--device", "cpu"},
    60.0, [&](pid_t pid) {
      for (int i = 0; i < 400 && !saw_temporary; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        saw_temporary = has_temporary(dir);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ::kill(pid, sig);
    });
  EXPECT_TRUE(saw_temporary) << "the temporary never appeared, so the signal did not meet it";
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.code, 128 + sig) << r.output;
  EXPECT_FALSE(has_temporary(dir));
  EXPECT_EQ(read_text(out), "precious");
}

INSTANTIATE_TEST_SUITE_P(signals, stopped_by, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](auto const& info) { return std::string(strsignal(info.param)).substr(0, 4) + std::to_string(info.param); });

TEST(regression, synth_stopped_by_sigint_removes_its_temporary_las)
{
  auto const dir = scratch_dir("signal-synth");
  bool saw_temporary = false;
  auto const r = run_bounded({"synth", "uniform", "--points", "200000000", "-o", (dir / "big.las").string()}, 60.0,
                             [&](pid_t pid) {
                               for (int i = 0; i < 400 && !saw_temporary; ++i) {
                                 std::this_thread::sleep_for(std::chrono::milliseconds(50));
                                 saw_temporary = has_temporary(dir);
                               }
                               ::kill(pid, SIGINT);
                             });
  EXPECT_TRUE(saw_temporary);
  EXPECT_EQ(r.code, 130) << r.output;
  EXPECT_FALSE(has_temporary(dir));
  EXPECT_FALSE(fs::exists(dir / "big.las"));
}

TEST(regression, the_same_input_twice_is_read_once_with_a_warning)
{
  auto const dir = scratch_dir("twice");
  auto const in = dir / "in.xyz";
  std::ofstream(in) << "0.5 0.5 1\n1.5 1.5 2\n2.5 0.5 3\n";
  auto const r = run_bounded({"info", in.string(), (dir / "." / "in.xyz").string(), (dir / "*.xyz").string()});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("read once"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("points: 3 read"), std::string::npos) << r.output;
}

TEST(regression, a_header_count_below_the_records_present_is_a_warning_naming_the_file)
{
  auto const dir = scratch_dir("short-count");
  std::vector<raw_point> pts;
  for (std::int32_t i = 0; i < 50; ++i) { pts.push_back(raw_point{i * 10, i * 7, i, 1, 1, 2, 0, 0, false, false}); }
  auto bytes = build_las(las_spec{}, pts);
  put(bytes, 107, std::uint32_t{40});
  auto const in = dir / "short.las";
  write_bytes(in, bytes);
  auto const r = run_bounded({"grid", in.string(), "-o", (dir / "out.tif").string(), "--res", "1"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: " + in.string() + ": the header says 40 points, but 50 whole records"),
            std::string::npos)
    << r.output;
}

TEST(regression, an_extent_set_by_a_few_far_points_is_a_warning_saying_how_to_fix_it)
{
  auto const dir = scratch_dir("far-point");
  auto const in = dir / "in.xyz";
  {
    std::ofstream o(in);
    for (int i = 0; i < 200; ++i) { o << (i % 20) + 0.5 << ' ' << (i / 20) + 0.5 << " 1\n"; }
    o << "300000.5 5.5 1\n";
  }
  auto const r = run_bounded({"grid", in.string(), "-o", (dir / "out.tif").string(), "--res", "1"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--te"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("300000.5"), std::string::npos) << "the far coordinate: " << r.output;
}

TEST(regression, help_and_version_exit_0_and_say_what_they_should)
{
  auto const v = run_bounded({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.output.find("heightgrid 0."), std::string::npos) << v.output;
  auto const h = run_bounded({"grid", "--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.output.find("--output"), std::string::npos) << h.output;
  EXPECT_EQ(h.output.find("error"), std::string::npos) << h.output;
}

TEST(regression, a_bad_creation_option_names_the_option_not_the_temporary)
{
  auto const dir = scratch_dir("bad-co");
  auto const r = run_bounded({"grid", "--synth", "uniform", "--points", "1000", "-o", (dir / "out.tif").string(),
                              "--res", "1", "--co", "BLOCKXSIZE=7"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--co: 'BLOCKXSIZE=7'"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(".tmp-"), std::string::npos) << r.output;
}

TEST(regression, an_unwritable_directory_says_permission_denied)
{
  // As root every directory is writable: run as nobody (setpriv from util-linux).
  if (std::system("command -v setpriv > /dev/null 2>&1") != 0) { GTEST_SKIP() << "setpriv not available"; }
  auto const dir = scratch_dir("read-only");
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                         fs::perms::others_exec);
  std::string const cmd = "setpriv --reuid=65534 --regid=65534 --clear-groups " + hostile_exe() +
                          " grid --synth uniform --points 100 --res 1 -o " + (dir / "out.tif").string() + " 2>&1";
  std::string output;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) { output += buf; }
  int const status = ::pclose(pipe);
  if (output.find("Permission denied") != std::string::npos && output.find("directory") == std::string::npos) {
    GTEST_SKIP() << "nobody cannot run the executable here: " << output;
  }
  EXPECT_EQ(WEXITSTATUS(status), 4) << output;
  EXPECT_NE(output.find("Permission denied"), std::string::npos) << output;
  EXPECT_EQ(output.find("No such file"), std::string::npos) << output;
}

TEST(regression, a_corrupt_tiff_keeps_gdals_reason)
{
  auto const dir = scratch_dir("corrupt-tiff");
  auto const in = dir / "dem.tif";
  std::ofstream(in, std::ios::binary) << std::string("II*\0\x08\0\0\0\x05\0garbage-garbage-garbage", 32);
  auto const r = run_bounded({"grid", in.string(), "-o", (dir / "out.tif").string(), "--res", "1"});
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find(in.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("TIFF"), std::string::npos) << "GDAL's reason: " << r.output;
}

}  // namespace
}  // namespace heightgrid::test
