#include "heightgrid/core/point_filter.hpp"

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

void apply_filter(filter_options const& options, point_chunk& chunk, filter_stats& stats)
{
  std::size_t const n = chunk.size();
  stats.points_in += n;

  // Class decisions as a 256-entry table: one load per point instead of two list searches.
  std::array<bool, 256> class_ok{};
  class_ok.fill(options.classes.empty());
  for (auto c : options.classes) { class_ok[c] = true; }
  for (auto c : options.drop_classes) { class_ok[c] = false; }

  bool const has_class = !chunk.classification.empty();
  bool const has_flags = !chunk.flags.empty();
  bool const has_returns = !chunk.return_number.empty() && !chunk.number_of_returns.empty();
  bool const check_returns = has_returns && options.returns != return_filter::all;
  bool const check_z = options.z_min > -HUGE_VAL || options.z_max < HUGE_VAL;

  std::size_t out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double const x = chunk.x[i];
    double const y = chunk.y[i];
    double const z = chunk.z[i];
    if (!(std::isfinite(x) && std::isfinite(y) && std::isfinite(z))) {
      ++stats.non_finite;
      continue;
    }
    if (has_class && !class_ok[chunk.classification[i]]) {
      ++stats.by_class;
      continue;
    }
    if (options.drop_withheld && has_flags && (chunk.flags[i] & point_flag::withheld) != 0) {
      ++stats.withheld;
      continue;
    }
    if (check_returns) {
      bool const keep = options.returns == return_filter::first
                          ? chunk.return_number[i] <= 1
                          : chunk.return_number[i] >= chunk.number_of_returns[i];
      if (!keep) {
        ++stats.by_return;
        continue;
      }
    }
    if (check_z && !(z >= options.z_min && z <= options.z_max)) {
      ++stats.by_z;
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
