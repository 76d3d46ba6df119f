#pragma once

// The raw point records of a LAZ file in file order: finds the chunks (chunk table, or walking
// the chunks one after the other when the table is missing or damaged), decodes them on a pool
// of worker threads and hands out runs of decoded records. las_reader.cpp turns the records
// into point_chunk columns exactly as it does for uncompressed LAS.

#include "laz_pointwise.hpp"
#include "laz_vlr.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid::io::laz {

/// Where the compressed points are in the file.
struct laz_file_layout {
  std::string path;  ///< for messages
  std::uint64_t file_size{0};
  std::uint64_t point_data_start{0};  ///< offset_to_point_data
  /// The end of the bytes the chunks (and the chunk table) may occupy: the first EVLR after the
  /// point data, else the end of the file.
  std::uint64_t point_data_limit{0};
  std::uint64_t point_count{0};
  std::size_t record_length{0};
};

/// Copies bytes [offset, offset + count) of the file into `out`; called from several threads
/// at once; throws heightgrid::error on read failures.
using file_reader = std::function<void(std::uint64_t offset, std::size_t count, std::uint8_t* out)>;

/// Where the chunks of a LAZ file are.
struct laz_chunk_map {
  std::uint64_t chunks_start{0};    ///< first byte of the first chunk
  std::vector<chunk_entry> chunks;  ///< from a usable chunk table; empty: decode them sequentially
  std::string table_problem;        ///< why a chunk table was not used; empty if it was or none exists
};

/// Finds the chunks of a file with points: through its chunk table when that is usable, else
/// nothing (compressor 1, which has one chunk and no table, or a missing or damaged table, whose
/// problem is kept for messages). Throws heightgrid::error(error_kind::input) naming the file and
/// byte when the point data cannot hold the table offset, when variable-size chunks have no usable
/// table, and for a table chunk too large to decode at once.
laz_chunk_map locate_laz_chunks(laz_file_layout const& layout, laz_vlr_info const& vlr,
                                file_reader const& read);

/// One decoding thread's state, reused from chunk to chunk: the compressed bytes and the item
/// decoders (their models are allocated once and reset per chunk).
struct chunk_scratch {
  std::vector<std::uint8_t> compressed;
  std::optional<pointwise_decoder> pointwise;
};

/// Decodes chunk `index` of the chunk table, `c`, whole into `records` (c.points *
/// layout.record_length bytes), at least the `fields` asked for (layered chunks leave the bytes
/// of the others zero). Safe to call from several threads at once, each with its own scratch.
/// Throws heightgrid::error: error_kind::input "<path>: chunk <i> (bytes <a>-<b>): <what>" for a
/// corrupt chunk, error_kind::resource when memory runs out.
void decode_laz_chunk(laz_file_layout const& layout, laz_vlr_info const& vlr, file_reader const& read,
                      std::size_t index, chunk_entry const& c, chunk_scratch& scratch, std::uint8_t* records,
                      field_selection const& fields);

/// Decodes a LAZ file's records chunk by chunk.
///
/// Chunks listed in a valid chunk table are decoded on `threads` worker threads (0: one per
/// core), at most 2 * threads chunks ahead of the reader. Without a usable chunk table (the
/// writer stopped before writing it, its offset is -1 with no offset at the end of the file,
/// or it fails validation), fixed-size chunks are decoded one after the other on the calling
/// thread, each starting where the previous one's decoder stopped; variable-size chunks cannot
/// be found that way and are an error.
///
/// Errors are heightgrid::error(error_kind::input) naming the file; a chunk's errors read
/// "<path>: chunk <i> (bytes <a>-<b>): <what>". After an error every next() throws it again.
class laz_record_stream {
 public:
  /// Records hold at least `fields` (the others may be zero, see decode_laz_chunk).
  laz_record_stream(laz_file_layout layout, laz_vlr_info vlr, file_reader read, std::size_t threads,
                    field_selection fields = field_selection::heightgrid());
  ~laz_record_stream();
  laz_record_stream(laz_record_stream const&) = delete;
  laz_record_stream& operator=(laz_record_stream const&) = delete;

  struct run {
    std::uint8_t const* records;  ///< valid until the next call of next()
    std::size_t points;           ///< 0: no more points
  };
  /// The next up to max_points (> 0) records in file order.
  run next(std::size_t max_points);

  /// Chunks found in the chunk table (0 in the sequential fallback).
  std::size_t table_chunks() const;
  /// Worker threads decoding chunks (0: decoded on the calling thread).
  std::size_t worker_threads() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace heightgrid::io::laz
