#pragma once
// The filter stage between readers and gridding: classes, returns, withheld points, z limits.

#include "heightgrid/core/grid_spec.hpp"  // HG_HOST_DEVICE
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_chunk.hpp"

#include <array>
#include <cmath>
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
  std::uint64_t off_ground{0};  ///< --ground: outside the terrain raster or on its nodata

  [[nodiscard]] std::uint64_t removed() const noexcept
  {
    return non_finite + by_class + withheld + by_return + by_z + off_ground;
  }
  void add(filter_stats const& o) noexcept
  {
    points_in += o.points_in;
    non_finite += o.non_finite;
    by_class += o.by_class;
    withheld += o.withheld;
    by_return += o.by_return;
    by_z += o.by_z;
    off_ground += o.off_ground;
  }
};

/// Why one point is removed, or `keep`: the first rule of filter_options that rejects it, in the
/// order filter_stats counts them.
enum class filter_verdict : std::uint8_t { keep, non_finite, by_class, withheld, by_return, by_z };

/// Whether v is finite, on the host and the device alike.
HG_HOST_DEVICE inline bool finite_value(double v) noexcept
{
#if defined(__CUDA_ARCH__)
  return isfinite(v);
#else
  return std::isfinite(v);
#endif
}

/// What a kept point carries to binning for the tagged count bands of metric_request::tags: bit b of
/// its tag says that band b counts it (count:CLASSES by its class, first and last by its returns).
/// Plain data, judged by the same code on the host and the device.
struct tag_table {
  std::uint8_t by_class[256];  ///< the bands that count each class
  std::uint8_t first;          ///< the bands that count first returns
  std::uint8_t last;           ///< the bands that count last returns
  bool any;                    ///< there is a tagged band: readers write tags
  bool needs_class;            ///< a band reads the class (a source without classes is refused)
  bool needs_returns;          ///< a band reads the returns (a source without them is refused)

  /// The table of `tags` (metric_request::tags: count:CLASSES, first, last; at most 8).
  [[nodiscard]] static tag_table of(std::vector<metric> const& tags);

  /// The tag of a kept point; attributes the source lacks (has_* false) count for no band.
  HG_HOST_DEVICE [[nodiscard]] std::uint8_t tag(bool has_class, std::uint8_t classification, bool has_returns,
                                                std::uint8_t return_number, std::uint8_t number_of_returns) const noexcept
  {
    std::uint8_t t = has_class ? by_class[classification] : std::uint8_t{0};
    if (has_returns) {
      if (return_number <= 1) { t = static_cast<std::uint8_t>(t | first); }
      if (return_number >= number_of_returns) { t = static_cast<std::uint8_t>(t | last); }
    }
    return t;
  }
};

/// filter_options compiled to plain data (a class table, flags, z limits): what filter_rules judges
/// with on the host, and what a kernel that filters raw LAS records takes by value, so that both
/// sides judge every point by the same code.
struct filter_table {
  bool class_ok[256];
  bool drop_withheld;
  bool check_returns;
  return_filter returns;
  bool check_z;
  double z_min;
  double z_max;
  tag_table tags;  ///< what a kept point carries for the tagged count bands

  /// See filter_rules::judge.
  HG_HOST_DEVICE [[nodiscard]] filter_verdict judge(double x, double y, double z, bool has_class,
                                                    std::uint8_t classification, bool has_flags, std::uint8_t flags,
                                                    bool has_returns, std::uint8_t return_number,
                                                    std::uint8_t number_of_returns) const noexcept
  {
    if (!(finite_value(x) && finite_value(y) && finite_value(z))) { return filter_verdict::non_finite; }
    if (has_class && !class_ok[classification]) { return filter_verdict::by_class; }
    if (drop_withheld && has_flags && (flags & point_flag::withheld) != 0) { return filter_verdict::withheld; }
    if (check_returns && has_returns) {
      bool const keep = returns == return_filter::first ? return_number <= 1 : return_number >= number_of_returns;
      if (!keep) { return filter_verdict::by_return; }
    }
    if (check_z && !(z >= z_min && z <= z_max)) { return filter_verdict::by_z; }
    return filter_verdict::keep;
  }
};

/// filter_options compiled for use point by point, so that readers which filter while decoding
/// (LAS, LAZ) and apply_filter judge every point by the same code.
class filter_rules {
 public:
  explicit filter_rules(filter_options const& options, tag_table const& tags = tag_table::of({}));

  /// Whether readers write a tag a kept point (point_batch::tags): the job has tagged count bands.
  [[nodiscard]] bool tagging() const noexcept { return t_.tags.any; }
  [[nodiscard]] tag_table const& tags() const noexcept { return t_.tags; }

  /// Whether any rule looks at z (readers of integer coordinates skip computing z otherwise).
  [[nodiscard]] bool checks_z() const noexcept { return t_.check_z; }

  /// The rules as plain data (for a kernel).
  [[nodiscard]] filter_table const& table() const noexcept { return t_; }

  /// The verdict on a point whose attributes are known. `has_*` say whether the source has that
  /// attribute: rules on attributes it lacks do not apply. x, y, z must be the coordinates as
  /// gridded; a source of integer coordinates passes finite values.
  [[nodiscard]] filter_verdict judge(double x, double y, double z, bool has_class, std::uint8_t classification,
                                     bool has_flags, std::uint8_t flags, bool has_returns,
                                     std::uint8_t return_number, std::uint8_t number_of_returns) const noexcept
  {
    return t_.judge(x, y, z, has_class, classification, has_flags, flags, has_returns, return_number,
                    number_of_returns);
  }

  /// Counts a verdict other than keep in `stats` (points_in is the caller's to count).
  static void count(filter_verdict v, filter_stats& stats) noexcept
  {
    switch (v) {
      case filter_verdict::keep: break;
      case filter_verdict::non_finite: ++stats.non_finite; break;
      case filter_verdict::by_class: ++stats.by_class; break;
      case filter_verdict::withheld: ++stats.withheld; break;
      case filter_verdict::by_return: ++stats.by_return; break;
      case filter_verdict::by_z: ++stats.by_z; break;
    }
  }

 private:
  filter_table t_{};
};

/// Removes rejected points from `chunk` in place (order of the kept points is preserved).
/// Rules on attributes the chunk does not have (e.g. classes on XYZ input) do not apply.
/// Non-finite coordinates are always removed, and z = -0.0 becomes +0.0.
void apply_filter(filter_options const& options, point_chunk& chunk, filter_stats& stats);
/// The same with the rules compiled once.
void apply_filter(filter_rules const& rules, point_chunk& chunk, filter_stats& stats);

}  // namespace heightgrid
