// The hostile suite: every case runs the real executable on generated hostile input and checks
// that it ends promptly with the documented exit code, a message naming the file or option, no
// output and no temporary left, and its inputs unchanged (README "Conventions").

#include "hostile_cases.hpp"
#include "hostile_run.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

std::string substitute(std::string s, std::string const& in, std::string const& out, std::string const& dir)
{
  for (auto const& [key, value] : {std::pair<std::string, std::string>{"{in}", in}, {"{out}", out}, {"{dir}", dir}}) {
    for (std::size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + value.size())) {
      s.replace(at, key.size(), value);
    }
  }
  return s;
}

class hostile : public ::testing::TestWithParam<hostile_case> {};

TEST_P(hostile, ends_cleanly_with_the_documented_code)
{
  auto const& c = GetParam();
  if (c.real_data && real_data_dir().empty()) {
    GTEST_SKIP() << "needs ../shared/data/real (HEIGHTGRID_REAL_DATA_DIR)";
  }
  auto const dir = scratch_dir("hostile-" + c.name);
  std::string const in = c.make ? c.make(dir) : std::string();
  std::string const out = (dir / "out.tif").string();
  auto const before = snapshot(dir);
  std::vector<std::string> args;
  for (auto const& a : c.args) { args.push_back(substitute(a, in, out, dir.string())); }

  auto const r = run_bounded(args, 10.0);

  ASSERT_FALSE(r.timed_out) << "still running after 10 s: " << r.output;
  EXPECT_EQ(r.code, c.code) << r.output;
  EXPECT_NE(r.output.find("heightgrid: error: "), std::string::npos) << r.output;
  for (auto const& s : c.says) {
    auto const needle = substitute(s, in, out, dir.string());
    EXPECT_NE(r.output.find(needle), std::string::npos) << "expected '" << needle << "' in:\n" << r.output;
  }
  EXPECT_TRUE(printable_output(r.output)) << "raw bytes in the output:\n" << r.output;
  // Nothing written, nothing left behind, nothing changed.
  auto const after = snapshot(dir);
  EXPECT_EQ(after, before) << "the directory changed (output, temporary or input)";
  for (auto const& [name, hash] : after) { EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name; }
}

std::string case_name(::testing::TestParamInfo<hostile_case> const& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(las, hostile, ::testing::ValuesIn(las_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(laz, hostile, ::testing::ValuesIn(laz_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(text, hostile, ::testing::ValuesIn(text_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(gdal, hostile, ::testing::ValuesIn(gdal_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(options, hostile, ::testing::ValuesIn(option_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(outputs, hostile, ::testing::ValuesIn(output_cases()), case_name);

}  // namespace
}  // namespace heightgrid::test
