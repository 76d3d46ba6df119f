// LAZ layered chunks (LASzip compressor 3, point14) decoded on the GPU, one chunk a block.
//
// The entropy coder and the point14 models are those of the CPU decoder (io/src/laz/laz_arith.*,
// laz_layered_point14.hpp), step for step: same 16-bit model tables, same search, same update
// schedule, so the records are the same bytes. What differs is where the state lives: a thread's
// models are in device memory (a slot of four scanner channels, ~1 MiB), its coder state in
// registers, a channel's hot state in registers and shared memory. Models are reset on first use
// after a channel starts (a stamp per model), as the CPU decoder does for its context models: a
// chunk touches a few dozen of its ~300 models.
//
// Pointwise chunks (compressor 2) go to laz_decode_pointwise.cu's kernel (the codec shared with
// the host: detail/laz/pointwise.hpp); laz_gpu_decoder drives both and dispatches on the layout.
//
// Mappings (laz_gpu_mapping): chunk_per_thread, one thread decodes a chunk's layers in turn;
// layer_per_lane, four lanes of a warp decode a chunk's XY, Z, classification and flags layers
// side by side (see below). Blocks take chunks from an atomic counter until none are left.

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/laz_tables.hpp"
#include "heightgrid/kernels/laz_gpu.hpp"

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/device_context.cuh"
#include "detail/laz/pointwise_launch.cuh"

#include <cuda/atomic>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace heightgrid {
namespace {

using detail::device_buffer;

constexpr std::uint32_t min_length = 0x01000000u;
constexpr std::uint32_t bit_length_shift = 13;
constexpr std::uint32_t bit_max_count = 1u << bit_length_shift;
constexpr std::uint32_t symbol_length_shift = 15;
constexpr std::uint32_t symbol_max_count = 1u << symbol_length_shift;

/// Bytes a layer decoder may read past its layer before the chunk is rejected (the CPU's rule).
constexpr std::uint32_t overrun_tolerance = 4;
constexpr std::uint32_t overrun_check_interval = 1024;

// ------------------------------------------------------------------------------------------
// Models
// ------------------------------------------------------------------------------------------

// A model's fields in one 32-byte sector (alignas: 468 vs 475 ms for 2000 chunks, H100).
struct alignas(32) bit_model {
  std::uint32_t stamp;
  std::uint32_t zero_count, total_count, zero_probability, update_cycle, until_update;
};

/// A symbol model: distribution[symbols], table[table_size + 2], counts[symbols] in `storage`.
struct alignas(32) symbol_model {
  std::uint16_t* storage;
  std::uint32_t stamp;
  std::uint16_t symbols;
  std::uint16_t table_size;  ///< 0: no lookup table
  std::uint32_t table_shift;
  std::uint32_t total_count, update_cycle, until_update;
};

__host__ __device__ constexpr std::uint32_t table_size_of(std::uint32_t symbols)
{
  if (symbols <= 16) { return 0; }
  std::uint32_t bits = 5;
  while (symbols > (1u << bits)) { ++bits; }
  return 1u << bits;
}

__host__ __device__ constexpr std::uint32_t table_bits_of(std::uint32_t table_size)
{
  std::uint32_t bits = 0;
  while ((1u << bits) < table_size) { ++bits; }
  return bits;
}

__host__ __device__ constexpr std::size_t storage_u16(std::uint32_t symbols)
{
  std::uint32_t const t = table_size_of(symbols);
  return std::size_t{symbols} * 2 + (t != 0 ? t + 2 : 0);
}

__device__ void update(symbol_model& m)
{
  std::uint32_t const n = m.symbols;
  std::uint16_t* const dist = m.storage;
  std::uint16_t* const table = m.storage + n;
  std::uint16_t* const c = m.storage + n + (m.table_size != 0 ? m.table_size + 2 : 0);
  m.total_count += m.update_cycle;
  if (m.total_count > symbol_max_count) {
    m.total_count = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      c[s] = static_cast<std::uint16_t>((c[s] + 1) >> 1);
      m.total_count += c[s];
    }
  }
  std::uint32_t const scale = 0x80000000u / m.total_count;
  std::uint32_t sum = 0;
  if (m.table_size == 0) {
    for (std::uint32_t s = 0; s < n; ++s) {
      dist[s] = static_cast<std::uint16_t>((scale * sum) >> (31 - symbol_length_shift));
      sum += c[s];
    }
  } else {
    for (std::uint32_t t = 0; t < m.table_size + 2; ++t) { table[t] = 0; }
    for (std::uint32_t s = 0; s < n; ++s) {
      dist[s] = static_cast<std::uint16_t>((scale * sum) >> (31 - symbol_length_shift));
      sum += c[s];
      ++table[(dist[s] >> m.table_shift) + 1];
    }
    std::uint32_t before = 0;
    for (std::uint32_t t = 1; t <= m.table_size + 1u; ++t) {
      before += table[t];
      table[t] = static_cast<std::uint16_t>(before - 1);
    }
    table[0] = 0;
  }
  m.update_cycle = (5 * m.update_cycle) >> 2;
  std::uint32_t const max_cycle = (n + 6) << 3;
  if (m.update_cycle > max_cycle) { m.update_cycle = max_cycle; }
  m.until_update = m.update_cycle;
}

