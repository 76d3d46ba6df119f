// open_las_parts delivering raw records (part_source::deliver_records, the GPU route's LAS input):
// the records of every part, decoded and filtered by decode_las_records (what the GPU's binning
// kernel does, by the same core/las_record.hpp and filter_table), must be exactly the points and
// filter statistics open_las_source and apply_filter give, in the same order, for every point format,
// filter and part size; parts hold as many records as fit a batch's bytes; switching back restores
// the decoded parts; sources that cannot deliver records say so.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/las_record.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "las_parts_helpers.hpp"
#include "las_test_helpers.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace heightgrid::io {
namespace {

using test::batch_over;
using test::build_las;
using test::las_spec;
using test::random_points;
using test::raw_point;

std::string write_las_file(std::string const& name, las_spec const& spec, std::vector<raw_point> const& points)
{
  auto const path = (test::las_scratch_dir() / name).string();
  test::write_bytes(path, build_las(spec, points));
  return path;
}

/// Every part of `source` (switched to records) decoded with decode_las_records, in part order;
/// with `decode_odd`, odd parts are read into batches marked decode_records (the source decodes
/// them: the same records of the part, as columns, the filters' counts in its result).
test::parts_read read_records(part_source& source, filter_options const& options, std::size_t record_length,
                              bool decode_odd = false)
{
  filter_rules const rules(options);
  test::parts_read got;
  std::vector<double> raw_buffer;
  std::vector<double> column_buffer;
  auto const parts = source.part_count().value_or(0);
  las_record_stats stats;
  for (std::uint64_t k = 0; k < parts; ++k) {
    point_batch raw = batch_over(raw_buffer, source.max_part_points());
    raw.source = 3;
    if (decode_odd && k % 2 == 1) {
      raw.decode_records = true;
      part_result const r = source.read_part(k, rules, raw);
      EXPECT_EQ(raw.encoding, coord_encoding::scaled_int32) << "part " << k;
      EXPECT_EQ(r.filtered.points_in - r.filtered.removed(), raw.size) << "part " << k;
      got.total.add(r);
      for (std::size_t i = 0; i < raw.size; ++i) {
        got.points.x.push_back(raw.x_at(i));
        got.points.y.push_back(raw.y_at(i));
        got.points.z.push_back(raw.z_at(i));
      }
      continue;
    }
    part_result const r = source.read_part(k, rules, raw);
    EXPECT_EQ(raw.encoding, coord_encoding::las_records);
    EXPECT_EQ(raw.record_length, record_length);
    EXPECT_EQ(raw.source, 3U) << "the scheduler's source index is kept";
    EXPECT_EQ(r.filtered.points_in, raw.size);
    EXPECT_EQ(r.filtered.removed(), 0U) << "records are filtered where they are binned";
    EXPECT_LE(raw.payload_bytes(), batch_bytes(raw.capacity));
    got.total.add(r);
    point_batch columns = batch_over(column_buffer, source.max_part_points());
    decode_las_records(raw, rules, columns, stats);
    EXPECT_EQ(columns.encoding, coord_encoding::scaled_int32);
    for (std::size_t i = 0; i < columns.size; ++i) {
      got.points.x.push_back(columns.x_at(i));
      got.points.y.push_back(columns.y_at(i));
      got.points.z.push_back(columns.z_at(i));
    }
  }
  got.total.add(source.result_of_records(stats));
  got.parts = parts;
  return got;
}

TEST(las_records, decoded_records_equal_the_decoded_parts_for_every_format_filter_and_part_size)
{
  for (int format : {0, 1, 3, 6, 7, 10}) {
    las_spec spec;
    spec.minor = format >= 6 ? 4 : 2;
    spec.format = format;
    spec.extra = static_cast<std::uint16_t>(format == 1 ? 5 : 0);
    if (format % 2 == 1) { spec.scale = {0.01, 0.001, 0.25}; }
    spec.offset = {1000.5, -20.25, 3.0};
    auto const path = write_las_file("records_f" + std::to_string(format) + ".las", spec,
                                     random_points(3000, format >= 6, 40 + static_cast<std::uint32_t>(format)));
    auto const filters = test::some_filters();
    for (std::size_t f = 0; f < filters.size(); ++f) {
      for (std::size_t part_points : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{5000}}) {
        SCOPED_TRACE("format " + std::to_string(format) + ", filter " + std::to_string(f) + ", part_points " +
                     std::to_string(part_points));
        auto source = open_las_parts(path, part_points);
        test::parts_read const want = test::read_parts(*source, filters[f]);
        std::size_t const stride = test::base_size[static_cast<std::size_t>(spec.format)] + spec.extra;
        if (batch_bytes(part_points) < stride) {
          // Not even one record fits a batch: the readers go on decoding.
          EXPECT_FALSE(source->deliver_records(true));
          EXPECT_EQ(source->max_part_points(), part_points);
          continue;
        }
        ASSERT_TRUE(source->deliver_records(true));
        // As many records as fit the bytes of a batch of part_points points, never more than it.
        std::size_t const per_part = std::max<std::size_t>(1, std::min(part_points, batch_bytes(part_points) / stride));
        EXPECT_EQ(source->max_part_points(), part_points) << "batches keep their size";
        EXPECT_EQ(source->part_count(), (3000 + per_part - 1) / per_part);
        // Every part as records, and odd parts decoded by the source (batches for the CPU).
        for (bool const decode_odd : {false, true}) {
          SCOPED_TRACE(decode_odd ? "odd parts decoded by the source" : "every part as records");
          test::parts_read const got = read_records(*source, filters[f], stride, decode_odd);
          test::expect_same_points(got.points, want.points);
          test::expect_same_stats(got.total.filtered, want.total.filtered);
          EXPECT_EQ(got.total.filtered.points_in, 3000U);
          EXPECT_EQ(got.total.extent.xmin, want.total.extent.xmin);
          EXPECT_EQ(got.total.extent.xmax, want.total.extent.xmax);
          EXPECT_EQ(got.total.extent.ymin, want.total.extent.ymin);
          EXPECT_EQ(got.total.extent.ymax, want.total.extent.ymax);
          EXPECT_EQ(got.total.z_min, want.total.z_min);
          EXPECT_EQ(got.total.z_max, want.total.z_max);
        }
        // Switched back: decoded parts of the original size again.
        ASSERT_TRUE(source->deliver_records(false));
        EXPECT_EQ(source->max_part_points(), part_points);
        test::expect_same_points(test::read_parts(*source, filters[f]).points, want.points);
      }
    }
  }
}

