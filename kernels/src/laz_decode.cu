// LAZ chunks decoded on the GPU: the layered kernel (LASzip compressor 3, point14; one chunk a block)
// and laz_gpu_decoder, which drives it and the pointwise kernel (compressor 2,
// laz_decode_pointwise.cu) and dispatches on the layout. The codec is detail/laz/: the entropy
// coder (coder.hpp, shared with the pointwise decoder and the host tests), the point14 channel
// state and layer decoders (point14.cuh). This file keeps the slots' layout on the device, the
// kernel and the host class.
//
// Mappings (laz_gpu_mapping): chunk_per_thread, one thread decodes a chunk's layers in turn;
// layer_per_lane, four lanes of a warp decode a chunk's XY, Z, classification and flags layers
// side by side (point14.cuh). Blocks take chunks from an atomic counter until none are left.

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/laz_gpu.hpp"

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/device_context.cuh"
#include "detail/infra/pinned_staging.cuh"
#include "detail/laz/point14.cuh"
#include "detail/laz/pointwise_launch.cuh"

#include <cuda/atomic>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace heightgrid {
namespace {

using detail::device_buffer;
using detail::pinned_buffer;
using namespace detail::laz;

__global__ void lay_out_channels_kernel(point14_channel* channels, std::uint16_t* arena, std::size_t arena_u16,
                                        std::size_t count)
{
  std::size_t const i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i < count) { lay_out_point14_channel(channels + i, arena + i * arena_u16); }
}

/// Both mappings. `Lanes` = roles (layer_per_lane): lane r decodes layer r, side by side. `Lanes`
/// = 1 (chunk_per_thread): lane 0 decodes the four layers one after the other (each follower then
/// finds every record published). One block of 32 threads a chunk at a time; blocks take chunks from
/// an atomic counter. A warp never holds more than one chunk: lanes on different chunks diverge on
/// every data-dependent branch (docs/benchmarks-history.md, "The GPU LAZ decoder, 2026-11-26").
template <unsigned Lanes>
__global__ void __launch_bounds__(32) decode_chunks_kernel(point14_params p)
{
  static_assert(Lanes == 1 || Lanes == roles, "a lane per layer, or one lane for all");
  __shared__ point14_chunk sh;
  bool const leader = threadIdx.x < Lanes;
  std::size_t const slot = blockIdx.x;
  point14_channel* const channels = p.channels + slot * channels_per_slot;
  std::uint32_t epochs[roles] = {};  // of the roles this lane decodes
  if (leader) {
    for (unsigned role = threadIdx.x; role < roles; role += Lanes) { epochs[role] = p.epochs[slot * roles + role]; }
  }
  for (;;) {
    if (threadIdx.x == 0) {
      sh.chunk = atomicAdd(p.next_chunk, 1ull);
      sh.progress = 1;
      sh.abort = 0;
      for (auto& o : sh.overrun) { o = 0; }
      if (sh.chunk < p.chunk_count) { sh.status = start_point14_chunk(p, p.chunks[sh.chunk], sh); }
    }
    __syncthreads();
    if (sh.chunk >= p.chunk_count) { break; }
    if (sh.status == laz_gpu_status::ok && leader) {
      std::uint8_t* const out = p.records + p.chunks[sh.chunk].first_record * laz_gpu_record_bytes;
      for (unsigned role = threadIdx.x; role < roles; role += Lanes) {
        bool ok = true;
        switch (role) {
          case role_xy:
            ok = decode_xy_layer(sh, out, channels, epochs[role]);
            if (!ok) {
              cuda::atomic_ref<std::uint32_t, cuda::thread_scope_block>(sh.abort).store(1, cuda::memory_order_relaxed);
            }
            break;
          case role_z: ok = decode_follower_layer<role_z>(p, sh, out, channels, epochs[role]); break;
          case role_classification:
            ok = decode_follower_layer<role_classification>(p, sh, out, channels, epochs[role]);
            break;
          default: ok = decode_follower_layer<role_flags>(p, sh, out, channels, epochs[role]); break;
        }
        sh.overrun[role] = ok ? 0 : 1;
        if (!ok && role == role_xy) { break; }  // one lane for all: the others would only stop
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      laz_gpu_status status = sh.status;
      if (status == laz_gpu_status::ok) {
        for (auto o : sh.overrun) {
          if (o != 0) { status = laz_gpu_status::overrun; }
        }
      }
      p.status[sh.chunk] = status;
    }
    __syncthreads();
  }
  if (leader) {
    for (unsigned role = threadIdx.x; role < roles; role += Lanes) { p.epochs[slot * roles + role] = epochs[role]; }
  }
}

}  // namespace

