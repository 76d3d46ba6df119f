// The reduction ladder: every kernel x type x op against the CPU (core/reduction_cpu.hpp) at the
// tricky sizes 0, 1, 31, 32, 33, 64, 65, 1000, 4097 and 2^20 + 7, from aligned and misaligned
// starts. Int32 sums and every max are compared exactly; float/double sums exactly on small-integer
// data (exact in any order) and within a rounding bound on real-valued data. New kernels are
// picked up through all_ladder_kernels(). The names and the no-GPU behaviour are tested everywhere.

#include "heightgrid/core/error.hpp"
#include "heightgrid/ladder/reduction_cpu.hpp"
#include "heightgrid/ladder/reduction_ladder.hpp"
#include "kernels_test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <ostream>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace heightgrid {
namespace {

std::vector<std::uint64_t> const tricky_sizes{0, 1, 31, 32, 33, 64, 65, 1000, 4097, (std::uint64_t{1} << 20) + 7};
/// Element offsets of the reduced range: 0 starts on the allocation (256-byte aligned); 1 and 3
/// start 4 or 12 bytes past a 16-byte boundary for 4-byte types (8 or 24 for double), which
/// exercises the head/tail handling of the vectorized kernels.
std::vector<std::uint64_t> const offsets{0, 1, 3};
constexpr std::uint64_t largest = (std::uint64_t{1} << 20) + 7 + 3;

/// Calls f(T{}) with T the element type of `type`.
template <typename F>
void with_type(ladder_type type, F&& f)
{
  switch (type) {
    case ladder_type::int32:
      f(std::int32_t{});
      return;
    case ladder_type::float32:
      f(float{});
      return;
    case ladder_type::float64:
      f(double{});
      return;
  }
  FAIL() << "unknown ladder_type";
}

// ---------------------------------------------------------------------------------------------
// Everywhere: names, the support table, and no crash without a GPU.

TEST(LadderNames, RoundTripAndAreUnique)
{
  auto const kernels = all_ladder_kernels();
  ASSERT_EQ(kernels.size(), 10U);
  std::set<std::string> names;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    auto const k = kernels[i];
    EXPECT_EQ(static_cast<int>(k), static_cast<int>(i) + 1) << "numbered as in the issue, in ladder order";
    auto const name = ladder_kernel_name(k);
    EXPECT_NE(name, "?");
    EXPECT_EQ(parse_ladder_kernel(name), k) << name;
    EXPECT_EQ(parse_ladder_kernel(std::to_string(static_cast<int>(k))), k);
    EXPECT_TRUE(names.insert(std::string(name)).second) << name;
  }
  EXPECT_EQ(parse_ladder_kernel("8"), ladder_kernel::warp_shuffle);
  EXPECT_EQ(parse_ladder_kernel("cub"), ladder_kernel::cub);
  EXPECT_EQ(parse_ladder_kernel("0"), std::nullopt);
  EXPECT_EQ(parse_ladder_kernel("11"), std::nullopt);
  EXPECT_EQ(parse_ladder_kernel("8x"), std::nullopt);
  EXPECT_EQ(parse_ladder_kernel(""), std::nullopt);
  EXPECT_EQ(parse_ladder_type("float"), ladder_type::float32);
  EXPECT_EQ(parse_ladder_type("double"), ladder_type::float64);
  EXPECT_EQ(parse_ladder_type("int32"), ladder_type::int32);
  EXPECT_EQ(parse_ladder_type("int"), std::nullopt);
  EXPECT_EQ(parse_ladder_op("max"), ladder_op::max);
  EXPECT_EQ(parse_ladder_op("min"), std::nullopt);
  EXPECT_EQ(ladder_type_bytes(ladder_type::float64), 8U);
}

TEST(LadderNames, KahanIsAFloatingPointSumOnly)
{
  for (auto const k : all_ladder_kernels()) {
    for (auto const type : {ladder_type::int32, ladder_type::float32, ladder_type::float64}) {
      for (auto const op : {ladder_op::sum, ladder_op::max}) {
        bool const want = k != ladder_kernel::kahan || (op == ladder_op::sum && type != ladder_type::int32);
        EXPECT_EQ(ladder_supports(k, op, type), want) << ladder_kernel_name(k);
      }
    }
  }
}