/// The model as a fresh one, unless it was already reset for this channel start.
__device__ __forceinline__ symbol_model& use(symbol_model& m, std::uint32_t stamp)
{
  if (m.stamp != stamp) {
    std::uint32_t const n = m.symbols;
    std::uint16_t* const c = m.storage + n + (m.table_size != 0 ? m.table_size + 2 : 0);
    for (std::uint32_t s = 0; s < n; ++s) { c[s] = 1; }
    m.total_count = 0;
    m.update_cycle = n;
    update(m);
    m.total_count = n;
    m.update_cycle = (n + 6) >> 1;
    m.until_update = m.update_cycle;
    m.stamp = stamp;
  }
  return m;
}

__device__ __forceinline__ bit_model& use(bit_model& m, std::uint32_t stamp)
{
  if (m.stamp != stamp) {
    m.zero_count = 1;
    m.total_count = 2;
    m.zero_probability = 1u << (bit_length_shift - 1);
    m.update_cycle = 4;
    m.until_update = 4;
    m.stamp = stamp;
  }
  return m;
}

__device__ void update(bit_model& m)
{
  m.total_count += m.update_cycle;
  if (m.total_count > bit_max_count) {
    m.total_count = (m.total_count + 1) >> 1;
    m.zero_count = (m.zero_count + 1) >> 1;
    if (m.zero_count == m.total_count) { ++m.total_count; }
  }
  std::uint32_t const scale = 0x80000000u / m.total_count;
  m.zero_probability = (m.zero_count * scale) >> (31 - bit_length_shift);
  m.update_cycle = (5 * m.update_cycle) >> 2;
  if (m.update_cycle > 64) { m.update_cycle = 64; }
  m.until_update = m.update_cycle;
}

// ------------------------------------------------------------------------------------------
// The range decoder (registers)
// ------------------------------------------------------------------------------------------

struct range_decoder {
  std::uint8_t const* next;
  std::uint8_t const* end;
  std::uint32_t value;
  std::uint32_t length;
  std::uint32_t overrun;

  __device__ void init(std::uint8_t const* data, std::uint32_t size)
  {
    next = data;
    end = data + size;
    overrun = 0;
    length = 0xFFFFFFFFu;
    value = 0;
    for (int b = 0; b < 4; ++b) { value = (value << 8) | next_byte(); }
  }
  __device__ __forceinline__ std::uint32_t next_byte()
  {
    if (next != end) { return *next++; }
    ++overrun;
    return 0;
  }
  __device__ __forceinline__ void renormalise()
  {
    do {
      value = (value << 8) | next_byte();
      length <<= 8;
    } while (length < min_length);
  }

  __device__ std::uint32_t decode_bit(bit_model& m)
  {
    std::uint32_t const x = m.zero_probability * (length >> bit_length_shift);
    std::uint32_t bit;
    if (value < x) {
      bit = 0;
      length = x;
      ++m.zero_count;
    } else {
      bit = 1;
      value -= x;
      length -= x;
    }
    if (length < min_length) { renormalise(); }
    if (--m.until_update == 0) { update(m); }
    return bit;
  }

  __device__ std::uint32_t decode_symbol(symbol_model& m)
  {
    std::uint16_t const* const dist = m.storage;
    std::uint32_t const unit = length >> symbol_length_shift;
    std::uint32_t symbol;
    if (m.table_size != 0) {
      std::uint32_t const target = value / unit;
      std::uint32_t slot = target >> m.table_shift;
      if (slot > m.table_size) { slot = m.table_size; }
      std::uint16_t const* const table = m.storage + m.symbols;
      symbol = table[slot];
      std::uint32_t n = std::uint32_t{table[slot + 1]} + 1 - symbol;
      while (n > 1) {
        std::uint32_t const half = n >> 1;
        symbol = dist[symbol + half] <= target ? symbol + half : symbol;
        n -= half;
      }
    } else {
      symbol = 0;
      std::uint32_t n = m.symbols;
      while (n > 1) {
        std::uint32_t const half = n >> 1;
        symbol = unit * std::uint32_t{dist[symbol + half]} <= value ? symbol + half : symbol;
        n -= half;
      }
    }
    std::uint32_t const low = std::uint32_t{dist[symbol]} * unit;
    std::uint32_t const high = symbol != m.symbols - 1u ? std::uint32_t{dist[symbol + 1]} * unit : length;
    value -= low;
    length = high - low;
    if (length < min_length) { renormalise(); }
    std::uint16_t* const c = m.storage + m.symbols + (m.table_size != 0 ? m.table_size + 2 : 0);
    ++c[symbol];
    if (--m.until_update == 0) { update(m); }
    return symbol;
  }

  __device__ std::uint32_t read_raw(std::uint32_t bits)
  {
    length >>= bits;
    std::uint32_t symbol = value / length;
    std::uint32_t const limit = (1u << bits) - 1;  // bits <= 19 here
    if (symbol > limit) { symbol = limit; }
    value -= length * symbol;
    if (length < min_length) { renormalise(); }
    return symbol;
  }
  __device__ std::uint32_t read_bits(std::uint32_t bits)
  {
    if (bits > 19) {
      std::uint32_t const low = read_raw(16);
      std::uint32_t const high = read_raw(bits - 16);
      return (high << 16) | low;
    }
    return read_raw(bits);
  }
};

