#include "bandwidth.hpp"

#include "heightgrid/kernels/gpu.hpp"

#include <algorithm>

namespace heightgrid::app {

int band_count(metric_request const& r) noexcept
{
  return r.min + r.max + r.range + r.count + r.mean + r.stddev;
}

double reduce_bytes(std::uint64_t cells, std::uint64_t points, metric_request const& r) noexcept
{
  return 8.0 * static_cast<double>(cells + 1) + 8.0 * static_cast<double>(points) +
         4.0 * static_cast<double>(band_count(r)) * static_cast<double>(cells);
}

double point_reduce_bytes(std::uint64_t cells, std::uint64_t points, metric_request const& r) noexcept
{
  return 24.0 * static_cast<double>(points) + 4.0 * static_cast<double>(band_count(r)) * static_cast<double>(cells);
}

double gigabytes_per_second(double bytes, double ms) noexcept
{
  return ms > 0.0 ? bytes / (ms * 1e-3) / 1e9 : 0.0;
}

read_bandwidth measure_device_read_bandwidth()
{
  auto const dev = query_device();
  read_bandwidth r;
  r.device = dev.name;
  r.probe_bytes = std::min<std::size_t>(std::size_t{1} << 30, dev.free_mem / 4);
  r.gbps = measure_read_bandwidth_gbps(r.probe_bytes, r.repeats, nullptr);
  return r;
}

}  // namespace heightgrid::app
