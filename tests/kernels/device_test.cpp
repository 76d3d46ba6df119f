// The device as a whole: properties, read bandwidth, and errors that leave the device usable.

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/grid_gpu.hpp"
#include "kernels_test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <iostream>
#include <string>

namespace heightgrid {
namespace {

class Device : public ::testing::Test {
 protected:
  void SetUp() override { HG_SKIP_WITHOUT_GPU(); }
};

TEST_F(Device, QueryIsSane)
{
  auto const info = query_device();
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.sm_count, 0);
  EXPECT_GT(info.total_mem, 0U);
  EXPECT_LE(info.free_mem, info.total_mem);
  EXPECT_GE(info.cc_major, 1);
  EXPECT_GT(info.l2_bytes, 0U);
  std::cout << "[ INFO     ] " << info.name << ", " << info.sm_count << " SMs, cc " << info.cc_major << "."
            << info.cc_minor << ", " << (info.total_mem >> 20) << " MiB, L2 " << (info.l2_bytes >> 20) << " MiB\n";
}

// The smoke test of the CUDA toolchain: a kernel runs and reads at a plausible rate.
TEST_F(Device, ReadBandwidthIsPlausible)
{
  double const gbps = measure_read_bandwidth_gbps(std::size_t{512} << 20, 5, nullptr);
  EXPECT_TRUE(std::isfinite(gbps));
  EXPECT_GT(gbps, 10.0);
  EXPECT_LT(gbps, 100000.0);
  std::cout << "[ INFO     ] read bandwidth " << gbps << " GB/s\n";
}

TEST_F(Device, BadArgumentsAreUsageErrors)
{
  try {
    (void)measure_read_bandwidth_gbps(8, 1, nullptr);
    ADD_FAILURE() << "8 bytes accepted";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
  }
  try {
    (void)measure_read_bandwidth_gbps(1 << 20, 0, nullptr);
    ADD_FAILURE() << "0 repeats accepted";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
  }
}

// Out of device memory is a resource error that quotes the sizes, and the device stays usable.
TEST_F(Device, OutOfMemoryIsAResourceErrorAndTheDeviceRecovers)
{
  auto const too_much = 2 * query_device().total_mem;
  try {
    (void)measure_read_bandwidth_gbps(too_much, 1, nullptr);
    ADD_FAILURE() << "a buffer of twice the device memory was allocated";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::resource) << e.what();
    std::string const what = e.what();
    std::string const needed = "needed " + std::to_string((too_much / 16 * 16 + (1 << 20) - 1) >> 20) + " MiB";
    EXPECT_NE(what.find(needed), std::string::npos) << what;
    EXPECT_NE(what.find("MiB free of"), std::string::npos) << what;
    EXPECT_NE(what.find("try --device cpu or a coarser grid"), std::string::npos) << what;
  }
  csr_grid csr;
  csr.offsets = {0, 2};
  csr.z = {1.0, 4.0};
  auto const r = reduce_csr_gpu(csr, metric_request::from({metric::range}), default_nodata, reduce_mode::warp, nullptr);
  EXPECT_EQ(r.range, column<float>{3.0F});
}

TEST_F(Device, MalformedCsrIsAnInternalError)
{
  csr_grid csr;
  csr.offsets = {0, 3, 2};
  csr.z = {1.0, 2.0};
  try {
    (void)reduce_csr_gpu(csr, metric_request::from({metric::range}), default_nodata, reduce_mode::thread, nullptr);
    ADD_FAILURE() << "a malformed CSR was accepted";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::internal) << e.what();
  }
}

}  // namespace
}  // namespace heightgrid
