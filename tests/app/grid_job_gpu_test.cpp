// The GPU routes of a whole grid job against the CPU route on the same sources (only when a GPU is
// present): gpu and auto (batches shared between the CPU and the GPU), and every batch reduction
// and reduce mode, with and without bands of rows on the device.

#include "pipeline_fixtures.hpp"
#include "test_grids.hpp"

#include "pipeline/gpu_stage.hpp"
#include "pipeline/grid_job.hpp"

#include "heightgrid/core/metrics.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace heightgrid::app {
namespace {

using pipeline_fixtures::expect_bands;
using pipeline_fixtures::extremes;
using pipeline_fixtures::fake_source;
using pipeline_fixtures::held_start;
using pipeline_fixtures::job_options;
using pipeline_fixtures::memory_output;
using pipeline_fixtures::sources_of;
using pipeline_fixtures::three_clouds;

TEST(GridJob, GpuRoutesEqualTheCpu)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the GPU routes are checked on the GPU machine"; }
  metric_request sums = extremes();
  sums.mean = sums.stddev = true;
  std::uint64_t shared_gpu_batches = 0;
  std::uint64_t cooperative_gpu_batches = 0;
  for (auto const& r : {extremes(), sums}) {
    for (auto device : {device_choice::gpu, device_choice::automatic}) {
      for (std::size_t part : {std::size_t{1}, std::size_t{999}}) {
        auto const c = three_clouds(part, true);
        std::vector<fake_source*> raw;
        auto const sources = sources_of(c, &raw);
        // Counts unknown (as for text inputs): auto shares the batches between the CPU and the GPU.
        if (device == device_choice::automatic) {
          for (auto* f : raw) { f->forget_count(); }
        }
        auto o = job_options(r, 1.0, device_choice::cpu, 4);
        memory_output cpu;
        (void)run_grid_job(sources, o, cpu);
        o.device = device;
        memory_output gpu;
        // A stage started before the job, so that CUDA is up and the cooperative route (auto) really
        // splits the batches between the CPU and the GPU.
        auto stage = std::make_unique<gpu_stage>(1000, 16);
        ASSERT_TRUE(stage->wait_started().has_value()) << stage->failure();
        auto const report = run_grid_job(sources, o, gpu, std::move(stage));
        if (r.mean) {
          EXPECT_EQ(report.route, "GPU");
          EXPECT_GT(report.gpu_batches, 0U);
        } else if (device == device_choice::gpu) {
          // Cooperative: CUDA is up, but the binner is made once the job says what it bins, and
          // the CPU bins meanwhile: on the 999-point parts (a few dozen batches) the CPU may
          // finish first (seen on an H200 host in 3 of 8 runs), so the GPU's share is checked
          // over both part sizes.
          EXPECT_TRUE(report.route == "CPU + GPU" || report.route == "GPU" || report.route == "CPU") << report.route;
          cooperative_gpu_batches += report.gpu_batches;
          shared_gpu_batches += report.gpu_batches;
        } else {
          // Shared: the GPU takes batches once its accumulators and ring are set up, which the CPU
          // may outrun on a small job; with 1-point parts (40,000 batches) it must get some.
          EXPECT_TRUE(report.route == "CPU + GPU" || report.route == "CPU") << report.route;
          shared_gpu_batches += report.gpu_batches;
        }
        expect_bands(gpu.bands, cpu.bands, r, 0);
      }
    }
  }
  EXPECT_GT(shared_gpu_batches, 0U) << "the shared route never used the GPU";
  EXPECT_GT(cooperative_gpu_batches, 0U) << "--device gpu never binned a batch on the GPU";
}

