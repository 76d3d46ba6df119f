// EPT (issue #37): select_ept_nodes on ../shared/data/cloud's two EPT datasets (lasR's four depth-1
// nodes of Topography's points, PDAL's one node) and on broken copies made here: the nodes a window
// and a level keep, and clear errors for a data type not read, a bad hierarchy entry, a missing file.

#include "io_test_helpers.hpp"
#include "test_paths.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/ept.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace heightgrid::io {
namespace {

fs::path cloud(std::string const& relative)
{
  auto const real = test::real_data_dir();
  if (real.empty()) { return {}; }
  auto const p = real.parent_path() / "cloud" / relative;
  return fs::exists(p) ? p : fs::path();
}

using test::window;

TEST(Ept, NodesOfAWindowAndALevel)
{
  auto const multi = cloud("lasR/ept-test-multi");
  if (multi.empty()) { GTEST_SKIP() << "../shared/data/cloud/lasR/ept-test-multi not present"; }
  EXPECT_TRUE(is_ept(multi.string()));
  EXPECT_TRUE(is_ept((multi / "ept.json").string()));
  EXPECT_TRUE(is_ept("https://example.org/ept/ept.json"));
  EXPECT_FALSE(is_ept((multi / "ept-data").string()));
  auto all = select_ept_nodes(multi.string(), {});
  ASSERT_EQ(all.files.size(), 4U);
  EXPECT_EQ(all.files.front(), multi.string() + "/ept-data/1-0-0-0.laz");
  EXPECT_EQ(all.report.points, 73403U);
  EXPECT_EQ(all.report.points_read, 73403U);
  EXPECT_EQ(all.report.deepest, 1);
  // The cube is 273356..273644 x 5274356..5274644: a window in its lower-left quarter meets node
  // 1-0-0-0 only (y grows with the key's y).
  read_region corner;
  corner.window = window(273360, 5274360, 273400, 5274400);
  auto const one = select_ept_nodes((multi / "ept.json").string(), corner);
  ASSERT_EQ(one.files.size(), 1U);
  EXPECT_EQ(one.files.front(), multi.string() + "/ept-data/1-0-0-0.laz");
  EXPECT_EQ(one.report.points_read, 18806U);
  read_region outside;
  outside.window = window(0, 0, 10, 10);
  EXPECT_TRUE(select_ept_nodes(multi.string(), outside).files.empty());
  read_region level0;
  level0.max_level = 0;  // the root holds no points here
  EXPECT_TRUE(select_ept_nodes(multi.string(), level0).files.empty());
  read_region automatic;
  automatic.auto_level_cell = 100.0;  // coarser than the root's spacing: still the first level with points
  EXPECT_EQ(select_ept_nodes(multi.string(), automatic).files.size(), 4U);
  auto const pdal = cloud("pdal/ept/1.2-with-color");
  if (!pdal.empty()) { EXPECT_EQ(select_ept_nodes(pdal.string(), {}).report.points, 1065U); }
}

TEST(Ept, BrokenDatasetsAreNamed)
{
  auto const multi = cloud("lasR/ept-test-multi");
  if (multi.empty()) { GTEST_SKIP() << "../shared/data/cloud/lasR/ept-test-multi not present"; }
  auto const dir = fs::temp_directory_path() / ("hg_ept_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(multi, dir, fs::copy_options::recursive);
  auto const message = [&] {
    try {
      (void)select_ept_nodes(dir.string(), {});
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto const rewrite = [](fs::path const& p, std::string const& from, std::string const& to) {
    std::ifstream in(p);
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    s.replace(s.find(from), from.size(), to);
    fs::permissions(p, fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(p) << s;
  };
  fs::permissions(dir / "ept.json", fs::perms::owner_write, fs::perm_options::add);
  rewrite(dir / "ept.json", "\"laszip\"", "\"binary\"");
  EXPECT_NE(message().find("ept.json: dataType 'binary'"), std::string::npos) << message();
  rewrite(dir / "ept.json", "\"binary\"", "\"laszip\"");
  rewrite(dir / "ept-hierarchy" / "0-0-0-0.json", "\"1-0-0-0\"", "\"1-2-0-0\"");  // x outside depth 1
  EXPECT_NE(message().find("0-0-0-0.json: entry '1-2-0-0' is not a node key"), std::string::npos) << message();
  fs::remove(dir / "ept-hierarchy" / "0-0-0-0.json");
  EXPECT_NE(message().find("ept-hierarchy/0-0-0-0.json: cannot read it as JSON"), std::string::npos) << message();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace heightgrid::io
