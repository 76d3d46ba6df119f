// open_las_parts: LAS and LAZ files as part_sources. Parts are record ranges (LAS) or runs of
// whole chunks (LAZ with a chunk table), each read and decoded by the thread that asks for it,
// straight into the caller's batch as the stored integers, filtered on the way.

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

namespace heightgrid::io {
namespace {

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
bool transform_always_finite(scaled_coords const& t)
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
std::vector<std::uint8_t>& thread_bytes(int which)
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

/// Uncompressed LAS: part k is records [k * P, min((k + 1) * P, n)).
class las_record_parts final : public las_parts_base {
 public:
  las_record_parts(detail::opened_las opened, std::size_t part_points, std::string const& dimension)
    : las_parts_base(std::move(opened), part_points, dimension)
  {
  }

  [[nodiscard]] std::optional<std::uint64_t> part_count() const override { return count(); }
  [[nodiscard]] bool concurrent_parts() const override { return true; }
  /// Batches are sized for part_points_ points whether records travel or not (a part of records
  /// then holds as many as fit those bytes: points_per_part()).
  [[nodiscard]] std::size_t max_part_points() const override { return part_points_; }

  bool deliver_records(bool on) override
  {
    // Records travel only for Z (a --dimension's value would need its decoder on the device), and
    // only where a record fits a batch's bytes (parts of a point or two of formats over 24 bytes).
    records_ = on && dimension_.is_z && batch_bytes(part_points_) >= header_.record_length;
    return records_ || !on;
  }

  [[nodiscard]] part_result result_of_records(las_record_stats const& stats) const override
  {
    return records_result(stats, header_transform_);
  }

  part_result read_part(std::uint64_t k, filter_rules const& filter, point_batch& out) override
  {
    HG_EXPECTS(k < count(), error_kind::usage,
            info_.path + ": part " + std::to_string(k) + " asked for, the file has " + std::to_string(count()));
    std::uint64_t const first = k * points_per_part();
    auto const n = static_cast<std::size_t>(std::min<std::uint64_t>(points_per_part(), header_.point_count - first));
    if (records_) { return read_records(first, n, out); }
    begin_part(k, n, out);
    std::size_t const stride = header_.record_length;
    // Read and decoded a slice at a time, so that the records are decoded while the copy has left
    // them in the core's own cache (a part's records, 2^18 of them, would not fit).
    std::size_t const slice = std::max<std::size_t>(1, slice_bytes / stride);
    std::vector<std::uint8_t>& raw = thread_bytes(raw_records);
    if (raw.size() < std::min(n, slice) * stride) { raw.resize(std::min(n, slice) * stride); }
    filter_stats stats;
    stats.points_in = n;
    int_extent ext;
    for (std::size_t done = 0; done < n;) {
      std::size_t const m = std::min(slice, n - done);
      read_records_into(first + done, m, raw.data());
      decoder(filter)(raw.data(), stride, m, filter, header_transform_, dimension_, out, stats, ext);
      done += m;
    }
    return finish_part(stats, ext, out.size);
  }

 private:
  /// Records per part: part_points_, or while records travel as many as fit a batch's bytes
  /// (batch_bytes(part_points_): fewer records than points for records over 24 bytes), at most
  /// part_points_ (a batch's size counts them as points).
  [[nodiscard]] std::size_t points_per_part() const
  {
    if (!records_) { return part_points_; }
    return std::max<std::size_t>(1, std::min(part_points_, batch_bytes(part_points_) / header_.record_length));
  }
  [[nodiscard]] std::uint64_t count() const { return parts_for(header_.point_count, points_per_part()); }

  /// Copies records [first, first + n) from the file to `out`; a file that ends before them (it was
  /// truncated after opening) is an input error naming the record and the byte.
  void read_records_into(std::uint64_t first, std::size_t n, std::uint8_t* out) const
  {
    std::size_t const stride = header_.record_length;
    std::uint64_t const at = header_.offset_to_point_data + first * stride;
    std::size_t const got = file()->read_upto(at, n * stride, out);
    if (got < n * stride) {
      throw error(error_kind::input, info_.path + ": record " + std::to_string(first + got / stride) +
                                       ": the file ends at byte " + std::to_string(at + got) + ", before the " +
                                       std::to_string(header_.point_count) +
                                       " records its header declares (was it truncated after opening?)");
    }
  }

