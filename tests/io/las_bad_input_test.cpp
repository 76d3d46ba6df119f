// Malformed LAS input: each case is a written file with a few bytes changed, and each must give
// error_kind::input with the file name, the byte offset and what is wrong.

#include "heightgrid/io/las_reader.hpp"
#include "heightgrid/io/las_writer.hpp"

#include "heightgrid/core/error.hpp"
#include "las_test_helpers.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace heightgrid::io {
namespace {

using test::get;
using test::put;

class las_bad_input : public ::testing::Test {
 protected:
  void SetUp() override
  {
    dir_ = test::las_scratch_dir();
    std::vector<las_point> points(100);
    for (std::size_t i = 0; i < points.size(); ++i) {
      points[i].x = static_cast<double>(i);
      points[i].y = static_cast<double>(i) * 2;
      points[i].z = static_cast<double>(i) * 0.5;
    }
    las_write_options o;
    o.version_minor = 4;
    o.point_format = 6;
    o.crs_wkt = "EPSG:4326";  // one WKT VLR
    write_las((dir_ / "good14.las").string(), points, o);
    good14_ = test::file_bytes(dir_ / "good14.las");
    o.crs_in_evlr = true;
    write_las((dir_ / "evlr.las").string(), points, o);
    evlr_ = test::file_bytes(dir_ / "evlr.las");
    o = las_write_options{};
    write_las((dir_ / "good12.las").string(), points, o);
    good12_ = test::file_bytes(dir_ / "good12.las");
  }

  /// Writes `bytes` as `name`, expects both read_las_header and open_las_source to fail with an
  /// input error naming the file and a byte offset, and returns the message.
  std::string expect_bad(std::string const& name, std::vector<std::uint8_t> const& bytes)
  {
    std::string const path = (dir_ / name).string();
    test::write_bytes(path, bytes);
    std::string const message = test::expect_input_error([&] { (void)read_las_header(path); }, path);
    test::expect_input_error([&] { (void)open_las_source(path); }, path);
    // The pure parser says the same about the same bytes.
    test::expect_input_error([&] { (void)parse_las_header(bytes.data(), bytes.size(), path); }, path);
    return message;
  }

  static void expect_contains(std::string const& message, std::string const& part)
  {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }

