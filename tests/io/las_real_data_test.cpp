// The reader against the public LAS/LAZ files in ../shared/data/real (see its README.md).
// Expected counts and extents were computed independently with laspy 2.7 (x = X * scale +
// offset in float64, the same arithmetic) and are compared exactly.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/error.hpp"
#include "las_test_helpers.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <ogr_spatialref.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace heightgrid::io {
namespace {

struct expected_file {
  char const* path;
  std::uint64_t points;
  std::array<double, 3> min;
  std::array<double, 3> max;
  char const* crs_source;  ///< what the reader reports ("none" also for uninterpretable keys)
};

// clang-format off
expected_file const las_files[] = {
  {"lasR/Topography.las", 73403, {273357.14475, 5274357.1435, 788.99325}, {273642.8565, 5274642.8475, 829.75825}, "GeoTIFF keys"},
  {"laspy/1_4_w_evlr.las", 1000, {1694038.4456374517, 1816492.7062700584, 5592.7499174683535}, {1694539.677014474, 1816497.9762624602, 5599.069686751426}, "WKT VLR"},
  {"laspy/extrabytes.las", 1065, {635619.85, 848899.7000000001, 406.59000000000003}, {638982.55, 853535.43, 586.38}, "none"},
  {"laspy/file_with_both_wkt_and_geotiff_vlrs.las", 25408, {2445180.0, 604300.0, 1352.7}, {2445239.99, 604339.98, 1403.96}, "WKT VLR"},
  {"laspy/simple1_1.las", 1065, {635619.85, 848899.7000000001, 406.59000000000003}, {638982.55, 853535.43, 586.38}, "none"},
  // GeoTIFF keys present, but ProjLinearUnitsGeoKey holds 32632 and nothing else places it.
  {"laspy/simple1_3.las", 999, {-235434.519, 5800843.145, 265.094}, {-234935.84100000001, 5800946.249, 273.811}, "none"},
  {"laspy/simple1_4.las", 22600, {1.0, 1.0, 44.0}, {226.00000000000003, 100.00000000000003, 254.0}, "WKT EVLR"},
  {"laspy/vegetation_1_3.las", 10683, {-98451.205, -55975.417, -81460.091}, {-98447.447, -55969.405, -81455.203}, "none"},
  {"libLAS/1.0_0.las", 1, {470692.44, 4602888.9, 16.0}, {470692.44, 4602888.9, 16.0}, "GeoTIFF keys"},
  {"libLAS/certainty3d-color-utm-feet-navd88.las", 10126, {6326726.536119972, 2068062.3854304668, 2700.530350052097}, {6330162.95106186, 2071932.2402228485, 2975.7118861604704}, "GeoTIFF keys"},
  {"pdal/las_1.2-with-color.las", 1065, {635619.85, 848899.7000000001, 406.59000000000003}, {638982.55, 853535.43, 586.38}, "none"},
  {"pdal/las_autzen_trim.las", 110000, {636001.76, 848935.2000000001, 406.26}, {637179.22, 849497.9, 520.51}, "WKT VLR"},
  {"pdal/las_autzen_trim_7.las", 110000, {636001.76, 848935.2000000001, 406.26}, {637179.22, 849497.9, 520.51}, "WKT VLR"},
  {"pdal/las_epsg_4326.las", 5380, {-94.68346539999999, 31.0367341, 39.0810002}, {-94.66063109999999, 31.0473291, 78.1190002}, "GeoTIFF keys"},
  {"pdal/las_simple.las", 1065, {635619.85, 848899.7000000001, 406.59000000000003}, {638982.55, 853535.43, 586.38}, "none"},
  {"pdal/las_test1_4.las", 1000, {1694038.4456374517, 1816492.7062700584, 5592.7499174683535}, {1694539.677014474, 1816497.9762624602, 5599.069686751426}, "WKT VLR"},
};

struct expected_laz {
  char const* path;
  std::uint64_t points;
  int format;
};

expected_laz const laz_files[] = {
  {"lasR/las14_pdrf6.laz", 135, 6},      {"laspy/fullwave.laz", 10750, 10},
  {"laspy/plane.laz", 28185, 3},         {"laspy/simple.laz", 1065, 3},
  {"lidR/Topography.laz", 73403, 1},     {"pdal/laz_autzen_trim.laz", 110000, 3},
};
// clang-format on

std::filesystem::path real_dir()
{
  return test::real_data_dir();
}

#define REQUIRE_REAL_DATA()                                                                     \
  if (real_dir().empty()) { GTEST_SKIP() << "HEIGHTGRID_REAL_DATA_DIR (../shared/data/real) not present"; }

std::array<double, 6> extents(point_chunk const& c)
{
  auto const [x0, x1] = std::minmax_element(c.x.begin(), c.x.end());
  auto const [y0, y1] = std::minmax_element(c.y.begin(), c.y.end());
  auto const [z0, z1] = std::minmax_element(c.z.begin(), c.z.end());
  return {*x0, *y0, *z0, *x1, *y1, *z1};
}

TEST(las_real_data, every_las_file_reads_with_its_count_extents_and_crs)
{
  REQUIRE_REAL_DATA();
  for (auto const& f : las_files) {
    SCOPED_TRACE(f.path);
    std::string const path = (real_dir() / f.path).string();
    auto const h = read_las_header(path);
    EXPECT_EQ(h.point_count, f.points);
    EXPECT_FALSE(h.compressed);
    EXPECT_EQ(h.crs_source, f.crs_source) << h.crs_note;
    EXPECT_EQ(h.crs_wkt.empty(), std::string(f.crs_source) == "none");
    if (!h.crs_wkt.empty()) {
      OGRSpatialReference srs;
      EXPECT_EQ(srs.importFromWkt(h.crs_wkt.c_str()), OGRERR_NONE) << h.crs_wkt;
    }
    auto const points = test::read_all_las(path, 4096, 1000);
    ASSERT_EQ(points.size(), f.points);
    auto const e = extents(points);
    EXPECT_EQ(e[0], f.min[0]);
    EXPECT_EQ(e[1], f.min[1]);
    EXPECT_EQ(e[2], f.min[2]);
    EXPECT_EQ(e[3], f.max[0]);
    EXPECT_EQ(e[4], f.max[1]);
    EXPECT_EQ(e[5], f.max[2]);
    auto source = open_las_source(path);
    EXPECT_EQ(source->info().point_count, std::optional<std::uint64_t>(f.points));
    EXPECT_EQ(source->info().crs_wkt, h.crs_wkt);
  }
}

TEST(las_real_data, every_las_file_in_the_directory_is_covered)
{
  REQUIRE_REAL_DATA();
  std::set<std::string> listed;
  for (auto const& f : las_files) { listed.insert(f.path); }
  for (auto const& entry : std::filesystem::recursive_directory_iterator(real_dir())) {
    if (entry.path().extension() == ".las") {
      auto const rel = std::filesystem::relative(entry.path(), real_dir()).generic_string();
      EXPECT_TRUE(listed.count(rel) == 1) << rel << " is not in the expectations";
      EXPECT_NO_THROW((void)test::read_all_las(entry.path().string())) << rel;
    }
  }
}

TEST(las_real_data, autzen_las12_pdrf3_and_las14_pdrf7_give_identical_points)
{
  REQUIRE_REAL_DATA();
  auto const a = test::read_all_las((real_dir() / "pdal/las_autzen_trim.las").string());
  auto const b = test::read_all_las((real_dir() / "pdal/las_autzen_trim_7.las").string());
  ASSERT_EQ(a.size(), 110000U);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.z, b.z);
  EXPECT_EQ(a.classification, b.classification);
  EXPECT_EQ(a.return_number, b.return_number);
  EXPECT_EQ(a.number_of_returns, b.number_of_returns);
  EXPECT_EQ(a.flags, b.flags);
}

