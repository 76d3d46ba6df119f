#pragma once
// The pointwise LAZ kernel (laz_decode_pointwise.cu) as laz_decode.cu's laz_gpu_decoder drives it.

#include "detail/laz/pointwise.hpp"
#include "heightgrid/kernels/laz_gpu.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace heightgrid::detail::laz {

/// What a pointwise decode reads and writes: `chunk_count` chunks in the order the blocks take them,
/// their bytes in `compressed`, their records (point10_bytes each) in `records`, a status each.
struct pointwise_params {
  std::uint8_t const* compressed;
  laz_gpu_chunk const* chunks;
  std::size_t chunk_count;
  std::uint8_t* records;
  laz_gpu_status* status;
  unsigned char* slots;     ///< lane l of block b: models at slots + (b * lanes + l) * slot_bytes (lay_out_pointwise)
  std::size_t slot_bytes;
  unsigned long long* next_chunk;  ///< zero before the launch
  pointwise_items items;
};

/// Threads a block of the pointwise kernel (a warp: lanes 0..lanes-1 decode, see the kernel).
inline constexpr unsigned pointwise_block_threads = 32;

/// Blocks of the pointwise kernel for `items` a multiprocessor holds at once (the occupancy
/// calculator's; items without RGB run a variant that holds more).
[[nodiscard]] int pointwise_blocks_per_multiprocessor(pointwise_items const& items);

/// Lays out `count` slots of `slot_bytes` (pointwise_slot_bytes(extra_bytes)) at `slots`, stream-ordered.
void launch_lay_out_pointwise(unsigned char* slots, std::size_t count, std::size_t slot_bytes,
                              std::uint32_t extra_bytes, cudaStream_t stream);

/// Decodes p's chunks with `blocks` blocks of `lanes` (1, 2 or 4) chunks each, blocks * lanes slots
/// laid out at least, stream-ordered.
void launch_decode_pointwise(pointwise_params const& p, unsigned blocks, unsigned lanes, cudaStream_t stream);

}  // namespace heightgrid::detail::laz
