#include "pipeline/route_policy.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace heightgrid::app {

bool auto_wants_gpu(std::uint64_t points, metric_request const& request, unsigned threads) noexcept
{
  using policy = auto_device_policy;
  if (points == 0) { return true; }  // unknown: start it, the CPU works meanwhile
  if (request.needs_order()) { return points >= policy::order_gpu_min_points; }
  if (request.needs_sums()) { return points >= policy::sums_gpu_min_points; }
  double const gpu_s = policy::las_gpu_fixed_s + static_cast<double>(points) / policy::las_gpu_points_per_s;
  return gpu_s < las_cpu_pass_s(points, request, threads);
}

double las_cpu_pass_s(std::uint64_t points, metric_request const& request, unsigned threads) noexcept
{
  using policy = auto_device_policy;
  double const tags = 1.0 + policy::las_cpu_tag_band_share * static_cast<double>(request.tags.size());
  return tags * static_cast<double>(points) / (std::max(threads, 1U) * policy::las_cpu_points_per_thread_s);
}

bool cpu_bins_before_a_context_pays(std::uint64_t points, metric_request const& request, unsigned threads) noexcept
{
  return points > 0 && las_cpu_pass_s(points, request, threads) < auto_device_policy::gpu_context_s;
}

laz_offload_estimate estimate_laz_offload(laz_offload_facts const& f) noexcept
{
  using policy = auto_device_policy;
  auto const n = static_cast<double>(f.points);
  auto const pointwise_n = static_cast<double>(f.pointwise_points);
  double const threads = std::max(f.threads, 1U);
  laz_offload_estimate e;
  e.cpu_s = (n - pointwise_n) / (threads * policy::laz_cpu_points_per_thread_s) +
            pointwise_n / (threads * policy::laz_cpu_pointwise_points_per_thread_s);
  auto const largest = static_cast<double>(f.largest_chunk);
  auto const largest_pointwise = static_cast<double>(f.largest_pointwise_chunk);
  if (f.fold) {
    // The start, reading + uploading + binning a point, and the longer of the last round and every
    // point at the decoder's rate.
    e.gpu_s = policy::laz_fold_start_s + n * policy::laz_fold_seconds_per_point +
              std::max({largest * policy::laz_fold_seconds_per_chunk_point,
                        largest_pointwise * policy::laz_pointwise_seconds_per_chunk_point,
                        (n - pointwise_n) / policy::laz_fold_points_per_s + pointwise_n / policy::laz_pointwise_points_per_s});
  } else {
    double const waves = std::ceil(static_cast<double>(f.chunks) / policy::laz_gpu_wave_chunks);
    e.gpu_s = policy::laz_gpu_start_s +
              waves * std::max(largest * policy::laz_gpu_seconds_per_chunk_point,
                               largest_pointwise * policy::laz_pointwise_seconds_per_chunk_point) +
              n * policy::laz_records_seconds_per_point;
  }
  e.use_gpu = f.points >= policy::laz_gpu_min_points && e.gpu_s * policy::laz_gpu_margin < e.cpu_s;
  return e;
}

std::size_t laz_cpu_share_chunks(std::vector<double> const& cpu_s, std::vector<double> const& gpu_s,
                                 double cpu_backlog_s, double gpu_fixed_s) noexcept
{
  std::size_t const n = std::min(cpu_s.size(), gpu_s.size());
  double cpu = cpu_backlog_s;
  double gpu = gpu_fixed_s;
  for (std::size_t i = 0; i < n; ++i) { gpu += gpu_s[i]; }
  std::size_t k = 0;
  for (; k < n; ++k) {
    double const moved_cpu = cpu + cpu_s[k];
    double const moved_gpu = gpu - gpu_s[k];
    if (std::max(moved_cpu, moved_gpu) >= std::max(cpu, gpu)) { break; }
    cpu = moved_cpu;
    gpu = moved_gpu;
  }
  return k;
}

std::string laz_offload_estimate::note(laz_offload_facts const& f) const
{
  std::ostringstream s;
  s.precision(2);
  s << std::fixed << "not used: " << f.points << " LAZ points decode in ~" << cpu_s << " s on " << f.threads
    << " threads, ~" << gpu_s << " s on the GPU";
  return s.str();
}

bool gpu_context_worth_making(double elapsed_s, std::uint64_t read, std::uint64_t expected) noexcept
{
  if (expected == 0 || read == 0 || !(elapsed_s > 0.0)) { return true; }
  if (read >= expected) { return false; }
  double const left_s = elapsed_s * static_cast<double>(expected - read) / static_cast<double>(read);
  return left_s >= auto_device_policy::gpu_context_s;
}

}  // namespace heightgrid::app
