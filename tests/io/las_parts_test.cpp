// open_las_parts against open_las_source: the parts of a LAS or LAZ file, concatenated in part
// order, must be exactly open_las_source's points (bit-identical x/y/z, same order), and with a
// filter exactly what apply_filter keeps of open_las_source's chunks, with the same filter_stats,
// whatever the part size and however many threads read the parts in whatever order.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "las_test_helpers.hpp"
#include "laz/laz_vlr.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace heightgrid::io {
namespace {

using test::build_las;
using test::las_spec;
using test::raw_point;

struct xyz_points {
  std::vector<double> x, y, z;
  [[nodiscard]] std::size_t size() const { return x.size(); }
  void append(xyz_points const& o)
  {
    x.insert(x.end(), o.x.begin(), o.x.end());
    y.insert(y.end(), o.y.begin(), o.y.end());
    z.insert(z.end(), o.z.begin(), o.z.end());
  }
};

/// What reading every part gave: the parts' points concatenated in part order, and the parts'
/// results added up.
struct parts_read {
  xyz_points points;
  part_result total;
  std::uint64_t parts{0};
};

/// A batch of `capacity` points over `buffer`.
point_batch batch_over(std::vector<double>& buffer, std::size_t capacity)
{
  buffer.resize(batch_bytes(capacity) / sizeof(double));
  point_batch batch;
  batch.data = buffer.data();
  batch.capacity = capacity;
  return batch;
}

/// Reads part k into a batch over `buffer` and copies its points out, checking the batch.
xyz_points read_one(part_source& source, std::uint64_t k, filter_rules const& rules, std::vector<double>& buffer,
                    part_result& result)
{
  std::size_t const capacity = source.max_part_points();
  point_batch batch = batch_over(buffer, capacity);
  result = source.read_part(k, rules, batch);
  EXPECT_EQ(batch.encoding, coord_encoding::scaled_int32);
  EXPECT_LE(batch.size, capacity);
  EXPECT_EQ(result.filtered.points_in - result.filtered.removed(), batch.size) << "part " << k;
  xyz_points out;
  for (std::size_t i = 0; i < batch.size; ++i) {
    out.x.push_back(batch.x_at(i));
    out.y.push_back(batch.y_at(i));
    out.z.push_back(batch.z_at(i));
  }
  return out;
}

/// Every part, in order on this thread (sequential sources until `last`), or on `threads`
/// threads in a shuffled order (concurrent sources).
parts_read read_parts(part_source& source, filter_options const& options, unsigned threads = 1,
                      std::uint32_t shuffle_seed = 0)
{
  filter_rules const rules(options);
  parts_read got;
  if (!source.concurrent_parts()) {
    std::vector<double> buffer;
    for (std::uint64_t k = 0;; ++k) {
      part_result r;
      got.points.append(read_one(source, k, rules, buffer, r));
      got.total.add(r);
      ++got.parts;
      if (r.last) { break; }
      if (source.part_count() && k + 1 >= *source.part_count()) {
        ADD_FAILURE() << "the last part did not say so";
        break;
      }
    }
    return got;
  }
  EXPECT_TRUE(source.part_count().has_value());
  auto const count = static_cast<std::size_t>(source.part_count().value_or(0));
  std::vector<xyz_points> parts(count);
  std::vector<part_result> results(count);
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (shuffle_seed != 0) { std::shuffle(order.begin(), order.end(), std::mt19937(shuffle_seed)); }
  std::atomic<std::size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto work = [&] {
    std::vector<double> buffer;
    try {
      for (std::size_t i = next++; i < count; i = next++) {
        parts[order[i]] = read_one(source, order[i], rules, buffer, results[order[i]]);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) { pool.emplace_back(work); }
  work();
  for (auto& t : pool) { t.join(); }
  if (failure) { std::rethrow_exception(failure); }
  for (std::size_t k = 0; k < count; ++k) {
    got.points.append(parts[k]);
    got.total.add(results[k]);
  }
  got.parts = count;
  return got;
}

/// What the reference path gives: open_las_source's chunks through apply_filter.
struct reference_read {
  xyz_points points;
  filter_stats stats;
};

reference_read read_reference(std::string const& path, filter_options const& options)
{
  filter_rules const rules(options);
  auto source = open_las_source(path);
  reference_read want;
  point_chunk chunk;
  while (source->read(chunk, 4099)) {
    apply_filter(rules, chunk, want.stats);
    want.points.x.insert(want.points.x.end(), chunk.x.begin(), chunk.x.end());
    want.points.y.insert(want.points.y.end(), chunk.y.begin(), chunk.y.end());
    want.points.z.insert(want.points.z.end(), chunk.z.begin(), chunk.z.end());
  }
  return want;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// x and y bit for bit; z by value (apply_filter turns -0.0 into +0.0, batches keep integers).
void expect_same_points(xyz_points const& got, xyz_points const& want)
{
  ASSERT_EQ(got.size(), want.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < got.size() && mismatches < 5; ++i) {
    if (!same_bits(got.x[i], want.x[i]) || !same_bits(got.y[i], want.y[i]) || !(got.z[i] == want.z[i])) {
      ADD_FAILURE() << "point " << i << ": got (" << got.x[i] << ", " << got.y[i] << ", " << got.z[i]
                    << "), want (" << want.x[i] << ", " << want.y[i] << ", " << want.z[i] << ")";
      ++mismatches;
    }
  }
}

void expect_same_stats(filter_stats const& got, filter_stats const& want)
{
  EXPECT_EQ(got.points_in, want.points_in);
  EXPECT_EQ(got.non_finite, want.non_finite);
  EXPECT_EQ(got.by_class, want.by_class);
  EXPECT_EQ(got.withheld, want.withheld);
  EXPECT_EQ(got.by_return, want.by_return);
  EXPECT_EQ(got.by_z, want.by_z);
}

/// The parts' extent and z range must be those of the kept points.
void expect_summary_of(part_result const& got, xyz_points const& kept)
{
  if (kept.size() == 0) {
    EXPECT_TRUE(got.extent.empty());
    return;
  }
  EXPECT_EQ(got.extent.xmin, *std::min_element(kept.x.begin(), kept.x.end()));
  EXPECT_EQ(got.extent.xmax, *std::max_element(kept.x.begin(), kept.x.end()));
  EXPECT_EQ(got.extent.ymin, *std::min_element(kept.y.begin(), kept.y.end()));
  EXPECT_EQ(got.extent.ymax, *std::max_element(kept.y.begin(), kept.y.end()));
  EXPECT_EQ(got.z_min, *std::min_element(kept.z.begin(), kept.z.end()));
  EXPECT_EQ(got.z_max, *std::max_element(kept.z.begin(), kept.z.end()));
}

/// Parts of `path` with part size `part_points` against the reference, with `options`.
void expect_parts_match(std::string const& path, std::size_t part_points, filter_options const& options,
                        unsigned threads = 1, std::uint32_t shuffle_seed = 0)
{
  SCOPED_TRACE(path + ", part_points " + std::to_string(part_points) + ", threads " + std::to_string(threads));
  auto source = open_las_parts(path, part_points);
  reference_read const want = read_reference(path, options);
  parts_read const got = read_parts(*source, options, threads, shuffle_seed);
  expect_same_points(got.points, want.points);
  expect_same_stats(got.total.filtered, want.stats);
  expect_summary_of(got.total, got.points);
}

/// The filters the tests try: keep-all, the default, and each rule alone and combined.
std::vector<filter_options> some_filters()
{
  // Every entry starts from keep_all(): GCC 12 warns (maybe-uninitialized, a false positive)
  // about filter_options' default constructor inlined several times into one function.
  std::vector<std::uint8_t> const noise{7, 18};
  std::vector<filter_options> filters;
  filters.push_back(filter_options::keep_all());
  filter_options defaults = filter_options::keep_all();  // what filter_options{} drops
  defaults.drop_classes = noise;
  defaults.drop_withheld = true;
  filters.push_back(defaults);
  filter_options classes = filter_options::keep_all();
  classes.classes = {1, 2, 3, 200};
  filters.push_back(classes);
  filter_options first = defaults;
  first.returns = return_filter::first;
  filters.push_back(first);
  filter_options last = filter_options::keep_all();
  last.returns = return_filter::last;
  filters.push_back(last);
  filter_options z = filter_options::keep_all();
  z.z_min = 0.0;
  z.z_max = 400.0;
  filters.push_back(z);
  filter_options all = defaults;
  all.classes = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  all.returns = return_filter::last;
  all.z_min = -50.0;
  all.z_max = 300.0;
  filters.push_back(all);
  return filters;
}

/// Random records with every attribute the filters look at (and some int32 extremes).
std::vector<raw_point> random_points(std::size_t n, bool extended, std::uint32_t seed)
{
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> xy(-2000000, 2000000);
  std::uniform_int_distribution<std::int32_t> z(-1000, 2000);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<raw_point> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    raw_point& p = out[i];
    p.x = xy(rng);
    p.y = xy(rng);
    p.z = z(rng);
    if (i % 97 == 5) { p.x = std::numeric_limits<std::int32_t>::min(); }
    if (i % 89 == 7) { p.y = std::numeric_limits<std::int32_t>::max(); }
    int const max_returns = extended ? 15 : 7;
    p.number_of_returns = static_cast<std::uint8_t>(byte(rng) % (max_returns + 1));
    p.return_number = static_cast<std::uint8_t>(byte(rng) % (max_returns + 1));
    int const c = byte(rng);
    // Mostly classes the filters name, the rest anything the format holds.
    p.classification = static_cast<std::uint8_t>(c < 160 ? c % 10 : (extended ? c : c % 32));
    p.flags = static_cast<std::uint8_t>(byte(rng) % (extended ? 16 : 8));
    p.channel = static_cast<std::uint8_t>(byte(rng) % 4);
    p.scan_direction = (byte(rng) & 1) != 0;
    p.edge = (byte(rng) & 1) != 0;
  }
  return out;
}

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