// ------------------------------------------------------------------------------------------
// The 32-bit integer decompressor (X, Y, Z steps): corr_bits 32, bits_high 8, no range folding
// ------------------------------------------------------------------------------------------

constexpr std::uint32_t corrector_models = 32;  // index k = 1..31; k >= 32 needs no model

template <int Contexts>
struct int32_decompressor {
  symbol_model k_models[Contexts];  // 33 symbols
  symbol_model corrector[corrector_models];
  bit_model zero;

  /// The integer predicted by `pred`; `k` receives the number of corrector bits (a context of the
  /// next coordinates).
  __device__ std::int32_t decompress(range_decoder& dec, std::int32_t pred, std::uint32_t context,
                                     std::uint32_t stamp, std::uint32_t& k)
  {
    if (context >= Contexts) { context = Contexts - 1; }
    k = dec.decode_symbol(use(k_models[context], stamp));
    std::int32_t c;
    if (k == 0) {
      c = static_cast<std::int32_t>(dec.decode_bit(use(zero, stamp)));
    } else if (k >= 32) {
      c = INT32_MIN;
    } else {
      std::uint32_t v = dec.decode_symbol(use(corrector[k], stamp));
      if (k > 8) { v = (v << (k - 8)) | dec.read_bits(k - 8); }
      c = v >= (1u << (k - 1)) ? static_cast<std::int32_t>(v + 1)
                               : static_cast<std::int32_t>(v - ((1u << k) - 1));
    }
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(pred) + static_cast<std::uint32_t>(c));
  }
};

/// LASzip's running median of five (laz_arith.hpp's median_of_five, same update).
struct median5 {
  std::int32_t v[5];
  bool replace_high;
  __device__ void reset()
  {
    for (auto& x : v) { x = 0; }
    replace_high = true;
  }
  __device__ std::int32_t get() const { return v[2]; }
  __device__ void add(std::int32_t x)
  {
    std::int32_t const* const w = v + (replace_high ? 0 : 1);
    std::int32_t const w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
    replace_high = x < v[2] || (!replace_high && x == v[2]);
    v[0] = min(w0, x);
    v[1] = max(w0, min(w1, x));
    v[2] = max(w1, min(w2, x));
    v[3] = max(w2, min(w3, x));
    v[4] = max(w3, x);
  }
};

// ------------------------------------------------------------------------------------------
// point14: one scanner channel's state
// ------------------------------------------------------------------------------------------

struct point14_last {
  std::int32_t x, y, z;
  std::uint8_t return_number, number_of_returns, flags, channel, classification;
};

/// The roles of the lanes of a layer-per-lane block (laz_gpu_mapping::layer_per_lane).
enum role : unsigned { role_xy, role_z, role_classification, role_flags, roles };

struct channel_state {
  std::uint32_t role_stamp[roles];  // the stamp of each layer's models (the lane that decodes it)
  // The last Z, classification and flags of the channel, each kept by its lane.
  std::int32_t z_last;
  std::uint8_t classification_last, flags_last;
  bool last_gps_changed;
  point14_last last;
  symbol_model changed[8];  // 128
  symbol_model channel_step;  // 3
  symbol_model number_of_returns[16];  // 16
  symbol_model return_number[16];  // 16
  symbol_model return_step;  // 13
  int32_decompressor<2> dx;
  int32_decompressor<22> dy;
  int32_decompressor<20> z;
  median5 dx_median[12], dy_median[12];
  std::int32_t last_z[8];
  symbol_model classification[64];  // 256
  symbol_model flags[64];  // 64
};

/// Gives every model of `c` its storage in `arena` (c == nullptr: only counts); returns the
/// 16-bit words used. Host and device walk the models in the same order.
__host__ __device__ std::size_t lay_out(channel_state* c, std::uint16_t* arena)
{
  std::size_t used = 0;
  auto place = [&](symbol_model* m, std::uint32_t symbols) {
    if (c != nullptr) {
      std::uint32_t const t = table_size_of(symbols);
      m->storage = arena + used;
      m->stamp = 0;
      m->symbols = static_cast<std::uint16_t>(symbols);
      m->table_size = static_cast<std::uint16_t>(t);
      m->table_shift = t != 0 ? symbol_length_shift - table_bits_of(t) : 0;
    }
    used += storage_u16(symbols);
  };
  auto place_ic = [&](symbol_model* k_models, int contexts, symbol_model* corrector) {
    for (int i = 0; i < contexts; ++i) { place(c != nullptr ? k_models + i : nullptr, 33); }
    for (std::uint32_t k = 1; k < corrector_models; ++k) {
      place(c != nullptr ? corrector + k : nullptr, 1u << (k <= 8 ? k : 8));
    }
  };
  for (int i = 0; i < 8; ++i) { place(c != nullptr ? c->changed + i : nullptr, 128); }
  place(c != nullptr ? &c->channel_step : nullptr, 3);
  for (int i = 0; i < 16; ++i) { place(c != nullptr ? c->number_of_returns + i : nullptr, 16); }
  for (int i = 0; i < 16; ++i) { place(c != nullptr ? c->return_number + i : nullptr, 16); }
  place(c != nullptr ? &c->return_step : nullptr, 13);
  place_ic(c != nullptr ? c->dx.k_models : nullptr, 2, c != nullptr ? c->dx.corrector : nullptr);
  place_ic(c != nullptr ? c->dy.k_models : nullptr, 22, c != nullptr ? c->dy.corrector : nullptr);
  place_ic(c != nullptr ? c->z.k_models : nullptr, 20, c != nullptr ? c->z.corrector : nullptr);
  for (int i = 0; i < 64; ++i) { place(c != nullptr ? c->classification + i : nullptr, 256); }
  for (int i = 0; i < 64; ++i) { place(c != nullptr ? c->flags + i : nullptr, 64); }
  if (c != nullptr) {
    for (auto& r : c->role_stamp) { r = 0; }
    c->dx.zero.stamp = c->dy.zero.stamp = c->z.zero.stamp = 0;
    c->dx.corrector[0].stamp = c->dy.corrector[0].stamp = c->z.corrector[0].stamp = 0;
  }
  return used;
}