struct laz_gpu_decoder::impl {
  int device{0};  // the current device when it was made: every call selects it on its own thread
  cudaStream_t stream{nullptr};
  std::size_t slots{0};      // chunks decoded at once, at most
  std::size_t laid_out{0};   // slots with models on the device
  laz_gpu_mapping mapping{laz_gpu_mapping::layer_per_lane};
  std::size_t requested{0};  // the constructor's chunks_at_once (0: as many as the device holds)
  laz_gpu_layout layout{laz_gpu_layout::layered_point14};  // of the last decode(): the records' stride

  void lay_out_slots(std::size_t wanted);
  std::size_t stride() const { return laz_gpu_record_bytes_of(layout); }

  // Pointwise: slots of models (detail/laz/pointwise.hpp), laid out for `pointwise_extra` extra bytes.
  // For items without / with RGB (two kernels; 0: not yet known): blocks the device holds at once,
  // and slots a decode() uses at most.
  struct pointwise_limits {
    std::size_t resident_blocks{0};
    std::size_t max_slots{0};
  };
  pointwise_limits pointwise_limit[2];
  unsigned forced_lanes{0};      // set_pointwise_lanes (0: laz_pointwise_lanes)
  unsigned last_lanes{0};        // of the last pointwise decode()
  std::size_t last_blocks{0};    // chunks the last decode() decoded at once
  std::size_t pointwise_laid_out{0};
  std::uint32_t pointwise_extra{0};
  std::size_t pointwise_slot_bytes{0};
  device_buffer<unsigned char> pointwise_slots;
  void lay_out_pointwise_slots(std::size_t wanted, std::uint32_t extra_bytes);
  pointwise_limits pointwise_limits_of(detail::laz::pointwise_items const& items) const;
  void launch_layered(laz_gpu_format const& format, std::size_t chunk_count, unsigned blocks);
  std::size_t arena_u16{0};
  device_buffer<point14_channel> channels;
  device_buffer<std::uint16_t> arena;
  device_buffer<std::uint32_t> epochs;
  device_buffer<unsigned long long> counter;
  device_buffer<std::uint8_t> compressed;
  device_buffer<laz_gpu_chunk> chunks;
  device_buffer<laz_gpu_status> status;
  device_buffer<std::uint8_t> records;
  // decode()'s chunk table up and statuses down, page-locked: a pageable copy waits for the
  // driver's staging, which a pageable copy of another stream holds until that stream's work
  // before it is done. With statuses copied to pageable memory after the kernel, decoders of
  // several tiles on one GPU ran one after another (docs/benchmarks.md, "Tiled jobs on every GPU
  // of a host").
  pinned_buffer table;
  std::vector<void*> pinned;
  std::vector<void*> adopted;  // registered, std::free'd

  /// Selects the decoder's device on the calling thread (the runtime's current device is per
  /// thread: a stage's upload threads would otherwise copy through device 0's context).
  void use_device() const { HG_CUDA_TRY(cudaSetDevice(device)); }

  ~impl()
  {
    (void)cudaSetDevice(device);  // its buffers and stream are freed on their own device
    channels.reset();
    arena.reset();
    epochs.reset();
    pointwise_slots.reset();
    counter.reset();
    compressed.reset();
    chunks.reset();
    status.reset();
    records.reset();
    if (stream != nullptr) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
      // The models and buffers (gigabytes for a wave of 2000 chunks) go back to the driver now,
      // not when the process ends; memory other users hold is not touched. Best effort.
      int device = 0;
      cudaMemPool_t pool = nullptr;
      if (cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
        cudaMemPoolTrimTo(pool, 0);
      }
      cudaGetLastError();
    }
    for (void* p : pinned) { cudaFreeHost(p); }
    for (void* p : adopted) {
      cudaHostUnregister(p);
      std::free(p);
    }
    cudaGetLastError();
  }

  template <typename T>
  void reserve(device_buffer<T>& b, std::size_t n)
  {
    if (b.size() < n) {
      b.reset();
      b = device_buffer<T>(n, stream);
    }
  }
};

