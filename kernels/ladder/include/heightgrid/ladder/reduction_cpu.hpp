#pragma once
// The CPU side of the reduction ladder (`heightgrid bench-reduce`): the sequential loop and the
// OpenMP reduction as baselines, Kahan's compensated sum, an accurate reference sum to measure
// errors against, and the deterministic inputs the benchmark and the tests reduce.
//
// The same conventions as the GPU ladder (reduction_ladder.hpp, beside this file):
// int32 sums accumulate in int64 (exact: no overflow below 2^32 elements), float and double sums in
// their own type; max is (m < x) ? x : m, the rule of std::max; n = 0 gives the identity (0 for
// sums, INT32_MIN / -inf for max). Instantiated for std::int32_t, float and double (kahan_sum:
// float and double).

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace heightgrid {

/// Accumulator of a sum of T: int64 for int32, T otherwise.
template <typename T>
using sum_accumulator_t = std::conditional_t<std::is_same_v<T, std::int32_t>, std::int64_t, T>;

/// x[0] + x[1] + ... left to right, from 0, in sum_accumulator_t<T>. Example: {1, 2, 3} -> 6;
/// int32 {2^31-1, 2^31-1, 1} -> 4294967295; float {2^24, 1, 1} -> 2^24 (each 1 is rounded away).
template <typename T>
[[nodiscard]] sum_accumulator_t<T> sequential_sum(T const* x, std::size_t n) noexcept;

/// `#pragma omp parallel for reduction(+ : sum) schedule(static)`: each thread sums a contiguous
/// chunk in sum_accumulator_t<T>, and the partials are combined in an unspecified order (float
/// results vary with the thread count, int32 results do not).
template <typename T>
[[nodiscard]] sum_accumulator_t<T> openmp_sum(T const* x, std::size_t n);

/// The largest element, left to right with m = (m < x) ? x : m. Example: {-5, -3, -7} -> -3.
template <typename T>
[[nodiscard]] T sequential_max(T const* x, std::size_t n) noexcept;

/// `#pragma omp parallel for reduction(max : m)`: the same value as sequential_max (max is exact).
template <typename T>
[[nodiscard]] T openmp_max(T const* x, std::size_t n);

/// Kahan's compensated sum in T, left to right: error about 2u * sum|x| (u = 2^-24 for float),
/// nearly independent of n, where the plain loop's grows like n * u. Example: float
/// {2^24, 1, 1, 1, 1} -> 2^24 + 4 (sequential_sum gives 2^24). float and double only.
template <typename T>
[[nodiscard]] T kahan_sum(T const* x, std::size_t n) noexcept;

/// The reference the errors are measured against: Neumaier's compensated sum (Kahan's, also
/// correct when an addend is larger than the running sum) in long double, which on x86-64 is the
/// 80-bit x87 format (64-bit significand, u = 2^-64); chunks of x are summed in parallel and their
/// (sum, compensation) pairs combined the same way. Its error is about 2u|S| + O(n u^2) sum|x|:
/// exact for every int32 input (integers below 2^64), and some 10^-19 relative for float and
/// double data, far below the errors it measures (float: 6e-8 per rounding, double: 1.1e-16).
/// Example: double {1, 1e100, 1, -1e100} -> 2 (a plain or Kahan sum gives 0).
template <typename T>
[[nodiscard]] long double reference_sum(T const* x, std::size_t n);

/// sum |x| in long double: the scale of rounding-error bounds.
template <typename T>
[[nodiscard]] long double abs_sum(T const* x, std::size_t n);

/// |got - want| / |want|, or |got - want| when want is 0.
[[nodiscard]] long double relative_error(long double got, long double want) noexcept;

/// What fill_reduction_input writes.
enum class reduction_data {
  uniform,         ///< float/double uniform in [0, 1) (24 / 53 random bits); int32 over its whole range
  signed_uniform,  ///< float/double uniform in [-1, 1); int32 over its whole range
  small_integers,  ///< integers in [-8, 8], any type: sums of up to 2^20 of them are exact in float,
                   ///< in any order, so every GPU kernel must match the CPU bit for bit
};

/// x[i] = a value of `kind` determined by (seed, i) alone (a counter-based hash): the same input for
/// any thread count, and any prefix of a long input is the short input. Filled in parallel.
template <typename T>
void fill_reduction_input(T* x, std::size_t n, std::uint64_t seed, reduction_data kind);

}  // namespace heightgrid
