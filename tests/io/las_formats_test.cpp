// The reader against LAS files assembled byte by byte here, from the ASPRS tables (offsets
// written out as numbers, independent of the reader's own layout constants): every point data
// record format 0-10, versions 1.0-1.4, extra bytes, waveform fields, both point counts, LAZ.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/error.hpp"
#include "las_test_helpers.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace heightgrid::io {
namespace {

using test::put;

using test::build_las;
using test::las_spec;
using test::raw_point;

std::vector<raw_point> sample_points(bool extended)
{
  std::vector<raw_point> out;
  std::int32_t const extremes[] = {std::numeric_limits<std::int32_t>::min(), -1, 0, 1, 123456789,
                                   std::numeric_limits<std::int32_t>::max()};
  for (std::uint8_t i = 0; i < 40; ++i) {
    raw_point p{};
    p.x = extremes[i % 6];
    p.y = extremes[(i + 2) % 6] / 3;
    p.z = extremes[(i + 4) % 6] / -7;
    p.number_of_returns = static_cast<std::uint8_t>(1 + i % (extended ? 15 : 7));
    p.return_number = static_cast<std::uint8_t>(1 + (i / 2) % p.number_of_returns);
    p.classification = static_cast<std::uint8_t>(extended ? i * 6 : i % 32);
    p.flags = static_cast<std::uint8_t>(extended ? i % 16 : i % 8);
    p.channel = static_cast<std::uint8_t>(i % 4);
    p.scan_direction = (i % 3) == 0;
    p.edge = (i % 5) == 0;
    out.push_back(p);
  }
  return out;
}

void expect_decoded(las_spec const& s, std::vector<raw_point> const& points, point_chunk const& got)
{
  ASSERT_EQ(got.size(), points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(i);
    raw_point const& p = points[i];
    EXPECT_EQ(got.x[i], static_cast<double>(p.x) * s.scale[0] + s.offset[0]);
    EXPECT_EQ(got.y[i], static_cast<double>(p.y) * s.scale[1] + s.offset[1]);
    EXPECT_EQ(got.z[i], static_cast<double>(p.z) * s.scale[2] + s.offset[2]);
    EXPECT_EQ(got.return_number[i], p.return_number);
    EXPECT_EQ(got.number_of_returns[i], p.number_of_returns);
    EXPECT_EQ(got.classification[i], p.classification);
    EXPECT_EQ(got.flags[i], p.flags);
  }
}

class las_format : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(las_format, decodes_every_field_the_chunk_carries)
{
  auto const [minor, format] = GetParam();
  auto const dir = test::las_scratch_dir();
  for (std::uint16_t extra : {0, 7}) {
    las_spec s;
    s.minor = minor;
    s.format = format;
    s.extra = extra;
    auto const points = sample_points(format >= 6);
    auto const path = (dir / ("f" + std::to_string(format) + "_" + std::to_string(extra) + ".las")).string();
    test::write_bytes(path, build_las(s, points));
    auto const h = read_las_header(path);
    EXPECT_EQ(h.point_format, format);
    EXPECT_EQ(h.version_minor, minor);
    EXPECT_EQ(h.extra_bytes, extra);
    EXPECT_EQ(h.point_count, points.size());
    expect_decoded(s, points, test::read_all_las(path, 9, 4));
    auto source = open_las_source(path);
    EXPECT_EQ(source->info().format, "LAS 1." + std::to_string(minor) + " PDRF " + std::to_string(format));
  }
}

INSTANTIATE_TEST_SUITE_P(all, las_format,
                         ::testing::Values(std::tuple{0, 0}, std::tuple{0, 1}, std::tuple{1, 0}, std::tuple{1, 1},
                                           std::tuple{2, 0}, std::tuple{2, 1}, std::tuple{2, 2}, std::tuple{2, 3},
                                           std::tuple{3, 4}, std::tuple{3, 5}, std::tuple{4, 0}, std::tuple{4, 3},
                                           std::tuple{4, 6}, std::tuple{4, 7}, std::tuple{4, 8}, std::tuple{4, 9},
                                           std::tuple{4, 10}));

TEST(las_reader, las14_with_only_the_legacy_count)
{
  auto const dir = test::las_scratch_dir();
  las_spec s;
  s.minor = 4;
  s.format = 1;
  s.count64 = false;
  auto const points = sample_points(false);
  auto const path = (dir / "legacy.las").string();
  test::write_bytes(path, build_las(s, points));
  EXPECT_EQ(read_las_header(path).point_count, points.size());
  expect_decoded(s, points, test::read_all_las(path));
}

TEST(las_reader, las14_counts_that_disagree_are_an_error)
{
  auto const dir = test::las_scratch_dir();
  las_spec s;
  s.minor = 4;
  s.format = 1;
  auto bytes = build_las(s, sample_points(false));
  put(bytes, 107, std::uint32_t{39});
  auto const path = (dir / "disagree.las").string();
  test::write_bytes(path, bytes);
  auto const message = test::expect_input_error([&] { (void)read_las_header(path); }, path);
  EXPECT_NE(message.find("byte 107"), std::string::npos) << message;
}

TEST(las_reader, zero_points)
{
  auto const dir = test::las_scratch_dir();
  auto const path = (dir / "empty.las").string();
  test::write_bytes(path, build_las(las_spec{}, {}));
  auto source = open_las_source(path);
  EXPECT_EQ(source->info().point_count, std::optional<std::uint64_t>(0));
  point_chunk chunk;
  chunk.x = {1.0};
  EXPECT_FALSE(source->read(chunk, 100));
  EXPECT_TRUE(chunk.empty());
}

TEST(las_reader, read_needs_a_positive_request)
{
  auto const dir = test::las_scratch_dir();
  auto const path = (dir / "p.las").string();
  test::write_bytes(path, build_las(las_spec{}, sample_points(false)));
  auto source = open_las_source(path);
  point_chunk chunk;
  EXPECT_THROW((void)source->read(chunk, 0), error);
  EXPECT_THROW((void)open_las_source(path, las_read_options{0}), error);
}

TEST(las_reader, chunks_replace_the_previous_contents)
{
  auto const dir = test::las_scratch_dir();
  auto const path = (dir / "p.las").string();
  las_spec s;
  auto const points = sample_points(false);
  test::write_bytes(path, build_las(s, points));
  auto source = open_las_source(path, las_read_options{3});
  point_chunk chunk;
  std::size_t total = 0;
  std::vector<std::size_t> sizes;
  while (source->read(chunk, 16)) {
    sizes.push_back(chunk.size());
    EXPECT_EQ(chunk.x[0], static_cast<double>(points[total].x) * s.scale[0] + s.offset[0]);
    total += chunk.size();
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{16, 16, 8}));
}

