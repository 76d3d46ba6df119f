// The whole device pipeline (grid_points_gpu, device_csr::from_points) against the CPU pipeline
// (compute_cell_ids + bin_points_cpu + reduce_cells_cpu), for every reduce mode and CSR method.

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/grid_gpu.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"
#include "kernels_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace heightgrid {
namespace {

using test::all_metrics;
using test::same_results;

/// Random points over `box` (which may reach beyond the grid) plus, when `with_edges`, a point on
/// every grid-line intersection of `grid` (its right and bottom edges included: those are outside).
point_chunk make_points(grid_spec const& grid, bounds const& box, std::size_t n, std::uint64_t seed,
                        bool with_edges)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> x(box.xmin, box.xmax);
  std::uniform_real_distribution<double> y(box.ymin, box.ymax);
  std::uniform_real_distribution<double> z(150.0, 320.0);
  point_chunk p;
  auto const add = [&](double px, double py) {
    p.x.push_back(px);
    p.y.push_back(py);
    p.z.push_back(z(rng));
  };
  for (std::size_t i = 0; i < n; ++i) { add(x(rng), y(rng)); }
  if (with_edges) {
    for (std::uint32_t r = 0; r <= grid.rows; ++r) {
      for (std::uint32_t c = 0; c <= grid.cols; ++c) {
        add(grid.x0 + static_cast<double>(c) * grid.xres, grid.y0 - static_cast<double>(r) * grid.yres);
      }
    }
  }
  return p;
}

struct cpu_pipeline {
  csr_grid csr;
  binning_stats stats;
  cell_results results;
};

cpu_pipeline grid_points_cpu(grid_spec const& grid, point_chunk const& points, metric_request const& request,
                             float nodata)
{
  cpu_pipeline out;
  out.csr = bin_points_cpu(grid, points, out.stats);
  out.results = reduce_cells_cpu(out.csr, request, nodata);
  return out;
}

using pipeline_param = std::tuple<reduce_mode, csr_method>;

class GridPointsGpu : public ::testing::TestWithParam<pipeline_param> {
 protected:
  void SetUp() override { HG_SKIP_WITHOUT_GPU(); }
  static reduce_mode mode() { return std::get<0>(GetParam()); }
  static csr_method method() { return std::get<1>(GetParam()); }

  /// Every band the mode can produce (atomic: range, min, max, count).
  static metric_request request() { return test::all_metrics_of(mode()); }

  /// grid_points_gpu against the CPU pipeline: stats equal, bands as same_results.
  static void check(grid_spec const& grid, point_chunk const& points, float nodata = default_nodata)
  {
    auto const request = GridPointsGpu::request();
    auto const cpu = grid_points_cpu(grid, points, request, nodata);
    auto const gpu = grid_points_gpu(grid, points, request, nodata, mode(), method(), nullptr);
    EXPECT_EQ(gpu.stats.points_in, cpu.stats.points_in);
    EXPECT_EQ(gpu.stats.points_binned, cpu.stats.points_binned);
    EXPECT_EQ(gpu.stats.points_outside, cpu.stats.points_outside);
    EXPECT_EQ(gpu.csr_method, mode_reduces_csr(mode()) ? csr_method_name(method()) : "none");
    EXPECT_TRUE(same_results(gpu.results, cpu.results, request, grid.num_cells()))
      << grid.cols << "x" << grid.rows << " cells, " << points.size() << " points";
  }
};

TEST_P(GridPointsGpu, RandomPointsAndCellEdges)
{
  grid_spec grid;
  grid.x0 = 1000.0;
  grid.y0 = 2000.0;
  grid.xres = 1.0;
  grid.yres = 1.0;
  grid.cols = 97;
  grid.rows = 61;
  bounds box;  // reaching 3 cells beyond the grid on every side
  box.extend(grid.x0 - 3.0, grid.y0 - grid.rows - 3.0);
  box.extend(grid.x0 + grid.cols + 3.0, grid.y0 + 3.0);
  auto points = make_points(grid, box, 200000, 43, true);
  // Non-finite coordinates fall in no cell on every backend.
  for (double const bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    points.x.push_back(bad);
    points.y.push_back(grid.y0 - 1.5);
    points.z.push_back(200.0);
    points.x.push_back(grid.x0 + 1.5);
    points.y.push_back(-bad);
    points.z.push_back(200.0);
  }
  check(grid, points);
  check(grid, points, -9999.0F);
  // PDAL's edge rule (--edge-rule pdal) reaches the device through the grid: points exactly on a
  // horizontal edge go to the cell above, on the device as on the host.
  grid.edge = edge_rule::pdal;
  check(grid, points);
}

// Real-world coordinates: UTM metres around (636001.76, 4849497.9) at 0.5 m, where x - x0 loses
// low bits; cell ids must still be bit-identical to the CPU's.
TEST_P(GridPointsGpu, LargeUtmCoordinates)
{
  bounds box;
  box.extend(636001.76, 4849497.9);
  box.extend(636001.76 + 400.0, 4849497.9 + 300.0);
  auto const grid = grid_from_bounds(box, 0.5, 0.5);
  auto const points = make_points(grid, box, 1000000, 47, true);
  check(grid, points);
}

