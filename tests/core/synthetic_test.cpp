#include "heightgrid/core/synthetic.hpp"

#include <gtest/gtest.h>
#include <omp.h>

namespace heightgrid {
namespace {

point_chunk read_all(synth_options const& o, std::size_t chunk)
{
  synthetic_source s(o);
  point_chunk all, c;
  while (s.read(c, chunk)) { all.append_xyz(c); }
  return all;
}

TEST(Synthetic, SameCloudWhateverTheChunkingAndThreads)
{
  synth_options o;
  o.points = 10007;
  o.seed = 99;
  auto const a = read_all(o, 1 << 20);
  int const saved = omp_get_max_threads();
  omp_set_num_threads(3);
  auto const b = read_all(o, 333);
  omp_set_num_threads(saved);
  EXPECT_EQ(a.size(), 10007U);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.z, b.z);
  o.seed = 100;
  EXPECT_NE(read_all(o, 1 << 20).x, a.x);
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
}

}  // namespace
}  // namespace heightgrid
