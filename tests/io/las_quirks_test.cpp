// Public files that the format's reference readers read and heightgrid once refused (issue #37):
// PDAL's bad_vlr_count.las (a VLR count larger than the records that fit before the points) and
// lasR's LASlib-written example.copc.laz (its LASzip VLR says chunk size 0, its chunk table lists
// each chunk's points). Both readers (the
// sequential open_las_source and the parts of open_las_parts) must give laspy's points. The
// references below were read with laspy 2 + lazrs (x = X * scale + offset in float64, as here).
// The files stay in ../shared/data/{quirks,cloud}; the tests skip when they are absent.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "las_parts_helpers.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <numeric>
#include <string>

namespace heightgrid::io {
namespace {

/// A file of ../shared/data next to real/, or "" when it is not there.
std::filesystem::path shared_file(std::string const& relative)
{
  auto const real = test::real_data_dir();
  if (real.empty()) { return {}; }
  auto const path = real.parent_path() / relative;
  return std::filesystem::exists(path) ? path : std::filesystem::path();
}

struct laspy_reference {
  std::size_t points;
  double xmin, xmax, ymin, ymax, zmin, zmax, zsum;
};

void expect_points(test::xyz_points const& p, laspy_reference const& want)
{
  ASSERT_EQ(p.size(), want.points);
  EXPECT_EQ(*std::min_element(p.x.begin(), p.x.end()), want.xmin);
  EXPECT_EQ(*std::max_element(p.x.begin(), p.x.end()), want.xmax);
  EXPECT_EQ(*std::min_element(p.y.begin(), p.y.end()), want.ymin);
  EXPECT_EQ(*std::max_element(p.y.begin(), p.y.end()), want.ymax);
  EXPECT_EQ(*std::min_element(p.z.begin(), p.z.end()), want.zmin);
  EXPECT_EQ(*std::max_element(p.z.begin(), p.z.end()), want.zmax);
  EXPECT_NEAR(std::accumulate(p.z.begin(), p.z.end(), 0.0), want.zsum, 1e-6);
}

void expect_both_readers(std::filesystem::path const& path, laspy_reference const& want)
{
  SCOPED_TRACE(path.string());
  // The sequential reader.
  auto source = open_las_source(path.string());
  point_chunk chunk;
  test::xyz_points seq;
  while (source->read(chunk, 7)) {
    seq.x.insert(seq.x.end(), chunk.x.begin(), chunk.x.end());
    seq.y.insert(seq.y.end(), chunk.y.begin(), chunk.y.end());
    seq.z.insert(seq.z.end(), chunk.z.begin(), chunk.z.end());
  }
  expect_points(seq, want);
  // The parts, on two threads.
  auto parts = open_las_parts(path.string(), 4);
  expect_points(test::read_parts(*parts, filter_options::keep_all(), 2).points, want);
}

TEST(las_quirks, a_vlr_count_past_the_records_that_fit_reads_as_laspy_reads_it)
{
  auto const path = shared_file("quirks/pdal/bad_vlr_count.las");
  if (path.empty()) { GTEST_SKIP() << "../shared/data/quirks/pdal/bad_vlr_count.las not present"; }
  auto const h = read_las_header(path.string());
  ASSERT_EQ(h.notes.size(), 1U);
  EXPECT_NE(h.notes[0].find("the header counts 3 VLRs, but only 2 fit before the point data"), std::string::npos)
    << h.notes[0];
  expect_both_readers(path, {10, 289814.15, 289818.5, 4320978.61, 4320980.59, 170.58, 170.76, 1706.79});
}

TEST(las_quirks, a_laszip_chunk_size_of_0_reads_its_chunk_table_as_variable_size_chunks)
{
  auto const path = shared_file("cloud/lasR/example.copc.laz");
  if (path.empty()) { GTEST_SKIP() << "../shared/data/cloud/lasR/example.copc.laz not present"; }
  auto const h = read_las_header(path.string());
  ASSERT_TRUE(h.laz.has_value());
  EXPECT_TRUE(h.laz->chunk_size_zero);
  EXPECT_EQ(h.laz->chunk_count, 1U);
  EXPECT_TRUE(h.laz->variable_chunks());
  EXPECT_NE(h.laz->describe().find("the VLR's chunk size is 0"), std::string::npos) << h.laz->describe();
  expect_both_readers(path, {30, 339002.88899999997, 339015.11600000004, 5248000.001, 5248001.244, 973.145, 978.345,
                             29276.971999999998});
}

}  // namespace
}  // namespace heightgrid::io
