// las_writer → open_las_source round trips: every version/format the writer supports, at the
// sizes around block boundaries, with CRS, extra bytes, 64-bit counts and EVLRs.

#include "heightgrid/io/las_writer.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "las_test_helpers.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>
#include <ogr_spatialref.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

namespace heightgrid::io {
namespace {

using test::get;

/// Points whose coordinates lie on the 0.01 grid around the offsets (so they quantise exactly)
/// with attributes cycling through what `format` can hold.
std::vector<las_point> make_points(std::size_t n, int format)
{
  bool const extended = format >= 6;
  std::vector<las_point> points(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto const k = static_cast<std::int64_t>(i);
    las_point& p = points[i];
    p.x = static_cast<double>((k * 7919) % 200001 - 100000) * 0.01 + 500000.0;
    p.y = static_cast<double>((k * 104729) % 300007 - 150000) * 0.01 + 4000000.0;
    p.z = static_cast<double>((k * 31337) % 50021 - 2000) * 0.01 + 100.0;
    p.intensity = static_cast<std::uint16_t>(i * 2654435761U);
    unsigned const max_returns = extended ? 15 : 7;
    p.number_of_returns = static_cast<std::uint8_t>(1 + i % max_returns);
    p.return_number = static_cast<std::uint8_t>(1 + (i / 3) % p.number_of_returns);
    p.classification = static_cast<std::uint8_t>(extended ? (i * 37) % 256 : (i * 37) % 32);
    p.flags = static_cast<std::uint8_t>(extended ? (i / 5) % 16 : (i / 5) % 8);
    p.gps_time = static_cast<double>(i) * 0.125 + 86400.5;
    p.red = static_cast<std::uint16_t>(i * 3);
    p.green = static_cast<std::uint16_t>(i * 5 + 1);
    p.blue = static_cast<std::uint16_t>(65535 - i);
  }
  return points;
}

las_write_options options_for(int minor, int format)
{
  las_write_options o;
  o.version_minor = minor;
  o.point_format = format;
  o.offset = {500000.0, 4000000.0, 100.0};
  return o;
}

void expect_same_points(std::vector<las_point> const& expected, point_chunk const& got)
{
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got.x[i], expected[i].x);
    EXPECT_EQ(got.y[i], expected[i].y);
    EXPECT_EQ(got.z[i], expected[i].z);
    EXPECT_EQ(got.classification[i], expected[i].classification);
    EXPECT_EQ(got.return_number[i], expected[i].return_number);
    EXPECT_EQ(got.number_of_returns[i], expected[i].number_of_returns);
    EXPECT_EQ(got.flags[i], expected[i].flags);
    if (::testing::Test::HasFailure()) { return; }
  }
}

/// Attributes point_chunk does not carry (intensity, GPS time, RGB), read from the records.
void expect_raw_attributes(std::vector<std::uint8_t> const& bytes, las_header_info const& h,
                           std::vector<las_point> const& expected)
{
  std::size_t const gps_at = h.point_format >= 6 ? 22 : 20;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    std::size_t const r = h.offset_to_point_data + i * h.record_length;
    ASSERT_EQ(get<std::uint16_t>(bytes, r + 12), expected[i].intensity) << i;
    if (h.point_format != 0) { ASSERT_EQ(get<double>(bytes, r + gps_at), expected[i].gps_time) << i; }
    if (h.point_format == 3) {
      ASSERT_EQ(get<std::uint16_t>(bytes, r + 28), expected[i].red) << i;
      ASSERT_EQ(get<std::uint16_t>(bytes, r + 30), expected[i].green) << i;
      ASSERT_EQ(get<std::uint16_t>(bytes, r + 32), expected[i].blue) << i;
    }
  }
}

class las_round_trip : public ::testing::TestWithParam<std::tuple<int, int, std::size_t>> {};

