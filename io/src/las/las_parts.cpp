// open_las_parts: LAS and LAZ files as part_sources. Parts are record ranges (LAS: here) or runs of
// whole chunks (LAZ with a chunk table: laz/laz_parts.cpp), each read and decoded by the thread that
// asks for it, straight into the caller's batch as the stored integers, filtered on the way.

#include "las/las_parts_base.hpp"

namespace heightgrid::io {
namespace las_parts_detail {
namespace {

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
    if (records_ && !out.decode_records) { return read_records(first, n, out); }
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

}  // namespace
}  // namespace las_parts_detail

std::unique_ptr<part_source> open_las_parts(std::string const& path, std::size_t part_points,
                                            std::string const& dimension)
{
  HG_EXPECTS(part_points > 0, error_kind::usage, path + ": part_points must be > 0");
  detail::opened_las opened = detail::open_las_file(path);
  if (!opened.laz_vlr) {
    return std::make_unique<las_parts_detail::las_record_parts>(std::move(opened), part_points, dimension);
  }
  return las_parts_detail::open_laz_parts(std::move(opened), part_points, dimension);
}

}  // namespace heightgrid::io