constexpr int channels_per_slot = 4;

__global__ void lay_out_channels_kernel(channel_state* channels, std::uint16_t* arena, std::size_t arena_u16,
                                        std::size_t count)
{
  std::size_t const i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i < count) { lay_out(channels + i, arena + i * arena_u16); }
}

// ------------------------------------------------------------------------------------------
// The chunk
// ------------------------------------------------------------------------------------------

/// core/laz_tables.hpp's table, in constant memory.
__constant__ laz_xy_predictor_table const xy_predictor = laz_xy_predictor;

constexpr unsigned changed_channel = 1u << 6;
constexpr unsigned changed_gps_time = 1u << 4;
constexpr unsigned changed_number_of_returns = 1u << 2;
constexpr unsigned changed_return_number_mask = 3u;

enum : unsigned { layer_xy, layer_z, layer_classification, layer_flags, point14_layers = 9 };

__device__ __forceinline__ std::uint32_t load_u32(std::uint8_t const* p)
{
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}

/// The first 18 bytes of `p`'s record (intensity and user data zero), in 16-bit stores: records
/// are 18 bytes apart, so 2-byte aligned.
__device__ __forceinline__ void store_record(point14_last const& p, std::uint8_t* record)
{
  auto* const h = reinterpret_cast<std::uint16_t*>(record);
  auto const x = static_cast<std::uint32_t>(p.x);
  auto const y = static_cast<std::uint32_t>(p.y);
  auto const z = static_cast<std::uint32_t>(p.z);
  unsigned const returns = p.return_number | (p.number_of_returns << 4);
  unsigned const flags = (p.flags & 0x0Fu) | (unsigned{p.channel} << 4) | ((p.flags & 0x30u) << 2);
  h[0] = static_cast<std::uint16_t>(x);
  h[1] = static_cast<std::uint16_t>(x >> 16);
  h[2] = static_cast<std::uint16_t>(y);
  h[3] = static_cast<std::uint16_t>(y >> 16);
  h[4] = static_cast<std::uint16_t>(z);
  h[5] = static_cast<std::uint16_t>(z >> 16);
  h[6] = 0;  // intensity
  h[7] = static_cast<std::uint16_t>((returns & 0xFFu) | ((flags & 0xFFu) << 8));
  h[8] = p.classification;  // user data 0
}

struct decode_params {
  std::uint8_t const* compressed;
  laz_gpu_chunk const* chunks;
  std::size_t chunk_count;
  std::uint8_t* records;
  laz_gpu_status* status;
  channel_state* channels;  // channels_per_slot a slot
  std::uint32_t* epochs;    // a slot's last stamp
  unsigned long long* next_chunk;
  std::uint32_t record_length;
  std::uint32_t layer_count;
  bool z, classification, flags;
};

// ------------------------------------------------------------------------------------------
// layer_per_lane: the layers of a chunk decoded side by side
// ------------------------------------------------------------------------------------------
//
// A block of one warp takes a chunk; lane 0 decodes the channel/returns/XY layer and lanes 1-3 the
// Z, classification and flags layers, each with its own coder and models (the other lanes idle).
// Lanes of one warp diverge here on purpose: independent thread scheduling (sm_70 on) interleaves
// their paths, and a lane may spin on another. The warp still issues one lane's instruction at a
// time (ncu: 1.0 active threads a warp), so the lanes fill each other's latency gaps rather than
// run at once. The XY lane runs ahead: it writes X, Y, the returns byte, the channel (in the flags
// byte) and the Z context k (in the Z slot) of each point into the record and publishes how many
// records hold them in shared memory; the others follow, read what they need from the record and
// write their own bytes (Z 8-11, flags 15, classification and user data 16-17). A chunk takes as
// long as its XY layer: 475 vs 483 ms (all layers on one lane) for 2000 chunks of 50,000 points on
// an H100, and the XY lane alone in a warp of its own (followers in a second warp) decodes a round
// of chunks no faster while fitting fewer at once. Its models sit in L1 (98.7 % hits): the bound is
// the XY chain's instructions (~1,400 a point for the four layers, ~7 cycles each), not memory;
// models copied into shared memory made it slower (docs/benchmarks-history.md). Each lane tracks
// the scanner channels itself (they switch on the XY lane's word) and keeps its own per-channel
// state and stamps.

