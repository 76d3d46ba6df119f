#pragma once
// The CSR of a batch's non-empty cells (the streaming grid's sorted reduction, gpu_binner): the
// (cell, z) pairs sorted by cell as the dense CSR sorts them (sort_by_cell.cuh), then one segment
// per run of equal cells (run-length encoding and an exclusive scan of the run lengths) instead of
// one per cell of the grid: a batch of 2^20 points touches a few of a band's up to 10^8 cells.

#include "detail/csr/sort_by_cell.cuh"
#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"
#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/kernels/device_csr.hpp"

#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/util_type.cuh>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace heightgrid::detail {

/// A run CSR builder for batches of up to `capacity` points, its scratch allocated once.
class run_csr {
 public:
  run_csr() = default;
  run_csr(std::uint64_t capacity, cudaStream_t stream)
    : keys_(capacity, stream),
      keys_alt_(capacity, stream),
      unique_(capacity, stream),
      z_(capacity, stream),
      z_alt_(capacity, stream),
      run_counts_(capacity + 1, stream),
      offsets_(capacity + 1, stream),
      num_runs_(1, stream),
      capacity_(capacity)
  {
    auto const items = static_cast<int>(capacity);
    cub::DoubleBuffer<cell_id> k(keys_.data(), keys_alt_.data());
    cub::DoubleBuffer<double> v(z_.data(), z_alt_.data());
    std::size_t sort_bytes = 0, rle_bytes = 0, scan_bytes = 0;
    sort_pairs_by_cell(nullptr, sort_bytes, k, v, capacity, ~std::uint64_t{0}, stream);
    HG_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(nullptr, rle_bytes, keys_.data(), unique_.data(),
                                                   run_counts_.data(), num_runs_.data(), items, stream));
    HG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, run_counts_.data(), offsets_.data(), items + 1,
                                              stream));
    temp_bytes_ = std::max({sort_bytes, rle_bytes, scan_bytes, std::size_t{1}});
    temp_ = device_buffer<std::byte>(temp_bytes_, stream);
  }

  /// Where a batch's keys (cells 0..max_key) and heights go before build(): `capacity` each.
  [[nodiscard]] cell_id* keys() noexcept { return keys_.data(); }
  [[nodiscard]] double* z() noexcept { return z_.data(); }

  /// The CSR of the first n pairs of keys() / z() (n <= capacity): segment r holds the points of
  /// the r-th distinct cell in ascending order, whose id is unique()[r]; segments past the last run
  /// are empty (n segments in all: no host round trip for the number of runs). The cell `max_key`
  /// (the key of points outside a band) forms the last run like any other. Asynchronous on
  /// `stream`; the view and unique() are valid until the next build().
  [[nodiscard]] device_csr_view build(std::uint64_t n, std::uint64_t max_key, cudaStream_t stream)
  {
    HG_EXPECTS(n <= capacity_, error_kind::internal, "run_csr::build: more points than its capacity");
    auto const items = static_cast<int>(n);
    cub::DoubleBuffer<cell_id> k(keys_.data(), keys_alt_.data());
    cub::DoubleBuffer<double> v(z_.data(), z_alt_.data());
    std::size_t temp = temp_bytes_;
    sort_pairs_by_cell(temp_.data(), temp, k, v, n, max_key, stream);
    // Counts past the last run stay 0, so the exclusive scan gives empty segments there.
    run_counts_.fill_bytes(0, stream);
    temp = temp_bytes_;
    HG_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(temp_.data(), temp, k.Current(), unique_.data(), run_counts_.data(),
                                                   num_runs_.data(), items, stream));
    temp = temp_bytes_;
    HG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp_.data(), temp, run_counts_.data(), offsets_.data(), items + 1,
                                              stream));
    return device_csr_view{offsets_.data(), v.Current(), n, n, device_csr_view::unknown};
  }

  /// The cell of each segment of the last build().
  [[nodiscard]] cell_id const* unique() const noexcept { return unique_.data(); }

 private:
  device_buffer<cell_id> keys_, keys_alt_, unique_;
  device_buffer<double> z_, z_alt_;
  device_buffer<std::uint64_t> run_counts_;
  device_buffer<point_offset> offsets_;
  device_buffer<int> num_runs_;
  device_buffer<std::byte> temp_;
  std::size_t temp_bytes_{0};
  std::uint64_t capacity_{0};
};

}  // namespace heightgrid::detail
