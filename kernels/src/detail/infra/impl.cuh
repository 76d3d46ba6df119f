#pragma once
// The device state behind the host-clean classes of device_csr.hpp.

#include "detail/reduce/cell_store.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/infra/device_buffer.cuh"
#include "heightgrid/kernels/device_csr.hpp"

#include <cstdint>
#include <memory>

namespace heightgrid {

struct device_csr::impl {
  detail::device_buffer<point_offset> offsets;  ///< num_cells + 1 entries, never empty
  detail::device_buffer<double> z;              ///< at least num_points entries (radix sort keeps
                                                ///< the outside points after them)
  std::uint64_t num_cells{0};
  std::uint64_t num_points{0};
  std::uint64_t max_cell_points{0};
};

struct device_cell_results::impl {
  detail::device_buffer<float> min;  ///< each band: num_cells entries when requested, else empty
  detail::device_buffer<float> max;
  detail::device_buffer<float> range;
  detail::device_buffer<std::uint32_t> count;
  detail::device_buffer<float> mean;
  detail::device_buffer<float> stddev;
  std::uint64_t num_cells{0};
  reduce_mode mode{reduce_mode::thread};
  detail::cuda_event start;  ///< recorded before and after the mode's work
  detail::cuda_event stop;
};

namespace detail {

/// The bands of `request` for `cells` cells, allocated on `stream` and poisoned (all-ones bytes: a
/// negative NaN, or 2^32-1 as a count, so a cell no kernel wrote shows up in tests), with `mode`
/// recorded. Shared by reduce() and the atomic pipeline (defined in reduce.cu).
[[nodiscard]] std::unique_ptr<device_cell_results::impl> make_cell_results(std::uint64_t cells,
                                                                           metric_request const& request,
                                                                           reduce_mode mode, cudaStream_t stream);

/// Device pointers of the bands of `state` (null for bands not requested).
[[nodiscard]] output_bands bands_of(device_cell_results::impl& state) noexcept;

/// The single dispatch from reduce_mode to a mode's launcher (defined in reduce.cu): reduces every
/// cell of `csr` into `out` (bands, or merges into a streamed grid when out.merge is active).
/// Throws error_kind::internal for atomic, which reduces points, not a CSR.
void reduce_view(reduce_mode mode, device_csr_view const& csr, metric_request const& request,
                 output_bands const& out, float nodata, cudaStream_t stream);

}  // namespace detail
}  // namespace heightgrid
