// gpu_binner::fold_device_records: records already in device memory (as the GPU LAZ decoder leaves
// them: point14 prefixes of 18 bytes, back to back) folded run by run, each run with its own file
// transform and statistics entry. Must give exactly what submitting each run as a batch of raw
// records gives (itself checked against the CPU in gpu_binner_records_test.cpp): runs that start
// off a 16-byte boundary, a run longer than the binner's pieces of 2^16 records, a run of one
// record, records between runs that belong to none, several folds before one wait. Skips without
// a GPU. (Built only with CUDA: it puts the records on the device itself.)

#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"
#include "binner_extremes.hpp"
#include "test_grids.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/las_record.hpp"
#include "heightgrid/core/point_filter.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace heightgrid {
namespace {

constexpr std::uint32_t stride = 18;

/// `n` point14 prefixes over a 40 x 30 grid of 1 m cells at scale 0.01 (some outside), every fifth
/// point in one cell, classes 0-19, returns and flags at random.
std::vector<std::uint8_t> make_prefixes(std::size_t n, std::uint32_t seed)
{
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> x(-300, 4300), y(-300, 3300), z(-5000, 90000);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> out(n * stride);
  auto put = [](std::uint8_t* p, std::int32_t v) { std::memcpy(p, &v, 4); };
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t* r = out.data() + i * stride;
    bool const crowd = i % 5 == 0;
    put(r + 0, crowd ? 10 : x(rng));
    put(r + 4, crowd ? 2990 : y(rng));
    put(r + 8, z(rng));
    r[12] = r[13] = 0;  // intensity: the GPU decoder writes none
    r[14] = static_cast<std::uint8_t>(byte(rng));  // return number | number of returns << 4
    r[15] = static_cast<std::uint8_t>(byte(rng));  // classification flags, scanner channel, ...
    r[16] = static_cast<std::uint8_t>(byte(rng) % 20);
    r[17] = 0;
  }
  return out;
}

struct device_bytes {
  void* p{nullptr};
  explicit device_bytes(std::vector<std::uint8_t> const& host)
  {
    EXPECT_EQ(cudaMalloc(&p, host.size()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~device_bytes() { cudaFree(p); }
  device_bytes(device_bytes const&) = delete;
  device_bytes& operator=(device_bytes const&) = delete;
};

using test::binner_extremes;
using test::download_extremes;

scaled_coords transform(double s, double dx, double dz)
{
  scaled_coords t;
  t.scale[0] = t.scale[1] = t.scale[2] = s;
  t.offset[0] = dx;
  t.offset[2] = dz;
  return t;
}

TEST(GpuBinnerFold, DeviceRecordsFoldAsBatchesOfTheSameRecords)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: folding device records is checked on the GPU machine"; }
  grid_spec g;
  g.x0 = 0.0;
  g.y0 = 30.0;
  g.xres = g.yres = 1.0;
  g.cols = 40;
  g.rows = 30;
  grid_band const band{g, 0, g.rows};
  std::size_t const total = 150000;
  std::vector<std::uint8_t> const host = make_prefixes(total, 7);
  device_bytes const device(host);
  // Record 1001 starts at byte 18018 (off a 16-byte boundary by 2); 70001 records are two pieces
  // and a bit; records 71002-71009 and everything past 140000 belong to no run.
  std::vector<std::vector<device_record_run>> folds = {
    {{0, 1000, transform(0.01, 0.0, 0.0), 0}, {1001, 70001, transform(0.01, 0.5, -3.0), 2}},
    {{71010, 1, transform(0.01, 0.0, 0.0), 0}, {71011, 68989, transform(0.02, -10.0, 1.0), 5}},
  };
  filter_options defaults = filter_options::keep_all();
  defaults.drop_classes = {7, 18};
  defaults.drop_withheld = true;
  filter_options first = defaults;
  first.returns = return_filter::first;
  for (auto const& options : {filter_options::keep_all(), defaults, first}) {
    filter_rules const rules(options);
    gpu_binner_options o;
    o.batch_points = 80000;
    o.request.min = o.request.max = o.request.count = true;
    o.record_filter = rules.table();
    gpu_binner folded(band, o);
    gpu_binner batches(band, o);
    std::vector<std::uint8_t> memory(batch_bytes(o.batch_points));
    for (auto const& runs : folds) {
      folded.fold_device_records(device.p, stride, true, runs);
      for (auto const& r : runs) {
        SCOPED_TRACE("run from record " + std::to_string(r.first));
        point_batch raw;
        std::memcpy(memory.data(), host.data() + r.first * stride, r.count * stride);
        raw.data = memory.data();
        raw.capacity = o.batch_points;
        raw.size = r.count;
        raw.encoding = coord_encoding::las_records;
        raw.record_length = stride;
        raw.extended_records = true;
        raw.transform = r.transform;
        raw.source = r.source;
        batches.submit(raw, {});
        batches.synchronize();  // the host memory is reused for the next run
      }
    }
    folded.wait_folds();
    folded.wait_folds();  // nothing pending: returns at once
    EXPECT_GT(folded.times().fold_ms, 0.0);
    binner_extremes const a = download_extremes(folded, g);
    binner_extremes const b = download_extremes(batches, g);
    EXPECT_EQ(a.lo, b.lo);
    EXPECT_EQ(a.hi, b.hi);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.binned, b.binned);
    EXPECT_EQ(a.outside, b.outside);
    EXPECT_GT(a.binned, 0U);
    std::vector<las_record_stats> const fs = folded.take_record_stats();
    std::vector<las_record_stats> const bs = batches.take_record_stats();
    ASSERT_EQ(fs.size(), 6U);
    ASSERT_EQ(bs.size(), 6U);
    for (std::size_t i = 0; i < fs.size(); ++i) {
      SCOPED_TRACE("source " + std::to_string(i));
      EXPECT_EQ(fs[i].non_finite, bs[i].non_finite);
      EXPECT_EQ(fs[i].by_class, bs[i].by_class);
      EXPECT_EQ(fs[i].withheld, bs[i].withheld);
      EXPECT_EQ(fs[i].by_return, bs[i].by_return);
      EXPECT_EQ(fs[i].by_z, bs[i].by_z);
      EXPECT_EQ(fs[i].any_kept(), i == 0 || i == 2 || i == 5);
      for (int axis = 0; axis < 3; ++axis) {
        EXPECT_EQ(fs[i].lo[axis], bs[i].lo[axis]);
        EXPECT_EQ(fs[i].hi[axis], bs[i].hi[axis]);
      }
    }
  }
}

TEST(GpuBinnerFold, FoldingNeedsARecordFilter)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the binner's checks run on the GPU machine"; }
  grid_spec const g = test::unit_square_grid(4);
  gpu_binner_options o;
  o.batch_points = 16;
  o.request.min = o.request.max = o.request.count = true;
  gpu_binner b(grid_band{g, 0, g.rows}, o);  // no record_filter
  std::vector<std::uint8_t> const host = make_prefixes(4, 1);
  device_bytes const device(host);
  EXPECT_THROW(b.fold_device_records(device.p, stride, true, {{0, 4, scaled_coords{}, 0}}), error);
}

}  // namespace
}  // namespace heightgrid
