#pragma once
// Ladder kernel 9: cub::DeviceReduce::Reduce, the reference the hand-written kernels are measured
// against. Same operators and identities, same accumulator (an int64 init makes CUB accumulate
// int32 sums in int64, while still loading the int32 input with its vectorized raw-pointer path).

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"
#include "ladder_common.cuh"

#include <cub/device/device_reduce.cuh>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace heightgrid::detail {

/// Reduces in[0, n) into out[0] with cub::DeviceReduce::Reduce(Op, identity); returns 1 (one value
/// written). CUB's temporary storage is queried and grown in `temp` here (first in the warm-up
/// run). Offsets are 32-bit when n fits, as CUB picks from the type of num_items.
template <typename Op, typename In, typename Acc>
std::uint64_t launch_cub_device_reduce(In const* in, std::uint64_t n, device_buffer<Acc>& out,
                                       device_buffer<std::byte>& temp, cudaStream_t stream)
{
  Acc* const result = ensure_size(out, 1, stream);
  auto const reduce = [&](auto num_items) {
    std::size_t bytes = 0;
    HG_CUDA_TRY(
      cub::DeviceReduce::Reduce(nullptr, bytes, in, result, num_items, Op{}, ladder_identity<Acc, Op>(), stream));
    // At least one byte: a null d_temp_storage would make the second call a size query again.
    void* const storage = ensure_size(temp, bytes > 0 ? bytes : 1, stream);
    HG_CUDA_TRY(
      cub::DeviceReduce::Reduce(storage, bytes, in, result, num_items, Op{}, ladder_identity<Acc, Op>(), stream));
  };
  if (n <= std::numeric_limits<std::uint32_t>::max()) {
    reduce(static_cast<std::uint32_t>(n));
  } else {
    reduce(n);
  }
  return 1;
}

}  // namespace heightgrid::detail
