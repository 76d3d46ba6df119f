// COPC (issue #37): the octree of data/copc_octree_pdrf6.copc.laz (data/make_copc.py: 20,000
// points, 1,114 nodes in levels 0-5) and of PDAL's 1.2-with-color.copc.laz (../shared/data/cloud),
// and part_source::restrict_to: a window keeps every point in it (the same points as reading the
// whole file and keeping those in the window), reads a share of the bytes close to the window's
// share of the area, and a level reads only the nodes down to it.

#include "las_parts_helpers.hpp"
#include "io_test_helpers.hpp"
#include "test_paths.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/las_reader.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

namespace heightgrid::io {
namespace {

std::string octree_file() { return (test::data_dir() / "copc_octree_pdrf6.copc.laz").string(); }

std::filesystem::path shared_file(std::string const& relative)
{
  auto const real = test::real_data_dir();
  if (real.empty()) { return {}; }
  auto const path = real.parent_path() / relative;
  return std::filesystem::exists(path) ? path : std::filesystem::path();
}

/// A point to a thousandth of a unit: a COPC file and its LAS twin store the same integers under
/// other offsets, so their doubles may differ in the last bits.
using point = std::tuple<long long, long long, long long>;

/// The points of `source` (every part) inside `w` (edges included), sorted.
std::vector<point> points_in(part_source& source, bounds const& w)
{
  test::parts_read const got = test::read_parts(source, filter_options::keep_all(), 2);
  std::vector<point> in;
  for (std::size_t i = 0; i < got.points.size(); ++i) {
    double const x = got.points.x[i], y = got.points.y[i];
    if (x >= w.xmin && x <= w.xmax && y >= w.ymin && y <= w.ymax) {
      in.emplace_back(std::llround(x * 1000), std::llround(y * 1000), std::llround(got.points.z[i] * 1000));
    }
  }
  std::sort(in.begin(), in.end());
  return in;
}

using test::window;

TEST(Copc, TheOctreeOfTheSampleFile)
{
  auto const s = read_copc_summary(octree_file());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->center[0], 500064.0);
  EXPECT_EQ(s->halfsize, 64.0);
  EXPECT_EQ(s->spacing, 22.6);
  ASSERT_EQ(s->levels.size(), 6U);
  std::uint64_t nodes = 0, points = 0;
  for (auto const& l : s->levels) {
    nodes += l.nodes;
    points += l.points;
  }
  EXPECT_EQ(nodes, 1114U);
  EXPECT_EQ(points, 20000U);
  EXPECT_EQ(s->levels[0].nodes, 1U);
  EXPECT_EQ(s->levels[0].points, 32U);  // the root keeps 32 points
  EXPECT_EQ(s->levels[2].spacing, 22.6 / 4);
  // Not COPC: nothing.
  EXPECT_FALSE(read_copc_summary((test::data_dir() / "lazrs_variable_chunks_pf6.laz").string()).has_value());
}

TEST(Copc, AWindowKeepsEveryPointInItAndReadsLittleElse)
{
  auto whole = open_las_parts(octree_file(), 5000);
  // A square of 1 % of the file's area in its middle, one on its corner, one across a node edge
  // (x = 500032 is a boundary of levels 2-5), one outside the cube (nothing read).
  for (bounds const& w : {window(500045, 4100045, 500055, 4100055), window(500000, 4100000, 500010, 4100010),
                          window(500031, 4100060, 500033, 4100064), window(600000, 0, 600010, 10)}) {
    SCOPED_TRACE("window x " + std::to_string(w.xmin) + " .. " + std::to_string(w.xmax));
    auto part = open_las_parts(octree_file(), 5000);
    read_region region;
    region.window = w;
    region_report const r = part->restrict_to(region);
    EXPECT_EQ(r.sources, 1U);
    EXPECT_EQ(r.nodes, 1114U);
    EXPECT_EQ(r.points, 20000U);
    EXPECT_EQ(part->info().point_count.value_or(0), r.points_read);
    std::vector<point> const want = points_in(*whole, w);
    std::vector<point> const got = points_in(*part, w);
    EXPECT_EQ(got, want);
    if (w.xmin < 550000) {
      EXPECT_FALSE(want.empty());
      EXPECT_LT(r.nodes_read, r.nodes);
      // Issue #37's goal: 1 % of the area reads at most 5 % of the bytes.
      EXPECT_LE(static_cast<double>(r.bytes_read), 0.05 * static_cast<double>(r.bytes));
    } else {
      EXPECT_EQ(r.nodes_read, 0U);
      EXPECT_EQ(part->part_count().value_or(1), 0U);
    }
  }
}

TEST(Copc, LevelsReadDownToTheOneAskedFor)
{
  auto part = open_las_parts(octree_file(), 5000);
  read_region region;
  region.max_level = 2;
  region_report r = part->restrict_to(region);
  EXPECT_EQ(r.deepest, 5);
  EXPECT_EQ(r.deepest_read, 2);
  EXPECT_EQ(r.points_read, 32U + 128U + 512U);
  EXPECT_EQ(test::read_parts(*part, filter_options::keep_all()).points.size(), r.points_read);
  // auto: the first level whose spacing (22.6 / 2^L) is at most the cell: 7.1 -> level 2 (5.65),
  // a grid 10x coarser than the points' spacing reads under 20 % of them (issue #37's goal).
  read_region automatic;
  automatic.auto_level_cell = 7.1;
  r = part->restrict_to(automatic);
  EXPECT_EQ(r.deepest_read, 2);
  EXPECT_LE(static_cast<double>(r.points_read), 0.2 * static_cast<double>(r.points));
  automatic.auto_level_cell = 0.5;  // finer than the deepest level: every level
  r = part->restrict_to(automatic);
  EXPECT_EQ(r.deepest_read, 5);
  EXPECT_EQ(r.points_read, 20000U);
  // A restriction replaces the one before.
  r = part->restrict_to(read_region{});
  EXPECT_EQ(r.points_read, 20000U);
  EXPECT_EQ(part->info().point_count.value_or(0), 20000U);
}

TEST(Copc, OtherFilesIgnoreRestrictions)
{
  auto part = open_las_parts((test::data_dir() / "lazrs_variable_chunks_pf6.laz").string(), 5);
  read_region region;
  region.window = window(0, 0, 1, 1);
  region.max_level = 0;
  region_report const r = part->restrict_to(region);
  EXPECT_EQ(r.sources, 0U);
  EXPECT_EQ(test::read_parts(*part, filter_options::keep_all()).points.size(), 23U);
}

TEST(Copc, PdalsCopcFileWindowsAsItsLasTwin)
{
  auto const copc = shared_file("cloud/pdal/copc/1.2-with-color.copc.laz");
  auto const las = test::real_data_dir().empty() ? std::filesystem::path()
                                                 : test::real_data_dir() / "pdal/las_1.2-with-color.las";
  if (copc.empty() || las.empty() || !std::filesystem::exists(las)) {
    GTEST_SKIP() << "../shared/data/cloud/pdal/copc/1.2-with-color.copc.laz or its LAS twin not present";
  }
  auto const s = read_copc_summary(copc.string());
  ASSERT_TRUE(s.has_value());
  std::uint64_t nodes = 0;
  for (auto const& l : s->levels) { nodes += l.nodes; }
  EXPECT_EQ(nodes, 65U);  // the README's 65 variable-size chunks
  auto twin = open_las_parts(las.string(), 100);
  auto const h = read_las_header(las.string());
  double const xmid = (h.header_min[0] + h.header_max[0]) / 2, ymid = (h.header_min[1] + h.header_max[1]) / 2;
  double const dx = (h.header_max[0] - h.header_min[0]) / 5, dy = (h.header_max[1] - h.header_min[1]) / 5;
  for (bounds const& w : {window(xmid - dx, ymid - dy, xmid + dx, ymid + dy),
                          window(h.header_min[0], h.header_min[1], xmid, ymid)}) {
    auto part = open_las_parts(copc.string(), 100);
    read_region region;
    region.window = w;
    region_report const r = part->restrict_to(region);
    EXPECT_LT(r.nodes_read, r.nodes);
    std::vector<point> const want = points_in(*twin, w);
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(points_in(*part, w), want);
  }
}

TEST(Copc, AMalformedHierarchyIsNamedAndTheFileReadWholeButNotByLevel)
{
  // The root page's first entry (node 0-0-0-0: 32 points in 586 bytes at byte 691) gets level 40,
  // outside every level; or its bytes at 10^9, past the end of the file; or -5 points.
  struct damage {
    std::size_t field;  ///< the byte of the entry written: level (0), offset (16), point count (28)
    std::int64_t value;
    std::size_t width;  ///< 4 or 8 bytes, little-endian
    char const* named;
  };
  auto const dir = std::filesystem::temp_directory_path() / ("hg_copc_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto const bad = dir / "bad.copc.laz";
  for (auto const& d : {damage{0, 40, 4, "the key lies outside its level"},
                        damage{16, 1000000000, 8, "(node 0-0-0-0): 586 bytes at 1000000000 lie outside the file"},
                        damage{28, -5, 4, "entry 0 (node 0-0-0-0): a point count of -5"}}) {
    SCOPED_TRACE(d.named);
    std::filesystem::copy_file(octree_file(), bad, std::filesystem::copy_options::overwrite_existing);
    {
      std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(375 + 54 + 40);  // the info VLR's root page offset
      std::uint64_t page = 0;
      f.read(reinterpret_cast<char*>(&page), 8);
      f.seekp(static_cast<std::streamoff>(page + d.field));
      f.write(reinterpret_cast<char const*>(&d.value), static_cast<std::streamsize>(d.width));  // x86: little-endian
    }
    // Not COPC-readable any more, but its chunk table gives every point: read whole, with a warning.
    auto part = open_las_parts(bad.string(), 100);
    ASSERT_EQ(part->info().notes.size(), 1U);
    std::string const m = part->info().notes.front();
    EXPECT_NE(m.find("bad.copc.laz: COPC: the hierarchy page at byte"), std::string::npos) << m;
    EXPECT_NE(m.find(d.named), std::string::npos) << m;
    EXPECT_NE(m.find("the file is read whole, as plain LAZ"), std::string::npos) << m;
    read_region region;
    region.window = window(500045, 4100045, 500055, 4100055);
    EXPECT_EQ(part->restrict_to(region).sources, 0U);
    EXPECT_EQ(test::read_parts(*part, filter_options::keep_all(), 2).points.size(), 20000U);
    // Levels cannot be left out without the hierarchy: --copc-level is an input error naming it.
    read_region levels;
    levels.max_level = 2;
    try {
      (void)open_las_parts(bad.string(), 100)->restrict_to(levels);
      ADD_FAILURE() << "no error for a level";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      EXPECT_NE(std::string(e.what()).find(d.named), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("; --copc-level needs it"), std::string::npos) << e.what();
    }
    // read_copc_summary (info) names the problem.
    EXPECT_THROW((void)read_copc_summary(bad.string()), error);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace heightgrid::io