  std::filesystem::path dir_;
  std::vector<std::uint8_t> good14_;
  std::vector<std::uint8_t> evlr_;
  std::vector<std::uint8_t> good12_;
};

TEST_F(las_bad_input, the_unmodified_files_are_fine)
{
  EXPECT_EQ(read_las_header((dir_ / "good14.las").string()).point_count, 100U);
  EXPECT_EQ(read_las_header((dir_ / "evlr.las").string()).evlr_count, 1U);
  EXPECT_EQ(read_las_header((dir_ / "good12.las").string()).point_count, 100U);
}

TEST_F(las_bad_input, not_a_las_file)
{
  std::string const text = "x,y,z\n1,2,3\n4,5,6\n";
  auto m = expect_bad("points.las", std::vector<std::uint8_t>(text.begin(), text.end()));
  expect_contains(m, "byte 0: not a LAS file");
  expect_contains(m, "\"x,y,\"");
  m = expect_bad("empty.las", {});
  expect_contains(m, "byte 0: the file is 0 bytes long");
  expect_contains(expect_bad("binary.las", {0x89, 'P', 'N', 'G', 0, 1, 2}), "\\x89PNG");
}

TEST_F(las_bad_input, every_truncation_is_an_error)
{
  // The 1.4 file with an EVLR ends in a record, so every proper prefix misses something.
  for (std::size_t n = 0; n < evlr_.size(); n += (n < 500 ? 1 : 37)) {
    SCOPED_TRACE(n);
    test::expect_input_error([&] { (void)parse_las_header(evlr_.data(), n, "cut.las"); }, "cut.las");
  }
  auto m = expect_bad("short_header.las", std::vector<std::uint8_t>(good12_.begin(), good12_.begin() + 100));
  expect_contains(m, "byte 100: the file ends inside the LAS header");
  m = expect_bad("short_points.las", std::vector<std::uint8_t>(good12_.begin(), good12_.end() - 1));
  expect_contains(m, "byte 107: the header says 100 points of 20 bytes");
  expect_contains(m, "99 points");
}

TEST_F(las_bad_input, point_count_larger_than_the_data)
{
  auto b = good12_;
  put(b, 107, std::uint32_t{101});
  expect_contains(expect_bad("count12.las", b), "byte 107: the header says 101 points");
  b = good14_;
  put(b, 247, std::uint64_t{std::numeric_limits<std::uint64_t>::max()});
  expect_contains(expect_bad("count14.las", b), "byte 247: the header says 18446744073709551615 points");
  // Points may not run into the EVLRs either.
  b = evlr_;
  put(b, 247, std::uint64_t{101});
  expect_contains(expect_bad("count_evlr.las", b), "before the first EVLR");
}

TEST_F(las_bad_input, header_size)
{
  auto b = good12_;
  put(b, 94, std::uint16_t{65535});
  expect_contains(expect_bad("header_big.las", b), "byte 94: header size 65535");
  b = good14_;
  put(b, 94, std::uint16_t{227});
  expect_contains(expect_bad("header_small.las", b), "byte 94: header size 227 is smaller than the 375 bytes of a LAS 1.4 header");
}

TEST_F(las_bad_input, offset_to_point_data)
{
  auto b = good12_;
  put(b, 96, static_cast<std::uint32_t>(b.size() + 1));
  expect_contains(expect_bad("offset_past.las", b), "byte 96: offset to point data");
  put(b, 96, std::uint32_t{100});
  expect_contains(expect_bad("offset_inside.las", b), "byte 96: offset to point data 100 is inside the header");
}

TEST_F(las_bad_input, scale_and_offset)
{
  for (int axis = 0; axis < 3; ++axis) {
    auto b = good12_;
    std::size_t const at = 131 + 8 * static_cast<std::size_t>(axis);
    put(b, at, 0.0);
    auto const m = expect_bad("scale0.las", b);
    expect_contains(m, "byte " + std::to_string(at) + ": " + std::string(1, "xyz"[axis]) + " scale factor is 0");
  }
  auto b = good12_;
  put(b, 139, std::numeric_limits<double>::quiet_NaN());
  expect_contains(expect_bad("scale_nan.las", b), "byte 139: y scale factor is nan");
  b = good12_;
  put(b, 171, std::numeric_limits<double>::infinity());
  expect_contains(expect_bad("offset_inf.las", b), "byte 171: z offset is inf");
}

TEST_F(las_bad_input, point_format_and_record_length)
{
  auto b = good12_;
  b[104] = 42;
  expect_contains(expect_bad("format42.las", b), "byte 104: point data record format 42 is not a LAS format (0-10)");
  b[104] = 11;
  expect_contains(expect_bad("format11.las", b), "point data record format 11 is not a LAS format");
  b = good14_;
  put(b, 105, std::uint16_t{29});
  expect_contains(expect_bad("record29.las", b),
                  "byte 105: point data record length 29 is smaller than the 30 bytes of point data record format 6");
}

TEST_F(las_bad_input, version)
{
  auto b = good12_;
  b[24] = 2;
  b[25] = 0;
  expect_contains(expect_bad("v20.las", b), "byte 24: LAS version 2.0 is not supported");
  b[24] = 1;
  b[25] = 5;
  expect_contains(expect_bad("v15.las", b), "LAS version 1.5 is not supported");
}

TEST_F(las_bad_input, vlrs)
{
  // good14 has its WKT VLR right after the 375-byte header; its length field is at 375 + 20.
  ASSERT_EQ(get<std::uint32_t>(good14_, 100), 1U);
  auto b = good14_;
  put(b, 375 + 20, std::uint16_t{65535});
  auto m = expect_bad("vlr_length.las", b);
  expect_contains(m, "byte 375: VLR 1 of 1 (user \"LASF_Projection\", record 2112): its 65535 bytes of data run past");
}

TEST_F(las_bad_input, a_vlr_count_past_the_records_that_fit_reads_those_that_fit_with_a_note)
{
  // PDAL's bad_vlr_count.las: laspy and PDAL read the VLRs that fit and the points.
  for (std::uint32_t const count : {std::uint32_t{2}, std::numeric_limits<std::uint32_t>::max()}) {
    auto b = good14_;
    put(b, 100, count);
    std::string const path = (dir_ / ("vlr_count_" + std::to_string(count) + ".las")).string();
    test::write_bytes(path, b);
    auto const h = read_las_header(path);
    ASSERT_EQ(h.vlrs.size(), 1U);
    EXPECT_EQ(h.vlrs[0].user_id, "LASF_Projection");
    EXPECT_FALSE(h.crs_wkt.empty()) << "the record that fits is still read";
    ASSERT_EQ(h.notes.size(), 1U);
    expect_contains(h.notes[0], path + ": the header counts " + std::to_string(count) + " VLRs, but only 1 fit");
    EXPECT_EQ(open_las_source(path)->info().notes, h.notes);
    point_chunk chunk;
    auto source = open_las_source(path);
    std::size_t points = 0;
    while (source->read(chunk, 1000)) { points += chunk.size(); }
    EXPECT_EQ(points, 100U);
  }
}

TEST_F(las_bad_input, evlrs)
{
  auto const h = parse_las_header(evlr_.data(), evlr_.size(), "evlr.las");
  auto b = evlr_;
  put(b, 235, static_cast<std::uint64_t>(b.size() + 1));
  expect_contains(expect_bad("evlr_past.las", b), "byte 235: start of the first EVLR");
  b = evlr_;
  put(b, 235, std::uint64_t{h.offset_to_point_data + 10});
  expect_contains(expect_bad("evlr_inside.las", b),
                  "byte 247: the header says 100 points of 30 bytes from byte " +
                    std::to_string(h.offset_to_point_data) + ", but only 10 bytes (0 points) are there before the first EVLR");
  b = evlr_;
  put(b, 235, std::uint64_t{10});
  expect_contains(expect_bad("evlr_in_header.las", b), "byte 235: start of the first EVLR 10 is before the end of the point data");
  b = evlr_;
  put(b, h.evlr_start + 20, std::uint64_t{1} << 40);
  expect_contains(expect_bad("evlr_length.las", b),
                  "byte " + std::to_string(h.evlr_start) + ": EVLR 1 of 1 (user \"LASF_Projection\", record 2112): its " +
                    std::to_string(std::uint64_t{1} << 40) + " bytes of data run past the end of the file");
  b = evlr_;
  put(b, 243, std::uint32_t{3});
  expect_contains(expect_bad("evlr_count.las", b), "EVLR 2 of 3: its 60-byte header runs past the end of the file");
}

TEST_F(las_bad_input, random_corruption_never_escapes_as_anything_but_an_input_error)
{
  std::mt19937 rng(12345);
  for (auto const* base : {&good12_, &good14_, &evlr_}) {
    for (int trial = 0; trial < 3000; ++trial) {
      auto b = *base;
      int const flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        // Mostly the header and VLRs, where the structure lives.
        std::size_t const at = rng() % std::min<std::size_t>(b.size(), (rng() % 4 == 0) ? b.size() : 480);
        b[at] = static_cast<std::uint8_t>(rng());
      }
      try {
        auto const h = parse_las_header(b.data(), b.size(), "fuzz.las");
        if (!h.compressed) {
          ASSERT_LE(h.offset_to_point_data + h.point_count * h.record_length, b.size());
        }
      } catch (error const& e) {
        ASSERT_EQ(e.kind(), error_kind::input) << e.what();
      }
    }
  }
}

TEST_F(las_bad_input, file_truncated_after_opening)
{
  auto const path = dir_ / "shrinks.las";
  test::write_bytes(path, good12_);
  auto source = open_las_source(path.string(), las_read_options{10});
  std::filesystem::resize_file(path, good12_.size() - 500);
  point_chunk chunk;
  auto const m = test::expect_input_error([&] { (void)source->read(chunk, 1000); }, path.string());
  expect_contains(m, "the file ends here");
}

TEST_F(las_bad_input, missing_file_and_directory)
{
  auto const missing = (dir_ / "missing.las").string();
  try {
    (void)open_las_source(missing);
    ADD_FAILURE();
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::input);
    expect_contains(e.what(), missing + ": cannot open");
  }
  try {
    (void)read_las_header(dir_.string());
    ADD_FAILURE();
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::input);
    expect_contains(e.what(), "not a regular file");
  }
}

}  // namespace
}  // namespace heightgrid::io