TEST(GpuStage, AsksItsDriverElsewhereOnlyWhereTheJobSaysSo)
{
  // A stage made with a finder (the CLI's: the helper process) waits for the job to say where the
  // driver's question goes: the finder where the CPU may bin every point (decide true, or a job that
  // needs no binner), CUDA in this process where the GPU is needed (decide false, or a wait for
  // CUDA's start). The first decision holds. Runs without a GPU: the stand-in always answers no.
  enum class how { decided_elsewhere, decided_here, waits_for_cuda, needs_no_binner };
  for (auto const h : {how::decided_elsewhere, how::decided_here, how::waits_for_cuda, how::needs_no_binner}) {
    auto const asked = std::make_shared<std::atomic<int>>(0);
    gpu_stage stage(1000, 4, -1, {}, [asked](std::string* reason) {
      ++*asked;
      *reason = "the stand-in's answer";
      return false;
    });
    switch (h) {
      case how::decided_elsewhere: stage.decide_driver_question(true); break;
      case how::decided_here: stage.decide_driver_question(false); break;
      case how::waits_for_cuda: (void)stage.wait_started(); break;
      case how::needs_no_binner: stage.skip_binner(); break;
    }
    stage.decide_driver_question(h != how::decided_elsewhere && h != how::needs_no_binner);  // changes nothing
    bool const elsewhere = h == how::decided_elsewhere || h == how::needs_no_binner;
    // Settled (the stand-in's no) or found by CUDA here; a stage CUDA started waits for configure().
    bool const found = stage.wait_found();
    EXPECT_EQ(asked->load(), elsewhere ? 1 : 0) << static_cast<int>(h);
    EXPECT_EQ(stage.driver_asked_elsewhere(), elsewhere) << static_cast<int>(h);
    if (elsewhere) {
      EXPECT_FALSE(found);
      EXPECT_EQ(stage.failure(), "the stand-in's answer");
    } else {
      // CUDA's own answer: a GPU where there is one, else the driver's reason.
      EXPECT_EQ(found, gpu_available()) << stage.failure();
      if (!found) { EXPECT_NE(stage.failure(), "the stand-in's answer"); }
    }
  }
}

TEST(GpuStage, AJobThatNeedsNoBinnerGetsNoneAndNoContextBeforeTheDriverIsUp)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the stage's start is checked on the GPU machine"; }
  grid_spec const g = test::unit_square_grid(10);
  gpu_binner_options o;
  o.batch_points = 1000;
  o.request = extremes();
  enum class when { before_the_driver, after_the_context, never };
  for (auto const skip : {when::before_the_driver, when::after_the_context, when::never}) {
    // The start held until the job has said what it needs: the CPU binned every point before the
    // driver was up (no context made: the driver's answer is all --device gpu waits for), or once
    // CUDA had started (no binner made), or the GPU is to bin (a binner made, the stage ready).
    held_start held;
    gpu_stage stage(1000, 4, -1, held.hook());
    if (skip == when::before_the_driver) {
      stage.configure(grid_band{g, 0, g.rows}, o);
      stage.skip_binner();
    }
    held.release();
    EXPECT_TRUE(stage.wait_found()) << stage.failure();
    EXPECT_EQ(stage.wait_started().has_value(), skip != when::before_the_driver) << stage.failure();
    if (skip == when::after_the_context) { stage.skip_binner(); }
    if (skip != when::before_the_driver) { stage.configure(grid_band{g, 0, g.rows}, o); }
    std::atomic<bool> const never{false};
    EXPECT_EQ(stage.wait_ready(never), skip == when::never);
    EXPECT_EQ(stage.binner_skipped(), skip != when::never);
    EXPECT_EQ(stage.context_skipped(), skip == when::before_the_driver);
    EXPECT_EQ(stage.current(), skip != when::never ? gpu_stage::state::failed : gpu_stage::state::ready);
  }
}

TEST(GpuStage, MakesNoContextForAPassTheCpuWillHaveReadBeforeItIsReady)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the stage's start is checked on the GPU machine"; }
  grid_spec const g = test::unit_square_grid(10);
  gpu_binner_options o;
  o.batch_points = 1000;
  o.request = extremes();
  for (bool const cpu_nearly_done : {true, false}) {
    // The CPU's pass when the driver is up: 999,999 of 10^6 records read (the rest in microseconds
    // at that rate: no context), or 1 of 10^12 (hours left: the context and the binner are made).
    held_start held;
    gpu_stage stage(1000, 4, -1, held.hook());
    auto const read = std::make_shared<std::atomic<std::uint64_t>>(cpu_nearly_done ? 999'999 : 1);
    stage.follow_cpu_pass(read, cpu_nearly_done ? 1'000'000 : 1'000'000'000'000);
    stage.configure(grid_band{g, 0, g.rows}, o);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the pass's rate: some time has passed
    held.release();
    EXPECT_TRUE(stage.wait_found()) << stage.failure();
    std::atomic<bool> const never{false};
    EXPECT_EQ(stage.wait_ready(never), !cpu_nearly_done) << stage.failure();
    EXPECT_EQ(stage.context_skipped(), cpu_nearly_done);
    EXPECT_EQ(stage.wait_started().has_value(), !cpu_nearly_done);
  }
}

