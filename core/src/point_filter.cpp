#include "heightgrid/core/point_filter.hpp"

#include "heightgrid/core/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

namespace heightgrid {

filter_options filter_options::keep_all()
{
  filter_options o;
  o.drop_classes.clear();
  o.drop_withheld = false;
  return o;
}

tag_table tag_table::of(std::vector<metric> const& tags)
{
  tag_table t{};
  HG_EXPECTS(tags.size() <= max_tag_bands, error_kind::internal, "tag_table: more than 8 tagged count bands");
  for (std::size_t b = 0; b < tags.size(); ++b) {
    auto const bit = static_cast<std::uint8_t>(1U << b);
    switch (tags[b].kind) {
      case metric_kind::class_count:
        for (unsigned c = 0; c < 256; ++c) {
          if (tags[b].has_class(c)) { t.by_class[c] = static_cast<std::uint8_t>(t.by_class[c] | bit); }
        }
        t.needs_class = true;
        break;
      case metric_kind::first:
        t.first = static_cast<std::uint8_t>(t.first | bit);
        t.needs_returns = true;
        break;
      case metric_kind::last:
        t.last = static_cast<std::uint8_t>(t.last | bit);
        t.needs_returns = true;
        break;
      default: throw error(error_kind::internal, "tag_table: " + metric_name(tags[b]) + " is not a tagged count");
    }
  }
  t.any = !tags.empty();
  return t;
}

filter_rules::filter_rules(filter_options const& options, tag_table const& tags)
{
  t_.tags = tags;
  t_.drop_withheld = options.drop_withheld;
  t_.check_returns = options.returns != return_filter::all;
  t_.returns = options.returns;
  t_.check_z = options.z_min > -HUGE_VAL || options.z_max < HUGE_VAL;
  t_.z_min = options.z_min;
  t_.z_max = options.z_max;
  // Class decisions as a 256-entry table: one load per point instead of two list searches.
  for (bool& ok : t_.class_ok) { ok = options.classes.empty(); }
  for (auto c : options.classes) { t_.class_ok[c] = true; }
  for (auto c : options.drop_classes) { t_.class_ok[c] = false; }
}

void apply_filter(filter_options const& options, point_chunk& chunk, filter_stats& stats)
{
  apply_filter(filter_rules(options), chunk, stats);
}

void apply_filter(filter_rules const& rules, point_chunk& chunk, filter_stats& stats)
{
  std::size_t const n = chunk.size();
  stats.points_in += n;

  bool const has_class = !chunk.classification.empty();
  bool const has_flags = !chunk.flags.empty();
  bool const has_returns = !chunk.return_number.empty() && !chunk.number_of_returns.empty();

  std::size_t out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double const x = chunk.x[i];
    double const y = chunk.y[i];
    double const z = chunk.z[i];
    auto const verdict =
      rules.judge(x, y, z, has_class, has_class ? chunk.classification[i] : 0, has_flags, has_flags ? chunk.flags[i] : 0,
                  has_returns, has_returns ? chunk.return_number[i] : 0, has_returns ? chunk.number_of_returns[i] : 0);
    if (verdict != filter_verdict::keep) {
      filter_rules::count(verdict, stats);
      continue;
    }
    // z + 0.0 turns -0.0 into +0.0 (and changes nothing else), so that a cell whose lowest point
    // is at zero reports the same min on every backend whatever order its points are reduced in.
    chunk.z[out] = z + 0.0;
    if (out != i) {
      chunk.x[out] = x;
      chunk.y[out] = y;
      if (has_class) { chunk.classification[out] = chunk.classification[i]; }
      if (has_flags) { chunk.flags[out] = chunk.flags[i]; }
      if (has_returns) {
        chunk.return_number[out] = chunk.return_number[i];
        chunk.number_of_returns[out] = chunk.number_of_returns[i];
      }
    }
    ++out;
  }
  chunk.x.resize(out);
  chunk.y.resize(out);
  chunk.z.resize(out);
  if (has_class) { chunk.classification.resize(out); }
  if (has_flags) { chunk.flags.resize(out); }
  if (has_returns) {
    chunk.return_number.resize(out);
    chunk.number_of_returns.resize(out);
  }
}

}  // namespace heightgrid
