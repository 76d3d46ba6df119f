// The sequential point sources of LAS and LAZ files: records read (LAS) or decompressed (LAZ) in
// file order and decoded into point_chunk columns. Opening the file and its header: las_header.cpp.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/error.hpp"
#include "las/las_internal.hpp"
#include "las/las_layout.hpp"
#include "laz/laz_source.hpp"
#include "laz/laz_vlr.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::io {
namespace {

namespace layout = las_layout;
using detail::las_file;

/// Decodes `n` records into columns [first, first + n) of `out`. Extended selects the layout
/// of formats 6-10; the record stride covers extra bytes and waveform fields, which are skipped.
template <bool Extended>
void decode_records(std::uint8_t const* raw, std::size_t stride, std::size_t n,
                    las_header_info const& h, point_chunk& out, std::size_t first)
{
  double* x = out.x.data() + first;
  double* y = out.y.data() + first;
  double* z = out.z.data() + first;
  std::uint8_t* cls = out.classification.data() + first;
  std::uint8_t* ret = out.return_number.data() + first;
  std::uint8_t* nret = out.number_of_returns.data() + first;
  std::uint8_t* flags = out.flags.data() + first;
  double const sx = h.scale[0], sy = h.scale[1], sz = h.scale[2];
  double const ox = h.offset[0], oy = h.offset[1], oz = h.offset[2];
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t const* p = raw + i * stride;
    // scaled_coords' rule, a multiply then an add, so that every reader of the file computes
    // bit-identical coordinates.
    x[i] = scaled_coords::apply(layout::load<std::int32_t>(p + layout::point_at::x), sx, ox);
    y[i] = scaled_coords::apply(layout::load<std::int32_t>(p + layout::point_at::y), sy, oy);
    z[i] = scaled_coords::apply(layout::load<std::int32_t>(p + layout::point_at::z), sz, oz);
    detail::record_attributes const a = detail::load_attributes<Extended>(p);
    cls[i] = a.classification;
    flags[i] = a.flags;
    ret[i] = a.return_number;
    nret[i] = a.number_of_returns;
  }
}

using detail::source_info_of;

/// Sizes every column that decode_records fills to n points. resize, not clear + resize: a reused
/// chunk of the same size is not zero-filled again.
void resize_columns(point_chunk& chunk, std::size_t n)
{
  chunk.x.resize(n);
  chunk.y.resize(n);
  chunk.z.resize(n);
  chunk.classification.resize(n);
  chunk.return_number.resize(n);
  chunk.number_of_returns.resize(n);
  chunk.flags.resize(n);
}

/// What the LAS and LAZ sources share: the file, its header, the decoder of its point format, the
/// position, and read()'s bounds; each says only where its records come from (fill).
class las_records_source : public point_source {
 public:
  [[nodiscard]] source_info const& info() const final { return info_; }

  bool read(point_chunk& chunk, std::size_t max_points) final
  {
    HG_EXPECTS(max_points > 0, error_kind::usage, info_.path + ": read() needs max_points > 0");
    if (next_ >= header_.point_count) {
      chunk.clear();
      return false;
    }
    std::size_t const n =
      static_cast<std::size_t>(std::min<std::uint64_t>(max_points, header_.point_count - next_));
    resize_columns(chunk, n);
    fill(chunk, n);
    next_ += n;
    return true;
  }

 protected:
  las_records_source(las_file file, las_header_info header)
    : file_(std::move(file)), header_(std::move(header)), info_(source_info_of(header_)),
      decode_(layout::is_extended_format(header_.point_format) ? &decode_records<true> : &decode_records<false>)
  {
  }

  /// Decodes points next_ .. next_ + n - 1 into rows 0 .. n - 1 of `chunk` (already sized).
  virtual void fill(point_chunk& chunk, std::size_t n) = 0;

  /// Decodes `count` consecutive records into rows at .. at + count - 1 of `chunk`.
  void decode(std::uint8_t const* records, std::size_t count, point_chunk& chunk, std::size_t at) const
  {
    decode_(records, header_.record_length, count, header_, chunk, at);
  }

  las_file file_;  // first: a LAZ stream's workers read through it until they stop
  las_header_info header_;
  source_info info_;
  std::uint64_t next_{0};  ///< the first point not yet read

 private:
  using decode_fn = void (*)(std::uint8_t const*, std::size_t, std::size_t, las_header_info const&,
                             point_chunk&, std::size_t);
  decode_fn decode_;
};

/// A point_source over an uncompressed LAS file: blocks of records read at their offsets.
class las_point_source final : public las_records_source {
 public:
  las_point_source(las_file file, las_header_info header, las_read_options const& options)
    : las_records_source(std::move(file), std::move(header))
  {
    // point_count * record_length fits in the file (checked by the parser), so this does too.
    block_points_ = static_cast<std::size_t>(
      std::min<std::uint64_t>(options.chunk_points, std::max<std::uint64_t>(header_.point_count, 1)));
  }

 private:
  void fill(point_chunk& chunk, std::size_t n) override
  {
    std::size_t const stride = header_.record_length;
    if (raw_.empty()) { raw_.resize(block_points_ * stride); }
    for (std::size_t done = 0; done < n;) {
      std::size_t const count = std::min(block_points_, n - done);
      std::uint64_t const at = header_.offset_to_point_data + (next_ + done) * stride;
      file_.read_exact(at, count * stride, raw_.data());
      decode(raw_.data(), count, chunk, done);
      done += count;
    }
  }

  std::size_t block_points_{0};
  std::vector<std::uint8_t> raw_;
};

/// A point_source over a LAZ file: the records come decoded from laz_record_stream (chunks on
/// worker threads, in file order) and go through the same decode_records as uncompressed LAS.
class laz_point_source final : public las_records_source {
 public:
  laz_point_source(las_file file, las_header_info header, laz::laz_vlr_info vlr,
                   las_read_options const& options)
    : las_records_source(std::move(file), std::move(header))
  {
    las_file const& f = file_;
    stream_ = std::make_unique<laz::laz_record_stream>(
      detail::laz_layout_of(header_), std::move(vlr),
      [&f](std::uint64_t offset, std::size_t count, std::uint8_t* out) { f.read_exact(offset, count, out); },
      options.threads);
  }

 private:
  void fill(point_chunk& chunk, std::size_t n) override
  {
    for (std::size_t done = 0; done < n;) {
      auto const run = stream_->next(n - done);
      if (run.points == 0) {
        throw error(error_kind::internal, info_.path + ": the LAZ decoder ran out of points at point " +
                                            std::to_string(next_ + done) + " of " +
                                            std::to_string(header_.point_count));
      }
      decode(run.records, run.points, chunk, done);
      done += run.points;
    }
  }

  std::unique_ptr<laz::laz_record_stream> stream_;  // destroyed before the base's file_
};

}  // namespace

std::unique_ptr<point_source> open_las_source(std::string const& path, las_read_options const& options)
{
  HG_EXPECTS(options.chunk_points > 0, error_kind::usage, path + ": chunk_points must be > 0");
  detail::opened_las f = detail::open_las_file(path);
  if (f.laz_vlr) {
    return std::make_unique<laz_point_source>(std::move(f.file), std::move(f.header), std::move(*f.laz_vlr),
                                              options);
  }
  return std::make_unique<las_point_source>(std::move(f.file), std::move(f.header), options);
}

}  // namespace heightgrid::io
