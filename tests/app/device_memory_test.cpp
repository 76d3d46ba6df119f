// A job on a GPU whose memory another holder has taken (a process next to it): it keeps one device
// batch where three do not fit, waits for the memory under --device gpu (and fails once its wait is
// over), and goes to the CPU at once under auto; the LAZ stage waits for its decoder and waves alike. The
// holder is this process's own cudaMalloc, which the job's stream-ordered pool cannot borrow from.
// Only with CUDA (the runtime's allocation calls) and a GPU.

#include "pipeline_fixtures.hpp"

#include "pipeline/gpu_stage.hpp"
#include "pipeline/grid_job.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "device_hold.hpp"
#include "test_paths.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace heightgrid::app {
namespace {

using pipeline_fixtures::expect_bands;
using pipeline_fixtures::extremes;
using pipeline_fixtures::job_options;
using pipeline_fixtures::memory_output;
using pipeline_fixtures::sources_of;
using pipeline_fixtures::three_clouds;

constexpr std::size_t mib = std::size_t{1} << 20;

using test::device_hold;

bool any_note(grid_job_report const& r, std::string const& text)
{
  return std::any_of(r.device_memory_notes.begin(), r.device_memory_notes.end(),
                     [&](std::string const& n) { return n.find(text) != std::string::npos; });
}

std::string all_notes(grid_job_report const& r)
{
  std::string s;
  for (auto const& n : r.device_memory_notes) { s += "\n  " + n; }
  return s;
}

/// The bands of `sources` gridded on the CPU: what each GPU job here must give.
cell_results cpu_bands(std::vector<std::unique_ptr<part_source>> const& sources, metric_request const& request)
{
  memory_output cpu;
  (void)run_grid_job(sources, job_options(request, 1.0, device_choice::cpu, 4), cpu);
  return cpu.bands;
}

/// Parts of 2 M points: each device batch ~50 MB, so one fits where three do not.
constexpr std::size_t big_part = 2'000'000;

double seconds_of(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(DeviceMemory, TheBinnerKeepsOneDeviceBatchWhereThreeDoNotFit)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: device memory held by others is tried on the GPU machine"; }
  auto const c = three_clouds(big_part, true);
  auto const sources = sources_of(c);
  auto const want = cpu_bands(sources, extremes());
  auto o = job_options(extremes(), 1.0, device_choice::gpu, 4);
  o.cpu_while_gpu_starts = false;  // every batch to the GPU
  std::size_t const batch = batch_bytes(big_part);
  device_hold hold(2 * batch);  // one batch and the small grid fit, three batches do not
  memory_output gpu;
  auto const r = run_grid_job(sources, o, gpu);
  EXPECT_GT(r.gpu_batches, 0U) << r.gpu_note;
  EXPECT_TRUE(any_note(r, "binning with one")) << all_notes(r);
  EXPECT_FALSE(any_note(r, "waiting")) << all_notes(r);
  expect_bands(gpu.bands, want, extremes(), 0);
}

TEST(DeviceMemory, DeviceGpuWaitsForMemoryOthersHold)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: device memory held by others is tried on the GPU machine"; }
  metric_request sums = extremes();
  sums.mean = sums.stddev = true;  // the GPU route alone (no CPU beside it)
  for (auto const& request : {extremes(), sums}) {
    auto const c = three_clouds(big_part, true);
    auto const sources = sources_of(c);
    auto const want = cpu_bands(sources, request);
    auto o = job_options(request, 1.0, device_choice::gpu, 4);
    o.cpu_while_gpu_starts = false;
    device_hold hold(4 * mib);  // not even the one batch fits
    hold.release_after(1500);
    memory_output gpu;
    auto const t0 = std::chrono::steady_clock::now();
    auto const r = run_grid_job(sources, o, gpu);
    double const took = seconds_of(t0);
    hold.join();
    EXPECT_GE(took, 1.2) << "the job cannot have run before the memory came free";
    EXPECT_GT(r.gpu_batches, 0U) << r.gpu_note;
    EXPECT_TRUE(any_note(r, "waiting up to")) << all_notes(r);
    EXPECT_TRUE(any_note(r, "came free after")) << all_notes(r);
    expect_bands(gpu.bands, want, request, 0);
  }
}

