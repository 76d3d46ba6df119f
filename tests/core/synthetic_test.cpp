#include "heightgrid/core/synthetic.hpp"

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/error.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace heightgrid {
namespace {

/// Every column the source fills, chunk after chunk.
point_chunk read_all(synth_options const& o, std::size_t chunk)
{
  synthetic_source s(o);
  point_chunk all, c;
  while (s.read(c, chunk)) {
    all.append_xyz(c);
    all.classification.insert(all.classification.end(), c.classification.begin(), c.classification.end());
    all.return_number.insert(all.return_number.end(), c.return_number.begin(), c.return_number.end());
    all.number_of_returns.insert(all.number_of_returns.end(), c.number_of_returns.begin(), c.number_of_returns.end());
    all.flags.insert(all.flags.end(), c.flags.begin(), c.flags.end());
  }
  return all;
}

synth_options options_for(synth_kind kind, std::uint64_t points, double side)
{
  synth_options o;
  o.kind = kind;
  o.points = points;
  o.xmin = 0.0;
  o.ymin = 0.0;
  o.xmax = side;
  o.ymax = side;
  return o;
}

/// Points per cell of a `cell`-sized grid over [0, side)^2 (the generator's own cells).
std::vector<std::uint64_t> counts_per_cell(point_chunk const& p, double side, double cell)
{
  auto const n = static_cast<std::size_t>(std::llround(side / cell));
  std::vector<std::uint64_t> counts(n * n, 0);
  for (std::size_t i = 0; i < p.size(); ++i) {
    auto const c = static_cast<std::size_t>(p.x[i] / cell);
    auto const r = static_cast<std::size_t>((side - p.y[i]) / cell);
    ++counts[std::min(r, n - 1) * n + std::min(c, n - 1)];
  }
  return counts;
}

class SyntheticKind : public ::testing::TestWithParam<synth_kind> {};

TEST_P(SyntheticKind, SameCloudWhateverTheChunkingAndThreads)
{
  auto o = options_for(GetParam(), 10007, 300.0);
  o.seed = 99;
  auto const a = read_all(o, 1 << 20);
  int const saved = omp_get_max_threads();
  omp_set_num_threads(3);
  auto const b = read_all(o, 333);  // 333: chunks start inside lidar's 16-point groups
  auto const c = read_all(o, 1);
  omp_set_num_threads(saved);
  ASSERT_EQ(a.size(), 10007U);
  for (auto const* other : {&b, &c}) {
    EXPECT_EQ(a.x, other->x);
    EXPECT_EQ(a.y, other->y);
    EXPECT_EQ(a.z, other->z);
    EXPECT_EQ(a.classification, other->classification);
    EXPECT_EQ(a.return_number, other->return_number);
    EXPECT_EQ(a.number_of_returns, other->number_of_returns);
    EXPECT_EQ(a.flags, other->flags);
  }
  o.seed = 100;
  EXPECT_NE(read_all(o, 1 << 20).x, a.x);
}

TEST_P(SyntheticKind, EveryPointIsInsideTheExtentWithAFiniteHeight)
{
  auto o = options_for(GetParam(), 50000, 0.0);
  o.xmin = 500000.0;
  o.ymin = 4100000.0;
  o.xmax = 500400.0;
  o.ymax = 4100250.0;
  auto const p = read_all(o, 1 << 14);
  ASSERT_EQ(p.size(), 50000U);
  for (std::size_t i = 0; i < p.size(); ++i) {
    ASSERT_GE(p.x[i], o.xmin);
    ASSERT_LT(p.x[i], o.xmax);
    ASSERT_GE(p.y[i], o.ymin);
    ASSERT_LE(p.y[i], o.ymax);
    ASSERT_TRUE(std::isfinite(p.z[i]));
  }
  EXPECT_EQ(synthetic_source(o).info().point_count, 50000U);
}

INSTANTIATE_TEST_SUITE_P(, SyntheticKind, ::testing::ValuesIn(all_synth_kinds()),
                         [](auto const& info) { return std::string(synth_kind_name(info.param)); });

TEST(Synthetic, KindNamesRoundTrip)
{
  for (auto k : all_synth_kinds()) { EXPECT_EQ(parse_synth_kind(synth_kind_name(k)), k); }
  EXPECT_FALSE(parse_synth_kind("bogus").has_value());
  EXPECT_EQ(synth_kind_list(), "uniform, lidar, skewed, clustered");
}

TEST(Synthetic, CloudsDoNotChangeBetweenVersions)
{
  // Measured figures (docs/benchmarks.md) name a kind, a seed and a size: the cloud behind them
  // must stay the same. Point 2 of each kind, seed 1, 3 points, default options; z goes through
  // libm's sin/cos, hence the tolerance.
  struct golden {
    synth_kind kind;
    double x, y, z;
  };
  golden const expected[] = {
    {synth_kind::uniform, 0x1.7bde24e043113p+7, 0x1.8f2ba1d5edd89p+7, 0x1.a73175d1de90cp+6},
    {synth_kind::lidar, 0x1.8a8d483d380f6p+9, 0x1.4328cbadbcd07p+9, 0x1.7340b62bd91a9p+6},
    {synth_kind::skewed, 0x1.04a2008da587cp+9, 0x1.5dc5390321da4p+8, 0x1.b1959e5dc6123p+6},
    {synth_kind::clustered, 0x1.af522d2c079e1p+9, 0x1.0daceffa87cedp+9, 0x1.954b3023b67bbp+6},
  };
  for (auto const& g : expected) {
    synth_options o;
    o.kind = g.kind;
    o.points = 3;
    auto const p = read_all(o, 3);
    ASSERT_EQ(p.size(), 3U);
    EXPECT_DOUBLE_EQ(p.x[2], g.x) << synth_kind_name(g.kind);
    EXPECT_DOUBLE_EQ(p.y[2], g.y) << synth_kind_name(g.kind);
    EXPECT_NEAR(p.z[2], g.z, 1e-9) << synth_kind_name(g.kind);
  }
}

TEST(Synthetic, UniformFillsTheExtentEvenly)
{
  synth_options o;
  o.points = 400000;
  o.xmin = 10;
  o.xmax = 20;
  o.ymin = -5;
  o.ymax = 5;
  auto const p = read_all(o, 1 << 16);
  std::vector<int> quarters(4, 0);
  for (std::size_t i = 0; i < p.size(); ++i) {
    ASSERT_GE(p.x[i], 10.0);
    ASSERT_LT(p.x[i], 20.0);
    ASSERT_GE(p.y[i], -5.0);
    ASSERT_LT(p.y[i], 5.0);
    ++quarters[(p.x[i] < 15.0 ? 0 : 1) + (p.y[i] < 0.0 ? 0 : 2)];
  }
  for (int q : quarters) { EXPECT_NEAR(q, 100000, 1500); }  // ~5 sigma of a binomial
  EXPECT_TRUE(p.classification.empty());  // no attributes: LAS output writes class 0
}

TEST(Synthetic, ExtentFromDensityIsASquareOfWholeCells)
{
  synth_options o;
  o.points = 1000000;
  set_extent_from_density(o, 10.0);  // side sqrt(10^5) = 316.23 -> 317 cells of 1
  EXPECT_EQ(o.xmin, 0.0);
  EXPECT_EQ(o.ymin, 0.0);
  EXPECT_EQ(o.xmax, 317.0);
  EXPECT_EQ(o.ymax, 317.0);
  o.cell_size = 0.5;
  set_extent_from_density(o, 10.0);
  EXPECT_EQ(o.xmax, 316.5);
  EXPECT_THROW(set_extent_from_density(o, 0.0), error);
  EXPECT_EQ(default_points_per_cell(synth_kind::uniform), 10.0);
  EXPECT_EQ(default_points_per_cell(synth_kind::skewed), 2.0);
}

TEST(Synthetic, BadParametersAreUsageErrors)
{
  auto expect_usage = [](synth_options const& o) {
    try {
      synthetic_source s(o);
      ADD_FAILURE() << "no error for kind " << synth_kind_name(o.kind);
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << e.what();
    }
  };
  auto o = options_for(synth_kind::skewed, 10, 100.0);
  o.cell_size = 0.0;
  expect_usage(o);
  o.cell_size = 1000.0;  // the extent holds no whole cell
  expect_usage(o);
  o.cell_size = 1.0;
  o.zipf_s = -1.0;
  expect_usage(o);
  auto c = options_for(synth_kind::clustered, 10, 100.0);
  c.hotspots = 0;
  expect_usage(c);
  auto u = options_for(synth_kind::uniform, 10, 100.0);
  u.xmax = u.xmin;
  expect_usage(u);
}

// ---- lidar: pulses, classes, strips

TEST(SyntheticLidar, PulsesAreConsecutiveReturnsWithClasses)
{
  auto const o = options_for(synth_kind::lidar, 200000, 1000.0);
  auto const p = read_all(o, 1 << 15);
  ASSERT_EQ(p.classification.size(), p.size());
  ASSERT_EQ(p.flags.size(), p.size());
  std::vector<std::uint64_t> by_class(256, 0);
  std::uint64_t multi = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::uint8_t const r = p.return_number[i], n = p.number_of_returns[i];
    ASSERT_GE(r, 1);
    ASSERT_LE(r, n);
    ASSERT_LE(n, 4);
    ++by_class[p.classification[i]];
    multi += n > 1;
    if (r > 1) {  // the rest of a pulse: same spot, next return, lower down
      ASSERT_GT(i, 0U);
      EXPECT_EQ(p.return_number[i - 1], r - 1);
      EXPECT_EQ(p.number_of_returns[i - 1], n);
      EXPECT_EQ(p.x[i - 1], p.x[i]);
      EXPECT_EQ(p.y[i - 1], p.y[i]);
      EXPECT_LE(p.z[i], p.z[i - 1]);
    } else if (i > 0) {
      EXPECT_EQ(p.return_number[i - 1], p.number_of_returns[i - 1]) << "a pulse ended early at " << i;
    }
    if (n == 1) {  // ground, roofs, noise, or a canopy hit cut short by the end of its group
      auto const c = p.classification[i];
      EXPECT_TRUE(c == 2 || c == 5 || c == 6 || c == 7) << int(c);
    }
  }
  double const n = static_cast<double>(p.size());
  EXPECT_GT(by_class[2] / n, 0.25);  // ground: open lots and the last returns under trees
  EXPECT_GT(by_class[6] / n, 0.03);  // roofs
  EXPECT_GT(by_class[5] / n, 0.15);  // canopy
  EXPECT_GT(by_class[3] + by_class[4], 0U);
  EXPECT_GT(multi / n, 0.3);  // several returns per pulse in vegetation
  // One pulse in 10^4 is low noise: some, but not many (~14 of 200,000 points). The old
  // EXPECT_NEAR(x, 0.7e-4, 0.7e-4) passed with none.
  EXPECT_GT(by_class[7], 0U);
  EXPECT_LT(by_class[7] / n, 2e-4);
  std::uint64_t const known = by_class[2] + by_class[3] + by_class[4] + by_class[5] + by_class[6] + by_class[7];
  EXPECT_EQ(known, p.size());
}

TEST(SyntheticLidar, OverlappingStripsDoubleTheDensityAndAreFlagged)
{
  // 5 strips of width W = side / 3.8, each 0.3 W over the next: single coverage in [0, 0.7 W),
  // the first overlap in [0.7 W, W).
  double const side = 1900.0;
  auto const o = options_for(synth_kind::lidar, 400000, side);
  auto const p = read_all(o, 1 << 16);
  double const w = side / 3.8;
  std::uint64_t single = 0, overlap = 0;
  std::uint64_t flagged_single = 0, flagged_overlap = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p.return_number[i] != 1) { continue; }  // one point per pulse
    bool const flagged = (p.flags[i] & point_flag::overlap) != 0;
    if (p.x[i] < 0.7 * w) {
      ++single;
      flagged_single += flagged;
    } else if (p.x[i] < w) {
      ++overlap;
      flagged_overlap += flagged;
    }
  }
  // pulses per unit width: twice as many where two strips overlap
  double const ratio = (static_cast<double>(overlap) / (0.3 * w)) / (static_cast<double>(single) / (0.7 * w));
  EXPECT_NEAR(ratio, 2.0, 0.15);
  EXPECT_EQ(flagged_single, 0U);
  EXPECT_NEAR(static_cast<double>(flagged_overlap) / static_cast<double>(overlap), 0.5, 0.05);
}