struct block_chunk {
  unsigned long long chunk;
  laz_gpu_status status;
  std::uint32_t points;
  std::uint8_t const* layer_data[4];
  std::uint32_t layer_size[4];
  point14_last first;
  std::uint32_t progress;  // records [0, progress) hold the XY lane's bytes
  std::uint32_t abort;     // the XY layer failed: the others stop
  std::uint32_t overrun[roles];
};

/// Checks the chunk header and fills `sh` (layers, first point); writes record 0.
__device__ laz_gpu_status start_chunk(decode_params const& p, laz_gpu_chunk const& chunk, block_chunk& sh)
{
  std::uint8_t const* const data = p.compressed + chunk.source;
  std::uint64_t const size = chunk.source_bytes;
  std::uint64_t const header = p.record_length + 4ull + 4ull * p.layer_count;
  if (size < header) { return laz_gpu_status::short_header; }
  std::uint32_t const points = load_u32(data + p.record_length);
  if (points == 0 || points != chunk.points) { return laz_gpu_status::bad_point_count; }
  std::uint64_t position = header;
  for (std::uint32_t l = 0; l < p.layer_count; ++l) {
    std::uint32_t const bytes = load_u32(data + p.record_length + 4 + 4 * l);
    if (bytes > size - position) { return laz_gpu_status::layer_past_end; }
    if (l < 4) {
      sh.layer_data[l] = data + position;
      sh.layer_size[l] = bytes;
    }
    position += bytes;
  }
  if (points > 1 && sh.layer_size[layer_xy] == 0) { return laz_gpu_status::empty_xy_layer; }
  sh.points = points;
  point14_last& first = sh.first;
  first.x = static_cast<std::int32_t>(load_u32(data));
  first.y = static_cast<std::int32_t>(load_u32(data + 4));
  first.z = p.z ? static_cast<std::int32_t>(load_u32(data + 8)) : 0;
  first.return_number = data[14] & 0x0F;
  first.number_of_returns = data[14] >> 4;
  first.flags = p.flags ? static_cast<std::uint8_t>((data[15] & 0x0F) | ((data[15] >> 2) & 0x30)) : 0;
  first.channel = (data[15] >> 4) & 3;
  first.classification = p.classification ? data[16] : 0;
  store_record(first, p.records + chunk.first_record * laz_gpu_record_bytes);
  return laz_gpu_status::ok;
}