  /// Records [first, first + n) copied from the file into the batch as they are (one read, no
  /// decoding: the binner decodes and filters them).
  part_result read_records(std::uint64_t first, std::size_t n, point_batch& out) const
  {
    std::size_t const stride = header_.record_length;
    HG_EXPECTS(out.data != nullptr && n * stride <= batch_bytes(out.capacity), error_kind::usage,
               info_.path + ": " + std::to_string(n) + " records of " + std::to_string(stride) +
                 " bytes do not fit a batch of " + std::to_string(out.capacity) + " points");
    read_records_into(first, n, static_cast<std::uint8_t*>(out.data));
    out.size = n;
    out.encoding = coord_encoding::las_records;
    out.transform = header_transform_;
    out.record_length = static_cast<std::uint32_t>(stride);
    out.extended_records = layout::is_extended_format(header_.point_format);
    part_result r;
    r.filtered.points_in = n;
    return r;
  }

  bool records_{false};
};

/// Consecutive chunks [first_chunk, end_chunk) read as one part.
struct chunk_run {
  std::size_t first_chunk;
  std::size_t end_chunk;
  std::size_t points;
};

/// Groups chunks into runs of at most `part_points` points; a larger chunk is a run by itself.
std::vector<chunk_run> group_chunks(std::vector<laz::chunk_entry> const& chunks, std::size_t part_points)
{
  std::vector<chunk_run> runs;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    auto const points = static_cast<std::size_t>(chunks[i].points);
    // Empty chunks (the table allows them) join the current run, whatever its size.
    if (!runs.empty() && (runs.back().points + points <= part_points || points == 0)) {
      runs.back().end_chunk = i + 1;
      runs.back().points += points;
    } else {
      runs.push_back({i, i + 1, points});
    }
  }
  return runs;
}

/// A COPC file's octree, chunk by chunk (copc.hpp).
struct copc_layout {
  laz::copc_info info;
  std::vector<std::optional<laz::copc_node>> node_of_chunk;  ///< the node whose chunk it is, if any
};

/// The node of each chunk of a COPC file (by offset), or nothing when the file is not COPC. Throws
/// error_kind::input for an info VLR or hierarchy that is malformed or names chunks the chunk
/// table does not have.
std::optional<copc_layout> copc_layout_of(detail::opened_las const& opened, std::vector<laz::chunk_entry> const& chunks)
{
  las_file const& file = opened.file;
  laz::file_reader const read = [&file](std::uint64_t offset, std::size_t count, std::uint8_t* bytes) {
    file.read_exact(offset, count, bytes);
  };
  std::optional<laz::copc_info> info = laz::read_copc_info(opened.header, read);
  if (!info) { return std::nullopt; }
  copc_layout layout{*info, std::vector<std::optional<laz::copc_node>>(chunks.size())};
  std::vector<laz::copc_node> const nodes = laz::read_copc_hierarchy(opened.header, *info, read);
  std::unordered_map<std::uint64_t, std::size_t> chunk_at;
  for (std::size_t i = 0; i < chunks.size(); ++i) { chunk_at.emplace(chunks[i].offset, i); }
  for (auto const& n : nodes) {
    auto const it = chunk_at.find(n.offset);
    if (it == chunk_at.end() || chunks[it->second].points != n.points) {
      throw error(error_kind::input, opened.header.path + ": COPC: node " + std::to_string(n.level) + "-" +
                                       std::to_string(n.x) + "-" + std::to_string(n.y) + "-" + std::to_string(n.z) +
                                       " (" + std::to_string(n.points) + " points at byte " + std::to_string(n.offset) +
                                       ") is no chunk of the LAZ chunk table");
    }
    layout.node_of_chunk[it->second] = n;
  }
  return layout;
}

/// LAZ with a usable chunk table: part k is run k of whole chunks, decoded by the reading thread.
/// A COPC file's chunks are its octree's nodes: restrict_to keeps those a window or a level needs.
class laz_chunk_parts final : public las_parts_base {
 public:
  laz_chunk_parts(detail::opened_las opened, std::size_t part_points, std::string const& dimension,
                  laz::laz_file_layout where, laz::laz_vlr_info vlr, std::vector<laz::chunk_entry> chunks,
                  std::optional<copc_layout> copc = std::nullopt)
    : las_parts_base(std::move(opened), part_points, dimension),
      where_(std::move(where)),
      vlr_(std::move(vlr)),
      fields_(laz_fields(vlr_)),
      all_chunks_(std::move(chunks)),
      copc_(std::move(copc))
  {
    use_chunks(all_chunks_);
  }

