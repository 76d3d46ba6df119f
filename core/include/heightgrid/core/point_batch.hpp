#pragma once
// What the streaming pipeline moves from readers to binning: a batch of filtered points in memory
// the caller owns (a worker's buffer, or a slot of the pinned ring that is uploaded to the GPU).
//
// LAS and LAZ points travel as their stored integers with the file's scale and offset (12 bytes a
// point); every backend turns them into coordinates with the one rule of scaled_coords, so the CPU
// and the GPU bin bit-identical coordinates. Other sources travel as doubles (24 bytes a point).

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define HG_BATCH_HOST_DEVICE __host__ __device__
#else
#define HG_BATCH_HOST_DEVICE
#endif

namespace heightgrid {

/// How a batch stores its coordinates.
enum class coord_encoding : std::uint8_t {
  float64,       ///< x, y, z as double
  scaled_int32,  ///< X, Y, Z as the int32 LAS stores; x = X * scale + offset
  las_records,   ///< LAS point records as stored (record_length bytes each, unfiltered): decoded,
                 ///< filtered and binned where the batch goes (the GPU), by core/las_record.hpp's rules
};

/// LAS's coordinate rule: x = X * scale[0] + offset[0], a multiply then an add in double (the
/// build forbids contracting them into an FMA), identical on the host and the device.
/// For scale > 0 it is non-decreasing in X, so the bounds of the integers give the bounds of the
/// coordinates exactly.
struct scaled_coords {
  // Plain arrays, not std::array: device code indexes them.
  double scale[3]{1.0, 1.0, 1.0};
  double offset[3]{0.0, 0.0, 0.0};

  HG_BATCH_HOST_DEVICE [[nodiscard]] static double apply(std::int32_t v, double s, double o) noexcept
  {
    return static_cast<double>(v) * s + o;
  }
};

/// Where a batch's tag column starts (point_batch::tags): after the float64 layout's three columns.
[[nodiscard]] constexpr std::size_t tags_offset(std::size_t capacity) noexcept { return capacity * 3 * sizeof(double); }

/// Bytes a batch of `points` points needs whatever its encoding (the larger, float64, layout),
/// with its tag column, rounded up to 8.
[[nodiscard]] constexpr std::size_t batch_bytes(std::size_t points) noexcept
{
  return (tags_offset(points) + points + 7) / 8 * 8;
}

/// A batch of points as three columns in caller-owned memory of batch_bytes(capacity) bytes,
/// aligned to 8 bytes. The columns start at fixed places for each encoding:
///  - float64: x at data, y at data + capacity doubles, z after y;
///  - scaled_int32: X at data, Y at data + capacity int32s, Z after Y.
///  - las_records: `size` records of `record_length` bytes back to back from data
///    (size * record_length <= batch_bytes(capacity)), none filtered yet.
/// When `tagged` (the job has tagged count bands: point_filter.hpp's tag_table), the tag of point i
/// is tags()[i], a byte at tags_offset(capacity) + i whatever the encoding (las_records batches carry
/// none: their binner tags the records it keeps).
/// Not owning: copying a batch copies the view.
struct point_batch {
  void* data{nullptr};
  std::size_t capacity{0};  ///< points the memory holds
  std::size_t size{0};      ///< points filled
  coord_encoding encoding{coord_encoding::float64};
  scaled_coords transform;  ///< scaled_int32 and las_records
  std::uint32_t record_length{0};  ///< las_records: bytes of one record
  bool extended_records{false};    ///< las_records: formats 6-10 (the attributes' layout)
  std::uint32_t source{0};         ///< the job's index of the source it was read from (set by the scheduler)
  bool tagged{false};              ///< tags() holds each point's tag
  /// Set by whoever hands out the batch's memory: its points will be binned on the CPU, so a source
  /// that delivers raw LAS records (part_source::deliver_records) decodes this part instead (the
  /// same records, as columns: the readers' own decoding, faster than decoding the records later).
  bool decode_records{false};

  [[nodiscard]] std::uint8_t* tags() const noexcept { return static_cast<std::uint8_t*>(data) + tags_offset(capacity); }

  [[nodiscard]] double* x() const noexcept { return static_cast<double*>(data); }
  [[nodiscard]] double* y() const noexcept { return static_cast<double*>(data) + capacity; }
  [[nodiscard]] double* z() const noexcept { return static_cast<double*>(data) + 2 * capacity; }
  [[nodiscard]] std::int32_t* xi() const noexcept { return static_cast<std::int32_t*>(data); }
  [[nodiscard]] std::int32_t* yi() const noexcept { return static_cast<std::int32_t*>(data) + capacity; }
  [[nodiscard]] std::int32_t* zi() const noexcept { return static_cast<std::int32_t*>(data) + 2 * capacity; }

  /// Bytes of the batch's points in memory: the three filled columns, or the records.
  [[nodiscard]] std::size_t payload_bytes() const noexcept
  {
    return encoding == coord_encoding::las_records ? size * record_length : 3 * size * column_bytes();
  }

  /// Bytes of one coordinate column.
  [[nodiscard]] std::size_t column_bytes() const noexcept
  {
    return encoding == coord_encoding::float64 ? sizeof(double) : sizeof(std::int32_t);
  }

  /// Coordinates of point i, whatever the encoding (for the CPU side and tests).
  [[nodiscard]] double x_at(std::size_t i) const noexcept
  {
    return encoding == coord_encoding::float64 ? x()[i] : scaled_coords::apply(xi()[i], transform.scale[0], transform.offset[0]);
  }
  [[nodiscard]] double y_at(std::size_t i) const noexcept
  {
    return encoding == coord_encoding::float64 ? y()[i] : scaled_coords::apply(yi()[i], transform.scale[1], transform.offset[1]);
  }
  [[nodiscard]] double z_at(std::size_t i) const noexcept
  {
    return encoding == coord_encoding::float64 ? z()[i] : scaled_coords::apply(zi()[i], transform.scale[2], transform.offset[2]);
  }
};

}  // namespace heightgrid
