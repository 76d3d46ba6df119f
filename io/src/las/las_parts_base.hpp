#pragma once
// What the LAS and LAZ part_sources share (las_parts.cpp: uncompressed LAS; laz/laz_parts.cpp: LAZ
// by chunk runs or sequentially): the record decoders that turn stored records into a filtered
// batch, and the base class holding the header and the file handle. Private to io.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/bulk_decoder.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/io/remote.hpp"
#include "las/las_dimension.hpp"
#include "las/las_internal.hpp"
#include "las/las_layout.hpp"
#include "laz/copc.hpp"
#include "laz/laz_source.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace heightgrid::io::las_parts_detail {

namespace layout = las_layout;
using detail::las_file;

/// Parts of `part_points` that hold `points`, without the overflow of (points + part_points - 1):
/// a LAZ header may claim up to 2^64 - 1 points, which that sum wrapped to "no parts".
constexpr std::uint64_t parts_for(std::uint64_t points, std::uint64_t part_points)
{
  return points / part_points + (points % part_points != 0 ? 1 : 0);
}
static_assert(parts_for(~std::uint64_t{0}, 7) == ~std::uint64_t{0} / 7 + 1);

/// Bounds of the kept points' stored integers, per axis. scaled_coords::apply is monotonic in
/// the integer (non-decreasing for a positive scale, non-increasing for a negative one), so these
/// give the coordinates' bounds exactly.
struct int_extent {
  std::int32_t lo[3]{std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::max(),
                     std::numeric_limits<std::int32_t>::max()};
  std::int32_t hi[3]{std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::min(),
                     std::numeric_limits<std::int32_t>::min()};
  /// The gridded dimension's values when they travel as doubles (--dimension GpsTime, ...).
  double value_lo{std::numeric_limits<double>::infinity()};
  double value_hi{-std::numeric_limits<double>::infinity()};
};

/// Decodes `n` records at `raw` (`stride` bytes apart) and appends the ones `rules` keeps to
/// `out` from out.size on. Extended selects the record layout of formats 6-10. Coordinates are
/// computed only where a verdict depends on them: z when a rule looks at it, and all three when
/// the transform can produce a non-finite coordinate (ExactXyz), else judge gets finite dummies.
template <bool Extended, bool ExactXyz, bool Tagged>
void decode_filtered(std::uint8_t const* raw, std::size_t stride, std::size_t n, filter_rules const& rules,
                     scaled_coords const& t, detail::las_dimension const&, point_batch& out, filter_stats& stats,
                     int_extent& ext)
{
  std::int32_t* const xs = out.xi();
  std::int32_t* const ys = out.yi();
  std::int32_t* const zs = out.zi();
  // A byte store may alias anything: restrict, and the table a local copy, keep the loop's other
  // values in registers.
  std::uint8_t* __restrict const tags = out.tags();
  tag_table const tagging = Tagged ? rules.tags() : tag_table{};
  out.tagged = Tagged;
  bool const need_z = ExactXyz || rules.checks_z();
  std::size_t k = out.size;
  // Local copies: the stores into the int32 columns could alias `ext` and keep it in memory.
  std::int32_t x_lo = ext.lo[0], x_hi = ext.hi[0], y_lo = ext.lo[1], y_hi = ext.hi[1];
  std::int32_t z_lo = ext.lo[2], z_hi = ext.hi[2];
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t const* p = raw + i * stride;
    auto const xi = layout::load<std::int32_t>(p + layout::point_at::x);
    auto const yi = layout::load<std::int32_t>(p + layout::point_at::y);
    auto const zi = layout::load<std::int32_t>(p + layout::point_at::z);
    detail::record_attributes const a = detail::load_attributes<Extended>(p);
    double x = 0.0;
    double y = 0.0;
    if constexpr (ExactXyz) {
      x = scaled_coords::apply(xi, t.scale[0], t.offset[0]);
      y = scaled_coords::apply(yi, t.scale[1], t.offset[1]);
    }
    double const z = need_z ? scaled_coords::apply(zi, t.scale[2], t.offset[2]) : 0.0;
    filter_verdict const v =
      rules.judge(x, y, z, true, a.classification, true, a.flags, true, a.return_number, a.number_of_returns);
    // Written whatever the verdict (k <= i < capacity): a rejected point is overwritten next.
    xs[k] = xi;
    ys[k] = yi;
    zs[k] = zi;
    if constexpr (Tagged) { tags[k] = tagging.tag(true, a.classification, true, a.return_number, a.number_of_returns); }
    if (v == filter_verdict::keep) {
      x_lo = std::min(x_lo, xi);
      x_hi = std::max(x_hi, xi);
      y_lo = std::min(y_lo, yi);
      y_hi = std::max(y_hi, yi);
      z_lo = std::min(z_lo, zi);
      z_hi = std::max(z_hi, zi);
      ++k;
    } else {
      filter_rules::count(v, stats);
    }
  }
  ext.lo[0] = x_lo;
  ext.hi[0] = x_hi;
  ext.lo[1] = y_lo;
  ext.hi[1] = y_hi;
  ext.lo[2] = z_lo;
  ext.hi[2] = z_hi;
  out.size = k;
}

