// The CPU side of the reduction ladder: hand-checked values, OpenMP against the sequential loop,
// Kahan against the reference, and the inputs the benchmark and the GPU tests reduce.

#include "heightgrid/ladder/reduction_cpu.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace heightgrid {
namespace {

constexpr std::int32_t int_max = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t int_min = std::numeric_limits<std::int32_t>::min();
constexpr float two24 = 16777216.0F;  // 2^24: from here on, float has no room for +1

// The sizes every implementation is run at (STYLE.md), plus multi-thread ones.
std::vector<std::size_t> const tricky_sizes{0, 1, 31, 32, 33, 64, 65, 1000, (std::size_t{1} << 20) + 7};

template <typename T>
std::vector<T> input(std::size_t n, reduction_data kind, std::uint64_t seed = 7)
{
  std::vector<T> x(n);
  fill_reduction_input(x.data(), n, seed, kind);
  return x;
}

/// gamma_k = k u / (1 - k u): the classic bound factor for k rounding errors in a row.
long double gamma(long double k, long double u) { return k * u / (1.0L - k * u); }

TEST(ReductionCpu, SumsHandChecked)
{
  std::vector<std::int32_t> const small{1, 2, 3};
  EXPECT_EQ(sequential_sum(small.data(), small.size()), 6);
  EXPECT_EQ(openmp_sum(small.data(), small.size()), 6);
  // int32 sums widen to int64: no wrap-around.
  std::vector<std::int32_t> const big{int_max, int_max, 1};
  EXPECT_EQ(sequential_sum(big.data(), big.size()), 4294967295LL);
  EXPECT_EQ(openmp_sum(big.data(), big.size()), 4294967295LL);
  std::vector<std::int32_t> const low{int_min, int_min, int_min};
  EXPECT_EQ(sequential_sum(low.data(), low.size()), -6442450944LL);
  // float rounds each 1 away once the sum is 2^24.
  std::vector<float> const f{two24, 1.0F, 1.0F};
  EXPECT_EQ(sequential_sum(f.data(), f.size()), two24);
  std::vector<double> const d{0.1, 0.2};
  EXPECT_EQ(sequential_sum(d.data(), d.size()), 0.1 + 0.2);
}

TEST(ReductionCpu, MaxHandChecked)
{
  std::vector<std::int32_t> const i{-5, -3, -7};
  EXPECT_EQ(sequential_max(i.data(), i.size()), -3);
  EXPECT_EQ(openmp_max(i.data(), i.size()), -3);
  std::vector<float> const f{1.0F, 3.0F, 2.0F, -4.0F};
  EXPECT_EQ(sequential_max(f.data(), f.size()), 3.0F);
  EXPECT_EQ(openmp_max(f.data(), f.size()), 3.0F);
  std::vector<double> const d{-1e300, -2e300};
  EXPECT_EQ(sequential_max(d.data(), d.size()), -1e300);
  EXPECT_EQ(openmp_max(d.data(), d.size()), -1e300);
}

TEST(ReductionCpu, EmptyInputGivesTheIdentity)
{
  std::int32_t const* none_i = nullptr;
  float const* none_f = nullptr;
  EXPECT_EQ(sequential_sum(none_i, 0), 0);
  EXPECT_EQ(openmp_sum(none_f, 0), 0.0F);
  EXPECT_EQ(sequential_max(none_i, 0), int_min);
  EXPECT_EQ(openmp_max(none_i, 0), int_min);
  EXPECT_EQ(sequential_max(none_f, 0), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(openmp_max(none_f, 0), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(kahan_sum(none_f, 0), 0.0F);
  EXPECT_EQ(reference_sum(none_f, 0), 0.0L);
}

TEST(ReductionCpu, KahanKeepsWhatThePlainSumLoses)
{
  std::vector<float> const x{two24, 1.0F, 1.0F, 1.0F, 1.0F};
  EXPECT_EQ(sequential_sum(x.data(), x.size()), two24);
  EXPECT_EQ(kahan_sum(x.data(), x.size()), two24 + 4.0F);
  EXPECT_EQ(reference_sum(x.data(), x.size()), 16777220.0L);
}

TEST(ReductionCpu, ReferenceIsNeumaierNotKahan)
{
  // Kahan loses the first 1 when 1e100 arrives (the compensation of a small sum is dropped);
  // Neumaier keeps it because it compensates the smaller of the two addends.
  std::vector<double> const x{1.0, 1e100, 1.0, -1e100};
  EXPECT_EQ(reference_sum(x.data(), x.size()), 2.0L);
  EXPECT_EQ(sequential_sum(x.data(), x.size()), 0.0);
  EXPECT_EQ(kahan_sum(x.data(), x.size()), 0.0);
}

TEST(ReductionCpu, Int32SumsAndEveryMaxAreExactInEveryImplementation)
{
  for (auto const n : tricky_sizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    auto const i = input<std::int32_t>(n, reduction_data::uniform);
    auto const want = sequential_sum(i.data(), n);
    EXPECT_EQ(openmp_sum(i.data(), n), want);
    EXPECT_EQ(reference_sum(i.data(), n), static_cast<long double>(want));
    EXPECT_EQ(openmp_max(i.data(), n), sequential_max(i.data(), n));
    auto const f = input<float>(n, reduction_data::signed_uniform);
    EXPECT_EQ(openmp_max(f.data(), n), sequential_max(f.data(), n));
    auto const d = input<double>(n, reduction_data::signed_uniform);
    EXPECT_EQ(openmp_max(d.data(), n), sequential_max(d.data(), n));
  }
}

TEST(ReductionCpu, SmallIntegerDataSumsExactlyInAnyOrder)
{
  auto const n = tricky_sizes.back();
  auto const f = input<float>(n, reduction_data::small_integers);
  auto const d = input<double>(n, reduction_data::small_integers);
  auto const want = reference_sum(f.data(), n);
  EXPECT_EQ(want, std::nearbyint(want));
  EXPECT_EQ(static_cast<long double>(sequential_sum(f.data(), n)), want);
  EXPECT_EQ(static_cast<long double>(openmp_sum(f.data(), n)), want);
  EXPECT_EQ(static_cast<long double>(kahan_sum(f.data(), n)), want);
  EXPECT_EQ(static_cast<long double>(sequential_sum(d.data(), n)), want);  // the same integers
}

TEST(ReductionCpu, FloatSumsAreWithinTheirRoundingBounds)
{
  long double const u = std::numeric_limits<float>::epsilon() / 2.0L;
  for (auto const n : tricky_sizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    auto const x = input<float>(n, reduction_data::signed_uniform);
    long double const exact = reference_sum(x.data(), n);
    long double const scale = abs_sum(x.data(), n);
    long double const k = n > 0 ? static_cast<long double>(n - 1) : 0.0L;
    // Any order of n - 1 additions: |error| <= gamma_{n-1} sum|x|.
    EXPECT_LE(std::fabs(sequential_sum(x.data(), n) - exact), gamma(k, u) * scale);
    EXPECT_LE(std::fabs(openmp_sum(x.data(), n) - exact), gamma(k, u) * scale);
    // Kahan: |error| <= (2u + O(n u^2)) sum|x|, plus the final rounding to float.
    EXPECT_LE(std::fabs(kahan_sum(x.data(), n) - exact), (3.0L * u + 2.0L * k * u * u) * scale);
  }
}

// The point of the accuracy table: the plain float loop's error grows with n, Kahan's does not.
TEST(ReductionCpu, KahanErrorDoesNotGrowWithN)
{
  long double const u = std::numeric_limits<float>::epsilon() / 2.0L;
  auto const x = input<float>(std::size_t{1} << 24, reduction_data::uniform);
  std::vector<long double> plain;
  for (int e = 12; e <= 24; e += 4) {
    auto const n = std::size_t{1} << e;
    long double const exact = reference_sum(x.data(), n);
    long double const kahan = relative_error(kahan_sum(x.data(), n), exact);
    plain.push_back(relative_error(sequential_sum(x.data(), n), exact));
    SCOPED_TRACE("n = 2^" + std::to_string(e));
    EXPECT_LE(kahan, u) << "Kahan is within half an ulp (positive data: sum|x| = sum)";
  }
  // 2^12 -> 2^24: the sequential error grows (like a random walk here: about 7e-7 -> 2.5e-5 with
  // this seed), and ends far above Kahan's. Past 2^24 it explodes: the sum of values below 1 stops
  // at 2^24, where float's spacing is 2 (the accuracy table of bench-reduce shows it).
  EXPECT_GT(plain.back(), 10.0L * plain.front());
  EXPECT_GT(plain.back(), 100.0L * u);
}

TEST(ReductionCpu, InputsAreDeterministicPrefixesAndNeverAllZero)
{
  auto const a = input<float>(1000, reduction_data::uniform, 3);
  auto const b = input<float>(100, reduction_data::uniform, 3);
  auto const c = input<float>(100, reduction_data::uniform, 4);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin()));
  EXPECT_FALSE(std::equal(b.begin(), b.end(), c.begin()));
  for (float v : a) { EXPECT_TRUE(v >= 0.0F && v < 1.0F) << v; }
  EXPECT_GT(abs_sum(a.data(), a.size()), 100.0L);
  auto const s = input<double>(1000, reduction_data::signed_uniform);
  EXPECT_LT(sequential_max(s.data(), s.size()), 1.0);
  EXPECT_GT(sequential_max(s.data(), s.size()), 0.9);
  auto const k = input<std::int32_t>(1000, reduction_data::small_integers);
  EXPECT_EQ(sequential_max(k.data(), k.size()), 8);
  for (auto v : k) { EXPECT_TRUE(v >= -8 && v <= 8) << v; }
  auto const i = input<std::int32_t>(1000, reduction_data::uniform);
  EXPECT_GT(sequential_max(i.data(), i.size()), int_max / 2) << "the whole int32 range";
}

}  // namespace
}  // namespace heightgrid