TEST(GridJob, AJobTheCpuFinishedMakesNoContextOnItsOwnStage)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the stage's start is checked on the GPU machine"; }
  // --device gpu, CUDA's start held until after the readers: the CPU bins every point. On a stage
  // of its own (the CLI's) the job then only learns that the driver found the GPU, and no context
  // (nor binner) is made; on a stage kept for later jobs (tiles) the binner is made as before.
  for (bool const private_stage : {true, false}) {
    auto const c = three_clouds(999, true);
    auto const sources = sources_of(c);
    auto o = job_options(extremes(), 1.0, device_choice::cpu, 4);
    memory_output cpu;
    (void)run_grid_job(sources, o, cpu);
    o.device = device_choice::gpu;
    o.gpu_stage_private = private_stage;
    held_start held;
    auto stage = std::make_shared<gpu_stage>(1000, 8, -1, held.hook());
    held.release_after(500);
    memory_output gpu;
    grid_job_report report;
    ASSERT_NO_THROW(report = run_grid_job(sources, o, gpu, stage));
    EXPECT_EQ(report.route, "CPU");
    expect_bands(gpu.bands, cpu.bands, o.request, 0);
    EXPECT_TRUE(stage->wait_found());
    EXPECT_EQ(stage->wait_started().has_value(), !private_stage);
    std::atomic<bool> const never{false};
    EXPECT_EQ(stage->wait_ready(never), !private_stage);
    EXPECT_EQ(stage->binner_skipped(), private_stage);
    EXPECT_EQ(stage->context_skipped(), private_stage);
    if (private_stage) { EXPECT_NE(report.gpu_note.find("no context made"), std::string::npos) << report.gpu_note; }
  }
}

TEST(GridJob, TheCliJobReleasesTheDeviceBesideItsLastWrites)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the device's early release is checked on the GPU machine"; }
  // Every batch on the GPU, windows of 64 cells (several, so that writes follow the release). With
  // release_device_when_done (the CLI's) the binner is freed and the device reset once the last
  // window is downloaded: the same bands, the device's times kept; and a stage made afterwards in
  // the same process (CUDA starting again after the reset) grids the same once more.
  auto const c = three_clouds(999, true);
  auto const sources = sources_of(c);
  metric_request ordered = extremes();  // sums and kept points on the device too
  ordered.mean = ordered.stddev = true;
  ordered.percentiles = {50.0, 95.0};
  for (auto const& request : {extremes(), ordered}) {
    auto o = job_options(request, 1.0, device_choice::cpu, 4);
    memory_output cpu;
    (void)run_grid_job(sources, o, cpu);
    o.device = device_choice::gpu;
    o.cpu_while_gpu_starts = false;
    o.gpu_stage_private = true;
    o.device_window_cells = 64;
    for (bool const release : {true, false, true}) {
      SCOPED_TRACE(release ? "released early" : "kept to the end");
      o.release_device_when_done = release;
      memory_output gpu;
      grid_job_report report;
      ASSERT_NO_THROW(report = run_grid_job(sources, o, gpu, std::make_shared<gpu_stage>(1000, 8)));
      EXPECT_EQ(report.route, "GPU");
      EXPECT_EQ(report.device_released_early, release);
      EXPECT_GT(report.gpu.batches, 0U);
      EXPECT_GT(report.gpu.finalize_ms, 0.0);
      expect_bands(gpu.bands, cpu.bands, o.request, 0);
    }
  }
}

TEST(GridJob, ReadersReadAheadWhileTheGpuStarts)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: reading ahead of the GPU is checked on the GPU machine"; }
  // 41 parts of at most 999 points, all read while the start is held for 300 ms; and 40,000 parts of
  // one point with the start released after 20 ms, so that the GPU comes up while workers still hold
  // plain buffers and every ring slot is parked (they must upload the parked slots to get one).
  struct variant {
    std::size_t part;
    int hold_ms;
  };
  for (auto const v : {variant{999, 300}, variant{1, 20}}) {
    auto const c = three_clouds(v.part, true);
    auto const sources = sources_of(c);
    auto o = job_options(extremes(), 1.0, device_choice::cpu, 4);
    memory_output cpu;
    (void)run_grid_job(sources, o, cpu);
    o.device = device_choice::gpu;
    o.cpu_while_gpu_starts = false;  // every batch for the GPU: read ahead and parked
    held_start held;
    // 4 ring slots: the other parts can only be read ahead into plain buffers.
    auto stage = std::make_shared<gpu_stage>(std::max<std::size_t>(v.part, 1), 4, -1, held.hook());
    held.release_after(v.hold_ms);
    memory_output gpu;
    grid_job_report report;
    EXPECT_NO_THROW(report = run_grid_job(sources, o, gpu, stage));
    EXPECT_EQ(report.route, "GPU");
    EXPECT_GT(report.read_ahead_batches, 4U) << v.part;
    if (v.part == 999) {
      // Every part was read while the start was held, parked, and uploaded once the GPU was up.
      EXPECT_EQ(report.read_ahead_batches, report.gpu_batches);
    }
    EXPECT_EQ(report.cpu_batches, 0U);
    expect_bands(gpu.bands, cpu.bands, o.request, 0);
  }
}

