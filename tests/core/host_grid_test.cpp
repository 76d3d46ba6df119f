#include "heightgrid/core/host_grid.hpp"

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/cell_accumulator.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/result_compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

namespace heightgrid {
namespace {

/// Points in a spatially coherent order (a random walk), as LAS files hold them, with cells of few
/// and of many points; z on a 1 mm grid so ties happen.
point_chunk walk_points(std::size_t n, double extent, std::uint64_t seed)
{
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> step(0.0, 0.4);
  std::uniform_int_distribution<int> z(-5000, 5000);
  point_chunk p;
  double x = extent / 2, y = extent / 2;
  for (std::size_t i = 0; i < n; ++i) {
    x = std::clamp(x + step(rng), 0.0, extent);
    y = std::clamp(y + step(rng), 0.0, extent);
    p.x.push_back(x);
    p.y.push_back(y);
    p.z.push_back(z(rng) * 0.001);
  }
  return p;
}

/// The batches of `p` of at most `size` points each, as float64 batches over owned memory.
struct batches {
  std::vector<std::vector<double>> memory;
  std::vector<point_batch> list;
};

batches split(point_chunk const& p, std::size_t size)
{
  batches b;
  for (std::size_t first = 0; first < p.size(); first += size) {
    std::size_t const n = std::min(size, p.size() - first);
    b.memory.emplace_back(3 * size);
    point_batch batch;
    batch.data = b.memory.back().data();
    batch.capacity = size;
    batch.size = n;
    for (std::size_t i = 0; i < n; ++i) {
      batch.x()[i] = p.x[first + i];
      batch.y()[i] = p.y[first + i];
      batch.z()[i] = p.z[first + i];
    }
    b.list.push_back(batch);
  }
  return b;
}

grid_spec grid_of(point_chunk const& p, double res)
{
  bounds b;
  for (std::size_t i = 0; i < p.size(); ++i) { b.extend(p.x[i], p.y[i]); }
  return grid_from_bounds(b, res, res);
}

/// The whole-cloud reference: CSR (stable, input order) reduced per cell.
cell_results reference(grid_spec const& g, point_chunk const& p, metric_request const& r, float nodata)
{
  binning_stats stats;
  return reduce_cells_cpu(bin_points_cpu(g, p, stats), r, nodata);
}

metric_request extremes_and_count()
{
  metric_request r;
  r.min = r.max = r.range = r.count = true;
  return r;
}

metric_request all_metrics()
{
  metric_request r;
  r.min = r.max = r.range = r.count = r.mean = r.stddev = true;
  return r;
}

void expect_same_extremes(cell_results const& got, cell_results const& want)
{
  auto const d = first_difference(got, want, extremes_and_count(), 0);
  EXPECT_FALSE(d.has_value()) << d->describe();
}

TEST(CellAccumulator, KeysOrderLikeTheDoublesAndZeroIsEmpty)
{
  double const values[] = {-std::numeric_limits<double>::infinity(), -1e300, -1.0, -0.0, 0.0, 1e-300, 1.0, 1e300,
                           std::numeric_limits<double>::infinity()};
  for (std::size_t i = 0; i + 1 < std::size(values); ++i) {
    EXPECT_LT(ordered_key(values[i]), ordered_key(values[i + 1])) << values[i];
    EXPECT_GT(lo_key(values[i]), lo_key(values[i + 1])) << values[i];  // max of lo keys is the min
  }
  for (double v : values) {
    EXPECT_GT(lo_key(v), 0U);
    EXPECT_GT(hi_key(v), 0U);
    double const back = min_of_lo_key(lo_key(v));
    EXPECT_EQ(std::memcmp(&back, &v, sizeof v), 0) << v;
    EXPECT_EQ(max_of_hi_key(hi_key(v)), v);
  }
}

TEST(CellAccumulator, MergeMomentsOfTwoHalvesMatchesTheWhole)
{
  std::vector<double> const z{1.0, 2.5, 4.0, 8.0, 16.5, 3.25, 7.0};
  auto const moments = [](std::vector<double> const& v, std::size_t a, std::size_t b, double& sum, double& m2) {
    sum = 0.0;
    for (std::size_t i = a; i < b; ++i) { sum += v[i]; }
    double const mean = sum / static_cast<double>(b - a);
    m2 = 0.0;
    for (std::size_t i = a; i < b; ++i) { m2 += (v[i] - mean) * (v[i] - mean); }
  };
  double whole_sum = 0, whole_m2 = 0;
  moments(z, 0, z.size(), whole_sum, whole_m2);
  for (std::size_t cut = 1; cut < z.size(); ++cut) {
    double sa = 0, ma = 0, sb = 0, mb = 0;
    moments(z, 0, cut, sa, ma);
    moments(z, cut, z.size(), sb, mb);
    merge_moments(cut, sa, ma, z.size() - cut, sb, mb);
    EXPECT_DOUBLE_EQ(sa, whole_sum) << cut;
    EXPECT_NEAR(ma, whole_m2, 1e-12 * whole_m2) << cut;
  }
  double s = 0, m = 0;
  merge_moments(0, s, m, 3, 6.0, 2.0);  // into an empty cell: the partial as it is
  EXPECT_EQ(s, 6.0);
  EXPECT_EQ(m, 2.0);
  merge_moments(3, s, m, 0, 99.0, 99.0);  // an empty partial changes nothing
  EXPECT_EQ(s, 6.0);
  EXPECT_EQ(m, 2.0);
}

TEST(HostGrid, AtomicBatchesEqualTheWholeCloudForAnyBatchSizeAndThreads)
{
  auto const p = walk_points(60000, 40.0, 3);
  auto const g = grid_of(p, 1.5);
  auto const r = extremes_and_count();
  auto const want = reference(g, p, r, -9999.0F);
  for (std::size_t size : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, p.size()}) {
    for (unsigned threads : {1u, 4u}) {
      auto const b = split(p, size);
      host_grid grid(grid_band::whole(g), r);
      std::vector<std::thread> pool;
      std::vector<batch_binning> counts(threads);
      for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          for (std::size_t k = t; k < b.list.size(); k += threads) {
            auto const c = grid.add_batch(b.list[k]);
            counts[t].binned += c.binned;
            counts[t].outside += c.outside;
          }
        });
      }
      for (auto& th : pool) { th.join(); }
      std::uint64_t binned = 0;
      for (auto const& c : counts) { binned += c.binned; }
      EXPECT_EQ(binned, p.size());
      EXPECT_EQ(grid.total_count(), p.size());
      expect_same_extremes(grid.finalize_rows(0, g.rows, g.cols, r, -9999.0F), want);
    }
  }
}

