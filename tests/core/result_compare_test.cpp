#include "heightgrid/core/result_compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace heightgrid {
namespace {

cell_results sample()
{
  cell_results r;
  float const nan = default_nodata;
  r.range = {2.5f, 0.0f, nan};
  r.min = {10.0f, 20.0f, nan};
  r.max = {12.5f, 20.0f, nan};
  r.count = {4, 1, 0};
  r.mean = {11.0f, 20.0f, nan};
  r.stddev = {0.9f, 0.0f, nan};
  return r;
}

metric_request everything()
{
  return metric_request::from({metric::range, metric::min, metric::max, metric::count, metric::mean, metric::stddev});
}

TEST(ResultCompare, UlpDistance)
{
  EXPECT_EQ(ulp_distance(1.0f, 1.0f), 0U);
  EXPECT_EQ(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)), 1U);
  EXPECT_EQ(ulp_distance(0.0f, -0.0f), 0U);
  EXPECT_EQ(ulp_distance(-std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::denorm_min()), 2U);
  EXPECT_EQ(ulp_distance(default_nodata, default_nodata), 0U);
  EXPECT_EQ(ulp_distance(default_nodata, 1.0f), std::numeric_limits<std::uint64_t>::max());
}

TEST(ResultCompare, IdenticalResultsHaveNoDifference)
{
  EXPECT_FALSE(first_difference(sample(), sample(), everything()).has_value());
}

TEST(ResultCompare, ExactBandsDifferAtOneUlp)
{
  auto b = sample();
  b.min[1] = std::nextafter(20.0f, 30.0f);
  auto const d = first_difference(sample(), b, everything());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->band, metric::min);
  EXPECT_EQ(d->cell, 1U);
  EXPECT_NE(d->describe().find("band min, cell 1: 20 [0x41a00000] vs 20.0000019"), std::string::npos) << d->describe();
  // a band that was not requested is not compared
  auto only_range = metric_request::from({metric::range});
  EXPECT_FALSE(first_difference(sample(), b, only_range).has_value());
}

TEST(ResultCompare, MeanAndStddevMayDifferByOneUlp)
{
  auto b = sample();
  b.mean[0] = std::nextafter(11.0f, 12.0f);
  EXPECT_FALSE(first_difference(sample(), b, everything()).has_value());
  b.stddev[0] = std::nextafter(std::nextafter(0.9f, 1.0f), 1.0f);
  auto const d = first_difference(sample(), b, everything());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->band, metric::stddev);
  EXPECT_EQ(d->cell, 0U);
  EXPECT_FALSE(first_difference(sample(), b, everything(), 2).has_value());
}

TEST(ResultCompare, NodataAgainstAValueAndCountsAndLengths)
{
  auto b = sample();
  b.range[2] = 0.0f;  // an empty cell filled where the other backend left nodata
  auto d = first_difference(sample(), b, everything());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->band, metric::range);
  EXPECT_EQ(d->cell, 2U);

  b = sample();
  b.count[2] = 7;
  d = first_difference(sample(), b, everything());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->band, metric::count);
  EXPECT_EQ(d->describe(), "band count, cell 2: 0 vs 7");

  b = sample();
  b.max.pop_back();
  d = first_difference(sample(), b, everything());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->band, metric::max);
  EXPECT_EQ(d->cell, 2U);
}

}  // namespace
}  // namespace heightgrid
