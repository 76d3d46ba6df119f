// EPT (issue #37): select_ept_nodes on ../shared/data/cloud's two EPT datasets (lasR's four depth-1
// nodes of Topography's points, PDAL's one node) and on broken copies made here: the nodes a window
// and a level keep, and clear errors for a data type not read, a bad hierarchy entry, a missing file;
// binary and zstandard copies of both written here (tests/ept_writer.hpp) read point for point as the
// LAZ nodes, and broken binary nodes and schemas are named.

#include "ept_writer.hpp"
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
  rewrite(dir / "ept.json", "\"laszip\"", "\"brotli\"");
  EXPECT_NE(message().find("ept.json: dataType 'brotli' is not laszip, binary or zstandard"), std::string::npos)
    << message();
  rewrite(dir / "ept.json", "\"brotli\"", "\"laszip\"");
  rewrite(dir / "ept-hierarchy" / "0-0-0-0.json", "\"1-0-0-0\"", "\"1-2-0-0\"");  // x outside depth 1
  EXPECT_NE(message().find("0-0-0-0.json: entry '1-2-0-0' is not a node key"), std::string::npos) << message();
  fs::remove(dir / "ept-hierarchy" / "0-0-0-0.json");
  EXPECT_NE(message().find("ept-hierarchy/0-0-0-0.json: cannot read it as JSON"), std::string::npos) << message();
  fs::remove_all(dir);
}

/// A temporary folder removed when the test ends.
struct scratch {
  fs::path dir = fs::temp_directory_path() / ("hg_ept_bin_" + std::to_string(::getpid()));
  scratch() { fs::remove_all(dir); }
  ~scratch() { fs::remove_all(dir); }
};

TEST(Ept, BinaryAndZstandardNodesReadAsTheirLazTwins)
{
  scratch const tmp;
  int datasets = 0;
  for (auto const* name : {"lasR/ept-test-multi", "pdal/ept/1.2-with-color"}) {
    auto const laszip = cloud(name);
    if (laszip.empty()) { continue; }
    ++datasets;
    for (std::string const type : {"binary", "zstandard"}) {
      auto const copy = tmp.dir / (std::string(name).substr(0, 4) + type);
      test::write_binary_ept(laszip, copy, type);
      auto const nodes = select_ept_nodes(copy.string(), {});
      auto const twins = select_ept_nodes(laszip.string(), {});
      EXPECT_EQ(nodes.data_type, type);
      ASSERT_EQ(nodes.files.size(), twins.files.size());
      for (std::size_t n = 0; n < nodes.files.size(); ++n) {
        SCOPED_TRACE(nodes.files[n]);
        EXPECT_TRUE(is_ept_node(nodes.files[n]));
        EXPECT_FALSE(is_ept_node(twins.files[n]));
        EXPECT_EQ(nodes.files[n].substr(nodes.files[n].size() - 4), type == "binary" ? ".bin" : ".zst");
        auto const source = open_ept_node_source(nodes.files[n], "");
        EXPECT_EQ(source->info().format, "EPT " + type + " node");
        EXPECT_FALSE(source->info().crs_wkt.empty());
        auto const twin = open_las_source(twins.files[n]);
        // Chunks of 1,000 against the LAZ reader's: coordinates and the attributes the filters read.
        point_chunk a, b;
        std::vector<point_chunk> mine, theirs;
        while (source->read(a, 1000)) { mine.push_back(a); }
        while (twin->read(b, default_chunk_points)) { theirs.push_back(b); }
        point_chunk all_a, all_b;
        std::vector<std::uint8_t> ca, cb, ra, rb, na, nb;
        for (auto const& c : mine) {
          all_a.append_xyz(c);
          ca.insert(ca.end(), c.classification.begin(), c.classification.end());
          ra.insert(ra.end(), c.return_number.begin(), c.return_number.end());
          na.insert(na.end(), c.number_of_returns.begin(), c.number_of_returns.end());
        }
        for (auto const& c : theirs) {
          all_b.append_xyz(c);
          cb.insert(cb.end(), c.classification.begin(), c.classification.end());
          rb.insert(rb.end(), c.return_number.begin(), c.return_number.end());
          nb.insert(nb.end(), c.number_of_returns.begin(), c.number_of_returns.end());
        }
        ASSERT_GT(all_a.size(), 0U);
        EXPECT_EQ(all_a.x, all_b.x);
        EXPECT_EQ(all_a.y, all_b.y);
        EXPECT_EQ(all_a.z, all_b.z);
        EXPECT_EQ(ca, cb);
        EXPECT_EQ(ra, rb);
        EXPECT_EQ(na, nb);
        // Another dimension by name, case-insensitive: the LAZ reader's --dimension values.
        auto const intensity = open_ept_node_source(nodes.files[n], "intensity");
        std::vector<double> values;
        while (intensity->read(a, 777)) { values.insert(values.end(), a.z.begin(), a.z.end()); }
        EXPECT_EQ(values, test::las_values(twins.files[n], "Intensity"));
      }
    }
  }
  if (datasets == 0) { GTEST_SKIP() << "../shared/data/cloud's EPT datasets are not present"; }
}