TEST(HostGrid, PagesMappedFirstBinTheSameAsPagesMappedByThePoints)
{
  // A sparse grid (fewer points than a tenth of its cells: most of its words never reached), mapped
  // up front (doubles' pairs and counts, or the integer words) or left to the binning: the same cells.
  auto const p = walk_points(20000, 120.0, 5);
  auto const g = grid_of(p, 0.1);
  ASSERT_LT(p.size() * 10, g.num_cells());
  auto const r = extremes_and_count();
  auto const want = reference(g, p, r, -9999.0F);
  for (int const prefault : {0, 1, 2}) {
    auto const b = split(p, 1000);
    host_grid grid(grid_band::whole(g), r);
    if (prefault > 0) { grid.prefault(prefault == 2); }
    for (auto const& batch : b.list) { (void)grid.add_batch(batch); }
    EXPECT_EQ(grid.total_count(), p.size());
    expect_same_extremes(grid.finalize_rows(0, g.rows, g.cols, r, -9999.0F), want);
  }
}

TEST(HostGrid, PagesAreMappedFirstWhereThePointsWillReachMostOfThem)
{
  // Two points a 512-word page or more: mapped first; fewer, or an unknown count: left to the points.
  EXPECT_TRUE(worth_prefaulting(1'000'000, 256'000'000));
  EXPECT_FALSE(worth_prefaulting(1'000'000, 256'000'000 + 256));
  EXPECT_TRUE(worth_prefaulting(100, 100));  // as many points as cells, as before
  EXPECT_TRUE(worth_prefaulting(1, 1));
  EXPECT_FALSE(worth_prefaulting(0, 1));
  EXPECT_FALSE(worth_prefaulting(0, 0));
  EXPECT_TRUE(worth_prefaulting(std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::uint64_t>::max()));
}

