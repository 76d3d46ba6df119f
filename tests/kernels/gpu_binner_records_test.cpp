// gpu_binner on batches of raw LAS records (coord_encoding::las_records): the device decodes,
// filters and folds them, and must give exactly the accumulators, counters and per-source filter
// statistics that decoding the same records on the CPU (decode_las_records) and binning the columns
// gives — at sizes 0, 1, 31, 32, 33, 64, 65 and many blocks, for legacy and extended records, with
// every filter rule. Records are assembled here at the ASPRS offsets written out as numbers.
// Skips without a GPU.

#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"
#include "binner_extremes.hpp"
#include "test_grids.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/las_record.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace heightgrid {
namespace {

struct record_spec {
  bool extended;
  std::uint32_t length;
};

/// `n` random records of `spec.length` bytes over a 40 x 30 grid of 1 m cells (scale 0.01, some
/// points outside it), with classes, flags and returns the filters look at.
std::vector<std::uint8_t> make_records(std::size_t n, record_spec spec, std::uint32_t seed)
{
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> x(-300, 4300), y(-300, 3300), z(-5000, 90000);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> out(n * spec.length);
  auto put = [](std::uint8_t* p, std::int32_t v) { std::memcpy(p, &v, 4); };
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t* r = out.data() + i * spec.length;
    for (std::uint32_t b = 0; b < spec.length; ++b) { r[b] = static_cast<std::uint8_t>(byte(rng)); }  // noise
    // Many points in few cells (cell 0 gets every eighth point), so warps share cells.
    bool const crowd = i % 8 == 0;
    put(r + 0, crowd ? 10 : x(rng));
    put(r + 4, crowd ? 2990 : y(rng));
    put(r + 8, z(rng));
    int const returns = byte(rng) % (spec.extended ? 16 : 8);
    int const number = byte(rng) % (spec.extended ? 16 : 8);
    int const cls = byte(rng) % 20;
    int const flags = byte(rng) % (spec.extended ? 16 : 8);
    if (spec.extended) {
      r[14] = static_cast<std::uint8_t>(returns | (number << 4));
      r[15] = static_cast<std::uint8_t>(flags | (r[15] & 0xF0));
      r[16] = static_cast<std::uint8_t>(cls);
    } else {
      r[14] = static_cast<std::uint8_t>(returns | (number << 3) | (r[14] & 0xC0));
      r[15] = static_cast<std::uint8_t>(cls | (flags << 5));
    }
  }
  return out;
}

std::vector<filter_options> filters()
{
  // Every entry starts from keep_all(): GCC 12 warns (maybe-uninitialized, a false positive) about
  // filter_options' default constructor inlined several times into one function.
  std::vector<filter_options> f;
  f.push_back(filter_options::keep_all());
  filter_options defaults = filter_options::keep_all();  // what filter_options{} drops
  defaults.drop_classes = {7, 18};
  defaults.drop_withheld = true;
  f.push_back(defaults);
  filter_options classes = filter_options::keep_all();
  classes.classes = {2, 5, 6};
  f.push_back(classes);
  filter_options first = defaults;
  first.returns = return_filter::first;
  f.push_back(first);
  filter_options last = defaults;
  last.returns = return_filter::last;
  f.push_back(last);
  filter_options z = filter_options::keep_all();
  z.z_min = 0.0;
  z.z_max = 500.0;
  f.push_back(z);
  return f;
}

using test::binner_extremes;
using test::download_extremes;