laz_gpu_decoder::laz_gpu_decoder(std::size_t threads, laz_gpu_mapping mapping)
{
  detail::require_device();
  impl_ = std::make_unique<impl>();
  impl& s = *impl_;
  HG_CUDA_TRY(cudaGetDevice(&s.device));
  HG_CUDA_TRY(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  s.mapping = mapping;
  s.requested = threads;
  s.arena_u16 = lay_out_point14_channel(nullptr, nullptr);
  if (threads == 0) {
    // As many chunks as the multiprocessors hold blocks of the kernel at once (its registers
    // decide: 64 a lane, 32 blocks a multiprocessor on sm_90): a chunk's decode is one long chain
    // of dependent instructions, so more chunks in flight hide more of its latency (16, 24 and 28
    // a multiprocessor measured in docs/benchmarks.md, "LAZ on the device"). At most a quarter of the free
    // memory goes to their models.
    int device = 0;
    int sms = 0;
    int per_sm = 0;
    HG_CUDA_TRY(cudaGetDevice(&device));
    HG_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    if (mapping == laz_gpu_mapping::chunk_per_thread) {
      HG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, decode_chunks_kernel<1>, 32, 0));
    } else {
      HG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, decode_chunks_kernel<roles>, 32, 0));
    }
    std::size_t free_bytes = 0, total_bytes = 0;
    HG_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
    std::size_t const slot_bytes = channels_per_slot * (sizeof(point14_channel) + s.arena_u16 * sizeof(std::uint16_t));
    threads = std::min(static_cast<std::size_t>(std::max(per_sm, 1)) * static_cast<std::size_t>(std::max(sms, 1)),
                       std::max<std::size_t>(free_bytes / 4 / slot_bytes, 1));
  }
  s.slots = threads;
  s.counter = device_buffer<unsigned long long>(1, s.stream);
  HG_CUDA_TRY(cudaStreamSynchronize(s.stream));
}

void laz_gpu_decoder::impl::lay_out_slots(std::size_t wanted)
{
  // Models for the chunks a decode() runs at once (~1 MiB each), made when a batch needs more.
  if (wanted <= laid_out) { return; }
  channels.reset();
  arena.reset();
  epochs.reset();
  std::size_t const n = wanted * channels_per_slot;
  channels = device_buffer<point14_channel>(n, stream);
  arena = device_buffer<std::uint16_t>(n * arena_u16, stream);
  epochs = device_buffer<std::uint32_t>(wanted * roles, stream);
  HG_CUDA_TRY(cudaMemsetAsync(epochs.data(), 0, wanted * roles * sizeof(std::uint32_t), stream));
  constexpr unsigned block = 128;
  lay_out_channels_kernel<<<static_cast<unsigned>((n + block - 1) / block), block, 0, stream>>>(
    channels.data(), arena.data(), arena_u16, n);
  HG_CUDA_TRY(cudaGetLastError());
  laid_out = wanted;
}

void laz_gpu_decoder::impl::lay_out_pointwise_slots(std::size_t wanted, std::uint32_t extra_bytes)
{
  // Slots laid out for more extra bytes serve fewer too (their byte models stay unused).
  if (wanted <= pointwise_laid_out && extra_bytes <= pointwise_extra) { return; }
  std::uint32_t const extra = std::max(extra_bytes, pointwise_extra);
  std::size_t const count = std::max(wanted, pointwise_laid_out);
  pointwise_slots.reset();
  pointwise_laid_out = 0;
  pointwise_slot_bytes = detail::laz::pointwise_slot_bytes(extra);
  pointwise_slots = device_buffer<unsigned char>(count * pointwise_slot_bytes, stream);
  detail::laz::launch_lay_out_pointwise(pointwise_slots.data(), count, pointwise_slot_bytes, extra, stream);
  pointwise_laid_out = count;
  pointwise_extra = extra;
}

