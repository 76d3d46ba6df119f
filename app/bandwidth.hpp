#pragma once
// How fast a reduce moves memory, against how fast the device can read it.

#include "heightgrid/core/metrics.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace heightgrid::app {

/// Output bands a request produces.
[[nodiscard]] int band_count(metric_request const& r) noexcept;

/// The fewest bytes a reduce must move: the offsets (8 bytes, cells + 1 of them) and the z of
/// every point (8 bytes) read once, each requested band (4 bytes a cell) written once.
[[nodiscard]] double reduce_bytes(std::uint64_t cells, std::uint64_t points, metric_request const& r) noexcept;

/// The same for a mode that reduces the points themselves, with no CSR (`atomic`): x, y and z of
/// every point (24 bytes) read once, each requested band written once.
[[nodiscard]] double point_reduce_bytes(std::uint64_t cells, std::uint64_t points, metric_request const& r) noexcept;

/// GB/s (1e9 bytes per second) of moving `bytes` in `ms` milliseconds; 0 for a zero time.
[[nodiscard]] double gigabytes_per_second(double bytes, double ms) noexcept;

/// The device's read bandwidth, measured now: a streaming read of min(1 GiB, free / 4) bytes,
/// median of 10 runs after a warm-up (measure_read_bandwidth_gbps).
struct read_bandwidth {
  double gbps{0.0};
  std::size_t probe_bytes{0};
  int repeats{10};
  std::string device;  ///< name of the device measured
};

/// Throws error_kind::device without a usable GPU.
[[nodiscard]] read_bandwidth measure_device_read_bandwidth();

}  // namespace heightgrid::app