  /// A warning for the job's log (source_info::notes).
  void add_note(std::string note) { info_.notes.push_back(std::move(note)); }

  /// Why the file's COPC hierarchy cannot be used: it is read whole (a warning), and --copc-level
  /// is refused.
  void set_copc_problem(std::string problem)
  {
    add_note(problem + "; the file is read whole, as plain LAZ");
    copc_problem_ = std::move(problem);
  }

  region_report restrict_to(read_region const& region) override
  {
    // A COPC file whose hierarchy cannot be used is read whole (the same cells for any window), but
    // levels cannot be left out without it: reading every level would silently give other cells.
    HG_EXPECTS(copc_ || copc_problem_.empty() || (!region.max_level && !(region.auto_level_cell > 0.0)),
               error_kind::input, copc_problem_ + "; --copc-level needs it");
    if (!copc_) { return {}; }
    HG_EXPECTS(bulk_ == nullptr, error_kind::internal, info_.path + ": restricted after its chunks were offloaded");
    region_report r;
    r.sources = 1;
    int shallowest = std::numeric_limits<int>::max();
    for (auto const& n : copc_->node_of_chunk) {
      if (n) {
        r.deepest = std::max(r.deepest, static_cast<int>(n->level));
        shallowest = std::min(shallowest, static_cast<int>(n->level));
      }
    }
    int const max_level =
      region.auto_level_cell > 0.0
        ? laz::copc_auto_level(copc_->info, region.auto_level_cell, shallowest, std::max(r.deepest, 0))
        : region.max_level.value_or(std::numeric_limits<int>::max());
    // A node is read when its cube, widened by a millionth of its side and half a stored unit
    // (points on a face, rounding), meets the window.
    double const unit = 0.5 * std::max(std::abs(header_transform_.scale[0]), std::abs(header_transform_.scale[1]));
    std::vector<laz::chunk_entry> kept;
    for (std::size_t i = 0; i < all_chunks_.size(); ++i) {
      auto const& c = all_chunks_[i];
      auto const& n = copc_->node_of_chunk[i];
      bool keep = c.points > 0;  // a chunk no node names is read (its points are somewhere)
      if (n) {
        r.nodes += 1;
        r.points += c.points;
        r.bytes += c.bytes;
        keep = n->level <= max_level;
        if (keep && region.window) {
          bounds const b = laz::copc_node_bounds(copc_->info, *n);
          double const pad = (b.xmax - b.xmin) * 1e-6 + unit;
          keep = b.xmin - pad <= region.window->xmax && b.xmax + pad >= region.window->xmin &&
                 b.ymin - pad <= region.window->ymax && b.ymax + pad >= region.window->ymin;
        }
        if (keep) {
          r.nodes_read += 1;
          r.points_read += c.points;
          r.bytes_read += c.bytes;
          r.deepest_read = std::max(r.deepest_read, static_cast<int>(n->level));
        }
      }
      if (keep) { kept.push_back(c); }
    }
    use_chunks(std::move(kept));
    return r;
  }

  [[nodiscard]] std::optional<std::uint64_t> part_count() const override { return runs_.size(); }
  [[nodiscard]] bool concurrent_parts() const override { return true; }
  [[nodiscard]] std::size_t max_part_points() const override { return max_points_; }

