#pragma once
// Checking open_las_parts against open_las_source (las_parts_test.cpp, las_parts_laz_test.cpp):
// the parts of a LAS or LAZ file, concatenated in part order, must be exactly open_las_source's
// points (bit-identical x/y/z, same order), and with a filter exactly what apply_filter keeps of
// open_las_source's chunks, with the same filter_stats, whatever the part size and however many
// threads read the parts in whatever order.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/point_batch.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace heightgrid::test {

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
inline point_batch batch_over(std::vector<double>& buffer, std::size_t capacity)
{
  buffer.resize(batch_bytes(capacity) / sizeof(double));
  point_batch batch;
  batch.data = buffer.data();
  batch.capacity = capacity;
  return batch;
}

/// Reads part k into a batch over `buffer` and copies its points out, checking the batch.
inline xyz_points read_one(part_source& source, std::uint64_t k, filter_rules const& rules,
                           std::vector<double>& buffer, part_result& result)
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
inline parts_read read_parts(part_source& source, filter_options const& options, unsigned threads = 1,
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

inline reference_read read_reference(std::string const& path, filter_options const& options)
{
  filter_rules const rules(options);
  auto source = io::open_las_source(path);
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

inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// x and y bit for bit; z by value (apply_filter turns -0.0 into +0.0, batches keep integers).
inline void expect_same_points(xyz_points const& got, xyz_points const& want)
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

inline void expect_same_stats(filter_stats const& got, filter_stats const& want)
{
  EXPECT_EQ(got.points_in, want.points_in);
  EXPECT_EQ(got.non_finite, want.non_finite);
  EXPECT_EQ(got.by_class, want.by_class);
  EXPECT_EQ(got.withheld, want.withheld);
  EXPECT_EQ(got.by_return, want.by_return);
  EXPECT_EQ(got.by_z, want.by_z);
}

/// The parts' extent and z range must be those of the kept points.
inline void expect_summary_of(part_result const& got, xyz_points const& kept)
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
inline void expect_parts_match(std::string const& path, std::size_t part_points, filter_options const& options,
                               unsigned threads = 1, std::uint32_t shuffle_seed = 0)
{
  SCOPED_TRACE(path + ", part_points " + std::to_string(part_points) + ", threads " + std::to_string(threads));
  auto source = io::open_las_parts(path, part_points);
  reference_read const want = read_reference(path, options);
  parts_read const got = read_parts(*source, options, threads, shuffle_seed);
  expect_same_points(got.points, want.points);
  expect_same_stats(got.total.filtered, want.stats);
  expect_summary_of(got.total, got.points);
}

/// The filters the tests try: keep-all, the default, and each rule alone and combined.
inline std::vector<filter_options> some_filters()
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

}  // namespace heightgrid::test