TEST(GpuBinnerRecords, DeviceDecodingEqualsCpuDecodingThenBinning)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the records kernel is checked on the GPU machine"; }
  grid_spec g;
  g.x0 = 0.0;
  g.y0 = 30.0;
  g.xres = g.yres = 1.0;
  g.cols = 40;
  g.rows = 30;
  grid_band const band{g, 0, g.rows};
  metric_request request;
  request.min = request.max = request.count = true;
  std::size_t const capacity = 100000;
  // 28, 30, 67: tiles staged in shared memory; 200: records read straight from global memory.
  for (record_spec const spec :
       {record_spec{false, 28}, record_spec{true, 30}, record_spec{true, 67}, record_spec{false, 200}}) {
    for (auto const& options : filters()) {
      filter_rules const rules(options);
      gpu_binner_options o;
      o.batch_points = capacity;
      o.request = request;
      o.record_filter = rules.table();
      gpu_binner records(band, o);
      gpu_binner columns(band, o);
      las_record_stats cpu_stats;
      std::vector<double> column_memory(batch_bytes(capacity) / sizeof(double));
      std::uint32_t seed = 1;
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{32}, std::size_t{33},
                            std::size_t{64}, std::size_t{65}, batch_bytes(capacity) / spec.length}) {
        SCOPED_TRACE("record length " + std::to_string(spec.length) + ", " + std::to_string(n) + " records");
        std::vector<std::uint8_t> bytes = make_records(n, spec, seed++);
        bytes.resize(batch_bytes(capacity));
        point_batch raw;
        raw.data = bytes.data();
        raw.capacity = capacity;
        raw.size = n;
        raw.encoding = coord_encoding::las_records;
        raw.record_length = spec.length;
        raw.extended_records = spec.extended;
        raw.transform.scale[0] = raw.transform.scale[1] = raw.transform.scale[2] = 0.01;
        raw.transform.offset[2] = -3.0;
        raw.source = 2;
        records.submit(raw, {});
        records.synchronize();  // the host memory of this batch is reused below
        point_batch cols;
        cols.data = column_memory.data();
        cols.capacity = capacity;
        decode_las_records(raw, rules, cols, cpu_stats);
        EXPECT_EQ(cols.source, 2U);
        columns.submit(cols, {});
        columns.synchronize();
      }
      binner_extremes const a = download_extremes(records, g);
      binner_extremes const b = download_extremes(columns, g);
      EXPECT_EQ(a.lo, b.lo);
      EXPECT_EQ(a.hi, b.hi);
      EXPECT_EQ(a.count, b.count);
      EXPECT_EQ(a.binned, b.binned);
      EXPECT_EQ(a.outside, b.outside);
      EXPECT_GT(a.binned, 0U);
      std::vector<las_record_stats> const device = records.take_record_stats();
      ASSERT_EQ(device.size(), 3U) << "entries up to the largest source index";
      EXPECT_FALSE(device[0].any_kept());
      EXPECT_EQ(device[0].by_class, 0U);
      las_record_stats const& d = device[2];
      EXPECT_EQ(d.non_finite, cpu_stats.non_finite);
      EXPECT_EQ(d.by_class, cpu_stats.by_class);
      EXPECT_EQ(d.withheld, cpu_stats.withheld);
      EXPECT_EQ(d.by_return, cpu_stats.by_return);
      EXPECT_EQ(d.by_z, cpu_stats.by_z);
      for (int axis = 0; axis < 3; ++axis) {
        EXPECT_EQ(d.lo[axis], cpu_stats.lo[axis]);
        EXPECT_EQ(d.hi[axis], cpu_stats.hi[axis]);
      }
      // Taken: the next call starts over.
      EXPECT_TRUE(records.take_record_stats().empty());
    }
  }
}

TEST(GpuBinnerRecords, RecordsNeedTheAtomicReductionAndAFilter)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the binner's checks run on the GPU machine"; }
  grid_spec const g = test::unit_square_grid(4);
  gpu_binner_options o;
  o.batch_points = 16;
  o.request.min = o.request.max = o.request.count = true;
  gpu_binner b(grid_band{g, 0, g.rows}, o);  // no record_filter
  std::vector<std::uint8_t> bytes(batch_bytes(16));
  point_batch raw;
  raw.data = bytes.data();
  raw.capacity = 16;
  raw.size = 2;
  raw.encoding = coord_encoding::las_records;
  raw.record_length = 20;
  bool released = false;
  EXPECT_THROW(b.submit(raw, [&] { released = true; }), error);
  EXPECT_TRUE(released) << "refused batches hand their memory back";
}

}  // namespace
}  // namespace heightgrid