/// The XY lane's part: channel, returns, X and Y of points 1.. ; returns false when its layer ran
/// past its end (the chunk is then rejected). The current channel's last point is kept in
/// registers and its X/Y step medians in shared memory, saved to its channel_state only when
/// another channel takes over: device-memory round trips on the lane's critical path otherwise.
__device__ bool decode_xy_layer(block_chunk& sh, std::uint8_t* out, channel_state* slot, std::uint32_t& epoch)
{
  __shared__ median5 medians[2][12];  // [x or y][predictor << 1 | GPS changed] of the current channel
  range_decoder xy;
  xy.init(sh.layer_data[layer_xy], sh.layer_size[layer_xy]);
  point14_last const first = sh.first;
  std::int32_t x = first.x, y = first.y;
  unsigned r = first.return_number, n = first.number_of_returns;
  bool gps_last = false;
  unsigned active = 0;
  unsigned current = first.channel;
  channel_state* ch = slot + current;
  std::uint32_t stamp = 0;
  auto start_channel = [&](unsigned channel) {  // its first use in the chunk, from the registers
    active |= 1u << channel;
    stamp = ++epoch;
    slot[channel].role_stamp[role_xy] = stamp;
    gps_last = false;
    for (auto& m : medians[0]) { m.reset(); }
    for (auto& m : medians[1]) { m.reset(); }
  };
  start_channel(current);
  std::uint32_t const points = sh.points;
  // Publishes records to the other lanes: a release store, read with acquire loads (wait_for_xy).
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_block> const progress(sh.progress);
  for (std::uint32_t i = 1; i < points; ++i) {
    if (i % overrun_check_interval == 0 && xy.overrun > overrun_tolerance) { return false; }
    unsigned const ctx = (r == 1 ? 1u : 0u) | (r >= n ? 2u : 0u) | (gps_last ? 4u : 0u);
    unsigned const changed = xy.decode_symbol(use(ch->changed[ctx], stamp));
    if (changed & changed_channel) {
      unsigned const step = xy.decode_symbol(use(ch->channel_step, stamp));
      unsigned const next = (current + step + 1) & 3u;
      // The channel going out keeps its state; the next one starts from the last point (its first
      // use) or takes its own back.
      ch->last.x = x;
      ch->last.y = y;
      ch->last.return_number = static_cast<std::uint8_t>(r);
      ch->last.number_of_returns = static_cast<std::uint8_t>(n);
      ch->last_gps_changed = gps_last;
      for (int k = 0; k < 12; ++k) {
        ch->dx_median[k] = medians[0][k];
        ch->dy_median[k] = medians[1][k];
      }
      current = next;
      ch = slot + next;
      if ((active & (1u << next)) == 0) {
        start_channel(next);
      } else {
        x = ch->last.x;
        y = ch->last.y;
        r = ch->last.return_number;
        n = ch->last.number_of_returns;
        gps_last = ch->last_gps_changed;
        stamp = ch->role_stamp[role_xy];
        for (int k = 0; k < 12; ++k) {
          medians[0][k] = ch->dx_median[k];
          medians[1][k] = ch->dy_median[k];
        }
      }
    }
    unsigned const gps_changed = (changed & changed_gps_time) ? 1u : 0u;
    if (changed & changed_number_of_returns) { n = xy.decode_symbol(use(ch->number_of_returns[n & 15], stamp)) & 15; }
    switch (changed & changed_return_number_mask) {
      case 0: break;
      case 1: r = (r + 1) & 15; break;
      case 2: r = (r + 15) & 15; break;
      default:
        if (gps_changed) {
          r = xy.decode_symbol(use(ch->return_number[r & 15], stamp)) & 15;
        } else {
          r = (r + xy.decode_symbol(use(ch->return_step, stamp)) + 2) & 15;
        }
        break;
    }
    unsigned const single = n == 1 ? 1u : 0u;
    unsigned const m = (unsigned{xy_predictor.of_return[n][r]} << 1) | gps_changed;
    std::uint32_t kx = 0, ky = 0;
    std::int32_t const step_x = ch->dx.decompress(xy, medians[0][m].get(), single, stamp, kx);
    x = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) + static_cast<std::uint32_t>(step_x));
    medians[0][m].add(step_x);
    std::int32_t const step_y =
      ch->dy.decompress(xy, medians[1][m].get(), single + (kx < 20 ? (kx & ~1u) : 20), stamp, ky);
    y = static_cast<std::int32_t>(static_cast<std::uint32_t>(y) + static_cast<std::uint32_t>(step_y));
    medians[1][m].add(step_y);
    gps_last = gps_changed != 0;

    std::uint8_t* const rec = out + std::size_t{i} * laz_gpu_record_bytes;
    auto* const h = reinterpret_cast<std::uint16_t*>(rec);
    h[0] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(x));
    h[1] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(x) >> 16);
    h[2] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(y));
    h[3] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(y) >> 16);
    h[6] = 0;  // intensity
    rec[8] = static_cast<std::uint8_t>((kx + ky) / 2);  // for the Z lane, which overwrites it
    rec[14] = static_cast<std::uint8_t>(r | (n << 4));
    rec[15] = static_cast<std::uint8_t>(current << 4);  // for the flags lane, which completes it
    if ((i & 31) == 31) { progress.store(i + 1, cuda::memory_order_release); }
  }
  progress.store(points, cuda::memory_order_release);
  return xy.overrun <= overrun_tolerance;
}

/// Waits until record i holds the XY lane's bytes; false when the XY lane gave up.
__device__ __forceinline__ bool wait_for_xy(block_chunk& sh, std::uint32_t i, std::uint32_t& seen)
{
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_block> const progress(sh.progress);
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_block> const abort(sh.abort);
  while (seen <= i) {
    if (abort.load(cuda::memory_order_relaxed) != 0) { return false; }
    seen = progress.load(cuda::memory_order_acquire);
    if (seen <= i) { __nanosleep(64); }
  }
  return true;
}

