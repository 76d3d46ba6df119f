#include "grid_report.hpp"

#include "report.hpp"

#include "heightgrid/io/remote.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>

namespace heightgrid::app {
namespace {

double gigabytes_per_second(double bytes, double seconds) { return seconds > 0.0 ? bytes / seconds / 1e9 : 0.0; }

}  // namespace

void report_stages(grid_job_report const& r, double input_bytes, double open_s, std::size_t inputs, double write_s,
                   double total_s)
{
  spdlog::debug("inputs: {} opened (headers) in {} before reading{}; the job's setup (route, grid, accumulators) {}",
                with_commas(inputs), human_seconds(open_s),
                inputs > 1 && open_s > 0.0 ? fmt::format(" ({:.0f} a second)", static_cast<double>(inputs) / open_s)
                                           : std::string(),
                human_seconds(r.setup_s));
  std::uint64_t const records = r.read.filtered.points_in;
  double const pass = std::max(r.bin_pass_s, 1e-9);
  double const workers = static_cast<double>(std::max(1u, r.threads));
  // Shares of the binning passes' wall time: workers' reading (without their waits for the GPU's
  // LAZ decoder, which are its time), workers' CPU binning, waiting.
  double const laz_wait_s = r.laz_gpu ? std::min(r.laz_gpu_stats.readers_wait_s, r.read_busy_s) : 0.0;
  double const read_own_s = r.read_busy_s - laz_wait_s;
  double const read_share = read_own_s / (workers * pass);
  double const bin_share = r.cpu_bin_busy_s / (workers * pass);
  double const wait_share = r.wait_busy_s / (workers * pass);
  // The workers' time after reading a batch: binning it on the CPU, or on the GPU route handing it
  // over (which waits for CUDA's start while the GPU is not up yet).
  char const* const sink_name = r.gpu_batches == 0   ? "binning on the CPU"
                                : r.cpu_batches == 0 ? "handing batches to the GPU (waiting for its start, uploads)"
                                                     : "binning on the CPU or handing batches to the GPU";
  if (r.grid_crop.first != 0 || r.grid_crop.second != 0) {
    spdlog::debug("grid: the points kept start {} column(s) right of and {} row(s) below the headers' bounds: their "
                  "grid cropped from the accumulators, in the same pass",
                  r.grid_crop.first, r.grid_crop.second);
  }
  spdlog::debug("read: {} records{} on {} threads in {} (passes: {} binning, {} bounds), workers {:.0f} % reading "
                "({:.1f} M records/s/thread){}, {:.0f} % {}, {:.0f} % waiting",
                with_commas(records),
                input_bytes > 0 ? fmt::format(" ({} of input, {:.2f} GB/s)", human_bytes(input_bytes),
                                              gigabytes_per_second(input_bytes * r.passes, pass))
                                : std::string(),
                r.threads, human_seconds(r.bin_pass_s), r.passes, r.bounds_passes, 100.0 * read_share,
                r.read_busy_s > 0.0 ? static_cast<double>(records) * r.passes / r.read_busy_s / 1e6 : 0.0,
                laz_wait_s > 0.0 ? fmt::format(", {:.0f} % waiting for the GPU's LAZ decoder",
                                               100.0 * laz_wait_s / (workers * pass))
                                 : std::string(),
                100.0 * bin_share, sink_name, 100.0 * wait_share);
  if (r.gpu_batches > 0) {
    double const h2d_share = r.gpu.h2d_ms * 1e-3 / pass;
    spdlog::debug("GPU {}: started in {} (overlapped with reading; {} batches read meanwhile), {} of {} batches{}; "
                  "H2D {:.1f} ms for {} "
                  "({:.1f} GB/s while copying, {:.0f} % of the pass), binning kernels {:.1f} ms ({:.0f} %), "
                  "finalize + download {:.1f} ms{}",
                  r.device, human_seconds(r.gpu_start_s), with_commas(r.read_ahead_batches), with_commas(r.gpu_batches),
                  with_commas(r.gpu_batches + r.cpu_batches),
                  r.las_records_on_gpu ? " (LAS records decoded and filtered on the GPU)" : "", r.gpu.h2d_ms, human_bytes(static_cast<double>(r.gpu.bytes_uploaded)),
                  r.gpu.h2d_ms > 0.0 ? static_cast<double>(r.gpu.bytes_uploaded) / (r.gpu.h2d_ms * 1e-3) / 1e9 : 0.0,
                  100.0 * h2d_share, r.gpu.bin_ms, 100.0 * r.gpu.bin_ms * 1e-3 / pass, r.gpu.finalize_ms,
                  r.gpu.order_sort_ms + r.gpu.order_metrics_ms > 0.0
                    ? fmt::format(" (order statistics: offsets and sort {:.1f} ms, per-cell kernels {:.1f} ms)",
                                  r.gpu.order_sort_ms, r.gpu.order_metrics_ms)
                    : std::string());
  } else {
    spdlog::debug("GPU: {}", r.gpu_note);
  }
  for (auto const& note : r.device_memory_notes) { spdlog::debug("GPU memory: {}", note); }
  if (r.laz_gpu) {
    auto const& l = r.laz_gpu_stats;
    std::string const records_went =
      l.folded_chunks > 0
        ? fmt::format("records of {} chunks binned on the device in {} (none downloaded)", with_commas(l.folded_chunks),
                      human_seconds(l.fold_s))
        : fmt::format("records downloaded in {}", human_seconds(l.download_s));
    std::uint64_t const decoded = l.folded_chunks > 0 ? l.folded_points : l.points;
    std::string const lanes =
      l.pointwise_lanes > 1 ? fmt::format(" ({} pointwise chunks a warp)", l.pointwise_lanes) : std::string();
    spdlog::debug("LAZ on the GPU: {} of {} chunks ({} points) in {} waves, {} chunks at once{}; decoder started in {} "
                  "(then {} waiting for the job's grid), compressed bytes read and uploaded in {}, decode {} (kernels "
                  "{}, {:.1f} M points/s), {}, stage closed in {}{}",
                  with_commas(l.folded_chunks > 0 ? l.folded_chunks : l.gpu_chunks), with_commas(l.chunks),
                  with_commas(l.points), l.waves, with_commas(l.chunks_at_once), lanes, human_seconds(l.start_s),
                  human_seconds(l.decided_s),
                  human_seconds(l.read_s), human_seconds(l.decode_s), human_seconds(l.kernel_s),
                  l.kernel_s > 0.0 ? static_cast<double>(decoded) / l.kernel_s / 1e6 : 0.0, records_went,
                  human_seconds(l.close_s), l.failure.empty() ? std::string() : "; the rest on the CPU: " + l.failure);
    if (l.cpu_chunks > 0) {
      spdlog::debug("LAZ on the CPU beside it: the readers decoded {} chunks ({} points, {:.1f} %): {} while CUDA "
                    "started, {} left to them when the waves were planned",
                    with_commas(l.cpu_chunks), with_commas(l.cpu_points),
                    l.points > 0 ? 100.0 * static_cast<double>(l.cpu_points) / static_cast<double>(l.points) : 0.0,
                    with_commas(l.cpu_chunks - l.cpu_chunks_planned), with_commas(l.cpu_chunks_planned));
    }
  } else if (!r.laz_gpu_note.empty()) {
    spdlog::debug("LAZ on the GPU: {}", r.laz_gpu_note);
  }
  if (std::uint64_t const remote = io::remote_bytes_requested(); remote > 0) {
    spdlog::debug("remote inputs: {} asked of GDAL's VSI layer (it fetches whole blocks of its cache)",
                  human_bytes(static_cast<double>(remote)));
  }
  if (r.copc.sources > 0) {
    auto const& c = r.copc;
    spdlog::debug("COPC: {} of {} nodes read (levels 0-{} of 0-{}), {} of {} points, {} of {} of their chunks "
                  "({:.1f} %)",
                  with_commas(c.nodes_read), with_commas(c.nodes), c.deepest_read, c.deepest,
                  with_commas(c.points_read), with_commas(c.points), human_bytes(static_cast<double>(c.bytes_read)),
                  human_bytes(static_cast<double>(c.bytes)),
                  c.bytes > 0 ? 100.0 * static_cast<double>(c.bytes_read) / static_cast<double>(c.bytes) : 0.0);
  }
  spdlog::debug("finalize {}, write {}, total {}", human_seconds(r.finalize_s), human_seconds(write_s),
                human_seconds(total_s));
  // The bound: the largest of the workers' reading, their CPU binning, the copies, the writing.
  struct stage {
    char const* name;
    double seconds;
  };
  auto const& laz = r.laz_gpu_stats;
  stage const stages[] = {{"opening the inputs", open_s},
                          {"reading and decoding", read_own_s / workers},
                          {"the GPU LAZ decoder (reading, uploading, decoding, binning waves)",
                           r.laz_gpu ? laz.start_s + laz.read_s + laz.decode_s + laz.fold_s + laz.download_s : 0.0},
                          {sink_name, r.cpu_bin_busy_s / workers},
                          {"host-to-device copies", r.gpu.h2d_ms * 1e-3},
                          {"GPU binning", r.gpu.bin_ms * 1e-3},
                          {"finalizing the cells", r.finalize_s}, {"writing the GeoTIFF", write_s}};
  auto const* worst = std::max_element(std::begin(stages), std::end(stages),
                                       [](stage const& a, stage const& b) { return a.seconds < b.seconds; });
  spdlog::debug("bottleneck: {} ({} of {} wall)", worst->name, human_seconds(worst->seconds), human_seconds(total_s));
}

std::string describe_filtered(filter_stats const& f)
{
  std::ostringstream s;
  s << with_commas(f.removed()) << " filtered";
  if (f.removed() > 0) {
    s << " (";
    char const* sep = "";
    auto part = [&](std::uint64_t n, char const* what) {
      if (n > 0) {
        s << sep << with_commas(n) << ' ' << what;
        sep = ", ";
      }
    };
    part(f.non_finite, "non-finite");
    part(f.by_class, "by class");
    part(f.withheld, "withheld");
    part(f.by_return, "by return");
    part(f.by_z, "by z");
    part(f.off_ground, "off the --ground raster");
    s << ")";
  }
  return s.str();
}

}  // namespace heightgrid::app
