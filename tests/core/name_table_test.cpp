// name_table.hpp: name, parse and list an enum through one table of rows.

#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/name_table.hpp"
#include "heightgrid/core/synthetic.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string_view>

namespace heightgrid {
namespace {

enum class color { red, green, blue };
constexpr std::array<name_row<color>, 2> colors{{{color::red, "red"}, {color::blue, "blue"}}};

TEST(NameTable, NamesParsesAndListsInTableOrder)
{
  static_assert(name_in(colors, color::blue) == "blue");
  static_assert(parse_in(colors, "red") == color::red);
  EXPECT_EQ(name_in(colors, color::green), "?");  // not in the table
  EXPECT_FALSE(parse_in(colors, "green").has_value());
  EXPECT_FALSE(parse_in(colors, "Red").has_value());  // exact spelling only
  EXPECT_EQ(values_in(colors), (std::vector<color>{color::red, color::blue}));
  EXPECT_EQ(names_in(colors, ", "), "red, blue");
  EXPECT_EQ(row_in(colors, color::green), nullptr);
}

TEST(NameTable, EveryTableRoundTrips)
{
  for (auto k : all_synth_kinds()) { EXPECT_EQ(parse_synth_kind(synth_kind_name(k)), k); }
  EXPECT_EQ(synth_kind_list(), "uniform, lidar, skewed, clustered");
  for (auto m : {metric::range, metric::min, metric::max, metric::count, metric::mean, metric::stddev}) {
    EXPECT_EQ(parse_metric(metric_name(m)), m);
    EXPECT_NE(metric_description(m), "?");
  }
}

}  // namespace
}  // namespace heightgrid
