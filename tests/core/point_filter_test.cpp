#include "heightgrid/core/point_filter.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace heightgrid {
namespace {

point_chunk las_like()
{
  point_chunk p;
  //            0    1    2    3    4    5    6
  p.x = {0, 1, 2, 3, 4, 5, 6};
  p.y = {0, 0, 0, 0, 0, 0, 0};
  p.z = {10, 11, 12, 13, 14, 15, 16};
  p.classification = {2, 7, 18, 6, 2, 5, 2};
  p.return_number = {1, 1, 1, 2, 1, 2, 3};
  p.number_of_returns = {1, 1, 1, 2, 3, 3, 3};
  p.flags = {0, 0, 0, 0, point_flag::withheld, 0, 0};
  return p;
}

TEST(PointFilter, DefaultsDropNoiseAndWithheld)
{
  auto p = las_like();
  filter_stats s;
  apply_filter(filter_options{}, p, s);
  EXPECT_EQ(p.x, (std::vector<double>{0, 3, 5, 6}));
  EXPECT_EQ(p.classification, (std::vector<std::uint8_t>{2, 6, 5, 2}));
  EXPECT_EQ(s.by_class, 2U);
  EXPECT_EQ(s.withheld, 1U);
  EXPECT_EQ(s.removed(), 3U);
  EXPECT_EQ(s.points_in, 7U);
}

TEST(PointFilter, ClassWhitelistReturnsAndZ)
{
  auto p = las_like();
  filter_options o;
  o.classes = {2, 6};
  o.returns = return_filter::last;
  o.z_max = 15.5;
  filter_stats s;
  apply_filter(o, p, s);
  // kept by class: 0 (2), 3 (6), 6 (2) [4 is withheld]; last returns: 0 (1/1), 3 (2/2), 6 (3/3); z<=15.5 drops 6
  EXPECT_EQ(p.x, (std::vector<double>{0, 3}));
  EXPECT_EQ(s.by_z, 1U);
  auto q = las_like();
  filter_options first = filter_options::keep_all();
  first.returns = return_filter::first;
  filter_stats s2;
  apply_filter(first, q, s2);
  EXPECT_EQ(q.x, (std::vector<double>{0, 1, 2, 4}));
  EXPECT_EQ(s2.by_return, 3U);
}

TEST(PointFilter, KeepAllKeepsNoiseButNotNonFinite)
{
  auto p = las_like();
  p.z[1] = std::numeric_limits<double>::quiet_NaN();
  p.x[2] = std::numeric_limits<double>::infinity();
  filter_stats s;
  apply_filter(filter_options::keep_all(), p, s);
  EXPECT_EQ(p.size(), 5U);
  EXPECT_EQ(s.non_finite, 2U);
}

TEST(PointFilter, NegativeZeroBecomesPositiveZero)
{
  point_chunk p;
  p.x = {1, 2};
  p.y = {1, 2};
  p.z = {-0.0, -1.5};
  filter_stats s;
  apply_filter(filter_options{}, p, s);
  EXPECT_FALSE(std::signbit(p.z[0]));
  EXPECT_EQ(p.z[1], -1.5);
}

TEST(PointFilter, AttributeRulesIgnoredWhenTheSourceHasNoAttributes)
{
  point_chunk p;
  p.x = {1, 2};
  p.y = {1, 2};
  p.z = {1, 2};
  filter_options o;
  o.classes = {2};
  o.returns = return_filter::first;
  filter_stats s;
  apply_filter(o, p, s);
  EXPECT_EQ(p.size(), 2U);
}

}  // namespace
}  // namespace heightgrid
