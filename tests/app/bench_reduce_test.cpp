// `heightgrid bench-reduce` end to end, at small sizes: on a machine without a GPU it prints the
// CPU rows and why the GPU rows are missing, and exits 0; on a GPU machine the GPU rows, the
// verdict and a clean self-check. Either way --json reads back and --plot draws (or warns).

#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace {

struct run_result {
  int code{-1};
  std::string output;  ///< stdout and stderr together
};

/// Runs the heightgrid executable (HEIGHTGRID_EXE or the build's) with `args`.
run_result run_heightgrid(std::string const& args)
{
  char const* exe = std::getenv("HEIGHTGRID_EXE");
  std::string const cmd = "'" + std::string(exe != nullptr ? exe : HEIGHTGRID_EXE_DEFAULT) + "' " + args + " 2>&1";
  run_result r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) { return r; }
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) { r.output += buf.data(); }
  int const status = ::pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool contains(std::string const& text, std::string const& what) { return text.find(what) != std::string::npos; }

class BenchReduce : public ::testing::Test {
 protected:
  void SetUp() override
  {
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = heightgrid::test::scratch_dir(std::string("bench-reduce-") + info->name());
  }
  void TearDown() override
  {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(BenchReduce, SmallRunPrintsEveryTableTheAccuracyAndJson)
{
  auto const json_path = dir_ / "ladder.json";
  auto const png_path = dir_ / "ladder.png";
  auto const r = run_heightgrid(
    "bench-reduce --sizes 10,12 --types int32,float --ops sum,max --repeat 2 "
    "--cpu-repeat 1 --accuracy --accuracy-sizes 10..12 --json '" +
    json_path.string() + "' --plot '" + png_path.string() + "'");
  ASSERT_EQ(r.code, 0) << r.output;
  for (auto const* table :
       {"int32 sum, n = 2^10", "int32 max, n = 2^12", "float sum, n = 2^10", "float max, n = 2^12"}) {
    EXPECT_TRUE(contains(r.output, table)) << table << "\n" << r.output;
  }
  EXPECT_TRUE(contains(r.output, "cpu sequential")) << r.output;
  EXPECT_TRUE(contains(r.output, "cpu openmp")) << r.output;
  EXPECT_TRUE(contains(r.output, "Accuracy of float sums")) << r.output;
  EXPECT_FALSE(contains(r.output, "WRONG")) << r.output;

  bool const gpu = !contains(r.output, "GPU rows skipped");
  if (gpu) {
    for (auto const* kernel :
         {" 1  interleaved_divergent", " 6  complete_unroll", " 8  warp_shuffle", " 9  cub", "10  kahan"}) {
      EXPECT_TRUE(contains(r.output, kernel)) << kernel << "\n" << r.output;
    }
    EXPECT_TRUE(contains(r.output, "read bandwidth")) << r.output;
    EXPECT_TRUE(contains(r.output, "Issue #6 bar")) << r.output;
  } else {
    EXPECT_TRUE(contains(r.output, "GPU rows skipped (no usable GPU: ")) << r.output;
    EXPECT_TRUE(contains(r.output, "GPU columns skipped")) << r.output;
    EXPECT_FALSE(contains(r.output, " 8  warp_shuffle")) << "no GPU rows without a GPU\n" << r.output;
  }

  std::ifstream in(json_path);
  ASSERT_TRUE(in.good()) << r.output;
  auto const j = nlohmann::json::parse(in);
  EXPECT_EQ(j["settings"]["repeat"], 2);
  EXPECT_EQ(j["settings"]["flush_l2"], true);
  EXPECT_TRUE(contains(j["command"].get<std::string>(), "bench-reduce"));
  ASSERT_TRUE(j["rows"].is_array());
  // 2 types x 2 ops x 2 sizes = 8 tables, each with its 2 CPU rows, and on a GPU 9 kernels (10 for
  // float sums: Kahan).
  std::size_t const gpu_rows = gpu ? 2 * (4 * 9 + 1) : 0;
  EXPECT_EQ(j["rows"].size(), 8 * 2 + gpu_rows);
  // Not only the product's own "correct" flag: every implementation of one exact reduction (int32
  // sums and maxima, float maxima) must give the same value as every other, CPU and GPU alike.
  std::map<std::string, nlohmann::json> first_value;
  for (auto const& row : j["rows"]) {
    bool const exact = row["type"] == "int32" || row["op"] == "max";
    if (!exact) { continue; }
    std::string const key = row["type"].get<std::string>() + " " + row["op"].get<std::string>() + " 2^" +
                            std::to_string(row["log2_n"].get<int>());
    auto const [it, inserted] = first_value.emplace(key, row["value"]);
    if (!inserted) { EXPECT_EQ(row["value"], it->second) << key << ": " << row.dump(); }
  }
  EXPECT_EQ(first_value.size(), 6U);  // int32 sum and max, float max; 2 sizes each
  for (auto const& row : j["rows"]) {
    EXPECT_TRUE(row["correct"].get<bool>()) << row.dump();
    EXPECT_GE(row["median_ms"].get<double>(), 0.0) << row.dump();
    if (row["type"] == "float" && row["op"] == "sum") { EXPECT_TRUE(row["rel_error"].is_number()) << row.dump(); }
  }
  ASSERT_EQ(j["accuracy"].size(), 3U);  // 2^10, 2^11, 2^12
  auto const& errors = j["accuracy"][0]["rel_error"];
  EXPECT_TRUE(errors["cpu_sequential"].is_number());
  EXPECT_TRUE(errors["cpu_kahan"].is_number());
  EXPECT_EQ(errors["gpu_10_kahan"].is_number(), gpu);
  EXPECT_EQ(errors["gpu_8_warp_shuffle"].is_number(), gpu);
  EXPECT_EQ(j["device"].is_null(), !gpu);

  if (contains(r.output, "gnuplot not found")) {
    EXPECT_FALSE(fs::exists(png_path));
  } else {
    std::ifstream png(png_path, std::ios::binary);
    std::array<char, 4> magic{};
    png.read(magic.data(), magic.size());
    EXPECT_EQ(std::string(magic.data() + 1, 3), "PNG") << r.output;
  }
}

TEST_F(BenchReduce, BadOptionsAreUsageErrorsThatQuoteTheValue)
{
  struct bad {
    char const* args;
    char const* message;
  };
  for (auto const& b : {bad{"--sizes 40", "--sizes: '40'"}, bad{"--sizes 20..10", "--sizes: '20..10'"},
                        bad{"--kernels 11", "--kernels: '11'"}, bad{"--kernels 3-x", "--kernels: '3-x'"},
                        bad{"--types int64", "--types: 'int64'"}, bad{"--ops min", "--ops: 'min'"},
                        bad{"--repeat 0", "--repeat must be >= 1"}}) {
    auto const r = run_heightgrid(std::string("bench-reduce --cpu-repeat 0 ") + b.args);
    EXPECT_EQ(r.code, 2) << b.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, b.message)) << b.args << "\n" << r.output;
  }
}

TEST_F(BenchReduce, ExistingJsonNeedsOverwrite)
{
  auto const json_path = dir_ / "exists.json";
  std::ofstream(json_path) << "{}";
  auto const args = "bench-reduce --sizes 8 --types int32 --ops max --kernels 8 --repeat 1 --cpu-repeat 1 --json '" +
                    json_path.string() + "'";
  auto const refused = run_heightgrid(args);
  EXPECT_EQ(refused.code, 4) << refused.output;
  EXPECT_TRUE(contains(refused.output, "--overwrite")) << refused.output;
  auto const replaced = run_heightgrid(args + " --overwrite");
  EXPECT_EQ(replaced.code, 0) << replaced.output;
  std::ifstream in(json_path);
  EXPECT_TRUE(nlohmann::json::parse(in).contains("rows"));
}

}  // namespace
