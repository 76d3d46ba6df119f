#include "heightgrid/ladder/reduction_cpu.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace heightgrid {
namespace {

static_assert(std::numeric_limits<long double>::digits >= 64,
              "reference_sum's accuracy claims need a long double with at least a 64-bit significand");

template <typename T>
constexpr T max_identity() noexcept
{
  if constexpr (std::numeric_limits<T>::has_infinity) {
    return -std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

/// Neumaier's step on (s, c): the running value is s + c.
struct neumaier {
  long double s{0.0L};
  long double c{0.0L};
  void add(long double x) noexcept
  {
    long double const t = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
};

/// First index of chunk k of `chunks` near-equal parts of [0, n) (the first n % chunks one longer).
std::size_t chunk_begin(std::size_t n, int k, int chunks) noexcept
{
  auto const kk = static_cast<std::size_t>(k);
  auto const parts = static_cast<std::size_t>(chunks);
  return n / parts * kk + std::min(kk, n % parts);
}

/// splitmix64: a counter-based 64-bit hash (Steele, Lea, Flood), good enough for test data.
std::uint64_t mix(std::uint64_t z) noexcept
{
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <typename T>
T value_of(std::uint64_t h, reduction_data kind) noexcept
{
  if (kind == reduction_data::small_integers) { return static_cast<T>(static_cast<int>(h % 17) - 8); }
  if constexpr (std::is_same_v<T, std::int32_t>) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(h >> 32));
  } else {
    constexpr int bits = std::numeric_limits<T>::digits;                 // 24 or 53
    T const unit = std::ldexp(static_cast<T>(h >> (64 - bits)), -bits);  // [0, 1), exact
    return kind == reduction_data::signed_uniform ? 2 * unit - 1 : unit;
  }
}

}  // namespace

template <typename T>
sum_accumulator_t<T> sequential_sum(T const* x, std::size_t n) noexcept
{
  sum_accumulator_t<T> sum{0};
  for (std::size_t i = 0; i < n; ++i) { sum += static_cast<sum_accumulator_t<T>>(x[i]); }
  return sum;
}

template <typename T>
sum_accumulator_t<T> openmp_sum(T const* x, std::size_t n)
{
  sum_accumulator_t<T> sum{0};
  auto const count = static_cast<std::int64_t>(n);
#pragma omp parallel for reduction(+ : sum) schedule(static)
  for (std::int64_t i = 0; i < count; ++i) { sum += static_cast<sum_accumulator_t<T>>(x[i]); }
  return sum;
}

template <typename T>
T sequential_max(T const* x, std::size_t n) noexcept
{
  T m = max_identity<T>();
  for (std::size_t i = 0; i < n; ++i) { m = std::max(m, x[i]); }
  return m;
}

template <typename T>
T openmp_max(T const* x, std::size_t n)
{
  T m = max_identity<T>();
  auto const count = static_cast<std::int64_t>(n);
#pragma omp parallel for reduction(max : m) schedule(static)
  for (std::int64_t i = 0; i < count; ++i) { m = std::max(m, x[i]); }
  return m;
}

template <typename T>
T kahan_sum(T const* x, std::size_t n) noexcept
{
  static_assert(std::is_floating_point_v<T>, "a compensated sum of float or double");
  // The same step as the GPU's kahan_add: err carries what the last add lost.
  T sum{0};
  T err{0};
  for (std::size_t i = 0; i < n; ++i) {
    T const y = x[i] + err;
    T const t = sum + y;
    err = y - (t - sum);
    sum = t;
  }
  return sum + err;
}

template <typename T>
long double reference_sum(T const* x, std::size_t n)
{
  int const chunks = std::max(1, omp_get_max_threads());
  std::vector<neumaier> partial(static_cast<std::size_t>(chunks));
#pragma omp parallel for schedule(static, 1)
  for (int k = 0; k < chunks; ++k) {
    neumaier acc;
    for (std::size_t i = chunk_begin(n, k, chunks), end = chunk_begin(n, k + 1, chunks); i < end; ++i) {
      acc.add(static_cast<long double>(x[i]));
    }
    partial[static_cast<std::size_t>(k)] = acc;
  }
  neumaier total;
  for (auto const& p : partial) {
    total.add(p.s);
    total.add(p.c);
  }
  return total.s + total.c;
}

template <typename T>
long double abs_sum(T const* x, std::size_t n)
{
  long double sum = 0.0L;
  auto const count = static_cast<std::int64_t>(n);
#pragma omp parallel for reduction(+ : sum) schedule(static)
  for (std::int64_t i = 0; i < count; ++i) { sum += std::fabs(static_cast<long double>(x[i])); }
  return sum;
}

long double relative_error(long double got, long double want) noexcept
{
  long double const diff = std::fabs(got - want);
  return want == 0.0L ? diff : diff / std::fabs(want);
}

template <typename T>
void fill_reduction_input(T* x, std::size_t n, std::uint64_t seed, reduction_data kind)
{
  std::uint64_t const key = mix(seed);
  auto const count = static_cast<std::int64_t>(n);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) { x[i] = value_of<T>(mix(key ^ static_cast<std::uint64_t>(i)), kind); }
}

#define HEIGHTGRID_REDUCTION_CPU(T)                                                \
  template sum_accumulator_t<T> sequential_sum<T>(T const*, std::size_t) noexcept; \
  template sum_accumulator_t<T> openmp_sum<T>(T const*, std::size_t);              \
  template T sequential_max<T>(T const*, std::size_t) noexcept;                    \
  template T openmp_max<T>(T const*, std::size_t);                                 \
  template long double reference_sum<T>(T const*, std::size_t);                    \
  template long double abs_sum<T>(T const*, std::size_t);                          \
  template void fill_reduction_input<T>(T*, std::size_t, std::uint64_t, reduction_data);

HEIGHTGRID_REDUCTION_CPU(std::int32_t)
HEIGHTGRID_REDUCTION_CPU(float)
HEIGHTGRID_REDUCTION_CPU(double)
#undef HEIGHTGRID_REDUCTION_CPU

template float kahan_sum<float>(float const*, std::size_t) noexcept;
template double kahan_sum<double>(double const*, std::size_t) noexcept;

}  // namespace heightgrid