TEST(las_real_data, wrong_header_bounds_are_not_used)
{
  REQUIRE_REAL_DATA();
  // simple1_3 stores unscaled integers as its bounds; certainty3d's are up to ~459 ft too wide.
  for (char const* name : {"laspy/simple1_3.las", "libLAS/certainty3d-color-utm-feet-navd88.las"}) {
    SCOPED_TRACE(name);
    std::string const path = (real_dir() / name).string();
    auto const h = read_las_header(path);
    auto const e = extents(test::read_all_las(path));
    EXPECT_NE(h.header_min[0], e[0]);
    for (auto const& f : las_files) {
      if (std::string(f.path) == name) {
        EXPECT_EQ(e[0], f.min[0]);
        EXPECT_EQ(e[3], f.max[0]);
        EXPECT_EQ(e[1], f.min[1]);
        EXPECT_EQ(e[4], f.max[1]);
      }
    }
  }
}

TEST(las_real_data, crs_details)
{
  REQUIRE_REAL_DATA();
  auto const epsg4326 = read_las_header((real_dir() / "pdal/las_epsg_4326.las").string());
  OGRSpatialReference got;
  OGRSpatialReference wgs84;
  ASSERT_EQ(got.importFromWkt(epsg4326.crs_wkt.c_str()), OGRERR_NONE);
  ASSERT_EQ(wgs84.importFromEPSG(4326), OGRERR_NONE);
  EXPECT_TRUE(got.IsSame(&wgs84)) << epsg4326.crs_wkt;

  auto const navd88 = read_las_header((real_dir() / "libLAS/certainty3d-color-utm-feet-navd88.las").string());
  EXPECT_EQ(navd88.vertical_units, "US survey foot");
  EXPECT_NE(navd88.crs_wkt.find("NAVD88"), std::string::npos) << navd88.crs_wkt;

  // Both records: the WKT wins and is passed on verbatim.
  auto const both = read_las_header((real_dir() / "laspy/file_with_both_wkt_and_geotiff_vlrs.las").string());
  EXPECT_FALSE(both.geotiff_keys.empty());
  EXPECT_EQ(both.crs_wkt, both.wkt_record);
  EXPECT_EQ(both.crs_source, "WKT VLR");

  auto const autzen = read_las_header((real_dir() / "pdal/las_autzen_trim.las").string());
  EXPECT_EQ(autzen.crs_wkt, autzen.wkt_record);
  EXPECT_NE(autzen.crs_wkt.find("Lambert"), std::string::npos);

  auto const broken = read_las_header((real_dir() / "laspy/simple1_3.las").string());
  EXPECT_FALSE(broken.geotiff_keys.empty());
  EXPECT_NE(broken.crs_note.find("GeoTIFF keys present but not interpretable"), std::string::npos)
    << broken.crs_note;
  EXPECT_EQ(broken.vertical_units, "metre");

  auto const liblas10 = read_las_header((real_dir() / "libLAS/1.0_0.las").string());
  EXPECT_EQ(liblas10.version_minor, 0);
  EXPECT_NE(liblas10.crs_wkt.find("UTM zone 15N"), std::string::npos) << liblas10.crs_wkt;
}