TEST(HostGrid, OrderedPartialsGiveTheReferenceMeanAndStddev)
{
  auto const p = walk_points(40000, 30.0, 11);
  auto const g = grid_of(p, 2.0);
  auto const r = all_metrics();
  auto const want = reference(g, p, r, default_nodata);
  for (std::size_t size : {std::size_t{1}, std::size_t{13}, std::size_t{4096}, p.size()}) {
    auto const b = split(p, size);
    host_grid grid(grid_band::whole(g), r);
    batch_partials partials;
    for (auto const& batch : b.list) {
      grid.reduce_batch(batch, partials);
      grid.merge(partials);
    }
    auto const got = grid.finalize_rows(0, g.rows, g.cols, r, default_nodata);
    expect_same_extremes(got, want);
    // Cells in one batch: bit for bit. Cells split over batches: the sum in another association
    // (1 ulp of the float mean at most) and m2 by Chan's merge (close, not identical).
    for (std::size_t c = 0; c < want.mean.size(); ++c) {
      if (want.count[c] == 0) {
        EXPECT_TRUE(std::isnan(got.mean[c]) && std::isnan(got.stddev[c])) << c;
        continue;
      }
      EXPECT_LE(ulp_distance(got.mean[c], want.mean[c]), size == p.size() ? 0U : 1U) << "cell " << c;
      if (size == p.size()) {
        EXPECT_EQ(got.stddev[c], want.stddev[c]) << "cell " << c;
      } else {
        EXPECT_NEAR(got.stddev[c], want.stddev[c], 1e-6 * std::max(1.0f, want.stddev[c])) << "cell " << c;
      }
    }
  }
}

TEST(HostGrid, BandsBinOnlyTheirRowsWithTheWholeGridsRule)
{
  auto const p = walk_points(30000, 25.0, 5);
  auto const g = grid_of(p, 1.0);
  metric_request r;
  r.range = r.count = true;
  auto const want = reference(g, p, r, default_nodata);
  auto const b = split(p, 777);
  std::uint32_t const rows_per = 7;
  for (std::uint32_t first = 0; first < g.rows; first += rows_per) {
    grid_band const band{g, first, std::min(rows_per, g.rows - first)};
    host_grid grid(band, r);
    std::uint64_t outside = 0;
    for (auto const& batch : b.list) { outside += grid.add_batch(batch).outside; }
    EXPECT_EQ(outside, 0U);  // points of other bands are not outside the grid
    auto const got = grid.finalize_rows(0, band.rows, g.cols, r, default_nodata);
    std::size_t const at = std::size_t{first} * g.cols;
    for (std::size_t c = 0; c < got.count.size(); ++c) {
      ASSERT_EQ(got.count[c], want.count[at + c]) << "band " << first << " cell " << c;
      ASSERT_EQ(ulp_distance(got.range[c], want.range[at + c]), 0U) << "band " << first << " cell " << c;
    }
  }
}

TEST(HostGrid, ScaledIntegersBinAsTheirCoordinates)
{
  // The same points as LAS integers and as the doubles LAS's rule makes of them.
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<std::int32_t> xy(0, 200000), z(-3000, 90000);
  std::size_t const n = 5000;
  std::vector<std::int32_t> ints(3 * n);
  std::vector<double> doubles(3 * n);
  scaled_coords t;
  t.scale[0] = t.scale[1] = 0.001;
  t.scale[2] = 0.01;
  t.offset[0] = 500000.0;
  t.offset[1] = 4100000.0;
  t.offset[2] = -10.0;
  for (std::size_t i = 0; i < n; ++i) {
    ints[i] = xy(rng);
    ints[n + i] = xy(rng);
    ints[2 * n + i] = z(rng);
    for (int a = 0; a < 3; ++a) {
      doubles[static_cast<std::size_t>(a) * n + i] = scaled_coords::apply(ints[static_cast<std::size_t>(a) * n + i], t.scale[a], t.offset[a]);
    }
  }
  point_batch bi;
  bi.data = ints.data();
  bi.capacity = bi.size = n;
  bi.encoding = coord_encoding::scaled_int32;
  bi.transform = t;
  point_batch bd;
  bd.data = doubles.data();
  bd.capacity = bd.size = n;
  bounds b;
  for (std::size_t i = 0; i < n; ++i) { b.extend(doubles[i], doubles[n + i]); }
  auto const g = grid_from_bounds(b, 7.0, 7.0);
  auto const r = all_metrics();
  host_grid from_ints(grid_band::whole(g), r), from_doubles(grid_band::whole(g), r);
  batch_partials pi, pd;
  from_ints.reduce_batch(bi, pi);
  from_ints.merge(pi);
  from_doubles.reduce_batch(bd, pd);
  from_doubles.merge(pd);
  auto const a = from_ints.finalize_rows(0, g.rows, g.cols, r, default_nodata);
  auto const d = from_doubles.finalize_rows(0, g.rows, g.cols, r, default_nodata);
  auto const diff = first_difference(a, d, r, 0);
  EXPECT_FALSE(diff.has_value()) << diff->describe();
}