/// decode_filtered for another dimension than Z (--dimension): the filters judge the point by its
/// coordinates and attributes as always, and the kept point's z slot carries the dimension. AsInt:
/// its stored integer in the int32 z slot (the batch's z transform is the dimension's scale and
/// offset), so every backend reads it as it reads Z; otherwise the batch is float64, x and y the
/// very doubles scaled_coords::apply gives, z the value (a non-finite value counts as non-finite).
template <bool Extended, bool AsInt, bool Tagged>
void decode_dimension(std::uint8_t const* raw, std::size_t stride, std::size_t n, filter_rules const& rules,
                      scaled_coords const& t, detail::las_dimension const& dim, point_batch& out, filter_stats& stats,
                      int_extent& ext)
{
  std::size_t k = out.size;
  out.tagged = Tagged;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t const* p = raw + i * stride;
    auto const xi = layout::load<std::int32_t>(p + layout::point_at::x);
    auto const yi = layout::load<std::int32_t>(p + layout::point_at::y);
    auto const zi = layout::load<std::int32_t>(p + layout::point_at::z);
    detail::record_attributes const a = detail::load_attributes<Extended>(p);
    if constexpr (Tagged) {
      out.tags()[k] = rules.tags().tag(true, a.classification, true, a.return_number, a.number_of_returns);
    }
    double const x = scaled_coords::apply(xi, t.scale[0], t.offset[0]);
    double const y = scaled_coords::apply(yi, t.scale[1], t.offset[1]);
    double const z = scaled_coords::apply(zi, t.scale[2], t.offset[2]);
    filter_verdict const v =
      rules.judge(x, y, z, true, a.classification, true, a.flags, true, a.return_number, a.number_of_returns);
    if (v != filter_verdict::keep) {
      filter_rules::count(v, stats);
      continue;
    }
    if constexpr (AsInt) {
      std::int32_t const value = detail::load_dimension_int<Extended>(p, dim);
      out.xi()[k] = xi;
      out.yi()[k] = yi;
      out.zi()[k] = value;
      ext.lo[2] = std::min(ext.lo[2], value);
      ext.hi[2] = std::max(ext.hi[2], value);
    } else {
      double const value = detail::load_dimension<Extended>(p, dim);
      if (!std::isfinite(value)) {
        ++stats.non_finite;
        continue;
      }
      out.x()[k] = x;
      out.y()[k] = y;
      out.z()[k] = value;
      ext.value_lo = std::min(ext.value_lo, value);
      ext.value_hi = std::max(ext.value_hi, value);
    }
    ext.lo[0] = std::min(ext.lo[0], xi);
    ext.hi[0] = std::max(ext.hi[0], xi);
    ext.lo[1] = std::min(ext.lo[1], yi);
    ext.hi[1] = std::max(ext.hi[1], yi);
    ++k;
  }
  out.size = k;
}

