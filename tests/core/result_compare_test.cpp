#include "heightgrid/core/result_compare.hpp"

#include "heightgrid/core/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

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

// ---- `heightgrid compare`: a difference between modes is named, then ends the run with exit 70

/// The sample's three cells as a grid of 2 columns and 2 rows (the fourth cell past the columns).
grid_spec two_columns()
{
  grid_spec g;
  g.cols = 2;
  g.rows = 2;
  return g;
}

TEST(ResultCompare, AgreeingModesHaveNoMismatch)
{
  EXPECT_EQ(mode_mismatch("thread", sample(), "cpu", sample(), everything(), two_columns()), "");
  // mean/stddev within 1 ulp agree
  auto b = sample();
  b.mean[0] = std::nextafter(11.0f, 12.0f);
  EXPECT_EQ(mode_mismatch("thread", sample(), "cpu", b, everything(), two_columns()), "");
  EXPECT_NO_THROW(require_modes_agree(""));
}

TEST(ResultCompare, ModeMismatchNamesTheModesTheBandTheCellItsRowAndColumn)
{
  auto b = sample();
  b.min[1] = 19.5f;
  EXPECT_EQ(mode_mismatch("thread", sample(), "warp", b, everything(), two_columns()),
            "modes thread and warp differ: band min, cell 1: 20 [0x41a00000] vs 19.5 [0x419c0000] "
            "(row 0, col 1; thread first)");

  struct change {
    char const* band;
    void (*apply)(cell_results&);
  };
  change const changes[] = {
    {"band range, cell 2: nan", [](cell_results& r) { r.range[2] = 0.0f; }},  // nodata against a value
    {"band max, cell 2: nan", [](cell_results& r) { r.max[2] = 3.0f; }},
    {"band min, cell 2: nan", [](cell_results& r) { r.min[2] = 3.0f; }},
    {"band count, cell 2: 0 vs 1", [](cell_results& r) { r.count[2] = 1; }},
    {"band mean, cell 2: nan", [](cell_results& r) { r.mean[2] = 3.0f; }},
    {"band stddev, cell 0: 0.899999976", [](cell_results& r) { r.stddev[0] = 1.0f; }},
  };
  for (auto const& c : changes) {
    auto other = sample();
    c.apply(other);
    auto const m = mode_mismatch("hybrid", sample(), "cpu", other, everything(), two_columns());
    EXPECT_EQ(m.rfind("modes hybrid and cpu differ: ", 0), 0U) << m;
    EXPECT_NE(m.find(c.band), std::string::npos) << "expected '" << c.band << "' in: " << m;
    bool const cell_2 = std::string(c.band).find("cell 2") != std::string::npos;
    EXPECT_NE(m.find(cell_2 ? "(row 1, col 0; hybrid first)" : "(row 0, col 0; hybrid first)"), std::string::npos)
      << m;
  }
  // a band that was not asked for is not compared
  auto other = sample();
  other.max[0] = 99.0f;
  EXPECT_EQ(mode_mismatch("thread", sample(), "cpu", other, metric_request::from({metric::range, metric::count}),
                          two_columns()),
            "");
}

TEST(ResultCompare, DisagreeingModesEndTheRunWithExit70NamingTheCell)
{
  auto b = sample();
  b.count[0] = 5;
  auto const mismatch = mode_mismatch("thread", sample(), "cpu", b, everything(), two_columns());
  ASSERT_FALSE(mismatch.empty());
  try {
    require_modes_agree(mismatch);
    ADD_FAILURE() << "no error for: " << mismatch;
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::internal);
    EXPECT_EQ(exit_code(e.kind()), 70);  // README: 70 internal error
    EXPECT_EQ(std::string(e.what()), "compare: modes thread and cpu differ: band count, cell 0: 4 vs 5 (row 0, col 0; "
                                     "thread first)");
  }
}

}  // namespace
}  // namespace heightgrid
