#pragma once
// Doubles as unsigned integers whose order is theirs, so that integer atomicMin/atomicMax merge
// partial minima and maxima (reduce_mode::atomic, and the split tiles of reduce_mode::hybrid).

namespace heightgrid::detail {

/// Order-preserving encoding of a double: for non-NaN a, b, a < b exactly when
/// ordered_bits(a) < ordered_bits(b) (as unsigned integers), with -0.0 below +0.0. Positive values
/// get the sign bit set; negative values are inverted whole, so larger magnitudes sort lower.
/// Example: -1.0 -> 0x400fffffffffffff, -0.0 -> 0x7fffffffffffffff, +0.0 -> 0x8000000000000000,
///   1.0 -> 0xbff0000000000000. All ones sorts above every non-NaN value: the identity of min.
__host__ __device__ constexpr unsigned long long ordered_bits_of(unsigned long long bits) noexcept
{
  return (bits >> 63) != 0 ? ~bits : (bits | 0x8000000000000000ULL);
}
/// The inverse of ordered_bits_of.
__host__ __device__ constexpr unsigned long long bits_of_ordered(unsigned long long ordered) noexcept
{
  return (ordered >> 63) != 0 ? (ordered & 0x7fffffffffffffffULL) : ~ordered;
}
static_assert(ordered_bits_of(0xbff0000000000000ULL) == 0x400fffffffffffffULL);  // -1.0
static_assert(ordered_bits_of(0x8000000000000000ULL) == 0x7fffffffffffffffULL);  // -0.0
static_assert(ordered_bits_of(0x0000000000000000ULL) == 0x8000000000000000ULL);  // +0.0
static_assert(bits_of_ordered(ordered_bits_of(0xbff0000000000000ULL)) == 0xbff0000000000000ULL);
static_assert(bits_of_ordered(ordered_bits_of(0x3ff0000000000000ULL)) == 0x3ff0000000000000ULL);

/// The ordered bits of a double, and back.
__device__ inline unsigned long long ordered_bits(double v) noexcept
{
  return ordered_bits_of(static_cast<unsigned long long>(__double_as_longlong(v)));
}
__device__ inline double from_ordered_bits(unsigned long long ordered) noexcept
{
  return __longlong_as_double(static_cast<long long>(bits_of_ordered(ordered)));
}

/// Identities: ordered_bits(+inf) and ordered_bits(-inf).
inline constexpr unsigned long long ordered_plus_inf = 0xfff0000000000000ULL;
inline constexpr unsigned long long ordered_minus_inf = 0x000fffffffffffffULL;
static_assert(ordered_bits_of(0x7ff0000000000000ULL) == ordered_plus_inf);
static_assert(ordered_bits_of(0xfff0000000000000ULL) == ordered_minus_inf);

}  // namespace heightgrid::detail