TEST(DeviceMemory, DeviceGpuLetsTheCpuFinishWhileItWaits)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: device memory held by others is tried on the GPU machine"; }
  // The CPU bins while the GPU side waits for memory (range/min/max/count): it finishes the job,
  // and the job is not failed for want of device memory.
  auto const c = three_clouds(big_part, true);
  auto const sources = sources_of(c);
  auto const want = cpu_bands(sources, extremes());
  auto o = job_options(extremes(), 1.0, device_choice::gpu, 4);
  device_hold hold(4 * mib);
  memory_output out;
  auto const t0 = std::chrono::steady_clock::now();
  auto const r = run_grid_job(sources, o, out);
  EXPECT_LT(seconds_of(t0), 30.0) << "the job must not wait once the CPU has binned everything";
  EXPECT_EQ(r.route, "CPU");
  // A wait that began before the CPU had finished was ended by it, and says so.
  if (any_note(r, "waiting up to")) { EXPECT_TRUE(any_note(r, "the job ran on the CPU")) << all_notes(r); }
  expect_bands(out.bands, want, extremes(), 0);
}

TEST(DeviceMemory, DeviceGpuFailsOnceItsWaitIsOver)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: device memory held by others is tried on the GPU machine"; }
  auto const c = three_clouds(big_part, true);
  auto const sources = sources_of(c);
  auto o = job_options(extremes(), 1.0, device_choice::gpu, 4);
  o.cpu_while_gpu_starts = false;
  o.device_memory_wait_s = 0.6;
  device_hold hold(4 * mib);
  memory_output out;
  auto const t0 = std::chrono::steady_clock::now();
  try {
    (void)run_grid_job(sources, o, out);
    ADD_FAILURE() << "a job without device memory succeeded on --device gpu";
  } catch (error const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(e.kind() == error_kind::resource || e.kind() == error_kind::device) << what;
    EXPECT_NE(what.find("device memory"), std::string::npos) << what;
    EXPECT_NE(what.find("waited 600.0 ms"), std::string::npos) << what;
  }
  EXPECT_GE(seconds_of(t0), 0.5);
  EXPECT_FALSE(out.committed);
}

TEST(DeviceMemory, AutoGoesToTheCpuAtOnce)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: device memory held by others is tried on the GPU machine"; }
  auto const c = three_clouds(big_part, true);
  std::vector<pipeline_fixtures::fake_source*> raw;
  auto const sources = sources_of(c, &raw);
  for (auto* f : raw) { f->forget_count(); }  // unknown size: auto starts the GPU beside the CPU
  auto const want = cpu_bands(sources, extremes());
  auto o = job_options(extremes(), 1.0, device_choice::automatic, 4);
  device_hold hold(4 * mib);
  memory_output out;
  auto const t0 = std::chrono::steady_clock::now();
  auto const r = run_grid_job(sources, o, out);
  EXPECT_LT(seconds_of(t0), 5.0) << "auto must not wait for device memory";
  EXPECT_EQ(r.route, "CPU");
  EXPECT_FALSE(any_note(r, "waiting")) << all_notes(r);
  expect_bands(out.bands, want, extremes(), 0);
}

TEST(DeviceMemory, TheLazStageWaitsForItsWaveUnderDeviceGpu)
{
  if (!gpu_available()) { GTEST_SKIP() << "no usable GPU: device memory held by others is tried on the GPU machine"; }
  if (test::real_data_dir().empty()) { GTEST_SKIP() << "../shared/data/real is absent"; }
  std::string const path = (test::real_data_dir() / "lasR/las14_pdrf6.laz").string();
  std::vector<std::unique_ptr<part_source>> sources;
  sources.push_back(io::open_las_parts(path, 50000));
  auto const want = cpu_bands(sources, extremes());
  auto o = job_options(extremes(), 1.0, device_choice::gpu, 4);
  o.laz_gpu_sizes.wave_chunks = 1;  // many waves: the hold comes between two of them
  std::vector<std::unique_ptr<part_source>> again;
  again.push_back(io::open_las_parts(path, 50000));
  device_hold hold(0);  // neither the decoder's models nor the grid's binner fit
  hold.release_after(1500);
  memory_output gpu;
  auto const r = run_grid_job(again, o, gpu);
  hold.join();
  EXPECT_TRUE(r.laz_gpu) << r.laz_gpu_note;
  EXPECT_TRUE(any_note(r, "came free after")) << all_notes(r);
  // Without the wait the stage would have given its chunks back to the CPU's decoder.
  EXPECT_TRUE(r.laz_gpu_stats.failure.empty()) << r.laz_gpu_stats.failure;
  EXPECT_EQ(r.laz_gpu_stats.gpu_chunks + r.laz_gpu_stats.folded_chunks, r.laz_gpu_stats.chunks);
  expect_bands(gpu.bands, want, extremes(), 0);
}

}  // namespace
}  // namespace heightgrid::app