TEST(SyntheticLidar, DensityVariesSeveralFold)
{
  double const side = 1000.0;
  auto const o = options_for(synth_kind::lidar, 1000000, side);
  auto counts = counts_per_cell(read_all(o, 1 << 16), side, 10.0);  // 10 points per m^2: ~1000 per cell
  std::sort(counts.begin(), counts.end());
  auto const at = [&](double q) { return static_cast<double>(counts[static_cast<std::size_t>(q * (counts.size() - 1))]); };
  EXPECT_GT(at(0.95) / at(0.05), 4.0) << "p5 " << at(0.05) << ", p95 " << at(0.95);
}

// ---- skewed: the Zipf law over the cells

TEST(SyntheticSkewed, MostCellsNearlyEmptyAndAHeavyTailAsDocumented)
{
  // 2 x 10^6 points, 2 per cell on average: 10^6 cells. Expected count of the rank-k cell under
  // the continuous law the generator inverts, with a = 1 - s: N ((k+1)^a - k^a) / ((C+1)^a - 1).
  double const side = 1000.0;
  auto o = options_for(synth_kind::skewed, 2000000, side);
  auto const p = read_all(o, 1 << 18);
  auto counts = counts_per_cell(p, side, 1.0);
  std::sort(counts.begin(), counts.end(), std::greater<>());
  double const cells = static_cast<double>(counts.size());
  double const a = 1.0 - o.zipf_s;
  auto const expected = [&](double k) {
    return 2e6 * (std::pow(k + 1.0, a) - std::pow(k, a)) / (std::pow(cells + 1.0, a) - 1.0);
  };
  for (double k : {1.0, 10.0, 100.0, 1000.0}) {
    EXPECT_NEAR(static_cast<double>(counts[static_cast<std::size_t>(k) - 1]) / expected(k), 1.0, 0.15) << "rank " << k;
  }
  auto const small = std::count_if(counts.begin(), counts.end(), [](std::uint64_t c) { return c <= 4; });
  EXPECT_GT(static_cast<double>(small) / cells, 0.85);
  EXPECT_GT(counts.front(), 2000U);  // ~2,600 here; 2.6 x 10^4 at 10^8 points, ~1.1 x 10^5 at 10^9
  // every point 1 % or more away from its cell's edges, so rounding never moves it to a neighbour
  for (std::size_t i = 0; i < p.size(); ++i) {
    double const fx = p.x[i] - std::floor(p.x[i]);
    double const fy = std::ceil(p.y[i]) - p.y[i];
    ASSERT_GE(fx, 0.0099);
    ASSERT_LE(fx, 0.9901);
    ASSERT_GE(fy, 0.0099);
    ASSERT_LE(fy, 0.9901);
  }
}