TEST(HostGrid, MergeIntoAddsTheHostsCellsToAWindow)
{
  grid_spec g;
  g.y0 = 2.0;
  g.cols = 3;
  g.rows = 2;
  metric_request r;
  r.min = r.max = r.count = true;
  host_grid grid(grid_band::whole(g), r);
  std::vector<double> pts{0.5, 2.5, 0.5, 0.5, 1.5, 1.5, 3.0, 4.0, 1.0};  // x: 0.5 2.5 0.5; y: 0.5 1.5 1.5; z
  point_batch b;
  b.data = pts.data();
  b.capacity = b.size = 3;
  (void)grid.add_batch(b);
  // A window of the bottom row (cells 3-5) from elsewhere: cell 3 has z 2, cell 4 is empty.
  std::vector<std::uint64_t> lo{lo_key(2.0), 0, 0}, hi{hi_key(2.0), 0, 0};
  std::vector<std::uint32_t> count{1, 0, 0};
  accumulator_view const window{lo.data(), hi.data(), count.data(), nullptr, nullptr, 3};
  grid.merge_into(window, 3);
  // y = 0.5 is the bottom row (row 1): points (0.5, 0.5, z 3) -> cell 3, (2.5, 1.5) and (0.5, 1.5) -> row 0.
  EXPECT_EQ(count[0], 2U);
  EXPECT_EQ(min_of_lo_key(lo[0]), 2.0);
  EXPECT_EQ(max_of_hi_key(hi[0]), 3.0);
  EXPECT_EQ(count[1], 0U);
  EXPECT_EQ(grid.max_count(), 1U);
}

TEST(HostGrid, ExtremesAloneKeepNoCountsAndGiveTheSameCells)
{
  // A walk (runs of points in one cell) and the same points shuffled (every point its own run).
  auto walk = walk_points(50000, 40.0, 5);
  auto shuffled = walk;
  std::vector<std::size_t> order(walk.size());
  for (std::size_t i = 0; i < order.size(); ++i) { order[i] = i; }
  std::shuffle(order.begin(), order.end(), std::mt19937_64(9));
  for (std::size_t i = 0; i < order.size(); ++i) {
    shuffled.x[i] = walk.x[order[i]];
    shuffled.y[i] = walk.y[order[i]];
    shuffled.z[i] = walk.z[order[i]];
  }
  metric_request extremes;
  extremes.min = extremes.max = extremes.range = true;
  metric_request with_count = extremes;
  with_count.count = true;
  for (auto const* p : {&walk, &shuffled}) {
    auto const g = grid_of(*p, 0.7);  // many cells stay empty
    auto const want = reference(g, *p, with_count, -9999.0F);
    auto const b = split(*p, 777);
    host_grid grid(grid_band::whole(g), extremes);
    EXPECT_FALSE(grid.keeps_counts());
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < 4; ++t) {
      pool.emplace_back([&, t] {
        for (std::size_t k = t; k < b.list.size(); k += 4) { (void)grid.add_batch(b.list[k]); }
      });
    }
    for (auto& th : pool) { th.join(); }
    auto const got = grid.finalize_rows(0, g.rows, g.cols, with_count, -9999.0F);
    auto const d = first_difference(got, want, extremes, 0);
    EXPECT_FALSE(d.has_value()) << d->describe();
    // Counts are 1 exactly where the reference's are not 0.
    ASSERT_EQ(got.count.size(), want.count.size());
    std::size_t mismatched = 0, empty = 0;
    for (std::size_t i = 0; i < want.count.size(); ++i) {
      mismatched += got.count[i] != (want.count[i] != 0 ? 1U : 0U);
      empty += want.count[i] == 0;
    }
    EXPECT_EQ(mismatched, 0U);
    EXPECT_GT(empty, 0U);
    EXPECT_THROW((void)grid.total_count(), error);
    EXPECT_THROW((void)grid.max_count(), error);
    // Merged into an empty window (the GPU's side of a cooperative job that binned nothing there):
    // the same extremes, and a count of 1 where the cell holds points.
    std::size_t const cells = g.num_cells();
    std::vector<std::uint64_t> lo(cells), hi(cells);
    std::vector<std::uint32_t> count(cells);
    accumulator_view const window{lo.data(), hi.data(), count.data(), nullptr, nullptr, cells};
    grid.merge_into(window, 0);
    auto const merged = finalize_window(window, 0, g.cols, g.rows, g.cols, with_count, -9999.0F);
    auto const m = first_difference(merged, got, with_count, 0);
    EXPECT_FALSE(m.has_value()) << m->describe();
  }
}

