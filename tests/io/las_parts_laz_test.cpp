// open_las_parts on LAZ files (the public files in ../shared/data/real, and data/'s lazrs files):
// whole chunks as concurrent parts, filters and shuffled threads, variable chunks, sequential parts
// without a chunk table, a corrupt chunk; then every real LAS and LAZ file against
// open_las_source. The checks are in las_parts_helpers.hpp.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "las_parts_helpers.hpp"
#include "las_test_helpers.hpp"
#include "las/las_dimension.hpp"
#include "las/las_internal.hpp"
#include "laz/laz_vlr.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace heightgrid::io {
namespace {

using test::batch_over;
using test::expect_parts_match;
using test::expect_same_points;
using test::expect_same_stats;
using test::parts_read;
using test::read_parts;
using test::read_reference;
using test::same_bits;
using test::reference_read;
using test::some_filters;

std::filesystem::path real_dir() { return test::real_data_dir(); }

#define REQUIRE_REAL_DATA()                                                                     \
  if (real_dir().empty()) { GTEST_SKIP() << "HEIGHTGRID_REAL_DATA_DIR (../shared/data/real) not present"; }

/// Every LAS (or LAZ) file under the real data directory.
std::vector<std::string> real_files(char const* extension)
{
  std::vector<std::string> files;
  for (auto const& e : std::filesystem::recursive_directory_iterator(real_dir())) {
    if (e.is_regular_file() && e.path().extension() == extension) { files.push_back(e.path().string()); }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// ---- LAZ (the public files in ../shared/data/real) ----

TEST(las_parts_laz, chunk_table_files_are_concurrent_parts_of_whole_chunks)
{
  REQUIRE_REAL_DATA();
  for (auto const& path : real_files(".laz")) {
    SCOPED_TRACE(path);
    auto const h = read_las_header(path);
    ASSERT_TRUE(h.laz.has_value());
    if (h.laz->compressor == laz::compressor_pointwise || h.laz->variable_chunks() || h.laz->chunk_count == 0) {
      continue;
    }
    std::uint64_t const chunk = h.laz->chunk_size;
    for (std::size_t part_points : {std::size_t{1}, std::size_t{7}, std::size_t{chunk}, std::size_t{chunk + 1},
                                    std::size_t{2 * chunk}, default_part_points}) {
      auto source = open_las_parts(path, part_points);
      EXPECT_TRUE(source->concurrent_parts());
      // A chunk is never split: parts of one chunk or of as many whole chunks as fit.
      std::uint64_t const per_part = std::max<std::uint64_t>(1, part_points / chunk);
      EXPECT_EQ(source->part_count(), (h.laz->chunk_count + per_part - 1) / per_part) << part_points;
      EXPECT_GE(source->max_part_points(), part_points);
      EXPECT_LE(source->max_part_points(), std::max<std::uint64_t>(part_points, chunk));
      expect_parts_match(path, part_points, filter_options::keep_all());
    }
  }
}

TEST(las_parts_laz, filters_and_eight_shuffled_threads_match_open_las_source)
{
  REQUIRE_REAL_DATA();
  for (auto const& path : real_files(".laz")) {
    for (auto const& filter : some_filters()) {
      expect_parts_match(path, 20000, filter, 8, 4321);
      expect_parts_match(path, default_part_points, filter);
    }
  }
}

// lazrs ends a file of variable-size chunks with a chunk of no points (data/README.md): it is
// stepped over, and both readers give every point.
TEST(las_parts_laz, variable_chunks_ending_in_a_chunk_of_no_points_read_whole)
{
  for (char const* name : {"lazrs_variable_chunks_pf1.laz", "lazrs_variable_chunks_pf6.laz"}) {
    auto const path = (test::data_dir() / name).string();
    SCOPED_TRACE(path);
    auto source = open_las_parts(path, 5);
    EXPECT_TRUE(source->concurrent_parts());
    parts_read const got = read_parts(*source, filter_options::keep_all());
    EXPECT_EQ(got.points.x.size(), 23U);
    expect_parts_match(path, 5, filter_options::keep_all());
    expect_parts_match(path, 7, filter_options{}, 2, 99);
  }
}

TEST(las_parts_laz, every_dimension_of_a_layered_file_reads_as_in_its_las_twin)
{
  // Layered LAZ decodes only the layers a reader asks for: gridding intensity, GPS time, RGB,
  // NIR, an extra byte... must ask for that layer, or the values read as zeros.
  auto const las = (test::data_dir() / "layered_dims_pdrf8.las").string();
  auto const laz = (test::data_dir() / "layered_dims_pdrf8.laz").string();
  std::vector<std::string> const names = detail::las_dimension_names(read_las_header(las), detail::las_file(las));
  for (char const* layer : {"Intensity", "ScanAngleRank", "UserData", "PointSourceId", "GpsTime", "Red", "Infrared", "Amplitude", "Width"}) {
    ASSERT_NE(std::find(names.begin(), names.end(), layer), names.end()) << layer;
  }
  for (auto const& name : names) {
    SCOPED_TRACE(name);
    // The points of every part in order, as (x, y, value) and the batches' encoding.
    struct read_all {
      std::vector<double> x, y, value;
      std::vector<coord_encoding> encodings;
    };
    auto const read = [&](std::string const& path) {
      auto source = open_las_parts(path, 128, name);
      read_all got;
      std::vector<double> buffer;
      for (std::uint64_t k = 0; k < *source->part_count(); ++k) {
        point_batch batch = batch_over(buffer, source->max_part_points());
        (void)source->read_part(k, filter_rules(filter_options::keep_all()), batch);
        got.encodings.push_back(batch.encoding);
        for (std::size_t i = 0; i < batch.size; ++i) {
          got.x.push_back(batch.x_at(i));
          got.y.push_back(batch.y_at(i));
          got.value.push_back(batch.z_at(i));
        }
      }
      return got;
    };
    read_all const from_las = read(las);
    read_all const from_laz = read(laz);
    ASSERT_EQ(from_las.value.size(), 400U);
    ASSERT_EQ(from_laz.value.size(), 400U);
    EXPECT_EQ(from_las.encodings.front(), from_laz.encodings.front());
    for (std::size_t i = 0; i < 400; ++i) {
      ASSERT_TRUE(same_bits(from_las.x[i], from_laz.x[i]) && same_bits(from_las.y[i], from_laz.y[i]) &&
                  same_bits(from_las.value[i], from_laz.value[i]))
        << "point " << i << ": LAS " << from_las.value[i] << ", LAZ " << from_laz.value[i];
    }
    std::vector<double> const& values = from_las.value;
    // Every dimension of the sample varies, so equal values mean the LAZ values were decoded.
    EXPECT_NE(*std::min_element(values.begin(), values.end()), *std::max_element(values.begin(), values.end()));
  }
}

TEST(las_parts_laz, release_then_read_again)
{
  REQUIRE_REAL_DATA();
  auto const path = (real_dir() / "pdal/laz_autzen_trim.laz").string();
  auto source = open_las_parts(path, 50000);
  parts_read const first = read_parts(*source, filter_options{}, 4, 7);
  source->release();
  parts_read const again = read_parts(*source, filter_options{}, 4, 8);
  expect_same_points(again.points, first.points);
  expect_same_stats(again.total.filtered, first.total.filtered);
}

TEST(las_parts_laz, without_a_chunk_table_parts_are_sequential_and_start_over_at_part_zero)
{
  REQUIRE_REAL_DATA();
  auto const dir = test::las_scratch_dir();
  auto bytes = test::file_bytes(real_dir() / "pdal/laz_autzen_trim.laz");
  auto const h = parse_las_header(bytes.data(), bytes.size(), "autzen");
  auto const table_at = test::get<std::uint64_t>(bytes, h.offset_to_point_data);
  bytes.resize(static_cast<std::size_t>(table_at));  // a writer that died before the table
  auto const path = (dir / "no_table.laz").string();
  test::write_bytes(path, bytes);

  for (std::size_t part_points : {std::size_t{7777}, std::size_t{50000}, default_part_points}) {
    auto source = open_las_parts(path, part_points);
    EXPECT_FALSE(source->concurrent_parts());
    EXPECT_EQ(source->max_part_points(), part_points);
    reference_read const want = read_reference(path, filter_options{});
    for (int pass = 0; pass < 2; ++pass) {  // a second pass starts over
      parts_read const got = read_parts(*source, filter_options{});
      EXPECT_EQ(got.parts, (h.point_count + part_points - 1) / part_points);
      expect_same_points(got.points, want.points);
      expect_same_stats(got.total.filtered, want.stats);
      if (pass == 0) { source->release(); }
    }
  }
  // Out of order is a usage error.
  auto source = open_las_parts(path, 1000);
  std::vector<double> buffer;
  point_batch batch = batch_over(buffer, 1000);
  filter_rules const rules(filter_options{});
  (void)source->read_part(0, rules, batch);
  try {
    (void)source->read_part(2, rules, batch);
    ADD_FAILURE() << "part 2 read after part 0";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
  }
}

TEST(las_parts_laz, a_corrupt_chunk_is_an_error_naming_the_file_and_the_chunk)
{
  REQUIRE_REAL_DATA();
  auto const dir = test::las_scratch_dir();
  // Layered chunks state their point count after the raw first point: a wrong one is certain to
  // be caught, where garbage in arithmetic-coded bytes may decode to other points.
  for (char const* name : {"lasR/las14_pdrf6.laz", "laspy/fullwave.laz"}) {
    SCOPED_TRACE(name);
    auto bytes = test::file_bytes(real_dir() / name);
    auto const h = parse_las_header(bytes.data(), bytes.size(), name);
    ASSERT_TRUE(h.laz.has_value());
    ASSERT_EQ(h.laz->compressor, laz::compressor_layered_chunked);
    auto const vlr = laz::parse_laz_vlr(bytes.data() + h.laz->vlr_data_offset, h.laz->vlr_data_length);
    auto const table_at = test::get<std::uint64_t>(bytes, h.offset_to_point_data);
    auto const chunks = laz::parse_chunk_table(vlr, bytes.data() + table_at, bytes.size() - table_at,
                                               h.offset_to_point_data + 8, table_at, h.point_count);
    std::size_t const last = chunks.size() - 1;
    auto const& c = chunks[last];
    test::put<std::uint32_t>(bytes, static_cast<std::size_t>(c.offset) + vlr.record_length(), 0x0FFFFFFF);
    auto const path = (dir / "corrupt.laz").string();
    test::write_bytes(path, bytes);
    auto source = open_las_parts(path, 1);
    ASSERT_TRUE(source->concurrent_parts());
    ASSERT_EQ(source->part_count(), chunks.size());
    std::vector<double> buffer;
    point_batch batch = batch_over(buffer, source->max_part_points());
    filter_rules const rules(filter_options{});
    for (std::size_t k = 0; k < last; ++k) { EXPECT_NO_THROW((void)source->read_part(k, rules, batch)); }
    try {
      (void)source->read_part(last, rules, batch);
      ADD_FAILURE() << "no error for the corrupt chunk";
    } catch (error const& e) {
      std::string const what = e.what();
      EXPECT_EQ(e.kind(), error_kind::input) << what;
      std::string const where = path + ": chunk " + std::to_string(last) + " (bytes " + std::to_string(c.offset) +
                                "-" + std::to_string(c.offset + c.bytes) + "): ";
      EXPECT_EQ(what.rfind(where, 0), 0U) << what;
    }
  }
}

// ---- every real LAS and LAZ file ----

TEST(las_parts_real_data, every_file_gives_open_las_source_points)
{
  REQUIRE_REAL_DATA();
  std::size_t files = 0;
  for (char const* extension : {".las", ".laz"}) {
    for (auto const& path : real_files(extension)) {
      ++files;
      for (std::size_t part_points : {std::size_t{1000}, default_part_points}) {
        expect_parts_match(path, part_points, filter_options::keep_all(), 4, 17);
        expect_parts_match(path, part_points, filter_options{});
      }
    }
  }
  EXPECT_GT(files, 0U) << "no LAS or LAZ file under " << real_dir();
}

}  // namespace
}  // namespace heightgrid::io
