// `heightgrid compare` end to end. Without a GPU the GPU modes are skipped and cpu runs alone,
// so these tests run in CI; with one, every mode runs and must agree.

#include "cli_run.hpp"
#include "test_paths.hpp"

#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using heightgrid::test::run_cli;

namespace {

class Compare : public ::testing::Test {
 protected:
  void SetUp() override
  {
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = heightgrid::test::scratch_dir(std::string("compare-") + info->name());
  }
  fs::path out(std::string const& name) const { return dir_ / name; }
  fs::path dir_;
};

void expect_contains(std::string const& text, std::string const& needle)
{
  EXPECT_NE(text.find(needle), std::string::npos) << "expected '" << needle << "' in:\n" << text;
}

bool is_png(fs::path const& p)
{
  std::ifstream in(p, std::ios::binary);
  std::array<char, 8> sig{};
  return in.read(sig.data(), sig.size()) && std::string(sig.data(), 8) == "\x89PNG\r\n\x1a\n";
}

TEST_F(Compare, CpuModePrintsTheImbalanceAndTheTable)
{
  auto const r = run_cli("compare --synth skewed --points 50000 --res 1 --modes cpu --repeat 3");
  ASSERT_EQ(r.code, 0) << r.output;
  for (auto const* needle :
       {"synthetic skewed (seed 1", "50,000 points read", "points per cell, grid", "non-empty cells", "p99.9",
        "coefficient of variation", "Gini", "predicted lane efficiency of one thread per cell", "histogram (log2 bins)",
        "2-3", "CSR build (CPU)", "median ms", "vs thread", "outputs identical across 1 mode"}) {
    expect_contains(r.output, needle);
  }
  // the table row: mode, 3 runs, then times
  expect_contains(r.output, "\ncpu          3 ");
}

TEST_F(Compare, DefaultModesRunOrSayWhyTheyWereSkipped)
{
  auto const r = run_cli("compare --synth clustered --points 40000 --res 1 --repeat 2 --metrics range,count,mean");
  ASSERT_EQ(r.code, 0) << r.output;
  expect_contains(r.output, "outputs identical");
  if (r.output.find("no usable GPU") != std::string::npos) {
    expect_contains(r.output, "GPU modes thread,warp,cub");
    expect_contains(r.output, "skipped");
  } else {
    for (auto const* mode : {"\nthread ", "\nwarp ", "\ncub ", "\ncpu "}) { expect_contains(r.output, mode); }
    expect_contains(r.output, "% read BW");
  }
}

// GPU runs are timed behind a gate unless --no-gate; the legend and the JSON say which.
TEST_F(Compare, SaysHowGpuRunsWereTimed)
{
  auto const gated = run_cli("compare --synth lidar --points 20000 --res 1 --repeat 3 --modes thread,hybrid,cpu --json " +
                             out("g.json").string());
  ASSERT_EQ(gated.code, 0) << gated.output;
  auto const plain = run_cli("compare --synth lidar --points 20000 --res 1 --repeat 3 --modes thread,hybrid,cpu --no-gate "
                             "--json " + out("p.json").string());
  ASSERT_EQ(plain.code, 0) << plain.output;
  expect_contains(gated.output, "enqueued whole before they start");
  expect_contains(plain.output, "--no-gate: launch gaps included");
  expect_contains(gated.output, "outputs identical");
  expect_contains(plain.output, "outputs identical");
  auto const read = [](std::filesystem::path const& p) { return nlohmann::json::parse(std::ifstream(p)); };
  EXPECT_EQ(read(out("g.json"))["timing"], "events, each run enqueued behind a gate");
  EXPECT_EQ(read(out("p.json"))["timing"], "events, launch gaps included (--no-gate)");
}

TEST_F(Compare, JsonHoldsEverything)
{
  auto const json_path = out("c.json");
  auto const r = run_cli("compare --synth lidar --points 30000 --res 2 --modes cpu --repeat 4 --metrics range,count --json " +
                         json_path.string());
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream in(json_path);
  auto const j = nlohmann::json::parse(in);
  EXPECT_NE(j["command"].get<std::string>().find("compare --synth lidar"), std::string::npos);
  EXPECT_EQ(j["input"]["synthetic"]["kind"], "lidar");
  EXPECT_EQ(j["input"]["synthetic"]["points"], 30000);
  EXPECT_EQ(j["input"]["points_read"], 30000);
  // Every point read is kept or counted under one filter (was: by_class > -1, always true).
  auto const& f = j["input"]["filtered"];
  std::uint64_t removed = 0;
  for (auto const& [key, value] : f.items()) { removed += value.get<std::uint64_t>(); }
  EXPECT_EQ(j["input"]["points_kept"].get<std::uint64_t>() + removed, 30000u) << f.dump();
  EXPECT_EQ(j["metrics"], nlohmann::json::array({"range", "count"}));
  auto const cells = j["grid"]["cells"].get<std::uint64_t>();
  EXPECT_EQ(cells, j["grid"]["cols"].get<std::uint64_t>() * j["grid"]["rows"].get<std::uint64_t>());
  ASSERT_EQ(j["modes"].size(), 1U);
  auto const& cpu = j["modes"][0];
  EXPECT_EQ(cpu["mode"], "cpu");
  EXPECT_EQ(cpu["times_ms"].size(), 4U);
  EXPECT_LE(cpu["min_ms"].get<double>(), cpu["median_ms"].get<double>());
  EXPECT_LE(cpu["median_ms"].get<double>(), cpu["max_ms"].get<double>());
  EXPECT_GT(cpu["gbps"].get<double>(), 0.0);
  EXPECT_TRUE(cpu["percent_of_read_bandwidth"].is_null());
  EXPECT_TRUE(j["identical"].get<bool>());
  EXPECT_TRUE(j["mismatch"].is_null());
  EXPECT_TRUE(j.contains("device"));
  EXPECT_TRUE(j.contains("read_bandwidth"));
  EXPECT_GT(j["phases_ms"]["read_and_filter"].get<double>(), 0.0);
  EXPECT_GT(j["reduce_bytes"].get<double>(), 8.0 * 30000);
  auto const& s = j["cell_stats"];
  EXPECT_EQ(s["cells"].get<std::uint64_t>(), cells);
  for (auto const* key : {"non_empty_cells", "points", "mean", "mean_non_empty", "max", "p50", "p90", "p99", "p99_9",
                          "cv", "gini", "thread_lane_efficiency"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  std::uint64_t binned = 0;
  for (auto const& bin : j["histogram"]) {
    EXPECT_LE(bin["low"].get<std::uint64_t>(), bin["high"].get<std::uint64_t>());
    binned += bin["cells"].get<std::uint64_t>();
  }
  EXPECT_EQ(binned, cells);
}

TEST_F(Compare, PlotIsAPngOrAClearMessage)
{
  auto const png = out("c.png");
  auto const json_path = out("c.json");
  std::string const args = "compare --synth uniform --points 20000 --res 1 --modes cpu --repeat 2 --plot " +
                           png.string() + " --json " + json_path.string();
  auto const r = run_cli(args);
  ASSERT_EQ(r.code, 0) << r.output;
  if (r.output.find("gnuplot not found") == std::string::npos) {
    EXPECT_TRUE(is_png(png)) << r.output;
  } else {
    EXPECT_FALSE(fs::exists(png));
  }
  // without gnuplot on PATH: a warning that says what to install, exit 0, the JSON still written
  fs::remove(png);
  fs::remove(json_path);
  auto const bare = run_cli(args, "PATH=" + out("empty-path").string());
  ASSERT_EQ(bare.code, 0) << bare.output;
  expect_contains(bare.output, "--plot: gnuplot not found on PATH");
  expect_contains(bare.output, "gnuplot-nox");
  expect_contains(bare.output, "the table and --json are unaffected");
  EXPECT_FALSE(fs::exists(png));
  EXPECT_TRUE(fs::exists(json_path));
  for (auto const& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "temporary left: " << e.path();
  }
}

TEST_F(Compare, ReplotDrawsFromAnEarlierJson)
{
  auto const json_path = out("run.json");
  ASSERT_EQ(run_cli("compare --synth skewed --points 20000 --res 1 --modes cpu --repeat 2 -q --json " + json_path.string()).code, 0);
  auto const png = out("replot.png");
  auto const r = run_cli("compare --replot " + json_path.string() + " --plot " + png.string());
  ASSERT_EQ(r.code, 0) << r.output;
  if (r.output.find("gnuplot not found") == std::string::npos) { EXPECT_TRUE(is_png(png)) << r.output; }
  EXPECT_EQ(run_cli("compare --replot " + json_path.string()).code, 2);  // no --plot
  std::ofstream(out("other.json")) << "{\"not\": \"compare\"}";
  auto const bad = run_cli("compare --replot " + out("other.json").string() + " --plot " + out("x.png").string());
  EXPECT_EQ(bad.code, 3) << bad.output;
  expect_contains(bad.output, "not a compare --json file");
}

TEST_F(Compare, ListModesPrintsTheModeTableOneNameALine)
{
  auto const r = run_cli("compare --list-modes");
  ASSERT_EQ(r.code, 0) << r.output;
  std::string expected;
  for (auto const& row : heightgrid::reduce_modes) { expected += std::string(row.name) + "\n"; }
  EXPECT_EQ(r.output, expected);
}

TEST_F(Compare, BadModeListsAreUsageErrors)
{
  std::string const base = "compare --synth uniform --points 1000 --res 1 --repeat 1 ";
  auto r = run_cli(base + "--modes thread,bogus");
  EXPECT_EQ(r.code, 2) << r.output;
  expect_contains(r.output, "'bogus'");
  expect_contains(r.output, "thread, warp, cub");
  r = run_cli(base + "--modes cpu,cpu");
  EXPECT_EQ(r.code, 2) << r.output;
  expect_contains(r.output, "twice");
  EXPECT_EQ(run_cli("compare --synth uniform --points 1000 --res 1 --modes cpu --repeat 0").code, 2);
  EXPECT_EQ(run_cli("compare --synth uniform --points 1000 --modes cpu").code, 2);  // no --res
  // GPU modes only, and no GPU: nothing to run
  r = run_cli(base + "--modes warp");
  if (heightgrid::gpu_available()) {
    EXPECT_EQ(r.code, 0) << r.output;
  } else {
    EXPECT_EQ(r.code, 6) << r.output;
    expect_contains(r.output, "add cpu");
  }
}

TEST_F(Compare, ExistingJsonNeedsOverwriteAndFileInputsWork)
{
  auto const las = out("in.las");
  ASSERT_EQ(run_cli("synth uniform --points 5000 -o " + las.string()).code, 0);
  std::ofstream(out("c.json")) << "{}";
  auto r = run_cli("compare " + las.string() + " --res 1 --modes cpu --repeat 1 --json " + out("c.json").string());
  EXPECT_EQ(r.code, 4) << r.output;
  expect_contains(r.output, "--overwrite");
  r = run_cli("compare " + las.string() + " --res 1 --modes cpu --repeat 1 --overwrite --json " + out("c.json").string());
  ASSERT_EQ(r.code, 0) << r.output;
  expect_contains(r.output, "input: " + las.string());
  std::ifstream in(out("c.json"));
  auto const j = nlohmann::json::parse(in);
  EXPECT_EQ(j["input"]["points_kept"], 5000);
  EXPECT_FALSE(j["input"].contains("synthetic"));
}

}  // namespace
