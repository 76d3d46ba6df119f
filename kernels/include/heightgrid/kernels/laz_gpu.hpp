#pragma once
// LAZ decoding on the GPU: layered LASzip chunks (compressor 3, LAS 1.4 point formats 6-10) and
// pointwise ones (compressor 2 with items point10, gpstime11, rgb12 and byte of version 2: LAS
// 1.0-1.3 point formats 0-3), one chunk a warp. A LAZ chunk is one serial arithmetic-coded stream, so a CPU core decodes one at
// a time (3.7-5.3 M points/s on the lent hosts); a GPU keeps thousands of chunks in flight.
//
// Layered: decodes the point14 base record's first 18 bytes (X, Y, Z, intensity, returns, flags,
// classification, user data): the channel/returns/XY layer always, the Z, classification and flags
// layers when asked for; intensity and user data are zero, as the CPU decoder
// (io/src/laz/laz_layered.cpp) writes them when not selected, so a record decoded here is
// byte-identical to the first 18 bytes of the CPU decoder's. The rest of the record (scan angle,
// point source, GPS time, other items) is not written: a job that reads them decodes on the CPU.
//
// Pointwise: decodes every item (they share one coder) and writes each point's whole point10
// record (20 bytes: X, Y, Z, intensity, returns, classification, scan angle rank, user data, point
// source id), byte-identical to the first 20 bytes of the CPU decoder's (io/src/laz/laz_pointwise.cpp)
// record. GPS time, RGB and extra bytes are not written.
//
// A chunk the GPU decoder cannot decode (corrupt, truncated, a count unlike the table's) gets a
// status instead of records: the caller decodes it with the CPU decoder, which names the problem.
// Host-clean: included by app/ through g++.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace heightgrid {

/// Bytes of a decoded layered record: the first 18 of a point14 record (LAS 1.4 point formats 6-10).
inline constexpr std::size_t laz_gpu_record_bytes = 18;

/// How a file's chunks are compressed.
enum class laz_gpu_layout {
  layered_point14,    ///< compressor 3, item point14 v3 (and any layered items after it)
  pointwise_point10,  ///< compressor 2, items point10 v2 [gpstime11 v2] [rgb12 v2] [byte v2]
};

/// Bytes a decoded record takes in the decoder's output: 18 (the point14 prefix) for layered, 20
/// (the whole point10 record) for pointwise.
[[nodiscard]] constexpr std::size_t laz_gpu_record_bytes_of(laz_gpu_layout l) noexcept
{
  return l == laz_gpu_layout::pointwise_point10 ? 20 : laz_gpu_record_bytes;
}

/// The largest record stride of any layout: what reserve() makes room for.
inline constexpr std::size_t laz_gpu_max_record_bytes = 20;

/// One chunk to decode.
struct laz_gpu_chunk {
  std::uint64_t source{0};        ///< its first byte in the compressed buffer
  std::uint64_t source_bytes{0};  ///< its compressed size (the chunk table's)
  std::uint64_t first_record{0};  ///< where its first record goes in the output (in records)
  std::uint32_t points{0};        ///< its points (the chunk table's)
};

/// The file's record. Both layouts: how long the raw first point of a chunk is. Layered: how many
/// layer sizes a chunk header lists (point14's nine plus those of rgb/nir/bytes/wavepacket items),
/// which of the point14 layers to decode besides channel/returns/XY. Pointwise: the items after
/// point10 v2, each of version 2, in this order (record_length = 20 + 8 gps_time + 6 rgb +
/// extra_bytes).
struct laz_gpu_format {
  laz_gpu_layout layout{laz_gpu_layout::layered_point14};
  std::uint32_t record_length{0};
  std::uint32_t layer_count{0};  ///< layered only
  bool z{true};                  ///< layered only
  bool classification{true};     ///< layered only
  bool flags{true};              ///< layered only
  bool gps_time{false};          ///< pointwise only: gpstime11 v2
  bool rgb{false};               ///< pointwise only: rgb12 v2
  std::uint32_t extra_bytes{0};  ///< pointwise only: byte v2, this many bytes
};

