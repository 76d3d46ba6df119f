#pragma once
// LAZ decoding on the GPU: layered LASzip chunks (compressor 3, LAS 1.4 point formats 6-10), one
// chunk a thread. A LAZ chunk is one serial arithmetic-coded stream, so a CPU core decodes one at
// a time (3.7-5.3 M points/s on the lent hosts); a GPU keeps thousands of chunks in flight.
//
// Decodes the point14 base record's first 18 bytes (X, Y, Z, intensity, returns, flags,
// classification, user data): the channel/returns/XY layer always, the Z, classification and flags
// layers when asked for; intensity and user data are zero, as the CPU decoder
// (io/src/laz/laz_layered.cpp) writes them when not selected, so a record decoded here is
// byte-identical to the first 18 bytes of the CPU decoder's. The rest of the record (scan angle,
// point source, GPS time, other items) is not written: a job that reads them decodes on the CPU.
//
// A chunk the GPU decoder cannot decode (corrupt, truncated, a count unlike the table's) gets a
// status instead of records: the caller decodes it with the CPU decoder, which names the problem.
// Host-clean: included by app/ through g++.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace heightgrid {

/// Bytes of a decoded record: the first 18 of a point14 record (LAS 1.4 point formats 6-10).
inline constexpr std::size_t laz_gpu_record_bytes = 18;

/// One layered chunk to decode.
struct laz_gpu_chunk {
  std::uint64_t source{0};        ///< its first byte in the compressed buffer
  std::uint64_t source_bytes{0};  ///< its compressed size (the chunk table's)
  std::uint64_t first_record{0};  ///< where its first record goes in the output (in records)
  std::uint32_t points{0};        ///< its points (the chunk table's)
};

/// The file's layered record: how long the raw first point is, how many layer sizes a chunk
/// header lists (point14's nine plus those of rgb/nir/bytes/wavepacket items), which of the
/// point14 layers to decode besides channel/returns/XY.
struct laz_gpu_format {
  std::uint32_t record_length{0};
  std::uint32_t layer_count{0};
  bool z{true};
  bool classification{true};
  bool flags{true};
};

/// What became of a chunk. Anything but ok: its records are undefined.
enum class laz_gpu_status : std::int32_t {
  ok = 0,
  short_header,      ///< fewer bytes than the first point, count and layer sizes
  bad_point_count,   ///< 0, or not the chunk table's count
  layer_past_end,    ///< a layer size runs past the chunk
  empty_xy_layer,    ///< more than one point and no channel/returns/XY layer
  overrun,           ///< a layer's decoder read past its layer (corrupt or truncated)
  not_decoded,       ///< the decoder never reached it (an earlier device failure)
};

/// How a chunk is spread over the device's threads.
enum class laz_gpu_mapping {
  chunk_per_thread,  ///< one thread decodes the chunk's layers one after the other
  layer_per_lane,    ///< four lanes of a warp decode its XY, Z, classification and flags layers side by side
};

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
  /// decoder at once (28 a multiprocessor on an H100 or H200), within a quarter of its free memory. Throws
  /// error_kind::device without a usable GPU, error_kind::resource when the device memory does
  /// not suffice. Its destructor hands the device memory it freed back to the driver.
  explicit laz_gpu_decoder(std::size_t chunks_at_once = 0,
                           laz_gpu_mapping mapping = laz_gpu_mapping::layer_per_lane);
  laz_gpu_decoder(laz_gpu_decoder const&) = delete;
  laz_gpu_decoder& operator=(laz_gpu_decoder const&) = delete;
  ~laz_gpu_decoder();

  /// Chunks decoded at once.
  [[nodiscard]] std::size_t threads() const noexcept;

  /// Page-locked host memory (uploads and downloads at full speed); freed with the decoder.
  /// Throws error_kind::resource when it cannot be had.
  [[nodiscard]] std::uint8_t* pinned(std::size_t bytes);

  /// Device memory for `compressed_bytes` of chunks and `records` decoded records (kept when it
  /// holds them already). Throws error_kind::resource when the device cannot hold them.
  void reserve(std::size_t compressed_bytes, std::size_t records);
  /// Device memory free now (cudaMemGetInfo).
  [[nodiscard]] std::size_t free_device_bytes() const;

  /// Copies `bytes` from `host` to byte `offset` of the device's compressed bytes; returns when done.
  void upload(std::uint8_t const* host, std::size_t bytes, std::size_t offset);
  /// Decodes `chunks` (their `source` offsets into the uploaded bytes, their records into the
  /// device's records) and returns each chunk's status. More chunks than threads() are taken
  /// longest first by the decoder's threads as they finish earlier ones. Waits for the device. Throws
  /// error_kind::device on a device failure, error_kind::usage when a chunk lies outside what
  /// reserve() made room for.
  std::vector<laz_gpu_status> decode(laz_gpu_format const& format, std::vector<laz_gpu_chunk> const& chunks,
                                     laz_gpu_times* times = nullptr);
  /// The decoded records in device memory (laz_gpu_record_bytes each, record i at byte i * 18; what
  /// reserve() made room for), for a consumer on the same device that folds them where they are
  /// (gpu_binner::fold_device_records). Valid until the next reserve().
  [[nodiscard]] void const* device_records() const noexcept;
  /// Copies `count` decoded records from record `first` on to `host`; returns when done.
  void download(std::size_t first, std::size_t count, std::uint8_t* host, laz_gpu_times* times = nullptr);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace heightgrid
