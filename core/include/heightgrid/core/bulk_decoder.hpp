#pragma once
// LAZ chunks (layered, or pointwise of LAS 1.0-1.3's formats 0-3) decoded in bulk somewhere else than the reading threads: on the GPU
// (app/pipeline/laz_gpu_stage.cpp), which decodes thousands of chunks at once while a CPU core
// decodes one. A LAZ part source whose chunks qualify registers them before the job reads
// (part_source::offload_chunks), then takes each chunk's records from here instead of decoding it.
// Where the job bins on the GPU, the decoded records need not come back at all: they are binned on
// the device (binned()).
// Host-only; the interface lives in core so that io (the sources) and app (the stage) meet here.

#include "heightgrid/core/point_batch.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace heightgrid {

class bulk_chunk_decoder {
 public:
  /// Bytes of a layered file's record handed out by records(): a LAS 1.4 point14 record's bytes
  /// 0-17 (X, Y, Z, intensity as 0, returns, flags, classification, user data as 0).
  static constexpr std::size_t record_bytes = 18;
  /// Bytes of a pointwise file's record handed out by records(): the whole point10 record (X, Y,
  /// Z, intensity, returns, classification, scan angle, user data, point source).
  static constexpr std::size_t pointwise_record_bytes = 20;

  /// A file's compressed record: layered (compressor 3: the raw first point's length and the layer
  /// sizes a chunk lists) or pointwise (compressor 2: point10 v2 and the v2 items after it); the rule
  /// from its stored integers to coordinates, and whether the job grids its Z (then the records can
  /// be binned where they are decoded: binned()).
  struct file_format {
    std::uint32_t record_length{0};
    std::uint32_t layer_count{0};  ///< layered; 0 for pointwise
    scaled_coords transform;
    bool grids_z{false};
    bool pointwise{false};
    bool gps_time{false};           ///< pointwise: a gpstime11 item
    bool rgb{false};                ///< pointwise: an rgb12 item
    std::uint32_t extra_bytes{0};   ///< pointwise: bytes of the byte item
    /// Bytes of a record records() hands out for this file.
    [[nodiscard]] std::size_t decoded_bytes() const noexcept { return pointwise ? pointwise_record_bytes : record_bytes; }
  };
  /// A chunk as the file's chunk table gives it.
  struct chunk {
    std::uint64_t offset{0};
    std::uint64_t bytes{0};
    std::uint32_t points{0};
  };
  /// Copies bytes [offset, offset + count) of the file into out; may be called from another thread
  /// than the one that registered the file; throws heightgrid::error on failure.
  using reader = std::function<void(std::uint64_t offset, std::size_t count, std::uint8_t* out)>;

  virtual ~bulk_chunk_decoder() = default;

  /// Registers the chunks of a file, in file order, before the job starts reading. Returns the
  /// number of its first chunk (chunks are numbered in registration order).
  virtual std::size_t add_file(file_format const& format, std::vector<chunk> const& chunks, reader read) = 0;

  /// Waits for chunk `index`'s records (chunk.points of its format's decoded_bytes() each) and returns them, or
  /// nullptr when the caller must decode the chunk itself: the bulk decoder failed on it (the
  /// caller's decoder then names the problem), already handed it out once, or will not reach it
  /// soon. Each call must be paired with release(index), whatever it returned.
  [[nodiscard]] virtual std::uint8_t const* records(std::size_t index) = 0;
  /// The caller is done with chunk `index`'s records.
  virtual void release(std::size_t index) noexcept = 0;

  /// Waits for chunk `index` and returns true when its points were binned where they were decoded
  /// (the GPU's grid: filtered there, their filter counts and bounds reported by the grid, so the
  /// caller only counts the chunk's points as read); false when the caller goes on with records()
  /// as usual. Each call must be paired with release(index) (one release for both calls).
  [[nodiscard]] virtual bool binned(std::size_t index)
  {
    (void)index;
    return false;
  }
};

}  // namespace heightgrid