TEST(HostGrid, AtomicBinningRefusesAGridWithSums)
{
  grid_spec g;
  g.cols = g.rows = 1;
  metric_request r;
  r.mean = true;
  host_grid grid(grid_band::whole(g), r);
  point_batch b;
  EXPECT_THROW((void)grid.add_batch(b), error);
}

/// Integer batches of `n` random points over ~30 x 30 m in cells of 1 m, each batch with one of
/// `transforms` (rotating), plus the same points as doubles.
struct int_batches {
  std::vector<std::vector<std::int32_t>> memory;
  std::vector<point_batch> list;
  point_chunk as_doubles;
};

int_batches int_points(std::vector<scaled_coords> const& transforms, std::size_t batches, std::size_t per_batch,
                       std::uint64_t seed)
{
  std::mt19937_64 rng(seed);
  int_batches out;
  for (std::size_t k = 0; k < batches; ++k) {
    scaled_coords const& t = transforms[k % transforms.size()];
    out.memory.emplace_back(3 * per_batch);
    auto& m = out.memory.back();
    point_batch b;
    b.data = m.data();
    b.capacity = b.size = per_batch;
    b.encoding = coord_encoding::scaled_int32;
    b.transform = t;
    for (std::size_t i = 0; i < per_batch; ++i) {
      // x, y: 0..30 m whatever the transform; z: the whole int32 range now and then (its edges too).
      double const x = std::uniform_real_distribution<double>(0.0, 30.0)(rng);
      double const y = std::uniform_real_distribution<double>(0.0, 30.0)(rng);
      m[i] = static_cast<std::int32_t>(std::floor((x - t.offset[0]) / t.scale[0]));
      m[per_batch + i] = static_cast<std::int32_t>(std::floor((y - t.offset[1]) / t.scale[1]));
      std::uint64_t const pick = rng() % 100;
      std::int32_t z = static_cast<std::int32_t>(rng() % 200001) - 100000;
      if (pick == 0) { z = std::numeric_limits<std::int32_t>::min(); }
      if (pick == 1) { z = std::numeric_limits<std::int32_t>::max(); }
      if (pick == 2) { z = 0; }
      m[2 * per_batch + i] = z;
      out.as_doubles.x.push_back(b.x_at(i));
      out.as_doubles.y.push_back(b.y_at(i));
      out.as_doubles.z.push_back(b.z_at(i));
    }
    out.list.push_back(b);
  }
  return out;
}

