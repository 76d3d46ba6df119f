#pragma once

// Pointwise LAZ chunks (LASzip compressors 1 and 2): every point is coded item after item
// (point10, gpstime11, rgb12, wavepacket13, extra bytes; versions 1 and 2) through one arithmetic
// decoder. A chunk starts with its first point stored raw, followed by the arithmetic-coded rest.

#include "laz_arith.hpp"
#include "laz_vlr.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace heightgrid::io::laz {

/// Decodes one pointwise chunk after another, a few records at a time, so that a chunk of any
/// size (compressor 1 puts the whole file in one) needs no more memory than the caller's block.
/// Builds its item decoders once; start() resets their models for the next chunk.
class pointwise_decoder {
 public:
  /// Throws decode_error if the items are not pointwise items of versions 1/2.
  explicit pointwise_decoder(laz_vlr_info const& vlr);
  ~pointwise_decoder();
  pointwise_decoder(pointwise_decoder&&) noexcept;
  pointwise_decoder& operator=(pointwise_decoder&&) noexcept;

  std::size_t record_length() const { return record_length_; }

  /// Begins a chunk held in [data, data + size); the bytes must stay valid while decoding it.
  void start(std::uint8_t const* data, std::size_t size);

  /// Decodes the next `points` records of the chunk into `records` (points * record_length()
  /// bytes). Throws decode_error when the compressed data runs out.
  void decode(std::size_t points, std::uint8_t* records);

  /// Compressed bytes of the chunk consumed so far; after its last point, the chunk's size.
  std::size_t consumed() const;

 private:
  struct items;
  std::unique_ptr<items> items_;
  std::size_t record_length_{0};
  std::uint8_t const* data_{nullptr};
  std::size_t size_{0};
  bool first_pending_{false};
  arithmetic_decoder dec_;
};

/// Compressor 1 or 2, items v1/v2. Decodes `points` records of vlr.record_length() bytes each
/// into `records`. Returns the number of compressed bytes consumed. Throws decode_error on
/// corruption ("arithmetic decoder ran 123 bytes past the end of the chunk", ...).
std::size_t decode_pointwise_chunk(laz_vlr_info const& vlr, std::uint8_t const* data,
                                   std::size_t size, std::size_t points, std::uint8_t* records);

}  // namespace heightgrid::io::laz