  bool offload_chunks(bulk_chunk_decoder* decoder) override
  {
    bulk_ = nullptr;
    if (decoder == nullptr) { return false; }
    // What a bulk decoder produces: point14 records (layered LAZ) up to the classification, with
    // Z, classification and flags decoded, or whole point10 records (pointwise LAZ of formats 0-3:
    // point10 v2, then gpstime11, rgb12 and byte items v2); enough when the job reads nothing else.
    laz::field_selection const want = laz::field_selection::heightgrid();
    laz::field_selection const& f = fields_;
    bool const only_base = f.z == want.z && f.classification == want.classification && f.flags == want.flags &&
                           f.intensity == want.intensity && f.scan_angle == want.scan_angle &&
                           f.user_data == want.user_data && f.point_source == want.point_source &&
                           f.gps_time == want.gps_time && f.rgb == want.rgb && f.nir == want.nir &&
                           f.extra_bytes == want.extra_bytes && f.wavepacket == want.wavepacket;
    std::size_t const layers = laz::layered_layer_count(vlr_);
    bulk_chunk_decoder::file_format format{static_cast<std::uint32_t>(vlr_.record_length()),
                                           static_cast<std::uint32_t>(layers), header_transform_, dimension_.is_z};
    bool known = layers != 0 && vlr_.items.front().type == laz::item_type::point14;
    if (layers == 0 && vlr_.compressor == laz::compressor_pointwise_chunked && !vlr_.items.empty() &&
        vlr_.items.front().type == laz::item_type::point10 && vlr_.items.front().version == 2) {
      format.pointwise = known = true;
      for (std::size_t i = 1; i < vlr_.items.size() && known; ++i) {
        laz::laz_item const& item = vlr_.items[i];
        known = item.version == 2 && ((item.type == laz::item_type::gpstime11 && !format.gps_time && !format.rgb &&
                                       format.extra_bytes == 0) ||
                                      (item.type == laz::item_type::rgb12 && !format.rgb && format.extra_bytes == 0) ||
                                      (item.type == laz::item_type::byte && format.extra_bytes == 0));
        format.gps_time = format.gps_time || item.type == laz::item_type::gpstime11;
        format.rgb = format.rgb || item.type == laz::item_type::rgb12;
        if (item.type == laz::item_type::byte) { format.extra_bytes = item.size; }
      }
    }
    bool const eligible = known && !chunks_.empty() && only_base && !double_values_ &&
                          dimension_.at + dimension_.bytes() <= format.decoded_bytes();
    if (!eligible) { return false; }
    std::vector<bulk_chunk_decoder::chunk> chunks;
    chunks.reserve(chunks_.size());
    for (auto const& c : chunks_) {
      if (c.points > UINT32_MAX) { return false; }
      chunks.push_back({c.offset, c.bytes, static_cast<std::uint32_t>(c.points)});
    }
    // The decoder reads on its own threads, opening a local file for each chunk: a handle kept per
    // file would hold one descriptor per input for the whole job (10^5 tiles pass the usual limit),
    // and an open costs microseconds next to a chunk's ~300 KB. A remote file is opened once, at its
    // first chunk (an open through GDAL asks the server: ~1 ms a chunk measured), its handles shared.
    std::string const path = header_.path;
    if (is_remote(path)) {
      auto const opened = std::make_shared<std::shared_ptr<las_file const>>();
      auto const once = std::make_shared<std::once_flag>();
      bulk_first_ = decoder->add_file(format, chunks, [path, opened, once](std::uint64_t o, std::size_t n, std::uint8_t* b) {
        std::call_once(*once, [&] { *opened = std::make_shared<las_file const>(path); });
        (*opened)->read_exact(o, n, b);
      });
    } else {
      bulk_first_ = decoder->add_file(format, chunks, [path](std::uint64_t o, std::size_t n, std::uint8_t* b) {
        las_file const f(path);
        f.read_exact(o, n, b);
      });
    }
    bulk_ = decoder;
    bulk_stride_ = format.decoded_bytes();
    return true;
  }

  /// Chunks binned where the GPU decoded them (bulk_chunk_decoder::binned) are reported by the grid.
  [[nodiscard]] part_result result_of_records(las_record_stats const& stats) const override
  {
    return records_result(stats, header_transform_);
  }