/// What became of a chunk. Anything but ok: its records are undefined.
enum class laz_gpu_status : std::int32_t {
  ok = 0,
  short_header,      ///< fewer bytes than the first point, count and layer sizes (pointwise: the first point and the coder's 4 initial bytes)
  bad_point_count,   ///< 0, or not the chunk table's count
  layer_past_end,    ///< a layer size runs past the chunk
  empty_xy_layer,    ///< more than one point and no channel/returns/XY layer
  overrun,           ///< a layer's decoder read past its layer (corrupt or truncated); pointwise: the
                     ///< decoder read past the chunk, or a GPS time switched sequence more than 4 times
  not_decoded,       ///< the decoder never reached it (an earlier device failure)
};

/// How a layered chunk is spread over the device's threads (a pointwise chunk is one serial chain:
/// one lane decodes it whatever the mapping; laz_pointwise_lanes says how many lanes of a warp do).
enum class laz_gpu_mapping {
  chunk_per_thread,  ///< one thread decodes the chunk's layers one after the other
  layer_per_lane,    ///< four lanes of a warp decode its XY, Z, classification and flags layers side by side
};

/// Pointwise chunks a warp decodes side by side (lanes 0..k-1, each a chunk of its own), for a call of
/// `chunks` chunks on a device that holds `resident_blocks` blocks of the one-warp pointwise kernel
/// at once. A chunk is one serial chain of dependent decodes: one chain a warp leaves most issue
/// slots idle, and two or four chains a warp (their lanes diverging where their symbols differ)
/// decode faster where one a warp cannot hold every chunk at once: k = 1 up to resident_blocks
/// chunks, 2 up to three times that, 4 beyond; 1 for items with RGB (whose kernel holds half the
/// blocks and was slower with two a warp). The thresholds are where the kernel measured fastest on
/// an H200 from 4,000 to 16,000 chunks, on copies of one file (lanes in step) and on chunks that
/// differ (lanes diverging) alike (docs/benchmarks.md, "Pointwise LAZ on the device").
/// Example: (false, 4000, 4224) -> 1; (false, 10000, 4224) -> 2; (false, 16000, 4224) -> 4; (true, 16000, 2112) -> 1.
[[nodiscard]] constexpr unsigned laz_pointwise_lanes(bool rgb, std::size_t chunks, std::size_t resident_blocks) noexcept
{
  if (rgb || chunks <= resident_blocks) { return 1; }
  return chunks <= 3 * resident_blocks ? 2 : 4;
}

/// Where the device's time went (CUDA events, milliseconds, summed over calls).
struct laz_gpu_times {
  double decode_ms{0.0};    ///< decode kernels
  double download_ms{0.0};  ///< record downloads
};

/// Decodes batches of chunks on one device. Not thread-safe: one thread calls decode().
class laz_gpu_decoder {
 public:
  /// `chunks_at_once`: chunks decoded at once at most (each holds ~1 MiB of models on the device,
  /// made when a decode() first needs them); 0 picks as many as the device holds blocks of the
  /// decoder at once (32 a multiprocessor on an H100 or H200: 64 registers a lane; pointwise chunks
  /// up to four a block, laz_pointwise_lanes), within a quarter of its free memory. Throws error_kind::device without a usable GPU,
  /// error_kind::resource when the device memory does not suffice. Its destructor hands the device
  /// memory it freed back to the driver.
  explicit laz_gpu_decoder(std::size_t chunks_at_once = 0,
                           laz_gpu_mapping mapping = laz_gpu_mapping::layer_per_lane);
  laz_gpu_decoder(laz_gpu_decoder const&) = delete;
  laz_gpu_decoder& operator=(laz_gpu_decoder const&) = delete;
  ~laz_gpu_decoder();

