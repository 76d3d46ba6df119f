#include "heightgrid/core/point_source.hpp"

#include "heightgrid/core/error.hpp"

#include <algorithm>

namespace heightgrid {

void copy_to_batch(point_chunk const& chunk, point_batch& out, part_result& r, filter_rules const* rules,
                   std::string const& path)
{
  HG_EXPECTS(out.capacity >= chunk.size(), error_kind::internal, "copy_to_batch: the batch is smaller than the chunk");
  out.encoding = coord_encoding::float64;
  out.size = chunk.size();
  out.tagged = rules != nullptr && rules->tagging();
  if (out.tagged) {
    tag_table const& t = rules->tags();
    bool const has_class = !chunk.classification.empty();
    bool const has_returns = !chunk.return_number.empty() && !chunk.number_of_returns.empty();
    if (!chunk.empty()) {
      HG_EXPECTS(has_class || !t.needs_class, error_kind::input,
                 path + ": its points have no classification, which count:CLASSES counts by");
      HG_EXPECTS(has_returns || !t.needs_returns, error_kind::input,
                 path + ": its points have no return numbers, which the first and last bands count by");
    }
    std::uint8_t* const tags = out.tags();
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      tags[i] = t.tag(has_class, has_class ? chunk.classification[i] : 0, has_returns,
                      has_returns ? chunk.return_number[i] : 0, has_returns ? chunk.number_of_returns[i] : 0);
    }
  }
  double* x = out.x();
  double* y = out.y();
  double* z = out.z();
  for (std::size_t i = 0; i < chunk.size(); ++i) {
    x[i] = chunk.x[i];
    y[i] = chunk.y[i];
    z[i] = chunk.z[i];
    r.extent.extend(x[i], y[i]);
    r.z_min = std::min(r.z_min, z[i]);
    r.z_max = std::max(r.z_max, z[i]);
  }
}

void add_integer_extent(part_result& r, std::int32_t const (&lo)[3], std::int32_t const (&hi)[3],
                        scaled_coords const& t, bool with_z)
{
  double at_lo[3];
  double at_hi[3];
  for (int a = 0; a < 3; ++a) {
    double const l = scaled_coords::apply(lo[a], t.scale[a], t.offset[a]);
    double const h = scaled_coords::apply(hi[a], t.scale[a], t.offset[a]);
    at_lo[a] = t.scale[a] > 0 ? l : h;
    at_hi[a] = t.scale[a] > 0 ? h : l;
  }
  r.extent.extend(at_lo[0], at_lo[1]);
  r.extent.extend(at_hi[0], at_hi[1]);
  if (with_z) {
    // + 0.0: -0.0 becomes +0.0, as apply_filter does to every z.
    r.z_min = std::min(r.z_min, at_lo[2] + 0.0);
    r.z_max = std::max(r.z_max, at_hi[2] + 0.0);
  }
}

part_result records_result(las_record_stats const& s, scaled_coords const& t)
{
  part_result r;
  r.filtered.non_finite = s.non_finite;
  r.filtered.by_class = s.by_class;
  r.filtered.withheld = s.withheld;
  r.filtered.by_return = s.by_return;
  r.filtered.by_z = s.by_z;
  if (s.any_kept()) { add_integer_extent(r, s.lo, s.hi, t, true); }
  return r;
}

void decode_las_records(point_batch const& raw, filter_rules const& rules, point_batch& out, las_record_stats& stats)
{
  HG_EXPECTS(raw.encoding == coord_encoding::las_records && out.capacity >= raw.size && out.data != nullptr,
             error_kind::internal, "decode_las_records: a batch of records and room for its points expected");
  out.encoding = coord_encoding::scaled_int32;
  out.transform = raw.transform;
  out.source = raw.source;
  out.tagged = rules.tagging();
  tag_table const& tagging = rules.tags();
  auto const& t = raw.transform;
  auto const* bytes = static_cast<std::uint8_t const*>(raw.data);
  std::size_t k = 0;
  for (std::size_t i = 0; i < raw.size; ++i) {
    std::uint8_t const* p = bytes + i * raw.record_length;
    std::int32_t const xi = las_load_i32(p + las_point_at::x);
    std::int32_t const yi = las_load_i32(p + las_point_at::y);
    std::int32_t const zi = las_load_i32(p + las_point_at::z);
    las_record_attributes const a = las_attributes(p, raw.extended_records);
    filter_verdict const v = rules.judge(scaled_coords::apply(xi, t.scale[0], t.offset[0]),
                                         scaled_coords::apply(yi, t.scale[1], t.offset[1]),
                                         scaled_coords::apply(zi, t.scale[2], t.offset[2]), true, a.classification,
                                         true, a.flags, true, a.return_number, a.number_of_returns);
    switch (v) {
      case filter_verdict::keep: break;
      case filter_verdict::non_finite: ++stats.non_finite; continue;
      case filter_verdict::by_class: ++stats.by_class; continue;
      case filter_verdict::withheld: ++stats.withheld; continue;
      case filter_verdict::by_return: ++stats.by_return; continue;
      case filter_verdict::by_z: ++stats.by_z; continue;
    }
    out.xi()[k] = xi;
    out.yi()[k] = yi;
    out.zi()[k] = zi;
    if (out.tagged) { out.tags()[k] = tagging.tag(true, a.classification, true, a.return_number, a.number_of_returns); }
    std::int32_t const v3[3] = {xi, yi, zi};
    for (int a3 = 0; a3 < 3; ++a3) {
      stats.lo[a3] = std::min(stats.lo[a3], v3[a3]);
      stats.hi[a3] = std::max(stats.hi[a3], v3[a3]);
    }
    ++k;
  }
  out.size = k;
}

}  // namespace heightgrid
