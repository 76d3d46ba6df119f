#pragma once
// Metrics of the shape of a cell's z distribution, read off its values sorted in increasing order
// by one rule on the host and the device (the same double operations in the same order; the build
// forbids FMA contraction), so the CPU and the GPU give the same bits:
//  - skewness = m3 / m2^1.5 and kurtosis = m4 / m2^2 - 3 (Fisher's, excess), with mk the k-th central
//    moment (sum of (z - mean)^k / n, mean = sum(z) / n by a compensated sum, every sum in sorted
//    order): scipy.stats.skew
//    and scipy.stats.kurtosis with their defaults (bias=True, fisher=True); a cell whose m2 is at
//    most (1e-15 * mean)^2 (no spread: scipy returns NaN) has none;
//  - above:H = share of points with z > H (numpy.mean(z > H)); cover = above:--cover-above;
//  - zbin:LO..HI = share of points with LO <= z < HI;
//  - entropy = lidR's entropy(z, by = 1): bins [k, k + 1) for k = 0 .. K-1, K = ceil(max z); the
//    points at z = K (an integer maximum) fall in no bin; -sum(p log p) / log(K) over the bins that
//    hold points, p = the bin's share of the binned points; none when max z < 2 or min z < 0.
// "None" is NaN here; the bands write nodata there.

#include "heightgrid/core/metrics.hpp"

#include <cmath>
#include <cstdint>

namespace heightgrid {

/// Natural logarithm of a positive finite x from +, -, *, / and frexp alone, so that the host and the
/// device give the same bits (their libraries' log differ in the last bit): x = m 2^e with m in
/// [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with s = (m - 1) / (m + 1), |s| < 0.172, by its series to
/// s^23 (the next term is below 2^-56 of the sum). Within 2 ulp of the exact value.
HG_METRICS_HOST_DEVICE inline double portable_log(double x) noexcept
{
  int e = 0;
  double m = ::frexp(x, &e);  // [0.5, 1)
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  double const s = (m - 1.0) / (m + 1.0);
  double const s2 = s * s;
  double p = 1.0 / 23.0;
  p = p * s2 + 1.0 / 21.0;
  p = p * s2 + 1.0 / 19.0;
  p = p * s2 + 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  p = p * s2 + 1.0;
  double const ln2_hi = 6.93147180369123816490e-01;  // ln 2 = ln2_hi + ln2_lo, ln2_hi with 32 bits
  double const ln2_lo = 1.90821492927058770002e-10;
  double const de = static_cast<double>(e);
  return de * ln2_hi + (de * ln2_lo + 2.0 * s * p);
}

/// The value of shape metric `m` (skewness, kurtosis, cover, above, zbin, entropy) over the n >= 1
/// values z[0] <= ... <= z[n - 1]; NaN where the metric has none (see the file comment).
/// `z` is anything indexable whose z[i] converts to double.
template <class Values>
HG_METRICS_HOST_DEVICE inline double shape_of_sorted(Values const& z, std::uint64_t n, metric m) noexcept
{
  double const nd = static_cast<double>(n);
  switch (m.kind) {
    case metric_kind::skewness:
    case metric_kind::kurtosis: {
      // The mean by Neumaier's compensated sum: the centring z - mean is where the error of a
      // cell far from 0 (z ~ 800, spread ~ 0.05) would otherwise dominate.
      double sum = 0.0, carry = 0.0;
      for (std::uint64_t i = 0; i < n; ++i) {
        double const v = static_cast<double>(z[i]);
        double const t = sum + v;
        carry += ::fabs(sum) >= ::fabs(v) ? (sum - t) + v : (v - t) + sum;
        sum = t;
      }
      double const mean = (sum + carry) / nd;
      double m2 = 0.0, m3 = 0.0, m4 = 0.0;
      for (std::uint64_t i = 0; i < n; ++i) {
        double const d = static_cast<double>(z[i]) - mean;
        double const d2 = d * d;
        m2 += d2;
        m3 += d2 * d;
        m4 += d2 * d2;
      }
      m2 /= nd;
      double const tiny = 1e-15 * mean;
      if (!(m2 > tiny * tiny)) { return NAN; }
      if (m.kind == metric_kind::skewness) { return (m3 / nd) / (m2 * ::sqrt(m2)); }
      return (m4 / nd) / (m2 * m2) - 3.0;
    }
    case metric_kind::cover:
    case metric_kind::above: {
      std::uint64_t k = 0;  // points at or below H: the sorted values' first run
      while (k < n && !(static_cast<double>(z[k]) > m.p)) { ++k; }
      return static_cast<double>(n - k) / nd;
    }
    case metric_kind::zbin: {
      std::uint64_t in = 0;
      for (std::uint64_t i = 0; i < n; ++i) {
        double const v = static_cast<double>(z[i]);
        in += (v >= m.p && v < m.q) ? 1 : 0;
      }
      return static_cast<double>(in) / nd;
    }
    case metric_kind::entropy: {
      double const top = static_cast<double>(z[n - 1]);
      if (top < 2.0 || static_cast<double>(z[0]) < 0.0) { return NAN; }
      double const bins = ::ceil(top);
      // The binned points (those below the last break, K), then -sum(p log p) bin by bin.
      std::uint64_t binned = n;
      while (binned > 0 && !(static_cast<double>(z[binned - 1]) < bins)) { --binned; }
      if (binned == 0) { return NAN; }
      double const total = static_cast<double>(binned);
      double h = 0.0;
      std::uint64_t i = 0;
      while (i < binned) {
        double const bin = ::floor(static_cast<double>(z[i]));
        std::uint64_t j = i;
        while (j < binned && ::floor(static_cast<double>(z[j])) == bin) { ++j; }
        double const p = static_cast<double>(j - i) / total;
        h -= p * portable_log(p);
        i = j;
      }
      return h / portable_log(bins);
    }
    default: return NAN;
  }
}

}  // namespace heightgrid