/// One of the Z, classification and flags lanes: follows the XY lane through the chunk.
template <unsigned Role>
__device__ bool decode_follower_layer(decode_params const& p, block_chunk& sh, std::uint8_t* out, channel_state* slot,
                                      std::uint32_t& epoch)
{
  // The current channel's last value of this lane's field in a register, and (Z) its eight
  // previous heights in shared memory; saved to its channel_state when another channel takes over.
  __shared__ std::int32_t last_z[8];
  unsigned const layer = Role == role_z ? layer_z : Role == role_classification ? layer_classification : layer_flags;
  bool const selected = Role == role_z ? p.z : Role == role_classification ? p.classification : p.flags;
  bool const live = selected && sh.layer_size[layer] != 0;
  range_decoder dec;
  if (live) { dec.init(sh.layer_data[layer], sh.layer_size[layer]); }
  point14_last const first = sh.first;
  std::int32_t value = Role == role_z ? first.z : Role == role_classification ? first.classification : first.flags;
  unsigned active = 0;
  unsigned current = first.channel;
  channel_state* ch = slot + current;
  std::uint32_t stamp = 0;
  auto start_channel = [&](unsigned channel) {  // its first use in the chunk, from `value`
    active |= 1u << channel;
    stamp = ++epoch;
    slot[channel].role_stamp[Role] = stamp;
    if constexpr (Role == role_z) {
      for (auto& v : last_z) { v = value; }
    }
  };
  start_channel(current);
  std::uint32_t seen = 1;
  std::uint32_t const points = sh.points;
  for (std::uint32_t i = 1; i < points; ++i) {
    if (!wait_for_xy(sh, i, seen)) { return true; }  // the XY lane reports the chunk
    std::uint8_t* const rec = out + std::size_t{i} * laz_gpu_record_bytes;
    unsigned const channel = (rec[15] >> 4) & 3u;
    if (channel != current) {
      if constexpr (Role == role_z) {
        ch->z_last = value;
        for (int k = 0; k < 8; ++k) { ch->last_z[k] = last_z[k]; }
      } else if constexpr (Role == role_classification) {
        ch->classification_last = static_cast<std::uint8_t>(value);
      } else {
        ch->flags_last = static_cast<std::uint8_t>(value);
      }
      current = channel;
      ch = slot + channel;
      if ((active & (1u << channel)) == 0) {
        start_channel(channel);
      } else {
        stamp = ch->role_stamp[Role];
        if constexpr (Role == role_z) {
          value = ch->z_last;
          for (int k = 0; k < 8; ++k) { last_z[k] = ch->last_z[k]; }
        } else if constexpr (Role == role_classification) {
          value = ch->classification_last;
        } else {
          value = ch->flags_last;
        }
      }
    }
    unsigned const r = rec[14] & 15u;
    unsigned const n = rec[14] >> 4;
    if constexpr (Role == role_z) {
      if (live) {
        unsigned const k = rec[8];
        unsigned const single = n == 1 ? 1u : 0u;
        unsigned const d = n > r ? n - r : r - n;
        unsigned const level = d < 7 ? d : 7;
        std::uint32_t kz = 0;
        value = ch->z.decompress(dec, last_z[level], single + (k < 18 ? (k & ~1u) : 18), stamp, kz);
        last_z[level] = value;
      }
      auto* const h = reinterpret_cast<std::uint16_t*>(rec);
      h[4] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(value));
      h[5] = static_cast<std::uint16_t>(static_cast<std::uint32_t>(value) >> 16);
    } else if constexpr (Role == role_classification) {
      if (live) {
        unsigned const first_last = (r == 1 ? 1u : 0u) | (r >= n ? 2u : 0u);
        unsigned const ctx = ((static_cast<unsigned>(value) & 0x1Fu) << 1) | (first_last == 3 ? 1u : 0u);
        value = static_cast<std::int32_t>(dec.decode_symbol(use(ch->classification[ctx], stamp)));
      }
      reinterpret_cast<std::uint16_t*>(rec)[8] = static_cast<std::uint16_t>(value & 0xFF);  // user data 0
    } else {
      if (live) { value = static_cast<std::int32_t>(dec.decode_symbol(use(ch->flags[value & 63], stamp)) & 63); }
      auto const f = static_cast<unsigned>(value);
      rec[15] = static_cast<std::uint8_t>((f & 0x0Fu) | (current << 4) | ((f & 0x30u) << 2));
    }
  }
  return !live || dec.overrun <= overrun_tolerance;
}

