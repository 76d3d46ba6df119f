// Shape metrics (issue #38): skewness, kurtosis, cover, above:H, zbin:..., entropy against values
// worked out by hand (and scipy's/lidR's definitions), portable_log against the C library, the
// --metrics spellings and their errors, and density from the counts.

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/shape_metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace heightgrid {
namespace {

double shape(std::vector<double> z, metric m) { return shape_of_sorted(z.data(), z.size(), m); }

/// The usage error parse_metric_list gives for `list`, or "no error".
std::string parse_error(std::string const& list)
{
  try {
    (void)parse_metric_list(list);
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::usage);
    return std::string(e.what());
  }
  return std::string("no error");
}

std::int64_t ulps(double a, double b)
{
  std::int64_t x = 0, y = 0;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x > y ? x - y : y - x;
}

TEST(ShapeMetrics, PortableLogIsWithinTwoUlpOfTheLibrary)
{
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-300.0, 300.0);
  std::int64_t worst = 0;
  for (int i = 0; i < 200000; ++i) {
    double const x = std::pow(10.0, exponent(rng));
    worst = std::max(worst, ulps(portable_log(x), std::log(x)));
  }
  for (double const x : {1.0, 2.0, 0.5, 1.0 / 3.0, 2.0 / 3.0, 0.1, 1e-300, 4.9e-324, 1.7e308, 0.70710678118654752}) {
    worst = std::max(worst, ulps(portable_log(x), std::log(x)));
  }
  EXPECT_EQ(portable_log(1.0), 0.0);
  EXPECT_LE(worst, 2);
}

TEST(ShapeMetrics, MomentsAsScipyDefinesThem)
{
  // {1, 2, 3, 4}: mean 2.5, m2 = 1.25, m3 = 0, m4 = (2 * 2.25^2 + 2 * 0.25^2) / 4 = 2.5625.
  EXPECT_EQ(shape({1, 2, 3, 4}, metric::skewness), 0.0);
  EXPECT_DOUBLE_EQ(shape({1, 2, 3, 4}, metric::kurtosis), 2.5625 / (1.25 * 1.25) - 3.0);
  // {0, 0, 0, 4}: mean 1, d = -1, -1, -1, 3: m2 = 3, m3 = (3 * -1 + 27) / 4 = 6, m4 = (3 + 81) / 4 = 21.
  EXPECT_DOUBLE_EQ(shape({0, 0, 0, 4}, metric::skewness), 6.0 / (3.0 * std::sqrt(3.0)));
  EXPECT_DOUBLE_EQ(shape({0, 0, 0, 4}, metric::kurtosis), 21.0 / 9.0 - 3.0);
  // No spread (one point, equal values, 0.1 three times whose mean is not 0.1): none, as scipy's NaN.
  EXPECT_TRUE(std::isnan(shape({5}, metric::skewness)));
  EXPECT_TRUE(std::isnan(shape({0.1, 0.1, 0.1}, metric::kurtosis)));
  EXPECT_TRUE(std::isnan(shape({-7, -7}, metric::skewness)));
}

TEST(ShapeMetrics, SharesCountPointsStrictlyAboveAndInHalfOpenSlices)
{
  std::vector<double> const z{-1, 0, 2, 2, 3.5, 10};
  EXPECT_EQ(shape(z, metric::cover(2.0)), 2.0 / 6.0);  // z > 2: 3.5 and 10
  EXPECT_EQ(shape(z, metric::above(-5.0)), 1.0);
  EXPECT_EQ(shape(z, metric::above(10.0)), 0.0);
  EXPECT_EQ(shape(z, metric::above(-1.0)), 5.0 / 6.0);
  EXPECT_EQ(shape(z, metric::zbin(0.0, 2.0)), 1.0 / 6.0);   // 0
  EXPECT_EQ(shape(z, metric::zbin(2.0, 10.0)), 3.0 / 6.0);  // 2, 2, 3.5
  EXPECT_EQ(shape(z, metric::zbin(10.0, 11.0)), 1.0 / 6.0);
}

TEST(ShapeMetrics, EntropyAsLidrDefinesIt)
{
  // Four 1-unit bins from 0 to ceil(3.5) = 4, one point each: the most even, 1.
  EXPECT_DOUBLE_EQ(shape({0.5, 1.5, 2.5, 3.5}, metric::entropy), 1.0);
  // Three bins (max 2.5): shares 2/3, 0, 1/3.
  double const two_thirds = -(2.0 / 3.0 * std::log(2.0 / 3.0) + 1.0 / 3.0 * std::log(1.0 / 3.0)) / std::log(3.0);
  EXPECT_NEAR(shape({0.5, 0.7, 2.5}, metric::entropy), two_thirds, 1e-15);
  // An integer maximum is the last break: its points fall in no bin (lidR's findInterval).
  EXPECT_NEAR(shape({0.5, 1.5, 3.0}, metric::entropy), std::log(2.0) / std::log(3.0), 1e-15);
  // One bin holding every point: 0. Below 2 or with a negative value: none.
  EXPECT_EQ(shape({2.1, 2.2, 2.9}, metric::entropy), 0.0);
  EXPECT_TRUE(std::isnan(shape({0.5, 1.9}, metric::entropy)));
  EXPECT_TRUE(std::isnan(shape({-0.5, 3.0}, metric::entropy)));
}