TEST_P(las_round_trip, points_attributes_and_header)
{
  auto const [minor, format, n] = GetParam();
  auto const dir = test::las_scratch_dir();
  std::string const path = (dir / "rt.las").string();
  auto const points = make_points(n, format);
  write_las(path, points, options_for(minor, format));

  auto const h = read_las_header(path);
  EXPECT_EQ(h.version_major, 1);
  EXPECT_EQ(h.version_minor, minor);
  EXPECT_EQ(h.point_format, format);
  EXPECT_EQ(h.point_count, n);
  EXPECT_FALSE(h.compressed);
  EXPECT_EQ(h.crs_source, "none");
  EXPECT_TRUE(h.crs_wkt.empty());

  // Chunk sizes around the request size and the internal block size.
  for (std::size_t max_points : {std::size_t{1}, std::size_t{32}, std::size_t{1} << 20}) {
    SCOPED_TRACE(max_points);
    expect_same_points(points, test::read_all_las(path, max_points, 7));
  }
  expect_raw_attributes(test::file_bytes(path), h, points);

  std::array<std::uint64_t, 15> by_return{};
  // Before 1.4 the header counts returns 1-5 only.
  std::size_t const counted = minor >= 4 ? 15 : 5;
  for (auto const& p : points) {
    if (p.return_number <= counted) { ++by_return[p.return_number - 1U]; }
  }
  EXPECT_EQ(h.points_by_return, by_return);
  if (n > 0) {
    for (std::size_t a = 0; a < 3; ++a) {
      auto const coordinate = [a](las_point const& p) { return a == 0 ? p.x : (a == 1 ? p.y : p.z); };
      auto const [lo, hi] = std::minmax_element(points.begin(), points.end(), [&](auto const& l, auto const& r) {
        return coordinate(l) < coordinate(r);
      });
      EXPECT_EQ(h.header_min[a], coordinate(*lo));
      EXPECT_EQ(h.header_max[a], coordinate(*hi));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(versions_formats_sizes, las_round_trip,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Values(0, 1, 3),
                                            ::testing::Values(0, 1, 31, 32, 33, 65, 70000)));
INSTANTIATE_TEST_SUITE_P(format6, las_round_trip,
                         ::testing::Combine(::testing::Values(4), ::testing::Values(6),
                                            ::testing::Values(0, 1, 31, 32, 33, 65, 70000)));

TEST(las_writer, crs_round_trip_las14_keeps_wkt_verbatim)
{
  auto const dir = test::las_scratch_dir();
  OGRSpatialReference srs;
  ASSERT_EQ(srs.importFromEPSG(32615), OGRERR_NONE);
  char* raw = nullptr;
  srs.exportToWkt(&raw);
  std::string const wkt = raw;
  CPLFree(raw);
  for (int format : {1, 6}) {
    std::string const path = (dir / ("crs" + std::to_string(format) + ".las")).string();
    auto o = options_for(4, format);
    o.crs_wkt = wkt;
    write_las(path, make_points(10, format), o);
    auto const h = read_las_header(path);
    EXPECT_EQ(h.crs_source, "WKT VLR");
    EXPECT_EQ(h.crs_wkt, wkt);
    EXPECT_EQ(h.global_encoding & 0x10, 0x10) << "WKT bit";
    auto source = open_las_source(path);
    EXPECT_EQ(source->info().crs_wkt, wkt);
  }
}

TEST(las_writer, crs_round_trip_las12_through_geotiff_keys)
{
  auto const dir = test::las_scratch_dir();
  std::string const path = (dir / "crs.las").string();
  auto o = options_for(2, 3);
  o.crs_wkt = "EPSG:32615";
  write_las(path, make_points(10, 3), o);
  auto const h = read_las_header(path);
  EXPECT_EQ(h.crs_source, "GeoTIFF keys");
  EXPECT_FALSE(h.geotiff_keys.empty());
  EXPECT_TRUE(h.wkt_record.empty()) << "LAS 1.2 stores no WKT record";
  OGRSpatialReference expected;
  OGRSpatialReference got;
  ASSERT_EQ(expected.importFromEPSG(32615), OGRERR_NONE);
  ASSERT_EQ(got.importFromWkt(h.crs_wkt.c_str()), OGRERR_NONE);
  EXPECT_TRUE(got.IsSame(&expected)) << h.crs_wkt;
}

TEST(las_writer, compound_crs_reports_vertical_units)
{
  auto const dir = test::las_scratch_dir();
  // NAD83 / UTM 15N + NAVD88 height (ftUS)
  for (int minor : {2, 4}) {
    std::string const path = (dir / ("c" + std::to_string(minor) + ".las")).string();
    auto o = options_for(minor, 1);
    o.crs_wkt = "EPSG:26915+6360";
    write_las(path, make_points(3, 1), o);
    auto const h = read_las_header(path);
    EXPECT_EQ(h.vertical_units, "US survey foot") << minor << " " << h.crs_wkt;
  }
}

TEST(las_writer, evlr_with_wkt)
{
  auto const dir = test::las_scratch_dir();
  std::string const path = (dir / "evlr.las").string();
  auto o = options_for(4, 6);
  o.crs_wkt = "EPSG:4326";
  o.crs_in_evlr = true;
  auto const points = make_points(100, 6);
  write_las(path, points, o);
  auto const h = read_las_header(path);
  EXPECT_EQ(h.evlr_count, 1U);
  EXPECT_EQ(h.evlr_start, h.offset_to_point_data + 100ULL * h.record_length);
  ASSERT_EQ(h.vlrs.size(), 1U);
  EXPECT_TRUE(h.vlrs[0].extended);
  EXPECT_EQ(h.vlrs[0].user_id, "LASF_Projection");
  EXPECT_EQ(h.vlrs[0].record_id, 2112);
  EXPECT_EQ(h.crs_source, "WKT EVLR");
  OGRSpatialReference got;
  ASSERT_EQ(got.importFromWkt(h.crs_wkt.c_str()), OGRERR_NONE);
  EXPECT_TRUE(got.IsGeographic());
  expect_same_points(points, test::read_all_las(path));
}

TEST(las_writer, extra_bytes_are_skipped_by_the_reader)
{
  auto const dir = test::las_scratch_dir();
  for (auto const& [minor, format, extra] : {std::tuple{2, 1, 5}, std::tuple{4, 6, 300}, std::tuple{4, 0, 1}}) {
    std::string const path = (dir / ("x" + std::to_string(format) + ".las")).string();
    auto o = options_for(minor, format);
    o.extra_bytes = static_cast<std::uint16_t>(extra);
    auto const points = make_points(77, format);
    write_las(path, points, o);
    auto const h = read_las_header(path);
    EXPECT_EQ(h.extra_bytes, extra);
    EXPECT_EQ(h.record_length, (format == 6 ? 30 : (format == 1 ? 28 : 20)) + extra);
    expect_same_points(points, test::read_all_las(path, 10, 3));
  }
}

TEST(las_writer, las14_format6_has_64bit_count_and_zero_legacy_count)
{
  auto const dir = test::las_scratch_dir();
  std::string const path = (dir / "c.las").string();
  write_las(path, make_points(1234, 6), options_for(4, 6));
  auto const bytes = test::file_bytes(path);
  EXPECT_EQ(test::get<std::uint32_t>(bytes, 107), 0U) << "legacy count";
  EXPECT_EQ(test::get<std::uint64_t>(bytes, 247), 1234U);
  auto const h = read_las_header(path);
  EXPECT_EQ(h.legacy_point_count, 0U);
  EXPECT_EQ(h.point_count, 1234U);
  auto source = open_las_source(path);
  EXPECT_EQ(source->info().point_count, std::optional<std::uint64_t>(1234));
  EXPECT_EQ(test::read_all_las(path).size(), 1234U);
}

TEST(las_writer, las14_legacy_formats_fill_both_counts)
{
  auto const dir = test::las_scratch_dir();
  std::string const path = (dir / "c.las").string();
  write_las(path, make_points(50, 1), options_for(4, 1));
  auto const bytes = test::file_bytes(path);
  EXPECT_EQ(test::get<std::uint32_t>(bytes, 107), 50U);
  EXPECT_EQ(test::get<std::uint64_t>(bytes, 247), 50U);
}

TEST(las_writer, point_chunk_input)
{
  auto const dir = test::las_scratch_dir();
  std::string const path = (dir / "chunk.las").string();
  point_chunk chunk;
  chunk.x = {1.25, 2.5, -3.75};
  chunk.y = {10.0, 20.0, 30.0};
  chunk.z = {0.5, -0.5, 100.0};
  chunk.classification = {2, 6, 9};
  {
    las_writer w(path, options_for(2, 0));
    w.write(chunk);
    EXPECT_EQ(w.point_count(), 3U);
  }  // the destructor closes
  auto const got = test::read_all_las(path);
  EXPECT_EQ(got.x, chunk.x);
  EXPECT_EQ(got.y, chunk.y);
  EXPECT_EQ(got.z, chunk.z);
  EXPECT_EQ(got.classification, chunk.classification);
  EXPECT_EQ(got.return_number, (std::vector<std::uint8_t>{1, 1, 1}));
  EXPECT_EQ(got.number_of_returns, (std::vector<std::uint8_t>{1, 1, 1}));
  EXPECT_EQ(got.flags, (std::vector<std::uint8_t>{0, 0, 0}));
}

TEST(las_writer, rejects_what_it_cannot_write)
{
  auto const dir = test::las_scratch_dir();
  std::string const path = (dir / "r.las").string();
  auto usage = [&](las_write_options const& o) {
    try {
      las_writer w(path, o);
      ADD_FAILURE() << "accepted";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
    }
  };
  usage(options_for(3, 1));
  usage(options_for(2, 6));
  usage(options_for(4, 2));
  auto o = options_for(2, 1);
  o.scale[1] = 0;
  usage(o);
  o = options_for(2, 1);
  o.crs_in_evlr = true;
  o.crs_wkt = "EPSG:4326";
  usage(o);
  o = options_for(4, 1);
  o.crs_wkt = "not a crs at all";
  usage(o);

  auto output = [&](las_point const& p, int format) {
    las_writer w(path, options_for(4, format));
    try {
      w.write(&p, 1);
      ADD_FAILURE() << "accepted";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::output) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    }
    w.close();
    EXPECT_EQ(w.point_count(), 0U);
  };
  las_point p;
  p.x = 1e12;  // 1e14 steps of 0.01: outside int32
  output(p, 1);
  p = las_point{};
  p.classification = 32;
  output(p, 1);
  p = las_point{};
  p.flags = point_flag::overlap;
  output(p, 3);
  p = las_point{};
  p.return_number = 8;
  output(p, 0);
  p.return_number = 16;
  output(p, 6);
}

TEST(las_writer, move_assignment_closes_the_overwritten_writer)
{
  auto const dir = test::las_scratch_dir();
  std::string const a = (dir / "a.las").string();
  std::string const b = (dir / "b.las").string();
  las_writer w(a, options_for(2, 0));
  w.write(make_points(5, 0));
  w = las_writer(b, options_for(4, 6));
  w.write(make_points(7, 6));
  EXPECT_EQ(read_las_header(a).point_count, 5U);
  w.close();
  EXPECT_EQ(read_las_header(b).point_count, 7U);
}

TEST(las_writer, unwinding_removes_the_partial_file)
{
  auto const dir = test::las_scratch_dir();
  auto const path = dir / "partial.las";
  try {
    las_writer w(path.string(), options_for(2, 0));
    w.write(make_points(10, 0));
    throw std::runtime_error("caller failed");
  } catch (std::runtime_error const&) {
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace heightgrid::io