TEST(las_reader, laz_format_bits_without_a_laszip_vlr_are_an_error)
{
  auto const dir = test::las_scratch_dir();
  auto bytes = build_las(las_spec{}, sample_points(false));
  // LASzip marks the format byte with bit 7; the point data is then much shorter than
  // count * record length, which must not be reported as truncation.
  bytes[104] |= 0x80;
  bytes.resize(bytes.size() / 3);
  auto const path = (dir / "marked.laz").string();
  test::write_bytes(path, bytes);
  auto const h = read_las_header(path);
  EXPECT_TRUE(h.compressed);
  EXPECT_EQ(h.point_format, 0);
  EXPECT_FALSE(h.laz.has_value());
  auto const message = test::expect_input_error([&] { (void)open_las_source(path); }, path);
  EXPECT_NE(message.find("byte 104"), std::string::npos) << message;
  EXPECT_NE(message.find("no LASzip VLR"), std::string::npos) << message;
}

/// Inserts a VLR after the 227-byte header of a LAS 1.0-1.2 file from build_las.
void add_vlr(std::vector<std::uint8_t>& bytes, std::string const& user, std::uint16_t id,
             std::vector<std::uint8_t> const& payload)
{
  std::uint32_t const offset = test::get<std::uint32_t>(bytes, 96);
  std::vector<std::uint8_t> vlr(54, 0);
  std::memcpy(vlr.data() + 2, user.data(), user.size());
  put(vlr, 18, id);
  put(vlr, 20, static_cast<std::uint16_t>(payload.size()));
  vlr.insert(vlr.end(), payload.begin(), payload.end());
  bytes.insert(bytes.begin() + offset, vlr.begin(), vlr.end());
  put(bytes, 96, static_cast<std::uint32_t>(offset + vlr.size()));
  put(bytes, 100, test::get<std::uint32_t>(bytes, 100) + 1);
}

TEST(las_reader, geotiff_records_shorter_than_one_value)
{
  // Found by las_header_fuzz: a 1-byte key directory and a 7-byte double record hold no value.
  auto bytes = build_las(las_spec{}, sample_points(false));
  add_vlr(bytes, "LASF_Projection", 34735, {1});
  add_vlr(bytes, "LASF_Projection", 34736, {1, 2, 3, 4, 5, 6, 7});
  auto const h = parse_las_header(bytes.data(), bytes.size(), "short.las");
  EXPECT_TRUE(h.geotiff_keys.directory.empty());
  EXPECT_TRUE(h.geotiff_keys.doubles.empty());
  EXPECT_EQ(h.vlrs.size(), 2U);
  EXPECT_EQ(h.point_count, 40U);
}

TEST(las_reader, an_empty_laszip_vlr_is_an_error_at_its_payload)
{
  auto const dir = test::las_scratch_dir();
  auto bytes = build_las(las_spec{}, {});
  // One 54-byte VLR ("laszip encoded", 22204, no data) between header and points.
  add_vlr(bytes, "laszip encoded", 22204, {});
  auto const path = (dir / "vlr.laz").string();
  test::write_bytes(path, bytes);
  // The VLR's header is at byte 227, its (missing) payload at 227 + 54.
  auto const message = test::expect_input_error([&] { (void)read_las_header(path); }, path);
  EXPECT_NE(message.find("byte 281: LASzip VLR is 0 bytes"), std::string::npos) << message;
}

}  // namespace
}  // namespace heightgrid::io