TEST(GridJob, TheCpuBinsWhileTheGpuStartsAndTheGridsMerge)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the cooperative route is checked on the GPU machine"; }
  // --device gpu, range/min/max with and without counts: the start is held while the first parts
  // are binned on the CPU, then released; the GPU takes the parts read after it is up (40,000 parts
  // of one point, so some are left). The merged grid is the CPU route's, cell for cell; with the
  // start held past the end of the job the CPU bins everything and the job still waits to confirm
  // the GPU (route "CPU").
  metric_request with_count = extremes();
  metric_request without_count = extremes();
  without_count.count = false;
  for (auto const& r : {with_count, without_count}) {
    for (bool const up_during_job : {true, false}) {
      auto const c = three_clouds(1, true);
      auto const sources = sources_of(c);
      auto o = job_options(r, 1.0, device_choice::cpu, 4);
      memory_output cpu;
      (void)run_grid_job(sources, o, cpu);
      o.device = device_choice::gpu;
      held_start held;
      auto stage = std::make_shared<gpu_stage>(1000, 8, -1, held.hook());
      held.release_after(up_during_job ? 5 : 2000);  // 2 s: after the readers; the job then waits for it
      memory_output gpu;
      grid_job_report report;
      auto const t0 = std::chrono::steady_clock::now();
      ASSERT_NO_THROW(report = run_grid_job(sources, o, gpu, stage));
      double const job_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_GT(report.cpu_batches, 0U) << "the CPU binned nothing while the GPU started";
      if (up_during_job) {
        EXPECT_EQ(report.route, "CPU + GPU");
        EXPECT_GT(report.gpu_batches, 0U);
      } else {
        EXPECT_EQ(report.route, "CPU");
        EXPECT_EQ(report.gpu_batches, 0U);
        EXPECT_GE(job_s, 1.9) << "the job did not wait for CUDA's start to confirm the GPU";
        EXPECT_TRUE(stage->wait_started().has_value());
      }
      EXPECT_EQ(report.binned, 40000U);
      expect_bands(gpu.bands, cpu.bands, r, 0);
      EXPECT_TRUE(gpu.committed);
    }
  }
}

TEST(GridJob, EveryGpuBatchReductionAndModeEqualsTheCpu)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: the GPU reductions are checked on the GPU machine"; }
  metric_request sums = extremes();
  sums.mean = sums.stddev = true;
  auto const c = three_clouds(777, true);
  auto const sources = sources_of(c);
  for (auto const& r : {extremes(), sums}) {
    auto o = job_options(r, 1.0, device_choice::cpu, 4);
    memory_output cpu;
    (void)run_grid_job(sources, o, cpu);
    o.device = device_choice::gpu;
    o.cpu_while_gpu_starts = false;  // every batch through the reduction under test
    for (auto reduction : {batch_reduction::atomic, batch_reduction::sorted}) {
      if (reduction == batch_reduction::atomic && r.mean) { continue; }  // atomics keep no sums
      for (auto mode : all_modes()) {
        if (reduction == batch_reduction::atomic && mode != reduce_mode::thread) { continue; }
        if (reduction == batch_reduction::sorted && !mode_reduces_csr(mode)) { continue; }
        for (std::uint64_t device_memory : {std::uint64_t{0}, std::uint64_t{64} << 10}) {
          o.reduction = reduction;
          o.mode = mode;
          o.device_memory = device_memory;  // 64 KiB: the grid is binned in bands of rows on the device
          memory_output gpu;
          auto const report = run_grid_job(sources, o, gpu);
          std::string const what = std::string(mode_name(mode)) + (reduction == batch_reduction::atomic ? " atomic" : " sorted") +
                                   ", " + std::to_string(report.bands) + " bands";
          EXPECT_EQ(report.route, "GPU") << what;
          if (device_memory > 0) { EXPECT_GT(report.bands, 1) << what; }
          // Mean and stddev: only the thread mode sums a cell's points in the CPU's order; the other
          // modes sum big cells in another order (a few ulps).
          expect_bands(gpu.bands, cpu.bands, r, mode == reduce_mode::thread ? 0 : 64);
        }
      }
    }
  }
}

}  // namespace
}  // namespace heightgrid::app
