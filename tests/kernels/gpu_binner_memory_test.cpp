// gpu_binner::reserve_kept_points where another holder has taken the device's memory (a process
// next to it): the growth of the kept points' store fails with device_memory_error and leaves the
// binner as it was, so that the stage can wait and try again (gpu_stage::within_memory); once the
// memory is free the same call succeeds and the band's percentiles are those of every point
// submitted. Skips without a GPU. (Built only with CUDA: the holder is this test's cudaMalloc.)

#include "device_hold.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_batch.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace heightgrid {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

using test::device_hold;

TEST(GpuBinnerMemory, KeptPointsWaitForMemoryOthersHoldWithTheStoreAsItWas)
{
  std::string why;
  if (!gpu_available(&why)) { GTEST_SKIP() << why; }
  grid_spec g;
  g.xres = g.yres = 1.0;
  g.cols = g.rows = 10;
  g.y0 = 10.0;
  std::size_t const n = std::size_t{1} << 20;  // a batch: 12 MiB of kept points
  gpu_binner_options o;
  o.batch_points = n;
  o.request = metric_request::from(parse_metric_list("count,p50"));
  o.order_capacity = 8 * n;
  gpu_binner b(grid_band{g, 0, g.rows}, o);

  std::vector<double> memory(batch_bytes(n) / sizeof(double));
  point_batch batch;
  batch.data = memory.data();
  batch.capacity = n;
  batch.size = n;
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<std::size_t> cell(0, g.cols * g.rows - 1);
  std::uniform_real_distribution<double> inside(0.05, 0.95);  // no point near a cell's edge
  std::uniform_int_distribution<int> z(-5000, 5000);
  std::vector<std::vector<double>> cells(g.cols * g.rows);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t const c = cell(rng);
    batch.x()[i] = static_cast<double>(c % g.cols) + inside(rng);
    batch.y()[i] = g.y0 - static_cast<double>(c / g.cols) - inside(rng);
    batch.z()[i] = z(rng) * 0.01;
    cells[c].push_back(batch.z()[i]);
  }

  b.reserve_kept_points(n);
  b.submit(batch, {});
  b.synchronize();
  {
    // The store must double to take the next batch: 24 MiB more than the 4 MiB left.
    device_hold hold(4 * mib);
    EXPECT_THROW(b.reserve_kept_points(n), device_memory_error);
    EXPECT_THROW(b.reserve_kept_points(n), device_memory_error) << "a second attempt fails the same way";
  }
  b.reserve_kept_points(n);  // the memory came free
  b.submit(batch, {});
  b.synchronize();
  EXPECT_EQ(b.points_binned(), 2 * n);

  cell_results const r = b.finalize_rows(0, g.rows, g.cols, o.request, default_nodata, 0);
  ASSERT_EQ(r.percentile.size(), 1U);
  for (std::size_t c = 0; c < cells.size(); ++c) {
    std::vector<double> v = cells[c];
    v.insert(v.end(), cells[c].begin(), cells[c].end());  // every point submitted twice
    std::sort(v.begin(), v.end());
    ASSERT_EQ(r.count[c], v.size()) << "cell " << c;
    ASSERT_EQ(r.percentile[0][c], static_cast<float>(percentile_of_sorted(v, v.size(), 50.0))) << "cell " << c;
  }
}

}  // namespace
}  // namespace heightgrid
