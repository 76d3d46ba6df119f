#pragma once
// The filter stage between readers and gridding: classes, returns, withheld points, z limits.

#include "heightgrid/core/point_chunk.hpp"

#include <cstdint>
#include <limits>
#include <vector>

namespace heightgrid {

enum class return_filter { all, first, last };

struct filter_options {
  std::vector<std::uint8_t> classes;  ///< keep only these classes (empty: no class whitelist)
  /// Drop these classes. The default drops ASPRS low noise (7) and high noise (18).
  std::vector<std::uint8_t> drop_classes{7, 18};
  bool drop_withheld{true};  ///< drop points flagged withheld
  return_filter returns{return_filter::all};
  double z_min{-std::numeric_limits<double>::infinity()};
  double z_max{std::numeric_limits<double>::infinity()};

  /// `--keep-all`: no class, withheld or return filtering (z limits still apply).
  static filter_options keep_all();
};

/// Why points were removed; every point removed is counted exactly once, under the first rule
/// (in this order) that rejects it.
struct filter_stats {
  std::uint64_t points_in{0};
  std::uint64_t non_finite{0};  ///< NaN or Inf in x, y or z
  std::uint64_t by_class{0};
  std::uint64_t withheld{0};
  std::uint64_t by_return{0};
  std::uint64_t by_z{0};

  [[nodiscard]] std::uint64_t removed() const noexcept
  {
    return non_finite + by_class + withheld + by_return + by_z;
  }
  void add(filter_stats const& o) noexcept
  {
    points_in += o.points_in;
    non_finite += o.non_finite;
    by_class += o.by_class;
    withheld += o.withheld;
    by_return += o.by_return;
    by_z += o.by_z;
  }
};

/// Removes rejected points from `chunk` in place (order of the kept points is preserved).
/// Rules on attributes the chunk does not have (e.g. classes on XYZ input) do not apply.
/// Non-finite coordinates are always removed, and z = -0.0 becomes +0.0.
void apply_filter(filter_options const& options, point_chunk& chunk, filter_stats& stats);

}  // namespace heightgrid