TEST(SyntheticSkewed, HeavyCellsAreScatteredOverTheGrid)
{
  double const side = 512.0;
  auto const o = options_for(synth_kind::skewed, 500000, side);
  auto const counts = counts_per_cell(read_all(o, 1 << 18), side, 1.0);
  std::vector<std::size_t> order(counts.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + 20, order.end(),
                    [&](std::size_t l, std::size_t r) { return counts[l] > counts[r]; });
  std::vector<std::size_t> rows, cols;
  for (int i = 0; i < 20; ++i) {
    rows.push_back(order[static_cast<std::size_t>(i)] / 512);
    cols.push_back(order[static_cast<std::size_t>(i)] % 512);
  }
  auto const spread = [](std::vector<std::size_t> v) { return *std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end()); };
  EXPECT_GT(spread(rows), 200U);
  EXPECT_GT(spread(cols), 200U);
}

TEST(SyntheticSkewed, EveryCellOfASmallGridIsReached)
{
  // 7 x 5 = 35 cells: not a power of two, so the rank -> cell bijection cycle-walks.
  auto o = options_for(synth_kind::skewed, 20000, 0.0);
  o.xmax = 3.5;
  o.ymax = 2.5;
  o.cell_size = 0.5;
  auto const p = read_all(o, 1000);
  std::vector<std::uint64_t> counts(35, 0);
  for (std::size_t i = 0; i < p.size(); ++i) {
    auto const c = static_cast<std::size_t>(p.x[i] / 0.5);
    auto const r = static_cast<std::size_t>((2.5 - p.y[i]) / 0.5);
    ASSERT_LT(c, 7U);
    ASSERT_LT(r, 5U);
    ++counts[r * 7 + c];
  }
  for (auto c : counts) { EXPECT_GT(c, 0U); }
  // s = 0: even over the cells
  o.zipf_s = 0.0;
  o.points = 35000;
  auto const q = read_all(o, 1 << 12);
  std::vector<std::uint64_t> even(35, 0);
  for (std::size_t i = 0; i < q.size(); ++i) {
    ++even[static_cast<std::size_t>((2.5 - q.y[i]) / 0.5) * 7 + static_cast<std::size_t>(q.x[i] / 0.5)];
  }
  for (auto c : even) { EXPECT_NEAR(static_cast<double>(c), 1000.0, 160.0); }  // 5 sigma
}

// ---- clustered: hotspots on a background

TEST(SyntheticClustered, HalfThePointsInAFewDenseHotspots)
{
  double const side = 320.0;  // ~10 points per square unit, half of them background
  auto const o = options_for(synth_kind::clustered, 1000000, side);
  auto counts = counts_per_cell(read_all(o, 1 << 18), side, 2.0);  // background: ~19.5 per cell
  std::sort(counts.begin(), counts.end(), std::greater<>());
  double const total = 1e6;
  auto const top = static_cast<std::size_t>(0.05 * static_cast<double>(counts.size()));
  double const in_top = static_cast<double>(std::accumulate(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(top), std::uint64_t{0}));
  EXPECT_GT(in_top / total, 0.45);  // the 5 % densest cells hold about half of all points
  double const median = static_cast<double>(counts[counts.size() / 2]);
  EXPECT_NEAR(median, 19.5, 2.0);
  EXPECT_GT(static_cast<double>(counts.front()) / median, 30.0);
}

}  // namespace
}  // namespace heightgrid