TEST_P(GridPointsGpu, PointsOutsideAnExplicitExtentAreDroppedAndCounted)
{
  bounds box;
  box.extend(500000.0, 4000000.0);
  box.extend(500100.0, 4000100.0);
  auto const grid = grid_from_extent(500025.0, 4000025.0, 500075.0, 4000060.0, 0.25, 0.5);
  auto const points = make_points(grid, box, 300000, 53, true);
  auto const gpu = grid_points_gpu(grid, points, request(), default_nodata, mode(), method(), nullptr);
  EXPECT_GT(gpu.stats.points_outside, 0U);
  EXPECT_EQ(gpu.stats.points_binned + gpu.stats.points_outside, points.size());
  check(grid, points);
}

TEST_P(GridPointsGpu, NoPoints)
{
  grid_spec grid;
  grid.cols = 5;
  grid.rows = 3;
  check(grid, point_chunk{});
  check(grid, point_chunk{}, -9999.0F);
}

TEST_P(GridPointsGpu, GridWithoutCells)
{
  grid_spec grid;  // 0 x 0 cells: every point is outside
  point_chunk points;
  points.x = {0.5, 1.5};
  points.y = {0.5, -0.5};
  points.z = {1.0, 2.0};
  check(grid, points);
}

TEST_P(GridPointsGpu, DeviceCsrIsTheCpuCsr)
{
  grid_spec grid;
  grid.x0 = -50.0;
  grid.y0 = 50.0;
  grid.xres = 2.0;
  grid.yres = 2.5;
  grid.cols = 50;
  grid.rows = 40;
  bounds box;
  box.extend(-60.0, -60.0);
  box.extend(60.0, 60.0);
  auto const points = make_points(grid, box, 100000, 59, true);
  binning_stats cpu_stats;
  auto const cpu = bin_points_cpu(grid, points, cpu_stats);

  binning_stats stats;
  gpu_phase_times times;
  auto const device = device_csr::from_points(grid, points, method(), stats, times, nullptr);
  EXPECT_EQ(device.num_cells(), grid.num_cells());
  EXPECT_EQ(device.num_points(), cpu.z.size());
  EXPECT_EQ(stats.points_outside, cpu_stats.points_outside);
  EXPECT_GE(times.h2d_ms, 0.0);
  EXPECT_GE(times.cell_ids_ms, 0.0);
  EXPECT_GE(times.csr_ms, 0.0);
  auto back = device.to_host(nullptr);
  ASSERT_EQ(back.offsets, cpu.offsets);
  std::uint64_t most = 0;
  for (std::size_t c = 0; c + 1 < cpu.offsets.size(); ++c) {
    most = std::max<std::uint64_t>(most, cpu.offsets[c + 1] - cpu.offsets[c]);
  }
  EXPECT_EQ(device.max_cell_points(), most);
  EXPECT_EQ(device.view().max_cell_points, most);
  EXPECT_EQ(device_csr::from_host(cpu, nullptr).max_cell_points(), most);
  EXPECT_EQ(back.z, cpu.z) << "the stable sort keeps the CPU's order within each cell";
}

TEST_P(GridPointsGpu, PhaseTimesAreConsistent)
{
  grid_spec grid;
  grid.cols = 300;
  grid.rows = 200;
  bounds box;
  box.extend(0.0, -200.0);
  box.extend(300.0, 0.0);
  auto const points = make_points(grid, box, 500000, 61, false);
  auto const r = grid_points_gpu(grid, points, request(), default_nodata, mode(), method(), nullptr);
  auto const& t = r.times;
  for (double const ms : {t.h2d_ms, t.cell_ids_ms, t.csr_ms, t.reduce_ms, t.d2h_ms}) {
    EXPECT_GE(ms, 0.0);
    EXPECT_LE(ms, t.total_ms * 1.001 + 0.01);
  }
}

INSTANTIATE_TEST_SUITE_P(AllModesAndMethods, GridPointsGpu,
                         ::testing::Combine(::testing::ValuesIn(all_modes()), ::testing::ValuesIn(all_csr_methods())),
                         [](::testing::TestParamInfo<pipeline_param> const& info) {
                           return std::string(mode_name(std::get<0>(info.param))) + "_" +
                                  std::string(csr_method_name(std::get<1>(info.param)));
                         });

// The overload without a method uses default_csr_method.
TEST(GridPointsGpuDefaults, DefaultCsrMethod)
{
  HG_SKIP_WITHOUT_GPU();
  grid_spec grid;
  grid.cols = 4;
  grid.rows = 4;
  point_chunk points;
  points.x = {0.5, 3.5, 3.5};
  points.y = {-0.5, -3.5, -3.5};
  points.z = {1.0, 2.0, 4.0};
  auto const r = grid_points_gpu(grid, points, all_metrics(), default_nodata, reduce_mode::warp, nullptr);
  EXPECT_EQ(r.csr_method, csr_method_name(default_csr_method));
  ASSERT_EQ(r.results.count.size(), 16U);
  EXPECT_EQ(r.results.count[0], 1U);
  EXPECT_EQ(r.results.count[15], 2U);
  EXPECT_EQ(r.results.range[15], 2.0F);
  EXPECT_EQ(r.results.mean[15], 3.0F);
}

}  // namespace
}  // namespace heightgrid