TEST(Ept, BrokenBinaryNodesAreNamed)
{
  auto const laszip = cloud("pdal/ept/1.2-with-color");
  if (laszip.empty()) { GTEST_SKIP() << "../shared/data/cloud/pdal/ept/1.2-with-color not present"; }
  scratch const tmp;
  auto const bin = tmp.dir / "bin", zst = tmp.dir / "zst";
  test::write_binary_ept(laszip, bin, "binary");
  test::write_binary_ept(laszip, zst, "zstandard");
  auto const message = [](fs::path const& node, std::string const& dimension = "") {
    try {
      auto source = open_ept_node_source(node.string(), dimension);
      point_chunk c;
      while (source->read(c, 100)) {}
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto const bin_node = bin / "ept-data" / "0-0-0-0.bin", zst_node = zst / "ept-data" / "0-0-0-0.zst";
  EXPECT_EQ(message(bin_node), "no error");
  EXPECT_EQ(message(zst_node), "no error");
  EXPECT_NE(message(bin_node, "Nothing").find(bin_node.string() + ": no dimension 'Nothing' (the EPT schema has X, Y, Z, Intensity"),
            std::string::npos)
    << message(bin_node, "Nothing");
  // Records by the schema: 1065 points of 44 bytes; one byte more is not a whole number of them.
  auto const bytes = fs::file_size(bin_node);
  EXPECT_EQ(bytes, 1065U * 44U);
  { std::ofstream(bin_node, std::ios::app) << 'x'; }
  EXPECT_NE(message(bin_node).find(bin_node.string() + ": 46861 bytes are not a whole number of 44-byte points"),
            std::string::npos)
    << message(bin_node);
  // A zstandard node cut short, and one of garbage.
  fs::resize_file(zst_node, fs::file_size(zst_node) / 2);
  EXPECT_NE(message(zst_node).find(zst_node.string() + ": the zstandard data is cut short"), std::string::npos)
    << message(zst_node);
  { std::ofstream(zst_node, std::ios::trunc) << "this is not zstandard data at all"; }
  EXPECT_NE(message(zst_node).find(zst_node.string() + ": not zstandard data, or damaged"), std::string::npos)
    << message(zst_node);
  fs::remove(zst_node);
  EXPECT_NE(message(zst_node).find(zst_node.string() + ": cannot open the EPT node"), std::string::npos)
    << message(zst_node);
}

TEST(Ept, BrokenBinarySchemasAreNamed)
{
  auto const laszip = cloud("pdal/ept/1.2-with-color");
  if (laszip.empty()) { GTEST_SKIP() << "../shared/data/cloud/pdal/ept/1.2-with-color not present"; }
  scratch const tmp;
  int copy = 0;
  // Each case a fresh copy: a dataset's schema is read once per process.
  auto const broken = [&](std::string const& from, std::string const& to) {
    auto const dir = tmp.dir / std::to_string(copy++);
    test::write_binary_ept(laszip, dir, "binary");
    std::ifstream in(dir / "ept.json");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    auto const at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) { s.replace(at, from.size(), to); }
    std::ofstream(dir / "ept.json") << s;
    try {
      (void)open_ept_node_source((dir / "ept-data" / "0-0-0-0.bin").string(), "");
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto m = broken("\"Intensity\",\n      \"size\":2", "\"Intensity\",\n      \"size\":3");
  EXPECT_NE(m.find("ept.json: schema entry 3 ('Intensity'): type 'unsigned' of size 3 is not an EPT type"),
            std::string::npos)
    << m;
  m = broken("\"name\":\"Z\"", "\"name\":\"Zed\"");
  EXPECT_NE(m.find("ept.json: the schema lacks X, Y or Z"), std::string::npos) << m;
  m = broken("\"scale\":0.01", "\"scale\":0");
  EXPECT_NE(m.find("ept.json: schema entry 0 ('X'): scale and offset must be finite and the scale non-zero"),
            std::string::npos)
    << m;
}

}  // namespace
}  // namespace heightgrid::io