  part_result read_part(std::uint64_t k, filter_rules const& filter, point_batch& out) override
  {
    HG_EXPECTS(k < runs_.size(), error_kind::usage,
            info_.path + ": part " + std::to_string(k) + " asked for, the file has " + std::to_string(runs_.size()));
    chunk_run const& run = runs_[static_cast<std::size_t>(k)];
    begin_part(k, run.points, out);
    std::shared_ptr<las_file const> const f = file();
    laz::file_reader const read = [&f](std::uint64_t offset, std::size_t count, std::uint8_t* bytes) {
      f->read_exact(offset, count, bytes);
    };
    // The thread's buffers lent to this call (and lost, not shared, if it throws); the item
    // decoders are built per part, as they depend on the file.
    laz::chunk_scratch scratch;
    scratch.compressed = std::move(thread_bytes(compressed_bytes));
    std::vector<std::uint8_t> records = std::move(thread_bytes(raw_records));
    std::size_t const stride = header_.record_length;
    if (records.size() < largest_chunk_ * stride) { records.resize(largest_chunk_ * stride); }
    filter_stats stats;
    stats.points_in = run.points;
    int_extent ext;
    for (std::size_t c = run.first_chunk; c < run.end_chunk; ++c) {
      auto const points = static_cast<std::size_t>(chunks_[c].points);
      if (bulk_ != nullptr) {
        // Records decoded in bulk (the GPU): the first bulk_stride_ bytes of each record, all the
        // fields this job reads (offload_chunks checked).
        struct release_guard {
          bulk_chunk_decoder* d;
          std::size_t i;
          ~release_guard() { d->release(i); }
        } const guard{bulk_, bulk_first_ + c};
        if (bulk_->binned(bulk_first_ + c)) { continue; }  // on the device: reported by the grid
        if (std::uint8_t const* decoded = bulk_->records(bulk_first_ + c)) {
          decoder(filter)(decoded, bulk_stride_, points, filter, header_transform_, dimension_, out,
                  stats, ext);
          continue;
        }
      }
      laz::decode_laz_chunk(where_, vlr_, read, c, chunks_[c], scratch, records.data(), fields_);
      decoder(filter)(records.data(), stride, points, filter, header_transform_, dimension_, out, stats, ext);
    }
    thread_bytes(compressed_bytes) = std::move(scratch.compressed);
    thread_bytes(raw_records) = std::move(records);
    return finish_part(stats, ext, out.size);
  }

 private:
  /// Reads `chunks` (all of the file's, or those restrict_to kept) from now on.
  void use_chunks(std::vector<laz::chunk_entry> chunks)
  {
    chunks_ = std::move(chunks);
    runs_ = group_chunks(chunks_, part_points_);
    max_points_ = part_points_;
    for (auto const& r : runs_) { max_points_ = std::max(max_points_, r.points); }
    largest_chunk_ = 0;
    std::uint64_t points = 0;
    for (auto const& c : chunks_) {
      largest_chunk_ = std::max(largest_chunk_, static_cast<std::size_t>(c.points));
      points += c.points;
    }
    if (copc_) { info_.point_count = points; }
  }

  laz::laz_file_layout where_;
  laz::laz_vlr_info vlr_;
  laz::field_selection fields_;
  std::vector<laz::chunk_entry> all_chunks_;
  std::optional<copc_layout> copc_;
  std::string copc_problem_;  ///< why a COPC hierarchy cannot be used (set_copc_problem); empty when it can
  std::vector<laz::chunk_entry> chunks_;  ///< the chunks read
  std::vector<chunk_run> runs_;
  std::size_t max_points_{0};
  std::size_t largest_chunk_{0};
  bulk_chunk_decoder* bulk_{nullptr};  ///< offload_chunks' decoder, or none
  std::size_t bulk_first_{0};          ///< the number of chunk 0 in bulk_
  std::size_t bulk_stride_{bulk_chunk_decoder::record_bytes};  ///< bytes of a record bulk_ hands out
};

/// LAZ without a usable chunk table: the chunks can only be found one after the other, so parts
/// are read in order through one laz_record_stream decoding on the calling thread.
class laz_sequential_parts final : public las_parts_base {
 public:
  laz_sequential_parts(detail::opened_las opened, std::size_t part_points, std::string const& dimension,
                       laz::laz_vlr_info vlr)
    : las_parts_base(std::move(opened), part_points, dimension), vlr_(std::move(vlr))
  {
  }

  [[nodiscard]] std::optional<std::uint64_t> part_count() const override { return count(); }
  [[nodiscard]] bool concurrent_parts() const override { return false; }
  [[nodiscard]] std::size_t max_part_points() const override { return part_points_; }

