#pragma once

// Decoding of one chunk written by LASzip's layered compressor (compressor 3), which LAS 1.4
// point formats 6-10 use: items point14, rgb14, rgbnir14, byte14 and wavepacket14, versions 3
// and 4.
//
// Why "layered": inside a chunk, every attribute group (XY + returns, Z, classification, ...)
// is entropy-coded into its own byte range with its own arithmetic decoder, and the chunk header
// lists the size of every layer. A reader that does not need an attribute skips its layer
// without decoding it; gridding heights needs only the XY/returns layer plus Z, classification
// and flags, which is most of the speed-up over decoding every field.
//
// Written from the published format descriptions (LASzip sources and the laz-rs port used as
// documentation only); see laz_layered.cpp for the layout of a chunk.

#include "laz_arith.hpp"
#include "laz_vlr.hpp"  // laz_vlr_info, field_selection

#include <cstddef>
#include <cstdint>

namespace heightgrid::io::laz {

/// Decodes one layered chunk starting at `data` (its raw first point) into `records`, which
/// receives vlr.record_length() bytes per point, byte-identical to the uncompressed LAS records
/// for every field in `fields`. Bytes of fields not selected are written as zero. X, Y, return
/// number, number of returns and scanner channel are always decoded.
///
/// The chunk states its own point count. `expected_points` is what the chunk table says (0 =
/// unknown); a different count is an error, and so is a count above `max_points` (the capacity
/// of `records`). Returns the number of points decoded and stores the chunk's compressed size
/// (header plus every layer, skipped ones included) in *consumed.
///
/// Throws decode_error, saying what is wrong, for items this decoder does not handle, layer
/// sizes that run past `size`, bad point counts and layer decoders that read well past their
/// layer. It never reads outside [data, data + size) or writes outside max_points records.
std::size_t decode_layered_chunk(laz_vlr_info const& vlr, std::uint8_t const* data,
                                 std::size_t size, std::size_t expected_points,
                                 std::size_t max_points, std::uint8_t* records,
                                 field_selection const& fields, std::size_t* consumed);

}  // namespace heightgrid::io::laz