  /// Layered chunks decoded at once.
  [[nodiscard]] std::size_t threads() const noexcept;
  /// Chunks the last decode() decoded at once (layered: its blocks; pointwise: its blocks times the
  /// chunks a warp, last_pointwise_lanes(), so up to four times the pointwise kernel's resident
  /// blocks); 0 before any.
  [[nodiscard]] std::size_t last_chunks_at_once() const noexcept;
  /// Pointwise chunks a warp decoded side by side in the last decode() of pointwise chunks
  /// (laz_pointwise_lanes, or set_pointwise_lanes); 0 before any.
  [[nodiscard]] unsigned last_pointwise_lanes() const noexcept;
  /// Pointwise chunks a warp decodes from now on: 1, 2 or 4 (tests, benchmarks), or 0 (the default:
  /// laz_pointwise_lanes for each call, 1 where the constructor was given chunks_at_once). Throws
  /// error_kind::usage for other values.
  void set_pointwise_lanes(unsigned lanes);

  /// Page-locked host memory (uploads and downloads at full speed); freed with the decoder.
  /// Throws error_kind::resource when it cannot be had.
  [[nodiscard]] std::uint8_t* pinned(std::size_t bytes);
  /// Page-locks `bytes` of host memory at `host`, which the caller allocated with std::malloc or
  /// std::aligned_alloc (and touched already, so that its page faults are not paid here, by the
  /// one thread that pins: most of what pinning fresh memory costs) and hands over: the decoder
  /// unregisters and frees it when destroyed, or at once if it cannot be page-locked (then throws
  /// error_kind::resource).
  [[nodiscard]] std::uint8_t* adopt_pinned(void* host, std::size_t bytes);

  /// Device memory for `compressed_bytes` of chunks and `records` decoded records of either layout
  /// (laz_gpu_max_record_bytes each; kept when it holds them already). Throws error_kind::resource
  /// when the device cannot hold them.
  void reserve(std::size_t compressed_bytes, std::size_t records);
  /// Device memory free now (cudaMemGetInfo).
  [[nodiscard]] std::size_t free_device_bytes() const;

  /// Copies `bytes` from `host` to byte `offset` of the device's compressed bytes; returns when done.
  void upload(std::uint8_t const* host, std::size_t bytes, std::size_t offset);
  /// Decodes `chunks` of `format.layout` (their `source` offsets into the uploaded bytes, their
  /// records into the device's records, laz_gpu_record_bytes_of(format.layout) apart) and returns
  /// each chunk's status. A pointwise call lays out its models (~1.3 MiB a chunk decoded at once,
  /// as many as the device holds blocks of the pointwise kernel, within a quarter of its free
  /// memory) the first time it needs them. More chunks than threads() are taken
  /// longest first by the decoder's threads as they finish earlier ones. Waits for the device. Throws
  /// error_kind::device on a device failure, error_kind::usage when a chunk lies outside what
  /// reserve() made room for or the format is not one of its layout (layered: record_length >= 30,
  /// layer_count >= 9; pointwise: record_length = 20 + 8 gps_time + 6 rgb + extra_bytes).
  std::vector<laz_gpu_status> decode(laz_gpu_format const& format, std::vector<laz_gpu_chunk> const& chunks,
                                     laz_gpu_times* times = nullptr);
  /// The layout of the last decode() (layered_point14 before any).
  [[nodiscard]] laz_gpu_layout layout() const noexcept;
  /// The decoded records in device memory, in the stride of the last decode()'s layout (record i at
  /// byte i * laz_gpu_record_bytes_of(layout()): 18 layered, 20 pointwise; what reserve() made room
  /// for), for a consumer on the same device that folds them where they are
  /// (gpu_binner::fold_device_records). Valid until the next reserve().
  [[nodiscard]] void const* device_records() const noexcept;
  /// Copies `count` decoded records from record `first` on to `host` (laz_gpu_record_bytes_of(layout())
  /// bytes each); returns when done.
  void download(std::size_t first, std::size_t count, std::uint8_t* host, laz_gpu_times* times = nullptr);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace heightgrid