using decode_fn = void (*)(std::uint8_t const*, std::size_t, std::size_t, filter_rules const&, scaled_coords const&,
                           detail::las_dimension const&, point_batch&, filter_stats&, int_extent&);

/// Whether every int32 maps to a finite coordinate on every axis (the transform is monotonic,
/// so the two ends of the int32 range decide). Only absurd scales or offsets fail this.
inline bool transform_always_finite(scaled_coords const& t)
{
  for (int a = 0; a < 3; ++a) {
    if (!std::isfinite(scaled_coords::apply(std::numeric_limits<std::int32_t>::min(), t.scale[a], t.offset[a])) ||
        !std::isfinite(scaled_coords::apply(std::numeric_limits<std::int32_t>::max(), t.scale[a], t.offset[a]))) {
      return false;
    }
  }
  return true;
}

template <bool Tagged>
decode_fn pick_decoder(int point_format, bool always_finite, detail::las_dimension const& dim, bool as_int)
{
  if (!dim.is_z) {
    bool const extended = layout::is_extended_format(point_format);
    if (as_int) { return extended ? &decode_dimension<true, true, Tagged> : &decode_dimension<false, true, Tagged>; }
    return extended ? &decode_dimension<true, false, Tagged> : &decode_dimension<false, false, Tagged>;
  }
  if (layout::is_extended_format(point_format)) {
    return always_finite ? &decode_filtered<true, false, Tagged> : &decode_filtered<true, true, Tagged>;
  }
  return always_finite ? &decode_filtered<false, false, Tagged> : &decode_filtered<false, true, Tagged>;
}

/// Scratch bytes of the calling thread, reused from part to part (and from source to source):
/// parts are read by many threads at once, and each needs its own buffer.
inline std::vector<std::uint8_t>& thread_bytes(int which)
{
  thread_local std::vector<std::uint8_t> buffers[2];
  return buffers[which];
}
constexpr std::size_t slice_bytes = std::size_t{256} << 10;  // LAS records read at a time
constexpr int raw_records = 0;  // LAS records as read, LAZ records as decoded
constexpr int compressed_bytes = 1;

/// What every LAS/LAZ part_source shares: the header, the file handle (closed by release(),
/// reopened by the next read), and turning a part's decoded records into a filtered batch.
class las_parts_base : public part_source {
 public:
  las_parts_base(detail::opened_las opened, std::size_t part_points, std::string const& dimension)
    : header_(std::move(opened.header)),
      info_(detail::source_info_of(header_)),
      part_points_(part_points),
      dimension_(detail::find_las_dimension(dimension, header_, opened.file)),
      file_(std::make_shared<las_file const>(std::move(opened.file)))
  {
    for (int a = 0; a < 3; ++a) {
      header_transform_.scale[a] = header_.scale[static_cast<std::size_t>(a)];
      header_transform_.offset[a] = header_.offset[static_cast<std::size_t>(a)];
    }
    transform_ = header_transform_;
    if (!dimension_.is_z) {
      // The dimension rides in the z slot with its own scale and offset (1 and 0 for intensity),
      // as int32 when every stored value fits and scales to a finite value (an extra byte's
      // absurd scale would not), else as doubles, where a non-finite value is dropped as such.
      transform_.scale[2] = dimension_.scale;
      transform_.offset[2] = dimension_.offset;
      double_values_ = !dimension_.fits_int32() || !transform_always_finite(transform_);
    }
    decode_plain_ = pick_decoder<false>(header_.point_format, transform_always_finite(header_transform_), dimension_,
                                        !double_values_);
    decode_tagged_ = pick_decoder<true>(header_.point_format, transform_always_finite(header_transform_), dimension_,
                                        !double_values_);
  }

