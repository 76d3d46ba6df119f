// CPU-side checks that run everywhere, CI without a GPU included: mode and method names, and how
// the GPU entry points behave when there is no usable GPU (an exception, never a crash or exit).

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/grid_gpu.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"
#include "kernels_test_support.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace heightgrid {
namespace {

TEST(ReduceModeNames, RoundTripAndAreUnique)
{
  auto const modes = all_modes();
  ASSERT_FALSE(modes.empty());
  std::set<std::string> names;
  for (auto const mode : modes) {
    auto const name = mode_name(mode);
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name, "?");
    EXPECT_EQ(parse_mode(name), mode) << name;
    EXPECT_TRUE(names.insert(std::string(name)).second) << "duplicate mode name " << name;
  }
  EXPECT_EQ(parse_mode("warp"), reduce_mode::warp);
  EXPECT_EQ(parse_mode(""), std::nullopt);
  EXPECT_EQ(parse_mode("Warp"), std::nullopt);
  EXPECT_EQ(parse_mode("warps"), std::nullopt);
}

TEST(ReduceModeNames, AutoIsNotAMode)
{
  EXPECT_EQ(parse_mode(auto_mode_name), std::nullopt);
  for (auto const mode : all_modes()) { EXPECT_NE(mode_name(mode), auto_mode_name); }
  EXPECT_EQ(parse_mode("hybrid"), reduce_mode::hybrid);
  EXPECT_EQ(parse_mode("atomic"), reduce_mode::atomic);
}

TEST(ReduceModeSupport, AtomicHasNoCsrAndNoSums)
{
  for (auto const mode : all_modes()) {
    EXPECT_EQ(mode_reduces_csr(mode), mode != reduce_mode::atomic) << mode_name(mode);
    EXPECT_TRUE(mode_supports(mode, metric_request::from({metric::range, metric::min, metric::max, metric::count})));
    EXPECT_EQ(mode_supports(mode, metric_request::from({metric::mean})), mode != reduce_mode::atomic);
    EXPECT_EQ(mode_supports(mode, metric_request::from({metric::range, metric::stddev})), mode != reduce_mode::atomic);
  }
}

TEST(CsrMethodNames, RoundTripAndAreUnique)
{
  auto const methods = all_csr_methods();
  ASSERT_EQ(methods.size(), 1U) << "one CSR builder (the counting one is gone)";
  std::set<std::string> names;
  for (auto const method : methods) {
    auto const name = csr_method_name(method);
    EXPECT_EQ(parse_csr_method(name), method) << name;
    EXPECT_TRUE(names.insert(std::string(name)).second);
  }
  EXPECT_EQ(parse_csr_method("radix_sort"), csr_method::radix_sort);
  EXPECT_EQ(parse_csr_method("radix"), std::nullopt);
  EXPECT_EQ(parse_csr_method("counting"), std::nullopt);
}

TEST(GpuAvailable, AnswersWithoutThrowingAndExplainsAbsence)
{
  std::string why;
  bool available = false;
  EXPECT_NO_THROW(available = gpu_available(&why));
  EXPECT_EQ(gpu_available(), available) << "the answer is stable";
  if (!available) {
    EXPECT_FALSE(why.empty());
    std::cout << "[ INFO     ] no GPU: " << why << "\n";
  }
}

// find_gpu() is the driver's half of gpu_available(): the same answer on a host with a usable GPU
// and on one without (no driver, no device: CI), and a device index past the count is refused.
TEST(GpuAvailable, TheDriversAnswerAgreesAndRefusesADeviceThatIsNotThere)
{
  std::string why;
  bool found = false;
  EXPECT_NO_THROW(found = find_gpu(&why));
  EXPECT_EQ(found, gpu_available());
  EXPECT_EQ(found, why.empty()) << why;
  std::string beyond;
  EXPECT_FALSE(find_gpu(&beyond, 1 << 20));
  EXPECT_FALSE(beyond.empty());
  if (found) { EXPECT_NE(beyond.find("1048576 asked for, but this machine has"), std::string::npos) << beyond; }
}

// Without a usable GPU every entry point throws error_kind::device and the process lives on.
TEST(GpuAvailable, EntryPointsThrowDeviceErrorsWithoutAGpu)
{
  if (gpu_available()) { GTEST_SKIP() << "a GPU is present"; }
  auto const expect_device_error = [](auto&& call, char const* what) {
    try {
      call();
      ADD_FAILURE() << what << " did not throw";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::device) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("GPU"), std::string::npos) << e.what();
    }
  };
  csr_grid csr;
  csr.offsets = {0, 1};
  csr.z = {1.0};
  grid_spec grid;
  grid.cols = 1;
  grid.rows = 1;
  point_chunk points;
  points.x = {0.5};
  points.y = {-0.5};
  points.z = {1.0};
  auto const request = test::all_metrics();
  expect_device_error([&] { (void)reduce_csr_gpu(csr, request, default_nodata, reduce_mode::warp, nullptr); },
                      "reduce_csr_gpu");
  expect_device_error([&] { (void)grid_points_gpu(grid, points, request, default_nodata, reduce_mode::cub, nullptr); },
                      "grid_points_gpu");
  expect_device_error([&] { (void)device_csr::from_host(csr, nullptr); }, "device_csr::from_host");
  expect_device_error([&] { (void)query_device(); }, "query_device");
  expect_device_error([&] { (void)measure_read_bandwidth_gbps(1 << 20, 1, nullptr); }, "measure_read_bandwidth_gbps");
}

}  // namespace
}  // namespace heightgrid
