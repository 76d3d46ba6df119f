// Every reduce mode against reduce_cells_cpu and against the cub mode, on the same CSR: min, max,
// range and count bit for bit, mean and stddev within one float ulp. New modes are picked up
// through all_modes() (those that reduce a CSR: test::csr_modes(); atomic is in grid_gpu_test).

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/grid_gpu.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"
#include "kernels_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace heightgrid {
namespace {

using test::all_metrics;
using test::make_csr;
using test::same_results;

constexpr float nan_nodata = default_nodata;

class ReduceMode : public ::testing::TestWithParam<reduce_mode> {
 protected:
  void SetUp() override { HG_SKIP_WITHOUT_GPU(); }

  /// The mode under test against the CPU reference and against cub.
  static void check(csr_grid const& csr, metric_request const& request, float nodata = nan_nodata)
  {
    auto const mode = GetParam();
    auto const cpu = reduce_cells_cpu(csr, request, nodata);
    auto const got = reduce_csr_gpu(csr, request, nodata, mode, nullptr);
    EXPECT_TRUE(same_results(got, cpu, request, csr.num_cells()))
      << mode_name(mode) << " vs reduce_cells_cpu, " << csr.num_cells() << " cells, " << csr.z.size() << " points";
    if (mode != reduce_mode::cub) {
      auto const oracle = reduce_csr_gpu(csr, request, nodata, reduce_mode::cub, nullptr);
      EXPECT_TRUE(same_results(got, oracle, request, csr.num_cells()))
        << mode_name(mode) << " vs cub, " << csr.num_cells() << " cells, " << csr.z.size() << " points";
    }
  }
};

// The STYLE.md example, by hand: offsets=[0,3,3,7] z=[8,6,7,5,3,0,9] -> min=[6,nan,0].
TEST_P(ReduceMode, HandCheckedExample)
{
  csr_grid csr;
  csr.offsets = {0, 3, 3, 7};
  csr.z = {8, 6, 7, 5, 3, 0, 9};
  for (float const nodata : {nan_nodata, -9999.0F}) {
    SCOPED_TRACE(nodata);
    auto const r = reduce_csr_gpu(csr, all_metrics(), nodata, GetParam(), nullptr);
    auto const is_nodata = [&](float v) { return test::bits_of(v) == test::bits_of(nodata); };
    ASSERT_EQ(r.min.size(), 3U);
    EXPECT_EQ(r.min[0], 6.0F);
    EXPECT_TRUE(is_nodata(r.min[1]));
    EXPECT_EQ(r.min[2], 0.0F);
    EXPECT_EQ(r.max[0], 8.0F);
    EXPECT_TRUE(is_nodata(r.max[1]));
    EXPECT_EQ(r.max[2], 9.0F);
    EXPECT_EQ(r.range[0], 2.0F);
    EXPECT_TRUE(is_nodata(r.range[1]));
    EXPECT_EQ(r.range[2], 9.0F);
    EXPECT_EQ(r.count, (column<std::uint32_t>{3, 0, 4}));
    EXPECT_EQ(r.mean[0], 7.0F);
    EXPECT_TRUE(is_nodata(r.mean[1]));
    EXPECT_EQ(r.mean[2], 4.25F);
    // Cell 0: deviations 1, -1, 0 -> sqrt(2/3); cell 2: 0.75, -1.25, -4.25, 4.75 -> sqrt(42.75/4).
    EXPECT_LE(test::ulp_distance(r.stddev[0], static_cast<float>(std::sqrt(2.0 / 3.0))), 1U);
    EXPECT_TRUE(is_nodata(r.stddev[1]));
    EXPECT_LE(test::ulp_distance(r.stddev[2], static_cast<float>(std::sqrt(42.75 / 4.0))), 1U);
    check(csr, all_metrics(), nodata);
  }
}

TEST_P(ReduceMode, OnePointCellHasRangeAndStddevZero)
{
  csr_grid csr;
  csr.offsets = {0, 1};
  csr.z = {-42.5};
  auto const r = reduce_csr_gpu(csr, all_metrics(), nan_nodata, GetParam(), nullptr);
  EXPECT_EQ(r.range, column<float>{0.0F});
  EXPECT_EQ(r.stddev, column<float>{0.0F});
  EXPECT_EQ(r.min, column<float>{-42.5F});
  EXPECT_EQ(r.mean, column<float>{-42.5F});
  EXPECT_EQ(r.count, column<std::uint32_t>{1});
}

// Sizes around the warp width and the per-lane stride, alone and between empty and one-point cells.
TEST_P(ReduceMode, CellSizesAroundTheWarpWidth)
{
  std::vector<std::uint64_t> const sizes{0, 1, 31, 32, 33, 63, 64, 65, 1000, 1000000};
  std::uint64_t seed = 1;
  for (auto const s : sizes) {
    SCOPED_TRACE("cell of " + std::to_string(s) + " points");
    check(make_csr({s}, seed++), all_metrics());
    if (s <= 1000) { check(make_csr({s, 0, s, 1, s}, seed++), all_metrics()); }
  }
  auto mixed = sizes;
  std::shuffle(mixed.begin(), mixed.end(), std::mt19937_64(7));
  check(make_csr(mixed, seed++), all_metrics());
}

// Cell counts around multiples of the warp mode's cells per block (8) and the thread mode's block.
TEST_P(ReduceMode, CellCountsThatAreNotMultiplesOfTheBlock)
{
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::uint64_t> points(0, 70);
  for (std::uint64_t const cells : {1, 2, 7, 8, 9, 15, 17, 255, 257, 1237}) {
    SCOPED_TRACE(std::to_string(cells) + " cells");
    std::vector<std::uint64_t> counts(cells);
    for (auto& c : counts) { c = points(rng); }
    check(make_csr(counts, cells), all_metrics());
  }
}

TEST_P(ReduceMode, ManyBlocks)
{
  std::mt19937_64 rng(13);
  std::poisson_distribution<std::uint64_t> points(4.0);
  std::vector<std::uint64_t> counts(300007);  // not a multiple of 8 or 256
  for (auto& c : counts) { c = points(rng); }
  check(make_csr(counts, 14), all_metrics());
}

// LiDAR-like skew: lognormal counts (most cells small, a long tail) and a few cells of 10^5 points.
TEST_P(ReduceMode, SkewedCounts)
{
  std::mt19937_64 rng(17);
  std::lognormal_distribution<double> points(1.0, 1.5);
  std::vector<std::uint64_t> counts(50000);
  for (auto& c : counts) { c = std::min<std::uint64_t>(static_cast<std::uint64_t>(points(rng)), 20000); }
  for (std::uint64_t const hot : {3ULL, 4ULL, 25000ULL, 49999ULL}) { counts[hot] = 100000; }
  check(make_csr(counts, 18), all_metrics());
}

// Each band alone, and the combinations with their own code paths (range only: no sums; mean
// without stddev: sums without the second pass).
TEST_P(ReduceMode, OnlyTheRequestedBandsAreProduced)
{
  auto const csr = make_csr({5, 0, 40, 1, 33, 0, 0, 100, 64, 2, 31}, 19);
  for (auto const m : {metric::range, metric::min, metric::max, metric::count, metric::mean, metric::stddev}) {
    SCOPED_TRACE(std::string(metric_name(m)));
    check(csr, metric_request::from({m}));
  }
  check(csr, metric_request::from({metric::min, metric::max}));
  check(csr, metric_request::from({metric::mean, metric::count}));
  check(csr, metric_request::from({metric::stddev, metric::range}));
  check(csr, metric_request{});  // nothing requested: nothing produced
}

TEST_P(ReduceMode, NodataValuesOtherThanNan)
{
  auto const csr = make_csr({0, 3, 0, 0, 70, 0, 1, 0, 0}, 23);
  for (float const nodata : {-9999.0F, 0.0F, 3.4e38F, -std::numeric_limits<float>::infinity()}) {
    SCOPED_TRACE(nodata);
    check(csr, all_metrics(), nodata);
    auto const r = reduce_csr_gpu(csr, all_metrics(), nodata, GetParam(), nullptr);
    EXPECT_EQ(r.min[0], nodata);
    EXPECT_EQ(r.stddev[2], nodata);
    EXPECT_EQ(r.count[0], 0U);
  }
}

TEST_P(ReduceMode, NoCellsAndNoPoints)
{
  csr_grid none;  // no offsets at all: a grid without cells
  auto const r0 = reduce_csr_gpu(none, all_metrics(), nan_nodata, GetParam(), nullptr);
  EXPECT_TRUE(same_results(r0, reduce_cells_cpu(none, all_metrics()), all_metrics(), 0));

  csr_grid zero;
  zero.offsets = {0};
  auto const r1 = reduce_csr_gpu(zero, all_metrics(), nan_nodata, GetParam(), nullptr);
  EXPECT_TRUE(same_results(r1, reduce_cells_cpu(zero, all_metrics()), all_metrics(), 0));

  check(make_csr(std::vector<std::uint64_t>(13, 0), 29), all_metrics(), -1.0F);
}

// min/max/range reduced in double and rounded once: range = float(max - min), which differs from
// float(max) - float(min) at this magnitude; negative values and a wide spread of exponents.
TEST_P(ReduceMode, RoundingOnceAtLargeMagnitudes)
{
  auto csr = make_csr({7, 40, 1, 33, 2}, 31, 4849497.0, 4849498.0);
  check(csr, all_metrics());
  csr = make_csr({7, 40, 1, 33, 2}, 37, -1e6, 1e6);
  check(csr, all_metrics());
  csr.z[3] = -1e-30;  // exponents far apart, both inside float's range
  csr.z[4] = 1e30;
  check(csr, metric_request::from({metric::min, metric::max, metric::range, metric::count}));
}

// stream_gate: work enqueued behind a gate waits for open(); a gate nobody opens lets the stream go
// after its timeout and says so; the bands are the same as without a gate.
TEST(StreamGate, HoldsTheStreamUntilOpenedOrTimedOut)
{
  HG_SKIP_WITHOUT_GPU();
  using clock = std::chrono::steady_clock;
  auto const csr = make_csr({3, 0, 65, 1000, 1, 32, 0, 33, 7}, 43);
  auto const device = device_csr::from_host(csr, nullptr);
  auto const expected = reduce_cells_cpu(csr, all_metrics());
  auto const elapsed_ms = [](clock::time_point since) {
    return std::chrono::duration<double, std::milli>(clock::now() - since).count();
  };
  // Warm-up runs first, as compare does before its gated runs: without them the first gated run
  // of this test waited for the gate's timeout on an H100, most likely because CUDA loads a
  // kernel's module lazily at its first launch and that load waited for the gated stream.
  for (auto const mode : {reduce_mode::hybrid, reduce_mode::thread}) {
    (void)reduce(device, all_metrics(), nan_nodata, mode, nullptr).kernel_ms();
  }
  {  // opened after 100 ms: the run waited for it, its events did not time the wait, no timeout
    auto const start = clock::now();
    stream_gate gate(nullptr, 10000.0);
    auto const run = reduce(device, all_metrics(), nan_nodata, reduce_mode::hybrid, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gate.open();
    float const ms = run.kernel_ms();
    EXPECT_GE(elapsed_ms(start), 100.0);
    EXPECT_LT(ms, 50.0F) << "the events timed the host's wait";
    EXPECT_FALSE(gate.timed_out());
    EXPECT_TRUE(same_results(run.to_host(nullptr), expected, all_metrics(), csr.num_cells()));
  }
  {  // never opened: the stream goes on after the 200 ms timeout, and the gate says so
    auto const start = clock::now();
    stream_gate gate(nullptr, 200.0);
    auto const run = reduce(device, all_metrics(), nan_nodata, reduce_mode::thread, nullptr);
    (void)run.kernel_ms();  // waits for the stream, which waits for the timeout
    EXPECT_GE(elapsed_ms(start), 190.0);
    EXPECT_TRUE(gate.timed_out());
    EXPECT_TRUE(same_results(run.to_host(nullptr), expected, all_metrics(), csr.num_cells()));
  }
  EXPECT_THROW(stream_gate(nullptr, 0.0), error);
  EXPECT_THROW(stream_gate(nullptr, -1.0), error);
}

// The device-resident API: one upload, every mode, repeated; the same bands each time.
TEST_P(ReduceMode, DeviceResidentRunsAreRepeatable)
{
  auto const csr = make_csr({3, 0, 65, 1000, 1, 32, 0, 33, 7}, 41);
  auto const device = device_csr::from_host(csr, nullptr);
  EXPECT_EQ(device.num_cells(), csr.num_cells());
  EXPECT_EQ(device.num_points(), csr.z.size());
  auto const first = reduce(device, all_metrics(), nan_nodata, GetParam(), nullptr);
  auto const second = reduce(device, all_metrics(), nan_nodata, GetParam(), nullptr);
  EXPECT_EQ(first.mode(), GetParam());
  EXPECT_GE(first.kernel_ms(), 0.0F);
  auto const a = first.to_host(nullptr);
  auto const b = second.to_host(nullptr);
  EXPECT_TRUE(same_results(a, b, all_metrics(), csr.num_cells(), -1)) << "two runs of the same mode differ";
  EXPECT_TRUE(same_results(a, reduce_cells_cpu(csr, all_metrics()), all_metrics(), csr.num_cells()));

  auto const back = device.to_host(nullptr);
  EXPECT_EQ(back.offsets, csr.offsets);
  EXPECT_EQ(back.z, csr.z);
}

INSTANTIATE_TEST_SUITE_P(AllModes, ReduceMode, ::testing::ValuesIn(test::csr_modes()), test::mode_param_name{});

}  // namespace
}  // namespace heightgrid
