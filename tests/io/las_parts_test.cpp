// open_las_parts on uncompressed LAS files built byte by byte: every point format and version at
// every part size, filters, eight threads in shuffled order, an empty file, the header's info and
// bounds, and the errors (truncation, bad scales, a batch too small, a part past the end). The
// checks against open_las_source are in las_parts_helpers.hpp; LAZ and the real files are in
// las_parts_laz_test.cpp.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "las_parts_helpers.hpp"
#include "las_test_helpers.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::io {
namespace {

using test::batch_over;
using test::build_las;
using test::expect_parts_match;
using test::expect_same_points;
using test::expect_same_stats;
using test::las_spec;
using test::parts_read;
using test::random_points;
using test::raw_point;
using test::read_parts;
using test::same_bits;
using test::some_filters;

/// The versions a point format exists in.
std::vector<int> versions_of(int format)
{
  if (format <= 1) { return {0, 2, 4}; }
  if (format <= 3) { return {2, 4}; }
  if (format <= 5) { return {3, 4}; }
  return {4};
}

std::string write_las_file(std::filesystem::path const& dir, std::string const& name, las_spec const& spec,
                           std::vector<raw_point> const& points)
{
  auto const path = (dir / name).string();
  test::write_bytes(path, build_las(spec, points));
  return path;
}

// ---- uncompressed LAS ----

TEST(las_parts, every_format_and_version_gives_open_las_source_points_at_every_part_size)
{
  auto const dir = test::las_scratch_dir();
  std::size_t const n = 500;
  for (int format = 0; format <= 10; ++format) {
    for (int minor : versions_of(format)) {
      las_spec spec;
      spec.minor = minor;
      spec.format = format;
      spec.extra = static_cast<std::uint16_t>(format % 3 == 0 ? 5 : 0);
      if (format % 2 == 1) { spec.scale = {0.01, 0.001, 0.25}; }  // (negative scales are refused: issue 24)
      auto const path = write_las_file(dir, "f" + std::to_string(format) + "_1" + std::to_string(minor) + ".las",
                                       spec, random_points(n, format >= 6, 11 + static_cast<std::uint32_t>(format)));
      for (std::size_t part_points : {std::size_t{1}, std::size_t{7}, std::size_t{64}, n, n + 1, default_part_points}) {
        auto source = open_las_parts(path, part_points);
        EXPECT_TRUE(source->concurrent_parts());
        EXPECT_EQ(source->max_part_points(), part_points);
        EXPECT_EQ(source->part_count(), (n + part_points - 1) / part_points);
        expect_parts_match(path, part_points, filter_options::keep_all());
      }
    }
  }
}

TEST(las_parts, keep_all_is_bit_identical_to_open_las_source_and_keeps_its_order)
{
  auto const dir = test::las_scratch_dir();
  las_spec spec;
  spec.minor = 4;
  spec.format = 6;
  spec.scale = {0.001, 0.001, 0.001};
  spec.offset = {123456.789, -98765.4321, 0.1};  // sums that round: bit-identity matters
  auto const path = write_las_file(dir, "bits.las", spec, random_points(3000, true, 5));
  auto source = open_las_parts(path, 128);
  parts_read const got = read_parts(*source, filter_options::keep_all());
  point_chunk const all = test::read_all_las(path);
  ASSERT_EQ(got.points.size(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    ASSERT_TRUE(same_bits(got.points.x[i], all.x[i]) && same_bits(got.points.y[i], all.y[i]) &&
                same_bits(got.points.z[i], all.z[i]))
      << "point " << i;
  }
  EXPECT_EQ(got.total.filtered.points_in, 3000U);
  EXPECT_EQ(got.total.filtered.removed(), 0U);
}

TEST(las_parts, filters_keep_what_apply_filter_keeps_with_the_same_stats)
{
  auto const dir = test::las_scratch_dir();
  for (int format : {1, 3, 6, 8}) {
    las_spec spec;
    spec.minor = 4;
    spec.format = format;
    auto const path = write_las_file(dir, "f" + std::to_string(format) + ".las", spec,
                                     random_points(2000, format >= 6, 100 + static_cast<std::uint32_t>(format)));
    auto const filters = some_filters();
    for (std::size_t f = 0; f < filters.size(); ++f) {
      SCOPED_TRACE("filter " + std::to_string(f));
      for (std::size_t part_points : {std::size_t{7}, std::size_t{333}, std::size_t{5000}}) {
        expect_parts_match(path, part_points, filters[f]);
      }
    }
  }
}

TEST(las_parts, eight_threads_in_shuffled_order_give_the_same_points_and_stats)
{
  auto const dir = test::las_scratch_dir();
  las_spec spec;
  spec.minor = 4;
  spec.format = 7;
  auto const path = write_las_file(dir, "f7.las", spec, random_points(20000, true, 77));
  for (auto const& filter : some_filters()) {
    for (std::size_t part_points : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
      expect_parts_match(path, part_points, filter, 8, 1234);
    }
  }
}

TEST(las_parts, a_file_without_points_has_no_parts)
{
  auto const dir = test::las_scratch_dir();
  for (int minor : {2, 4}) {
    las_spec spec;
    spec.minor = minor;
    auto const path = write_las_file(dir, "empty" + std::to_string(minor) + ".las", spec, {});
    auto source = open_las_parts(path);
    EXPECT_TRUE(source->concurrent_parts());
    EXPECT_EQ(source->part_count(), 0U);
    EXPECT_EQ(source->info().point_count, 0U);
    EXPECT_EQ(read_parts(*source, filter_options{}).points.size(), 0U);
    std::vector<double> buffer;
    point_batch batch = batch_over(buffer, source->max_part_points());
    try {
      (void)source->read_part(0, filter_rules(filter_options{}), batch);
      ADD_FAILURE() << "part 0 of an empty file read";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
    }
  }
}

TEST(las_parts, integer_parts_says_how_every_part_arrives)
{
  // Z and a 16-bit dimension travel as stored integers, GPS time as doubles: what the source
  // declares up front (the pipeline sizes its grid by it) is what each part then delivers.
  auto const dir = test::las_scratch_dir();
  las_spec spec;
  spec.format = 1;
  auto const path = write_las_file(dir, "encodings.las", spec, random_points(300, false, 11));
  for (auto const& [dimension, integers] :
       std::vector<std::pair<std::string, bool>>{{"", true}, {"Intensity", true}, {"GpsTime", false}}) {
    auto source = open_las_parts(path, 128, dimension);
    EXPECT_EQ(source->integer_parts(), integers) << "dimension '" << dimension << "'";
    std::vector<double> buffer;
    for (std::uint64_t k = 0; k < *source->part_count(); ++k) {
      point_batch batch = batch_over(buffer, source->max_part_points());
      (void)source->read_part(k, filter_rules(filter_options::keep_all()), batch);
      EXPECT_EQ(batch.encoding == coord_encoding::scaled_int32, integers) << "dimension '" << dimension << "' part " << k;
    }
  }
}

TEST(las_parts, info_is_open_las_source_info_and_declared_bounds_come_from_a_sane_header)
{
  auto const dir = test::las_scratch_dir();
  las_spec spec;
  spec.minor = 4;
  spec.format = 6;
  auto bytes = build_las(spec, random_points(10, true, 3));
  auto const bad = (dir / "bad_bounds.las").string();
  test::write_bytes(bad, bytes);  // build_las writes max < min
  EXPECT_FALSE(open_las_parts(bad)->declared_bounds().has_value());
  // Max X, Min X, Max Y, Min Y at bytes 179, 187, 195, 203.
  test::put(bytes, 179, 10.5);
  test::put(bytes, 187, -3.0);
  test::put(bytes, 195, 7.25);
  test::put(bytes, 203, 7.25);
  auto const good = (dir / "good_bounds.las").string();
  test::write_bytes(good, bytes);
  auto source = open_las_parts(good);
  auto const b = source->declared_bounds();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->xmin, -3.0);
  EXPECT_EQ(b->xmax, 10.5);
  EXPECT_EQ(b->ymin, 7.25);
  EXPECT_EQ(b->ymax, 7.25);
  test::put(bytes, 179, std::numeric_limits<double>::infinity());
  auto const infinite = (dir / "inf_bounds.las").string();
  test::write_bytes(infinite, bytes);
  EXPECT_FALSE(open_las_parts(infinite)->declared_bounds().has_value());

  auto const want = open_las_source(good)->info();
  auto const& got = source->info();
  EXPECT_EQ(got.path, want.path);
  EXPECT_EQ(got.format, want.format);
  EXPECT_EQ(got.crs_wkt, want.crs_wkt);
  EXPECT_EQ(got.vertical_units, want.vertical_units);
  EXPECT_EQ(got.point_count, want.point_count);
}

TEST(las_parts, a_truncated_file_is_an_error_naming_the_file_at_open_or_the_record_at_read)
{
  auto const dir = test::las_scratch_dir();
  las_spec spec;
  spec.minor = 2;
  spec.format = 1;
  auto bytes = build_las(spec, random_points(1000, false, 9));
  std::size_t const header = 227;
  std::size_t const record = 28;
  auto const cut = (dir / "cut.las").string();
  test::write_bytes(cut, std::vector<std::uint8_t>(bytes.begin(), bytes.end() - 10));
  std::string const message = test::expect_input_error([&] { (void)open_las_parts(cut); }, cut);
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;

  // Cut after opening, inside record 950: part 9 (records 900-999) finds the file's end there.
  auto const later = (dir / "later.las").string();
  test::write_bytes(later, bytes);
  auto source = open_las_parts(later, 100);
  std::filesystem::resize_file(later, header + 950 * record + 3);
  std::vector<double> buffer;
  point_batch batch = batch_over(buffer, 100);
  filter_rules const rules(filter_options::keep_all());
  EXPECT_NO_THROW((void)source->read_part(8, rules, batch));
  try {
    (void)source->read_part(9, rules, batch);
    ADD_FAILURE() << "no error for a part past the end of the file";
  } catch (error const& e) {
    std::string const what = e.what();
    EXPECT_EQ(e.kind(), error_kind::input) << what;
    EXPECT_NE(what.find(later), std::string::npos) << what;
    EXPECT_NE(what.find("record 950"), std::string::npos) << what;
  }
}

TEST(las_parts, a_zero_or_non_finite_scale_is_an_error_naming_the_file_and_the_field)
{
  auto const dir = test::las_scratch_dir();
  las_spec spec;
  auto const good = build_las(spec, random_points(10, false, 1));
  struct bad_scale {
    std::size_t at;
    double value;
    char const* field;
  };
  for (bad_scale const b : {bad_scale{131, 0.0, "x scale"}, bad_scale{139, -0.0, "y scale"},
                            bad_scale{131, -0.01, "x scale"}, bad_scale{147, 1e-300, "z scale"},
                            bad_scale{139, 1e7, "y scale"},
                            bad_scale{147, std::numeric_limits<double>::quiet_NaN(), "z scale"},
                            bad_scale{139, std::numeric_limits<double>::infinity(), "y scale"}}) {
    auto bytes = good;
    test::put(bytes, b.at, b.value);
    auto const path = (dir / ("scale" + std::to_string(b.at) + ".las")).string();
    test::write_bytes(path, bytes);
    std::string const message = test::expect_input_error([&] { (void)open_las_parts(path); }, path);
    EXPECT_NE(message.find(b.field), std::string::npos) << message;
  }
}

TEST(las_parts, release_closes_the_file_and_a_later_read_reopens_it)
{
  auto const dir = test::las_scratch_dir();
  las_spec spec;
  spec.minor = 4;
  spec.format = 6;
  auto const path = write_las_file(dir, "release.las", spec, random_points(1000, true, 8));
  auto source = open_las_parts(path, 64);
  parts_read const first = read_parts(*source, filter_options{});
  source->release();
  source->release();  // idempotent
  parts_read const again = read_parts(*source, filter_options{}, 8, 99);
  expect_same_points(again.points, first.points);
  expect_same_stats(again.total.filtered, first.total.filtered);
}

TEST(las_parts, a_batch_too_small_or_a_part_past_the_end_is_a_usage_error)
{
  auto const dir = test::las_scratch_dir();
  auto const path = write_las_file(dir, "small.las", las_spec{}, random_points(100, false, 2));
  EXPECT_THROW((void)open_las_parts(path, 0), error);
  auto source = open_las_parts(path, 64);
  std::vector<double> buffer;
  filter_rules const rules(filter_options{});
  for (std::uint64_t k : {0, 2}) {
    // Part 0 into a batch one point too small; part 2 of 2.
    point_batch batch = batch_over(buffer, k == 0 ? 63 : 64);
    try {
      (void)source->read_part(k, rules, batch);
      ADD_FAILURE() << "part " << k << " read";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace heightgrid::io