laz_gpu_decoder::~laz_gpu_decoder() = default;

std::size_t laz_gpu_decoder::threads() const noexcept { return impl_->slots; }

std::size_t laz_gpu_decoder::last_chunks_at_once() const noexcept { return impl_->last_blocks; }

unsigned laz_gpu_decoder::last_pointwise_lanes() const noexcept { return impl_->last_lanes; }

void laz_gpu_decoder::set_pointwise_lanes(unsigned lanes)
{
  HG_EXPECTS(lanes == 0 || lanes == 1 || lanes == 2 || lanes == 4, error_kind::usage,
             "laz_gpu_decoder: pointwise lanes are 0 (chosen per call), 1, 2 or 4, not " + std::to_string(lanes));
  impl_->forced_lanes = lanes;
}

std::uint8_t* laz_gpu_decoder::pinned(std::size_t bytes)
{
  impl_->use_device();
  void* p = nullptr;
  HG_CUDA_TRY_ALLOC(cudaMallocHost(&p, std::max<std::size_t>(bytes, 1)), bytes, detail::memory_space::pinned_host);
  impl_->pinned.push_back(p);
  return static_cast<std::uint8_t*>(p);
}

std::uint8_t* laz_gpu_decoder::adopt_pinned(void* host, std::size_t bytes)
{
  HG_EXPECTS(host != nullptr && bytes > 0, error_kind::internal, "laz_gpu_decoder::adopt_pinned: no memory");
  impl_->use_device();
  cudaError_t const status = cudaHostRegister(host, bytes, cudaHostRegisterPortable);
  if (status != cudaSuccess) { std::free(host); }
  HG_CUDA_TRY_ALLOC(status, bytes, detail::memory_space::pinned_host);
  impl_->adopted.push_back(host);
  return static_cast<std::uint8_t*>(host);
}

void laz_gpu_decoder::reserve(std::size_t compressed_bytes, std::size_t records)
{
  impl& s = *impl_;
  s.use_device();
  s.reserve(s.compressed, compressed_bytes);
  s.reserve(s.records, records * laz_gpu_max_record_bytes);
  HG_CUDA_TRY(cudaStreamSynchronize(s.stream));
}