/// Both mappings. `Lanes` = roles (layer_per_lane): lane r decodes layer r, side by side. `Lanes`
/// = 1 (chunk_per_thread): lane 0 decodes the four layers one after the other (each follower then
/// finds every record published). One block of 32 threads a chunk at a time; blocks take chunks from
/// an atomic counter. Lanes of a warp on different chunks would diverge on every data-dependent
/// branch: one thread a chunk with 1, 4, 8 or 32 chunks a warp gave 667, 840, 1104 and 2156 ms for
/// 2000 chunks of 50,000 points (H200), so a warp never holds more than one chunk.
template <unsigned Lanes>
__global__ void __launch_bounds__(32) decode_chunks_kernel(decode_params p)
{
  static_assert(Lanes == 1 || Lanes == roles, "a lane per layer, or one lane for all");
  __shared__ block_chunk sh;
  bool const leader = threadIdx.x < Lanes;
  std::size_t const slot = blockIdx.x;
  channel_state* const channels = p.channels + slot * channels_per_slot;
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
      if (sh.chunk < p.chunk_count) { sh.status = start_chunk(p, p.chunks[sh.chunk], sh); }
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
  cudaStream_t stream{nullptr};
  std::size_t slots{0};      // chunks decoded at once, at most
  std::size_t laid_out{0};   // slots with models on the device
  laz_gpu_mapping mapping{laz_gpu_mapping::layer_per_lane};
  std::size_t requested{0};  // the constructor's chunks_at_once (0: as many as the device holds)
  laz_gpu_layout layout{laz_gpu_layout::layered_point14};  // of the last decode(): the records' stride

  void lay_out_slots(std::size_t wanted);
  std::size_t stride() const { return laz_gpu_record_bytes_of(layout); }

  // Pointwise: slots of models (detail/laz/pointwise.hpp), laid out for `pointwise_extra` extra bytes.
  std::size_t pointwise_max{0};  // slots a pointwise decode() uses at most; 0: not yet known
  std::size_t pointwise_laid_out{0};
  std::uint32_t pointwise_extra{0};
  std::size_t pointwise_slot_bytes{0};
  device_buffer<unsigned char> pointwise_slots;
  void lay_out_pointwise_slots(std::size_t wanted, std::uint32_t extra_bytes);
  std::size_t pointwise_slots_of(std::uint32_t extra_bytes) const;
  void launch_layered(laz_gpu_format const& format, std::size_t chunk_count, unsigned blocks);
  std::size_t arena_u16{0};
  device_buffer<channel_state> channels;
  device_buffer<std::uint16_t> arena;
  device_buffer<std::uint32_t> epochs;
  device_buffer<unsigned long long> counter;
  device_buffer<std::uint8_t> compressed;
  device_buffer<laz_gpu_chunk> chunks;
  device_buffer<laz_gpu_status> status;
  device_buffer<std::uint8_t> records;
  std::vector<void*> pinned;

  ~impl()
  {
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
  HG_CUDA_TRY(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  s.mapping = mapping;
  s.requested = threads;
  s.arena_u16 = lay_out(nullptr, nullptr);
  if (threads == 0) {
    // As many chunks as the multiprocessors hold blocks of the kernel at once (its registers
    // decide: 72 a lane, 28 blocks a multiprocessor on sm_90): a chunk's decode is one long chain
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
    std::size_t const slot_bytes = channels_per_slot * (sizeof(channel_state) + s.arena_u16 * sizeof(std::uint16_t));
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
  channels = device_buffer<channel_state>(n, stream);
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

std::uint8_t* laz_gpu_decoder::pinned(std::size_t bytes)
{
  void* p = nullptr;
  HG_CUDA_TRY_ALLOC(cudaMallocHost(&p, std::max<std::size_t>(bytes, 1)), bytes, detail::memory_space::pinned_host);
  impl_->pinned.push_back(p);
  return static_cast<std::uint8_t*>(p);
}

void laz_gpu_decoder::reserve(std::size_t compressed_bytes, std::size_t records)
{
  impl& s = *impl_;
  s.reserve(s.compressed, compressed_bytes);
  s.reserve(s.records, records * laz_gpu_max_record_bytes);
  HG_CUDA_TRY(cudaStreamSynchronize(s.stream));
}

std::size_t laz_gpu_decoder::free_device_bytes() const
{
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
  decode_params p{};
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

/// Slots a pointwise decode() uses at most: as many as the multiprocessors hold blocks of its kernel
/// (a chunk is one long chain of dependent instructions: more chunks in flight hide more latency,
/// as for the layered kernel), the constructor's count if it gave one; within a quarter of the free
/// memory.
std::size_t laz_gpu_decoder::impl::pointwise_slots_of(std::uint32_t extra_bytes) const
{
  std::size_t wanted = requested;
  if (wanted == 0) {
    int device = 0;
    int sms = 0;
    HG_CUDA_TRY(cudaGetDevice(&device));
    HG_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    int const per_sm = detail::laz::pointwise_blocks_per_multiprocessor();
    wanted = static_cast<std::size_t>(std::max(per_sm, 1)) * static_cast<std::size_t>(std::max(sms, 1));
  }
  std::size_t free_bytes = 0, total_bytes = 0;
  HG_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  return std::min(wanted, std::max<std::size_t>(free_bytes / 4 / detail::laz::pointwise_slot_bytes(extra_bytes), 1));
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
  s.reserve(s.chunks, chunks.size());
  s.reserve(s.status, chunks.size());
  // The threads take chunks in this order as they finish: longest first, so that a call of
  // unequal chunks (a tile's last one is short) does not end on one thread's long chunk.
  std::vector<std::size_t> order(chunks.size());
  for (std::size_t i = 0; i < order.size(); ++i) { order[i] = i; }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return chunks[a].points > chunks[b].points; });
  std::vector<laz_gpu_chunk> ordered(chunks.size());
  for (std::size_t i = 0; i < order.size(); ++i) { ordered[i] = chunks[order[i]]; }

  detail::cuda_event start, decoded;
  HG_CUDA_TRY(cudaMemcpyAsync(s.chunks.data(), ordered.data(), ordered.size() * sizeof(laz_gpu_chunk),
                              cudaMemcpyHostToDevice, s.stream));
  HG_CUDA_TRY(cudaMemsetAsync(s.counter.data(), 0, sizeof(unsigned long long), s.stream));
  if (pointwise) {
    if (s.pointwise_max == 0) { s.pointwise_max = s.pointwise_slots_of(format.extra_bytes); }
    auto const blocks = static_cast<unsigned>(std::min(s.pointwise_max, chunks.size()));
    s.lay_out_pointwise_slots(blocks, format.extra_bytes);
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
    detail::laz::launch_decode_pointwise(p, blocks, s.stream);
  } else {
    auto const blocks = static_cast<unsigned>(std::min(s.slots, chunks.size()));
    s.lay_out_slots(blocks);
    start.record(s.stream);
    s.launch_layered(format, chunks.size(), blocks);
  }
  decoded.record(s.stream);
  std::vector<laz_gpu_status> taken(chunks.size(), laz_gpu_status::not_decoded);
  HG_CUDA_TRY(cudaMemcpyAsync(taken.data(), s.status.data(), chunks.size() * sizeof(laz_gpu_status),
                              cudaMemcpyDeviceToHost, s.stream));
  HG_CUDA_TRY(cudaStreamSynchronize(s.stream));
  for (std::size_t i = 0; i < order.size(); ++i) { result[order[i]] = taken[i]; }
  if (times != nullptr) { times->decode_ms += detail::elapsed_ms(start, decoded); }
  return result;
}

}  // namespace heightgrid