  [[nodiscard]] source_info const& info() const override { return info_; }

  [[nodiscard]] bool integer_parts() const override { return !double_values_; }

  [[nodiscard]] std::optional<bounds> declared_bounds() const override
  {
    bounds b;
    b.xmin = header_.header_min[0];
    b.xmax = header_.header_max[0];
    b.ymin = header_.header_min[1];
    b.ymax = header_.header_max[1];
    bool const finite = std::isfinite(b.xmin) && std::isfinite(b.xmax) && std::isfinite(b.ymin) && std::isfinite(b.ymax);
    if (!finite || b.empty()) { return std::nullopt; }
    return b;
  }

  void release() override
  {
    std::lock_guard<std::mutex> lock(file_mutex_);
    file_.reset();
  }

 protected:
  /// The open file, reopened when release() closed it. Readers hold their own reference, so a
  /// release() during a read closes the descriptor only once that read is done.
  [[nodiscard]] std::shared_ptr<las_file const> file() const
  {
    std::lock_guard<std::mutex> lock(file_mutex_);
    if (!file_) { file_ = std::make_shared<las_file const>(header_.path); }
    return file_;
  }

  /// What a LAZ decoder must decode for this reader: Z, classification and flags (the filters),
  /// and the dimension gridded.
  [[nodiscard]] laz::field_selection laz_fields(laz::laz_vlr_info const& vlr) const
  {
    return laz::with_record_bytes(laz::field_selection::heightgrid(), vlr, dimension_.at, dimension_.bytes());
  }

  /// Starts filling `out` for a part of `points` records.
  void begin_part(std::uint64_t k, std::size_t points, point_batch& out) const
  {
    HG_EXPECTS(out.capacity >= points && out.data != nullptr, error_kind::usage,
            info_.path + ": part " + std::to_string(k) + " needs a batch of " + std::to_string(points) +
              " points, the batch holds " + std::to_string(out.capacity));
    out.size = 0;
    out.tagged = false;
    out.encoding = double_values_ ? coord_encoding::float64 : coord_encoding::scaled_int32;
    out.transform = transform_;
  }

  /// The part_result of a part whose kept points have integer bounds `ext`.
  [[nodiscard]] part_result finish_part(filter_stats const& stats, int_extent const& ext, std::size_t kept) const
  {
    part_result r;
    r.filtered = stats;
    if (kept == 0) { return r; }
    add_integer_extent(r, ext.lo, ext.hi, transform_, !double_values_);
    if (double_values_) {
      r.z_min = ext.value_lo + 0.0;
      r.z_max = ext.value_hi + 0.0;
    }
    return r;
  }

  las_header_info header_;
  source_info info_;
  std::size_t part_points_;
  detail::las_dimension dimension_;  ///< what the z slot carries: Z, or --dimension's
  scaled_coords header_transform_;   ///< the header's scale and offset: the points' coordinates
  scaled_coords transform_;          ///< the batches': the header's, z replaced by the dimension's
  bool double_values_{false};        ///< the dimension does not fit int32: float64 batches
  decode_fn decode_plain_{nullptr};
  decode_fn decode_tagged_{nullptr};  ///< the same, writing each kept point's tag (tagged count bands)

  /// The decoder for a part read with `filter`.
  [[nodiscard]] decode_fn decoder(filter_rules const& filter) const
  {
    return filter.tagging() ? decode_tagged_ : decode_plain_;
  }

 private:
  mutable std::mutex file_mutex_;
  mutable std::shared_ptr<las_file const> file_;
};

/// LAZ files as part_sources (laz/laz_parts.cpp): by runs of whole chunks where a chunk table is
/// there (a COPC hierarchy restricts them), else read sequentially.
std::unique_ptr<part_source> open_laz_parts(detail::opened_las opened, std::size_t part_points,
                                            std::string const& dimension);

}  // namespace heightgrid::io::las_parts_detail
