// Pointwise LAZ chunks (compressor 2, point10 v2 [gpstime11 v2] [rgb12 v2] [byte v2]) decoded on
// the GPU: the codec of detail/laz/pointwise.hpp, which the host tests run too, one chunk a block.

#include "detail/infra/cuda_check.cuh"
#include "detail/laz/pointwise_launch.cuh"

#include <cuda_runtime_api.h>

namespace heightgrid::detail::laz {
namespace {

/// core/laz/tables.hpp's table, in constant memory.
__constant__ laz_point10_context_table const point10_contexts = laz_point10_context;

static __global__ void lay_out_pointwise_kernel(unsigned char* slots, std::size_t count, std::size_t slot_bytes,
                                                std::uint32_t extra_bytes)
{
  std::size_t const i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i < count) { lay_out_pointwise(slots + i * slot_bytes, extra_bytes); }
}

/// One warp a block; lanes 0..Lanes-1 each decode chunks of their own (the others leave at once): a
/// chunk is one serial chain of dependent decodes, which leaves most of a warp's issue slots idle,
/// so two or four chains a warp decode faster where enough warps remain, though their lanes diverge
/// on every data-dependent branch (laz_pointwise_lanes; one a warp measured fastest for the layered
/// decoder: laz_decode.cu). Lanes take chunks from p.next_chunk, in p.chunks' order, until none are
/// left; lane l of block b decodes with the models of slot b * Lanes + l (reset lazily per chunk:
/// stamps) and its own item state in `scratch[l]`.
/// Where the result is valid: p.records[first_record * 20, +20 points) and p.status[c] of every
/// chunk c, after the kernel. Example: chunks {points 3, points 5} → records 0-2 and 3-7 (if
/// first_record says so), status {ok, ok}.
template <unsigned Lanes>
static __device__ __forceinline__ void decode_pointwise_chunks(pointwise_params const& p, pointwise_scratch* scratch)
{
  unsigned const lane = threadIdx.x;
  if (lane >= Lanes) { return; }
  auto* const models =
    reinterpret_cast<pointwise_models*>(p.slots + (std::size_t{blockIdx.x} * Lanes + lane) * p.slot_bytes);
  for (;;) {
    unsigned long long const c = atomicAdd(p.next_chunk, 1ull);
    if (c >= p.chunk_count) { break; }
    laz_gpu_chunk const chunk = p.chunks[c];
    p.status[c] = decode_pointwise_chunk_hd(*models, scratch[lane], p.items, point10_contexts,
                                            p.compressed + chunk.source, chunk.source_bytes, chunk.points,
                                            p.records + chunk.first_record * point10_bytes);
  }
}

/// Every item set: as many blocks a multiprocessor as the registers the code wants allow (16 on an
/// H200).
template <unsigned Lanes>
static __global__ void __launch_bounds__(pointwise_block_threads) decode_pointwise_chunk_per_block_kernel(pointwise_params p)
{
  // The item state the decoder indexes dynamically: shared memory, not the lane's local memory.
  __shared__ pointwise_scratch scratch[Lanes];
  decode_pointwise_chunks<Lanes>(p, scratch);
}

/// Blocks a multiprocessor must hold for items without RGB.
constexpr int plain_items_min_blocks = 32;

/// Items without RGB: twice the chunks at once in fewer registers (some spilled) decode faster;
/// with RGB the spills cost more than the chunks gain (docs/benchmarks.md, "Pointwise LAZ on the
/// device").
template <unsigned Lanes>
static __global__ void __launch_bounds__(pointwise_block_threads, plain_items_min_blocks)
  decode_plain_pointwise_chunk_per_block_kernel(pointwise_params p)
{
  __shared__ pointwise_scratch scratch[Lanes];
  decode_pointwise_chunks<Lanes>(p, scratch);
}

template <unsigned Lanes>
void launch_lanes(pointwise_params const& p, unsigned blocks, cudaStream_t stream)
{
  if (p.items.rgb) {
    decode_pointwise_chunk_per_block_kernel<Lanes><<<blocks, pointwise_block_threads, 0, stream>>>(p);
  } else {
    decode_plain_pointwise_chunk_per_block_kernel<Lanes><<<blocks, pointwise_block_threads, 0, stream>>>(p);
  }
}

}  // namespace

int pointwise_blocks_per_multiprocessor(pointwise_items const& items)
{
  int per_sm = 0;
  if (items.rgb) {
    HG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, decode_pointwise_chunk_per_block_kernel<1>,
                                                              pointwise_block_threads, 0));
  } else {
    HG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, decode_plain_pointwise_chunk_per_block_kernel<1>,
                                                              pointwise_block_threads, 0));
  }
  return per_sm;
}

void launch_lay_out_pointwise(unsigned char* slots, std::size_t count, std::size_t slot_bytes,
                              std::uint32_t extra_bytes, cudaStream_t stream)
{
  if (count == 0) { return; }
  constexpr unsigned block = 128;
  lay_out_pointwise_kernel<<<static_cast<unsigned>((count + block - 1) / block), block, 0, stream>>>(
    slots, count, slot_bytes, extra_bytes);
  HG_CUDA_TRY(cudaGetLastError());
}

void launch_decode_pointwise(pointwise_params const& p, unsigned blocks, unsigned lanes, cudaStream_t stream)
{
  if (blocks == 0) { return; }
  switch (lanes) {
    case 1: launch_lanes<1>(p, blocks, stream); break;
    case 2: launch_lanes<2>(p, blocks, stream); break;
    case 4: launch_lanes<4>(p, blocks, stream); break;
    default: throw error(error_kind::internal, "launch_decode_pointwise: " + std::to_string(lanes) + " lanes");
  }
  HG_CUDA_TRY(cudaGetLastError());
}

}  // namespace heightgrid::detail::laz