std::size_t laz_gpu_decoder::free_device_bytes() const
{
  impl_->use_device();
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  HG_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

void laz_gpu_decoder::upload(std::uint8_t const* host, std::size_t bytes, std::size_t offset)
{
  impl& s = *impl_;
  HG_EXPECTS(offset <= s.compressed.size() && bytes <= s.compressed.size() - offset, error_kind::usage,
             "laz_gpu_decoder::upload: past the reserved compressed bytes");
  if (bytes == 0) { return; }
  s.use_device();
  HG_CUDA_TRY(cudaMemcpyAsync(s.compressed.data() + offset, host, bytes, cudaMemcpyHostToDevice, s.stream));
  HG_CUDA_TRY(cudaStreamSynchronize(s.stream));
}

void const* laz_gpu_decoder::device_records() const noexcept { return impl_->records.data(); }

laz_gpu_layout laz_gpu_decoder::layout() const noexcept { return impl_->layout; }

void laz_gpu_decoder::download(std::size_t first, std::size_t count, std::uint8_t* host, laz_gpu_times* times)
{
  impl& s = *impl_;
  std::size_t const stride = s.stride();
  std::size_t const have = s.records.size() / stride;
  HG_EXPECTS(first <= have && count <= have - first, error_kind::usage,
             "laz_gpu_decoder::download: past the reserved records");
  if (count == 0) { return; }
  s.use_device();
  detail::cuda_event start, done;
  start.record(s.stream);
  HG_CUDA_TRY(cudaMemcpyAsync(host, s.records.data() + first * stride, count * stride, cudaMemcpyDeviceToHost,
                              s.stream));
  done.record(s.stream);
  HG_CUDA_TRY(cudaStreamSynchronize(s.stream));
  if (times != nullptr) { times->download_ms += detail::elapsed_ms(start, done); }
}

/// Launches the layered kernel of the decoder's mapping over `chunk_count` chunks in s.chunks.
void laz_gpu_decoder::impl::launch_layered(laz_gpu_format const& format, std::size_t chunk_count, unsigned blocks)
{
  impl& s = *this;
  point14_params p{};
  p.compressed = s.compressed.data();
  p.chunks = s.chunks.data();
  p.chunk_count = chunk_count;
  p.records = s.records.data();
  p.status = s.status.data();
  p.channels = s.channels.data();
  p.epochs = s.epochs.data();
  p.next_chunk = s.counter.data();
  p.record_length = format.record_length;
  p.layer_count = format.layer_count;
  p.z = format.z;
  p.classification = format.classification;
  p.flags = format.flags;

  if (s.mapping == laz_gpu_mapping::chunk_per_thread) {
    decode_chunks_kernel<1><<<blocks, 32, 0, s.stream>>>(p);
  } else {
    decode_chunks_kernel<roles><<<blocks, 32, 0, s.stream>>>(p);
  }
  HG_CUDA_TRY(cudaGetLastError());
}

/// The blocks of the pointwise kernel the multiprocessors hold at once (a chunk is one long chain
/// of dependent instructions: more chunks in flight hide more of its latency, as for the layered
/// kernel), and the slots a decode() uses at most: four a block (laz_pointwise_lanes), or the
/// constructor's count if it gave one; within a quarter of the free memory.
laz_gpu_decoder::impl::pointwise_limits laz_gpu_decoder::impl::pointwise_limits_of(
  detail::laz::pointwise_items const& items) const
{
  int device = 0;
  int sms = 0;
  HG_CUDA_TRY(cudaGetDevice(&device));
  HG_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int const per_sm = detail::laz::pointwise_blocks_per_multiprocessor(items);
  pointwise_limits l;
  l.resident_blocks = static_cast<std::size_t>(std::max(per_sm, 1)) * static_cast<std::size_t>(std::max(sms, 1));
  l.max_slots = requested != 0 ? requested : l.resident_blocks * 4;
  std::size_t free_bytes = 0, total_bytes = 0;
  HG_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  std::size_t const slot_bytes = detail::laz::pointwise_slot_bytes(items.extra_bytes);
  l.max_slots = std::min(l.max_slots, std::max<std::size_t>(free_bytes / 4 / slot_bytes, 1));
  return l;
}

std::vector<laz_gpu_status> laz_gpu_decoder::decode(laz_gpu_format const& format,
                                                    std::vector<laz_gpu_chunk> const& chunks, laz_gpu_times* times)
{
  impl& s = *impl_;
  bool const pointwise = format.layout == laz_gpu_layout::pointwise_point10;
  detail::laz::pointwise_items const items{format.gps_time, format.rgb, format.extra_bytes};
  if (pointwise) {
    HG_EXPECTS(format.extra_bytes <= 0xFFFFu && format.record_length == items.record_length(), error_kind::usage,
               "laz_gpu_decoder: a pointwise point10 record of these items has " +
                 std::to_string(items.record_length()) + " bytes, got " + std::to_string(format.record_length));
  } else {
    HG_EXPECTS(format.record_length >= 30 && format.layer_count >= point14_layers, error_kind::usage,
               "laz_gpu_decoder: a layered point14 record has >= 30 bytes and >= 9 layers, got " +
                 std::to_string(format.record_length) + " bytes and " + std::to_string(format.layer_count) +
                 " layers");
  }
  std::size_t const record_capacity = s.records.size() / laz_gpu_record_bytes_of(format.layout);
  for (auto const& c : chunks) {
    HG_EXPECTS(c.source <= s.compressed.size() && c.source_bytes <= s.compressed.size() - c.source,
               error_kind::usage, "laz_gpu_decoder: a chunk lies outside the compressed bytes");
    HG_EXPECTS(c.first_record <= record_capacity && c.points <= record_capacity - c.first_record, error_kind::usage,
               "laz_gpu_decoder: a chunk's records lie outside the reserved records");
  }
  s.layout = format.layout;
  std::vector<laz_gpu_status> result(chunks.size(), laz_gpu_status::not_decoded);
  if (chunks.empty()) { return result; }
  s.use_device();
  s.reserve(s.chunks, chunks.size());
  s.reserve(s.status, chunks.size());
  // The threads take chunks in this order as they finish: longest first, so that a call of
  // unequal chunks (a tile's last one is short) does not end on one thread's long chunk.
  std::vector<std::size_t> order(chunks.size());
  for (std::size_t i = 0; i < order.size(); ++i) { order[i] = i; }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return chunks[a].points > chunks[b].points; });
  std::size_t const table_bytes = chunks.size() * std::max(sizeof(laz_gpu_chunk), sizeof(laz_gpu_status));
  if (s.table.bytes() < table_bytes) { s.table = pinned_buffer(std::max(table_bytes, 2 * s.table.bytes())); }
  auto* const ordered = reinterpret_cast<laz_gpu_chunk*>(s.table.data());  // the previous call's copies are done
  for (std::size_t i = 0; i < order.size(); ++i) { ordered[i] = chunks[order[i]]; }

  detail::cuda_event start, decoded;
  HG_CUDA_TRY(cudaMemcpyAsync(s.chunks.data(), ordered, chunks.size() * sizeof(laz_gpu_chunk), cudaMemcpyHostToDevice,
                              s.stream));
  HG_CUDA_TRY(cudaMemsetAsync(s.counter.data(), 0, sizeof(unsigned long long), s.stream));
  if (pointwise) {
    auto& limits = s.pointwise_limit[items.rgb ? 1 : 0];
    if (limits.max_slots == 0) { limits = s.pointwise_limits_of(items); }
    // Lanes side by side in a warp, each its own chunk; blocks at most as many as the device holds
    // at once (or the constructor's count), each with a slot a lane.
    unsigned lanes = s.forced_lanes != 0 ? s.forced_lanes
                     : s.requested != 0  ? 1U
                                         : laz_pointwise_lanes(items.rgb, chunks.size(), limits.resident_blocks);
    while (lanes > 1 && limits.max_slots < lanes) { lanes /= 2; }
    std::size_t const wanted_blocks = (chunks.size() + lanes - 1) / lanes;
    std::size_t const fit = s.requested != 0 ? limits.max_slots / lanes
                                             : std::min(limits.resident_blocks, limits.max_slots / lanes);
    auto const blocks = static_cast<unsigned>(std::min(wanted_blocks, fit));
    s.last_blocks = std::min<std::size_t>(std::size_t{blocks} * lanes, chunks.size());
    s.last_lanes = lanes;
    s.lay_out_pointwise_slots(std::size_t{blocks} * lanes, format.extra_bytes);
    start.record(s.stream);
    detail::laz::pointwise_params p{};
    p.compressed = s.compressed.data();
    p.chunks = s.chunks.data();
    p.chunk_count = chunks.size();
    p.records = s.records.data();
    p.status = s.status.data();
    p.slots = s.pointwise_slots.data();
    p.slot_bytes = s.pointwise_slot_bytes;
    p.next_chunk = s.counter.data();
    p.items = items;
    detail::laz::launch_decode_pointwise(p, blocks, lanes, s.stream);
  } else {
    auto const blocks = static_cast<unsigned>(std::min(s.slots, chunks.size()));
    s.last_blocks = blocks;
    s.lay_out_slots(blocks);
    start.record(s.stream);
    s.launch_layered(format, chunks.size(), blocks);
  }
  decoded.record(s.stream);
  // Into the table, over the chunks: the kernel has read them from the device's copy.
  auto* const taken = reinterpret_cast<laz_gpu_status*>(s.table.data());
  HG_CUDA_TRY(cudaMemcpyAsync(taken, s.status.data(), chunks.size() * sizeof(laz_gpu_status), cudaMemcpyDeviceToHost,
                              s.stream));
  HG_CUDA_TRY(cudaStreamSynchronize(s.stream));
  for (std::size_t i = 0; i < order.size(); ++i) { result[order[i]] = taken[i]; }
  if (times != nullptr) { times->decode_ms += detail::elapsed_ms(start, decoded); }
  return result;
}

}  // namespace heightgrid