  part_result read_part(std::uint64_t k, filter_rules const& filter, point_batch& out) override
  {
    HG_EXPECTS(k < count(), error_kind::usage,
            info_.path + ": part " + std::to_string(k) + " asked for, the file has " + std::to_string(count()));
    if (k == 0) {
      restart();
    } else {
      HG_EXPECTS(stream_ != nullptr && k == next_part_, error_kind::usage,
              info_.path + ": parts of a LAZ file without a chunk table are read in order; part " +
                std::to_string(k) + " asked for, the next one is " + std::to_string(stream_ ? next_part_ : 0));
    }
    std::uint64_t const first = k * part_points_;
    auto const n = static_cast<std::size_t>(std::min<std::uint64_t>(part_points_, header_.point_count - first));
    begin_part(k, n, out);
    filter_stats stats;
    stats.points_in = n;
    int_extent ext;
    try {
      for (std::size_t done = 0; done < n;) {
        auto const run = stream_->next(n - done);
        if (run.points == 0) {
          throw error(error_kind::internal, info_.path + ": the LAZ decoder ran out of points at point " +
                                              std::to_string(first + done) + " of " +
                                              std::to_string(header_.point_count));
        }
        decoder(filter)(run.records, header_.record_length, run.points, filter, header_transform_, dimension_, out, stats, ext);
        done += run.points;
      }
    } catch (...) {
      stream_.reset();  // a later read starts over at part 0
      throw;
    }
    next_part_ = k + 1;
    part_result r = finish_part(stats, ext, out.size);
    r.last = next_part_ == count();
    return r;
  }

  void release() override
  {
    stream_.reset();  // first: its reader holds the file
    las_parts_base::release();
  }

 private:
  [[nodiscard]] std::uint64_t count() const { return parts_for(header_.point_count, part_points_); }

  void restart()
  {
    stream_.reset();
    std::shared_ptr<las_file const> f = file();
    stream_ = std::make_unique<laz::laz_record_stream>(
      detail::laz_layout_of(header_), vlr_,
      [f](std::uint64_t offset, std::size_t count, std::uint8_t* bytes) { f->read_exact(offset, count, bytes); },
      1, laz_fields(vlr_));
    next_part_ = 0;
  }

  laz::laz_vlr_info vlr_;
  std::unique_ptr<laz::laz_record_stream> stream_;
  std::uint64_t next_part_{0};
};

}  // namespace

std::unique_ptr<part_source> open_las_parts(std::string const& path, std::size_t part_points,
                                            std::string const& dimension)
{
  HG_EXPECTS(part_points > 0, error_kind::usage, path + ": part_points must be > 0");
  detail::opened_las opened = detail::open_las_file(path);
  if (!opened.laz_vlr) { return std::make_unique<las_record_parts>(std::move(opened), part_points, dimension); }
  laz::laz_vlr_info vlr = std::move(*opened.laz_vlr);
  laz::laz_file_layout where = detail::laz_layout_of(opened.header);
  if (where.point_count == 0) {
    // No points, no chunks: zero parts, concurrent like any file with a table.
    return std::make_unique<laz_chunk_parts>(std::move(opened), part_points, dimension, std::move(where),
                                             std::move(vlr), std::vector<laz::chunk_entry>{});
  }
  las_file const& file = opened.file;
  laz::laz_chunk_map map = laz::locate_laz_chunks(
    where, vlr, [&file](std::uint64_t offset, std::size_t count, std::uint8_t* bytes) {
      file.read_exact(offset, count, bytes);
    });
  if (map.chunks.empty()) {
    return std::make_unique<laz_sequential_parts>(std::move(opened), part_points, dimension, std::move(vlr));
  }
  // A COPC hierarchy only saves reading: one that cannot be used leaves a LAZ file whose chunk
  // table still gives every point (read whole, with a warning), as readers without COPC read it.
  std::optional<copc_layout> copc;
  std::string copc_problem;
  try {
    copc = copc_layout_of(opened, map.chunks);
  } catch (error const& e) {
    if (e.kind() != error_kind::input) { throw; }
    copc_problem = e.what();
  }
  auto parts = std::make_unique<laz_chunk_parts>(std::move(opened), part_points, dimension, std::move(where),
                                                 std::move(vlr), std::move(map.chunks), std::move(copc));
  if (!copc_problem.empty()) { parts->set_copc_problem(std::move(copc_problem)); }
  return parts;
}

}  // namespace heightgrid::io