TEST(las_real_data, extra_bytes_and_waveform_records_are_skipped)
{
  REQUIRE_REAL_DATA();
  auto const extra = read_las_header((real_dir() / "laspy/extrabytes.las").string());
  EXPECT_EQ(extra.record_length, 61);
  EXPECT_EQ(extra.extra_bytes, 61 - 34);
  auto const wave = read_las_header((real_dir() / "laspy/simple1_3.las").string());
  EXPECT_EQ(wave.point_format, 4);
  // Same points as the plain copies of "simple".
  auto const a = test::read_all_las((real_dir() / "laspy/extrabytes.las").string());
  auto const b = test::read_all_las((real_dir() / "pdal/las_simple.las").string());
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.z, b.z);
  EXPECT_EQ(a.classification, b.classification);
}

TEST(las_real_data, laz_files_have_readable_headers_and_their_points)
{
  REQUIRE_REAL_DATA();
  for (auto const& f : laz_files) {
    SCOPED_TRACE(f.path);
    std::string const path = (real_dir() / f.path).string();
    auto const h = read_las_header(path);
    EXPECT_TRUE(h.compressed);
    EXPECT_EQ(h.point_count, f.points);
    EXPECT_EQ(h.point_format, f.format);
    EXPECT_NE(h.format_name().find("(LAZ)"), std::string::npos);
    ASSERT_TRUE(h.laz.has_value());
    EXPECT_EQ(h.laz->compressor, h.point_format >= 6 ? 3 : 2);
    // The points themselves are checked in laz_real_data_test.cpp; here only that they come.
    EXPECT_EQ(test::read_all_las(path).size(), f.points);
  }
}

}  // namespace
}  // namespace heightgrid::io
