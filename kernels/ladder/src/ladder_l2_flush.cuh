#pragma once
// Evicting the input from L2 between timed runs, so that every run reads DRAM (an H100 holds 50 MB
// in L2: inputs up to 2^23 int32 would otherwise be served from cache after the first run).

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/launch.cuh"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace heightgrid::detail {

struct l2_flush_policy {
  static constexpr int block_threads = 256;
  static constexpr std::size_t l2_multiple = 4;  ///< buffer = 4x the L2 size: no line of the input survives
};

/// Mapping: grid-stride over 16-byte words, each thread folding what it reads into an XOR.
/// Preconditions: words has n entries (zeroed by l2_flusher, never written again); sink has 1.
/// Result: nothing but the side effect: every line of `words` passed through L2. sink[0] is
///   written only if an XOR is nonzero (never, for zeros), which keeps the loads from being removed.
/// Example: n = 4 zero words, 1 thread -> reads all 4, XOR 0, no store.
/// Why read and not cudaMemset: a write leaves L2 full of dirty lines, and writing them back would
/// steal DRAM bandwidth from the timed run that follows; clean lines are simply dropped.
static __global__ void __launch_bounds__(l2_flush_policy::block_threads)
  flush_l2_grid_stride_kernel(uint4 const* __restrict__ words, std::uint64_t n, unsigned int* sink)
{
  unsigned int acc = 0;
  for (std::uint64_t i = global_thread_index(); i < n; i += grid_threads()) {
    uint4 const v = words[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc != 0) { sink[0] = acc; }
}

/// A buffer of l2_multiple x the L2 size of the current device and the kernel that reads it.
class l2_flusher {
 public:
  explicit l2_flusher(cudaStream_t stream)
  {
    int device = 0;
    int l2_bytes = 0;
    HG_CUDA_TRY(cudaGetDevice(&device));
    HG_CUDA_TRY(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    auto const bytes = l2_flush_policy::l2_multiple * static_cast<std::size_t>(std::max(l2_bytes, 1 << 20));
    words_ = device_buffer<uint4>(bytes / sizeof(uint4), stream);
    sink_ = device_buffer<unsigned int>(1, stream);
    words_.fill_bytes(0, stream);
  }

  /// Enqueues the read of the whole buffer on `stream`.
  void flush(cudaStream_t stream)
  {
    using policy = l2_flush_policy;
    flush_l2_grid_stride_kernel<<<grid_blocks(words_.size(), policy::block_threads), policy::block_threads, 0,
                                  stream>>>(words_.data(), words_.size(), sink_.data());
    HG_CUDA_CHECK_LAUNCH();
  }

 private:
  device_buffer<uint4> words_;
  device_buffer<unsigned int> sink_;
};

}  // namespace heightgrid::detail