TEST(ShapeMetrics, ListSpellingsAndErrors)
{
  auto const bands = parse_metric_list("range,zbin:0,2,5.5,skewness,above:-1.5,cover,kurtosis,entropy,density");
  ASSERT_EQ(bands.size(), 9U);
  EXPECT_EQ(bands[1], metric::zbin(0, 2));
  EXPECT_EQ(bands[2], metric::zbin(2, 5.5));
  EXPECT_EQ(metric_name(bands[2]), "zbin:2..5.5");
  EXPECT_EQ(metric_name(bands[4]), "above:-1.5");
  EXPECT_EQ(metric_name(bands[5]), "cover");
  auto const r = metric_request::from(bands);
  EXPECT_EQ(r.shapes.size(), 7U);  // the two slices, skewness, above, cover, kurtosis, entropy
  EXPECT_TRUE(r.density && r.count && r.needs_order());
  EXPECT_EQ(parse_error("zbin:5,2"), "--metrics: zbin: the heights must increase (2 after 5)");
  EXPECT_EQ(parse_error("zbin:5"), "--metrics: zbin: needs at least two heights (zbin:H1,H2,... gives the slices between them)");
  EXPECT_EQ(parse_error("zbin:a,2"), "--metrics: zbin: 'a' is not a height (zbin:H1,H2,... takes increasing numbers)");
  EXPECT_EQ(parse_error("zbin:0,1,zbin:0,1"), "--metrics: metric 'zbin:0..1' is listed twice");
  EXPECT_EQ(parse_error("above:x"), "--metrics: 'above:x': above:H takes a height (e.g. above:2)");
  EXPECT_NE(parse_error("kurt").find("unknown metric 'kurt'"), std::string::npos);
}

TEST(ShapeMetrics, DensityIsTheCountOverTheCellArea)
{
  auto request = metric_request::from(parse_metric_list("density"));
  request.cell_area = 0.25;
  cell_results r;
  r.count = {0, 1, 3};
  r.add_density(request, -9999.0F);
  ASSERT_EQ(r.density.size(), 3U);
  EXPECT_EQ(r.density[0], -9999.0F);
  EXPECT_EQ(r.density[1], 4.0F);
  EXPECT_EQ(r.density[2], 12.0F);
  EXPECT_EQ(&r.float_column(metric::density), &r.density);
}

TEST(TaggedCounts, ListSpellingsTablesAndErrors)
{
  auto const bands = parse_metric_list("count:2,count:5,3,4,first,range,last");
  ASSERT_EQ(bands.size(), 5U);
  EXPECT_EQ(metric_name(bands[0]), "count:2");
  EXPECT_EQ(metric_name(bands[1]), "count:3,4,5");  // increasing, whatever the order asked
  EXPECT_EQ(metric_name(bands[2]), "first");
  EXPECT_EQ(metric_name(bands[4]), "last");
  EXPECT_TRUE(bands[1].has_class(4) && !bands[1].has_class(2));
  EXPECT_EQ(parse_metric_list(metric_name(bands[1])).front(), bands[1]);  // names read back
  auto const r = metric_request::from(bands);
  ASSERT_EQ(r.tags.size(), 4U);
  EXPECT_TRUE(r.needs_tags() && r.needs_counts() && !r.count);
  auto const t = tag_table::of(r.tags);
  EXPECT_TRUE(t.any && t.needs_class && t.needs_returns);
  // Class 2, return 1 of 2: count:2 and first. Class 4, return 3 of 3: count:3,4,5 and last.
  EXPECT_EQ(t.tag(true, 2, true, 1, 2), 0b0101);
  EXPECT_EQ(t.tag(true, 4, true, 3, 3), 0b1010);
  EXPECT_EQ(t.tag(true, 4, true, 1, 1), 0b1110);  // a single return is first and last
  EXPECT_EQ(t.tag(true, 9, true, 2, 3), 0);
  EXPECT_EQ(t.tag(false, 2, false, 1, 1), 0);  // attributes the source lacks count for nothing
  EXPECT_NE(parse_error("count:256").find("count: '256' is not a class"), std::string::npos);
  EXPECT_NE(parse_error("count:-1").find("count: '-1' is not a class"), std::string::npos);
  EXPECT_EQ(parse_error("count:3,3"), "--metrics: count: class 3 is listed twice");
  EXPECT_EQ(parse_error("count:3,4,count:4,3"), "--metrics: metric 'count:3,4' is listed twice");
  EXPECT_EQ(parse_error("first,first"), "--metrics: metric 'first' is listed twice");
  EXPECT_NE(parse_error("count:0,count:1,count:2,count:3,count:4,count:5,count:6,first,last").find("at most 8"),
            std::string::npos);
}

}  // namespace
}  // namespace heightgrid