TEST(LadderNoGpu, UploadIsADeviceErrorWithTheReason)
{
  std::string why;
  if (gpu_available(&why)) { GTEST_SKIP() << "a GPU is present: checked by the Ladder tests instead"; }
  std::vector<float> const x{1.0F, 2.0F};
  try {
    (void)ladder_input::upload(x.data(), x.size(), nullptr);
    ADD_FAILURE() << "upload without a GPU returned";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::device) << e.what();
    EXPECT_NE(std::string(e.what()).find("no usable GPU"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// On the device: every supported kernel x type x op.

struct ladder_case {
  ladder_kernel kernel;
  ladder_type type;
  ladder_op op;
};

/// Every supported kernel x type x op for which `keep` holds.
template <typename Keep>
std::vector<ladder_case> supported_cases(Keep keep)
{
  std::vector<ladder_case> cases;
  for (auto const k : all_ladder_kernels()) {
    for (auto const type : {ladder_type::int32, ladder_type::float32, ladder_type::float64}) {
      for (auto const op : {ladder_op::sum, ladder_op::max}) {
        ladder_case const c{k, type, op};
        if (ladder_supports(k, op, type) && keep(c)) { cases.push_back(c); }
      }
    }
  }
  return cases;
}

/// gtest prints the parameter with the test: "k8 warp_shuffle float sum".
void PrintTo(ladder_case const& c, std::ostream* os)
{
  *os << "k" << static_cast<int>(c.kernel) << " " << ladder_kernel_name(c.kernel) << " " << ladder_type_name(c.type)
      << " " << ladder_op_name(c.op);
}

std::string case_name(::testing::TestParamInfo<ladder_case> const& info)
{
  auto const& c = info.param;
  return "k" + std::to_string(static_cast<int>(c.kernel)) + "_" + std::string(ladder_kernel_name(c.kernel)) + "_" +
         std::string(ladder_type_name(c.type)) + "_" + std::string(ladder_op_name(c.op));
}

class Ladder : public ::testing::TestWithParam<ladder_case> {
 protected:
  void SetUp() override { HG_SKIP_WITHOUT_GPU(); }

  /// run_ladder on [first, first + n) with one timed run.
  static ladder_result run(ladder_input const& in, std::uint64_t first, std::uint64_t n, ladder_options options = {})
  {
    auto const& c = GetParam();
    return run_ladder(c.kernel, c.op, in, ladder_range{first, n}, options, nullptr);
  }

  /// The CPU's answer for x[0, n), as the ladder reports it (long double: exact for every type).
  template <typename T>
  static long double cpu(T const* x, std::uint64_t n)
  {
    if (GetParam().op == ladder_op::max) { return static_cast<long double>(sequential_max(x, n)); }
    return static_cast<long double>(sequential_sum(x, n));
  }

  /// Every tricky size from every offset of `data` (uploaded once), compared exactly with the CPU.
  template <typename T>
  static void expect_exact_everywhere(std::vector<T> const& data, char const* what)
  {
    auto const in = ladder_input::upload(data.data(), data.size(), nullptr);
    ASSERT_EQ(in.size(), data.size());
    for (auto const first : offsets) {
      for (auto const n : tricky_sizes) {
        auto const r = run(in, first, n);
        long double const want = cpu(data.data() + first, n);
        EXPECT_EQ(r.value(), want) << what << ", n = " << n << ", first = " << first << ", " << r.passes << " passes";
        EXPECT_EQ(r.n, n);
      }
    }
  }
};

// Int32 over the whole range (so int32 partial sums would overflow: the int64 accumulator is
// tested) and small integers for float and double (so any order of additions is exact).
TEST_P(Ladder, MatchesTheCpuExactlyAtEveryTrickySizeAndOffset)
{
  with_type(GetParam().type, [&](auto zero) {
    using T = decltype(zero);
    auto const kind = std::is_same_v<T, std::int32_t> ? reduction_data::uniform : reduction_data::small_integers;
    std::vector<T> data(largest);
    fill_reduction_input(data.data(), data.size(), 11, kind);
    expect_exact_everywhere(data, "random data");
  });
}

class LadderMax : public Ladder {};
class LadderFloatSum : public Ladder {};

// The max at the last and at the first element of every range: a kernel that drops the tail, the
// head of a misaligned range or a last partial block gets these wrong.
TEST_P(LadderMax, AtEitherEndOfTheRange)
{
  with_type(GetParam().type, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> rising(largest);
    std::vector<T> falling(largest);
    for (std::uint64_t i = 0; i < largest; ++i) {
      rising[i] = static_cast<T>(i);
      falling[i] = static_cast<T>(-static_cast<std::int64_t>(i));
    }
    expect_exact_everywhere(rising, "rising data");
    expect_exact_everywhere(falling, "falling data");
  });
}

// Real-valued data: float and double sums differ from the exact sum by rounding only. Every
// kernel adds each element into a chain of at most depth = n / 1024 (sequential per thread: every
// grid has at least 1024 threads here) + 2 log2 n + 64 (trees and passes) additions, so
// |error| <= gamma_depth * sum|x|; Kahan's error is about 2u * sum|x| whatever n.
TEST_P(LadderFloatSum, IsWithinItsRoundingBound)
{
  auto const& c = GetParam();
  with_type(c.type, [&](auto zero) {
    using T = decltype(zero);
    long double const u = std::numeric_limits<T>::epsilon() / 2.0L;
    std::vector<T> data(largest);
    fill_reduction_input(data.data(), data.size(), 12, reduction_data::signed_uniform);
    auto const in = ladder_input::upload(data.data(), data.size(), nullptr);
    for (auto const n : {std::uint64_t{1000}, (std::uint64_t{1} << 20) + 7}) {
      long double const exact = reference_sum(data.data(), n);
      long double const scale = abs_sum(data.data(), n);
      long double const depth = static_cast<long double>(n / 1024 + 2 * 21 + 64);
      long double const bound =
        c.kernel == ladder_kernel::kahan ? 4.0L * u * scale : depth * u / (1 - depth * u) * scale;
      auto const r = run(in, 0, n);
      EXPECT_LE(std::fabs(r.value() - exact), bound) << "n = " << n << ", exact " << static_cast<double>(exact);
    }
  });
}

TEST_P(Ladder, TimesArePlausiblePassesAsDesignedAndFlushingL2KeepsTheValue)
{
  auto const& c = GetParam();
  with_type(c.type, [&](auto zero) {
    using T = decltype(zero);
    std::uint64_t const n = (std::uint64_t{1} << 20) + 7;
    std::vector<T> data(n);
    fill_reduction_input(data.data(), n, 13, reduction_data::small_integers);
    auto const in = ladder_input::upload(data.data(), n, nullptr);
    ladder_options options;
    options.repeats = 3;
    auto const r = run(in, 0, n, options);
    EXPECT_EQ(r.value(), cpu(data.data(), n));
    EXPECT_EQ(r.repeats, 3);
    EXPECT_GT(r.min_ms, 0.0);
    EXPECT_LE(r.min_ms, r.median_ms);
    EXPECT_LE(r.median_ms, r.max_ms);
    EXPECT_LT(r.max_ms, 1000.0);
    EXPECT_FALSE(r.l2_flushed);
    switch (c.kernel) {
      case ladder_kernel::interleaved_divergent:
      case ladder_kernel::interleaved_strided:
      case ladder_kernel::sequential:
        EXPECT_EQ(r.passes, 3) << "2^20+7 -> 4097 -> 17 -> 1";
        break;
      case ladder_kernel::first_add:
      case ladder_kernel::unroll_last_warp:
      case ladder_kernel::complete_unroll:
        EXPECT_EQ(r.passes, 3) << "2^20+7 -> 2049 -> 5 -> 1";
        break;
      case ladder_kernel::multiple_elements:
      case ladder_kernel::warp_shuffle:
      case ladder_kernel::kahan:
        EXPECT_EQ(r.passes, 2) << "resident blocks, then one block";
        break;
      case ladder_kernel::cub:
        EXPECT_EQ(r.passes, 1) << "one CUB call";
        break;
    }
    options.repeats = 2;
    options.flush_l2 = true;
    auto const flushed = run(in, 5, 100003, options);
    EXPECT_TRUE(flushed.l2_flushed);
    EXPECT_EQ(flushed.value(), cpu(data.data() + 5, 100003));
  });
}

INSTANTIATE_TEST_SUITE_P(AllKernels, Ladder,
                         ::testing::ValuesIn(supported_cases([](ladder_case const&) { return true; })), case_name);
INSTANTIATE_TEST_SUITE_P(AllKernels, LadderMax, ::testing::ValuesIn(supported_cases([](ladder_case const& c) {
                           return c.op == ladder_op::max;
                         })),
                         case_name);
INSTANTIATE_TEST_SUITE_P(AllKernels, LadderFloatSum, ::testing::ValuesIn(supported_cases([](ladder_case const& c) {
                           return c.op == ladder_op::sum && c.type != ladder_type::int32;
                         })),
                         case_name);

// ---------------------------------------------------------------------------------------------
// On the device: accuracy and errors.

class LadderDevice : public ::testing::Test {
 protected:
  void SetUp() override { HG_SKIP_WITHOUT_GPU(); }
};

// Kahan on the GPU keeps float sums to about half an ulp at 2^22 elements, where the plain tree
// kernels are several ulps off and the sequential float loop far more.
TEST_F(LadderDevice, KahanIsAccurateWhereFloatSumsAreNot)
{
  std::uint64_t const n = std::uint64_t{1} << 22;
  long double const u = std::numeric_limits<float>::epsilon() / 2.0L;
  std::vector<float> data(n);
  fill_reduction_input(data.data(), n, 15, reduction_data::uniform);
  auto const in = ladder_input::upload(data.data(), n, nullptr);
  long double const exact = reference_sum(data.data(), n);
  auto const kahan = run_ladder(ladder_kernel::kahan, ladder_op::sum, in, {0, n}, {}, nullptr);
  auto const kahan_error = relative_error(kahan.value(), exact);
  auto const sequential_error = relative_error(sequential_sum(data.data(), n), exact);
  EXPECT_LE(kahan_error, u);
  EXPECT_LE(std::fabs(kahan.value() - static_cast<long double>(kahan_sum(data.data(), n))), 2 * u * exact)
    << "GPU and CPU Kahan agree to within an ulp";
  EXPECT_GT(sequential_error, 10 * kahan_error + u);
  std::cout << "[ INFO     ] n = 2^22 uniform [0,1): relative error of GPU Kahan " << static_cast<double>(kahan_error)
            << ", CPU sequential float " << static_cast<double>(sequential_error) << "\n";
}

TEST_F(LadderDevice, BadRequestsAreUsageErrors)
{
  std::vector<std::int32_t> const x{1, 2, 3};
  auto const in = ladder_input::upload(x.data(), x.size(), nullptr);
  auto const usage = [&](ladder_kernel k, ladder_op op, ladder_range range, int repeats, char const* what) {
    try {
      ladder_options options;
      options.repeats = repeats;
      (void)run_ladder(k, op, in, range, options, nullptr);
      ADD_FAILURE() << what << ": accepted";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << what << ": " << e.what();
    }
  };
  usage(ladder_kernel::kahan, ladder_op::sum, {0, 3}, 1, "kahan of int32");
  usage(ladder_kernel::sequential, ladder_op::sum, {1, 3}, 1, "range past the end");
  usage(ladder_kernel::sequential, ladder_op::sum, {4, 0}, 1, "first past the end");
  usage(ladder_kernel::sequential, ladder_op::sum, {0, 3}, 0, "0 repeats");
  std::vector<float> const f{1.0F};
  auto const fin = ladder_input::upload(f.data(), f.size(), nullptr);
  try {
    (void)run_ladder(ladder_kernel::kahan, ladder_op::max, fin, {0, 1}, {}, nullptr);
    ADD_FAILURE() << "kahan max accepted";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
  }
  // The empty range at the end is fine: the identity.
  auto const r = run_ladder(ladder_kernel::warp_shuffle, ladder_op::max, in, {3, 0}, {}, nullptr);
  EXPECT_EQ(r.integer, std::numeric_limits<std::int32_t>::min());
}

}  // namespace
}  // namespace heightgrid
