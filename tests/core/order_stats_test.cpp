#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/host_grid.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/order_store.hpp"
#include "heightgrid/core/result_compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace heightgrid {
namespace {

struct numpy_case {
  char const* name;
  std::vector<double> z;
  std::vector<double> want;  ///< numpy.percentile(z, p) for p in `percentiles`
};

double const percentiles[] = {0, 2.5, 5, 25, 50, 62.5, 70, 95, 99.9, 100};

std::vector<numpy_case> const numpy_cases = {
  // numpy 1.24.2: np.percentile(z, p) for p in {0, 2.5, 5, 25, 50, 62.5, 70, 95, 99.9, 100}
  {"scan", {3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0}, {0x1.0000000000000p+0, 0x1.0000000000000p+0, 0x1.0000000000000p+0, 0x1.c000000000000p+0, 0x1.c000000000000p+1, 0x1.1800000000000p+2, 0x1.3999999999999p+2, 0x1.fcccccccccccbp+2, 0x1.1f53f7ced9169p+3, 0x1.2000000000000p+3}},
  {"ties", {2.0, 2.0, 2.0, 7.0, 7.0}, {0x1.0000000000000p+1, 0x1.0000000000000p+1, 0x1.0000000000000p+1, 0x1.0000000000000p+1, 0x1.0000000000000p+1, 0x1.2000000000000p+2, 0x1.7ffffffffffffp+2, 0x1.c000000000000p+2, 0x1.c000000000000p+2, 0x1.c000000000000p+2}},
  {"single", {4.25}, {0x1.1000000000000p+2, 0x1.1000000000000p+2, 0x1.1000000000000p+2, 0x1.1000000000000p+2, 0x1.1000000000000p+2, 0x1.1000000000000p+2, 0x1.1000000000000p+2, 0x1.1000000000000p+2, 0x1.1000000000000p+2, 0x1.1000000000000p+2}},
  {"frac", {0.1, 0.7, 0.3000000000000001, 0.001, 123.456}, {0x1.0624dd2f1a9fcp-10, 0x1.652bd3c361134p-7, 0x1.54c985f06f695p-6, 0x1.999999999999ap-4, 0x1.3333333333335p-2, 0x1.0000000000000p-1, 0x1.3d70a3d70a3d6p-1, 0x1.8b9e83e425aedp+6, 0x1.ebdc22ab25b36p+6, 0x1.edd2f1a9fbe77p+6}},
  {"neg", {-5.5, -0.25, -100.125, 3.75, 0.0}, {-0x1.9080000000000p+6, -0x1.6aa6666666666p+6, -0x1.44ccccccccccdp+6, -0x1.6000000000000p+2, -0x1.0000000000000p-2, -0x1.0000000000000p-3, -0x1.99999999999a0p-5, 0x1.7fffffffffffep+1, 0x1.de147ae147ae5p+1, 0x1.e000000000000p+1}},
};

std::string hex(double v)
{
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

TEST(Percentile, EqualsNumpyBitForBitInDouble)
{
  for (auto const& c : numpy_cases) {
    std::vector<double> z = c.z;
    sort_values(z.data(), z.size());
    for (std::size_t k = 0; k < std::size(percentiles); ++k) {
      double const got = percentile_of_sorted(z.data(), z.size(), percentiles[k]);
      EXPECT_EQ(hex(got), hex(c.want[k])) << c.name << " p" << percentiles[k];
    }
  }
}

TEST(Percentile, ZerosOrderNegativeFirstOnEveryBackend)
{
  // numpy's p0 of [-0.0, 0.0] is -0.0 + (0.0 - -0.0) * 0 = +0.0; p100 is the last value, +0.0 only
  // when -0.0 sorts first (as the GPU's sort of ordered keys puts it).
  std::vector<double> z{0.0, -0.0, 0.0, -0.0};
  sort_values(z.data(), z.size());
  EXPECT_TRUE(std::signbit(z[0]) && std::signbit(z[1]) && !std::signbit(z[2]) && !std::signbit(z[3]));
  EXPECT_FALSE(std::signbit(percentile_of_sorted(z.data(), z.size(), 100.0)));
  std::vector<double> negative_last{0.0, -0.0};
  sort_values(negative_last.data(), negative_last.size());
  EXPECT_FALSE(std::signbit(percentile_of_sorted(negative_last.data(), negative_last.size(), 100.0)));
}

TEST(Metrics, ParsesPercentilesMedianAndPrange)
{
  auto const m = parse_metric_list("p95,p2.5,median,prange,range,p0,p100,p99.95");
  ASSERT_EQ(m.size(), 8U);
  EXPECT_EQ(m[0], metric::percentile(95.0));
  EXPECT_EQ(m[1], metric::percentile(2.5));
  EXPECT_EQ(m[2], metric::median);
  EXPECT_EQ(m[3], metric::prange);
  EXPECT_EQ(m[4], metric::range);
  EXPECT_EQ(metric_name(m[1]), "p2.5");
  EXPECT_EQ(metric_name(m[7]), "p99.95");
  EXPECT_EQ(metric_name(metric::percentile(5.0)), "p5");
  for (auto const& x : m) { EXPECT_EQ(parse_metric(metric_name(x)), x) << metric_name(x); }
  auto const r = metric_request::from(m, 10.0, 90.0);
  // median is p50; the distinct percentiles in the order first asked.
  EXPECT_EQ(r.percentiles, (std::vector<double>{95.0, 2.5, 50.0, 0.0, 100.0, 99.95}));
  EXPECT_TRUE(r.prange);
  EXPECT_TRUE(r.range);
  EXPECT_TRUE(r.needs_order());
  EXPECT_EQ(r.prange_lo, 10.0);
  EXPECT_EQ(r.prange_hi, 90.0);
  EXPECT_NE(metric_description(metric::prange, 10.0, 90.0).find("90th - 10th"), std::string::npos);
  EXPECT_FALSE(metric_request::from(parse_metric_list("range,count")).needs_order());
}

TEST(Metrics, RefusesBadPercentilesNamingTheValue)
{
  for (char const* bad : {"p101", "p-1", "pNaN", "p", "p1e2", "p5,,p6", "p95,p95", "p50,median,p50", "pinf", "p 5"}) {
    try {
      (void)parse_metric_list(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << bad;
      EXPECT_NE(std::string(e.what()).find("--metrics"), std::string::npos) << e.what();
    }
  }
  // median and p50 are two bands of the same values: allowed.
  EXPECT_EQ(parse_metric_list("median,p50").size(), 2U);
  try {
    (void)parse_metric_list("p101");
  } catch (error const& e) {
    EXPECT_NE(std::string(e.what()).find("'p101'"), std::string::npos) << e.what();
  }
  for (char const* bad : {"95,5", "5", "5,101", "-5,95", "a,b", "5,5", ""}) {
    try {
      (void)parse_prange(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << bad;
      EXPECT_NE(std::string(e.what()).find("--prange"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_prange("2.5,97.5"), (std::pair<double, double>{2.5, 97.5}));
}

/// Points with ties, one-point cells, empty cells and one crowded cell.
point_chunk mixed_points(std::uint64_t seed)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 20.0);
  std::uniform_int_distribution<int> zi(0, 6);
  point_chunk p;
  auto add = [&p](double x, double y, double z) {
    p.x.push_back(x);
    p.y.push_back(y);
    p.z.push_back(z);
  };
  for (int i = 0; i < 4000; ++i) { add(u(rng), std::fmod(u(rng), 10.0), zi(rng) * 0.5); }  // ties; rows 10-19 empty
  for (int i = 0; i < 5000; ++i) { add(0.5, 0.5, u(rng)); }                               // a crowded cell
  add(19.5, 19.5, 3.0);                                                                     // one-point cells
  add(19.5, 17.5, -2.0);
  return p;
}

metric_request order_request()
{
  auto r = metric_request::from(parse_metric_list("p5,median,p95,p2.5,prange,count,range"));
  return r;
}

TEST(OrderStats, ReduceCellsCpuSortsEachCell)
{
  auto const p = mixed_points(1);
  bounds b;
  for (std::size_t i = 0; i < p.size(); ++i) { b.extend(p.x[i], p.y[i]); }
  auto const g = grid_from_bounds(b, 1.0, 1.0);
  binning_stats stats;
  auto const csr = bin_points_cpu(g, p, stats);
  auto const r = order_request();
  auto const got = reduce_cells_cpu(csr, r, default_nodata);
  ASSERT_EQ(got.percentile.size(), 4U);
  std::size_t empty = 0, single = 0;
  for (std::uint64_t c = 0; c < csr.num_cells(); ++c) {
    std::vector<double> v(csr.z.begin() + static_cast<std::ptrdiff_t>(csr.offsets[c]),
                          csr.z.begin() + static_cast<std::ptrdiff_t>(csr.offsets[c + 1]));
    if (v.empty()) {
      ++empty;
      EXPECT_TRUE(std::isnan(got.percentile[0][c]));
      EXPECT_TRUE(std::isnan(got.prange[c]));
      continue;
    }
    single += v.size() == 1;
    std::sort(v.begin(), v.end());
    for (std::size_t k = 0; k < r.percentiles.size(); ++k) {
      EXPECT_EQ(got.percentile[k][c], static_cast<float>(percentile_of_sorted(v.data(), v.size(), r.percentiles[k])));
    }
    EXPECT_EQ(got.prange[c], static_cast<float>(percentile_of_sorted(v.data(), v.size(), 95.0) -
                                                 percentile_of_sorted(v.data(), v.size(), 5.0)));
    if (v.size() == 1) { EXPECT_EQ(got.prange[c], 0.0f); }
  }
  EXPECT_GT(empty, 0U);
  EXPECT_GT(single, 0U);
}

/// host_grid with kept points: every batch size and thread count gives the whole-cloud reference.
TEST(OrderStats, HostGridEqualsTheWholeCloudForAnyBatchingAndThreads)
{
  auto const p = mixed_points(2);
  bounds b;
  for (std::size_t i = 0; i < p.size(); ++i) { b.extend(p.x[i], p.y[i]); }
  auto const g = grid_from_bounds(b, 1.0, 1.0);
  auto r = order_request();
  binning_stats stats;
  auto const want = reduce_cells_cpu(bin_points_cpu(g, p, stats), r, default_nodata);
  for (std::size_t batch : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, p.size()}) {
    for (unsigned threads : {1U, 3U}) {
      auto acc = r;
      acc.min = acc.max = acc.count = true;
      host_grid grid(grid_band::whole(g), acc);
      std::vector<std::vector<double>> memory;
      std::vector<point_batch> list;
      for (std::size_t first = 0; first < p.size(); first += batch) {
        std::size_t const n = std::min(batch, p.size() - first);
        memory.emplace_back(3 * batch);
        point_batch pb;
        pb.data = memory.back().data();
        pb.capacity = batch;
        pb.size = n;
        for (std::size_t i = 0; i < n; ++i) {
          pb.x()[i] = p.x[first + i];
          pb.y()[i] = p.y[first + i];
          pb.z()[i] = p.z[first + i];
        }
        list.push_back(pb);
      }
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          for (std::size_t k = t; k < list.size(); k += threads) { (void)grid.add_batch(list[k]); }
        });
      }
      for (auto& th : pool) { th.join(); }
      auto const got = grid.finalize_rows(0, g.rows, g.cols, r, default_nodata);
      auto const d = first_difference(got, want, r, 0);
      EXPECT_FALSE(d.has_value()) << "batch " << batch << ", threads " << threads << ": " << d->describe();
    }
  }
}

TEST(OrderStats, AStoreFullerThanItsCapacityThrowsForTheJobToSplitTheBand)
{
  auto const p = mixed_points(3);
  bounds b;
  for (std::size_t i = 0; i < p.size(); ++i) { b.extend(p.x[i], p.y[i]); }
  auto const g = grid_from_bounds(b, 1.0, 1.0);
  auto acc = order_request();
  acc.min = acc.max = acc.count = true;
  host_grid grid(grid_band::whole(g), acc, 100);
  std::vector<double> memory(3 * p.size());
  point_batch pb;
  pb.data = memory.data();
  pb.capacity = pb.size = p.size();
  for (std::size_t i = 0; i < p.size(); ++i) {
    pb.x()[i] = p.x[i];
    pb.y()[i] = p.y[i];
    pb.z()[i] = p.z[i];
  }
  EXPECT_THROW((void)grid.add_batch(pb), order_store_full);
}

}  // namespace
}  // namespace heightgrid