TEST(HostGrid, IntegerZOfOneRuleGivesTheCellsOfTheDoublesWhateverTheOtherBatches)
{
  scaled_coords a;
  a.scale[0] = a.scale[1] = 0.01;
  a.scale[2] = 0.001;
  a.offset[2] = 1234.5;
  scaled_coords b = a;  // another z offset: its batches go to the pairs
  b.offset[2] = -17.25;
  scaled_coords negative = a;  // a falling rule: never the words'
  negative.scale[2] = -0.001;
  scaled_coords tiny = a;  // z rounds to a few values: ties between integers
  tiny.scale[2] = 1e-300;
  tiny.offset[2] = 5.0;
  metric_request extremes;
  extremes.min = extremes.max = extremes.range = true;
  metric_request with_count = extremes;
  with_count.count = true;
  for (auto const& rules : std::vector<std::vector<scaled_coords>>{{a}, {a, b}, {b, a, negative}, {tiny}, {negative}}) {
    auto const p = int_points(rules, 24, 997, rules.size() * 31 + 7);
    auto const g = grid_of(p.as_doubles, 1.0);
    host_grid grid(grid_band::whole(g), extremes);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < 4; ++t) {
      pool.emplace_back([&, t] {
        for (std::size_t k = t; k < p.list.size(); k += 4) { (void)grid.add_batch(p.list[k]); }
      });
    }
    for (auto& th : pool) { th.join(); }
    // A batch of doubles too, into the same grid: its cells join the integers'.
    auto const extra = walk_points(3000, 30.0, 3);
    auto const doubles = split(extra, 1000);
    for (auto const& batch : doubles.list) { (void)grid.add_batch(batch); }
    point_chunk all = p.as_doubles;
    for (std::size_t i = 0; i < extra.size(); ++i) {
      if (extra.x[i] >= g.x0 && extra.x[i] < g.x0 + g.cols * g.xres && extra.y[i] <= g.y0 && extra.y[i] > g.y0 - g.rows * g.yres) {
        all.x.push_back(extra.x[i]);
        all.y.push_back(extra.y[i]);
        all.z.push_back(extra.z[i]);
      }
    }
    auto const want_all = reference(g, all, with_count, -9999.0F);
    window_counts counted;
    auto const got = grid.finalize_rows(0, g.rows, g.cols, extremes, -9999.0F, &counted);
    auto const d = first_difference(got, want_all, extremes, 0);
    EXPECT_FALSE(d.has_value()) << rules.size() << " rules: " << d->describe();
    std::uint64_t non_empty = 0;
    for (auto const c : want_all.count) { non_empty += c != 0; }
    EXPECT_EQ(counted.non_empty, non_empty);
    EXPECT_EQ(counted.total, non_empty);

    // Merged into another side's window (a cooperative job: the GPU binned other points with
    // counts): the extremes of both, a count wherever either side holds points.
    auto const more = walk_points(2000, 30.0, 11);
    host_grid other(grid_band::whole(g), with_count);
    point_chunk kept;
    for (std::size_t i = 0; i < more.size(); ++i) {
      if (more.x[i] >= g.x0 && more.x[i] < g.x0 + g.cols * g.xres && more.y[i] <= g.y0 && more.y[i] > g.y0 - g.rows * g.yres) {
        kept.x.push_back(more.x[i]);
        kept.y.push_back(more.y[i]);
        kept.z.push_back(more.z[i]);
        all.x.push_back(more.x[i]);
        all.y.push_back(more.y[i]);
        all.z.push_back(more.z[i]);
      }
    }
    auto const kept_batches = split(kept, 500);
    for (auto const& batch : kept_batches.list) { (void)other.add_batch(batch); }
    std::size_t const cells = g.num_cells();
    std::vector<std::uint64_t> lo(cells), hi(cells);
    std::vector<std::uint32_t> count(cells);
    for (std::size_t c = 0; c < cells; ++c) {
      lo[c] = other.view().lo_of(c);
      hi[c] = other.view().hi_of(c);
      count[c] = other.view().count[c];
    }
    accumulator_view const window{lo.data(), hi.data(), count.data(), nullptr, nullptr, cells};
    grid.merge_into(window, 0);
    auto const want_both = reference(g, all, with_count, -9999.0F);
    auto const merged = finalize_window(window, 0, g.cols, g.rows, g.cols, extremes, -9999.0F);
    auto const m = first_difference(merged, want_both, extremes, 0);
    EXPECT_FALSE(m.has_value()) << rules.size() << " rules, merged: " << m->describe();
    for (std::size_t c = 0; c < cells; ++c) { ASSERT_EQ(count[c] != 0, want_both.count[c] != 0) << "cell " << c; }
  }
}

}  // namespace
}  // namespace heightgrid