TEST(las_records, a_dimension_other_than_z_and_compressed_files_keep_decoding_on_the_readers)
{
  las_spec spec;
  spec.format = 1;
  auto const path = write_las_file("records_dimension.las", spec, random_points(100, false, 9));
  auto intensity = open_las_parts(path, 64, "Intensity");
  EXPECT_FALSE(intensity->deliver_records(true));
  EXPECT_EQ(intensity->max_part_points(), 64U);
  std::vector<double> buffer;
  point_batch batch = batch_over(buffer, 64);
  (void)intensity->read_part(0, filter_rules(filter_options{}), batch);
  EXPECT_EQ(batch.encoding, coord_encoding::scaled_int32);
  // LAZ: the LAZ readers never deliver records.
  auto const laz = test::data_dir() / "layered_dims_pdrf8.laz";
  if (std::filesystem::exists(laz)) {
    auto compressed = open_las_parts(laz.string(), 1000);
    EXPECT_FALSE(compressed->deliver_records(true));
  }
}

TEST(las_records, a_file_truncated_after_opening_names_the_record_where_it_ends)
{
  las_spec spec;
  spec.format = 6;
  spec.minor = 4;
  auto const path = write_las_file("records_truncated.las", spec, random_points(500, true, 3));
  auto source = open_las_parts(path, 100);
  ASSERT_TRUE(source->deliver_records(true));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 45);
  std::vector<double> buffer;
  point_batch batch = batch_over(buffer, source->max_part_points());
  auto const last = *source->part_count() - 1;
  try {
    (void)source->read_part(last, filter_rules(filter_options{}), batch);
    ADD_FAILURE() << "a truncated file read";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::input);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the file ends at byte"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace heightgrid::io
