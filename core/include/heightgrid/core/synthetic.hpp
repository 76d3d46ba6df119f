#pragma once
// Seeded synthetic point clouds generated in memory, so that 10^9-point runs need no disk.
//
// Every point is a pure function of (options, index): a counter-based generator (splitmix64 of
// the point's counter), so the cloud is the same whatever the chunk size or thread count, and a
// seed picks another cloud of the same shape.
//
// The kinds model the loads a gridder meets (shape figures for the default densities, gridded at
// the cell size they assume):
//
//  uniform    Constant density: x, y uniform over the extent; z a smooth terrain (100 m +- 20 m
//             hills over kilometres) plus +-0.5 m noise. Points per cell are Poisson: at 10 points
//             per cell p50 10, p99 18, max ~30 over 10^7 cells. No attributes (class 0 in LAS).
//
//  lidar      An airborne lidar survey. Pulses come from 5 north-south flight strips, each 30 %
//             overlapping its neighbour, so overlap bands get twice the pulses. The ground is the
//             same terrain, cut into 50 m lots: 30 % hold a flat-roofed building (class 6, one
//             return, footprint 12-40 m, 4-30 m tall), 35 % a stand of trees (canopy 8-25 m), the
//             rest open ground (class 2). A pulse into trees gives 2-4 returns: canopy top (class
//             5), intermediate vegetation (5, 4 or 3 by height above ground) and a last return on
//             the ground (class 2, or low vegetation, class 3). One pulse in 10^4 is low noise
//             (class 7, 1-20 m under the ground; dropped by the default filter). Points of a
//             pulse are consecutive (return 1..n of n); in the half of an overlap band nearer the
//             neighbouring strip's centre they carry the overlap flag. Point density is ~1x on
//             open ground or roofs under one strip, ~3x in trees, twice that in overlaps:
//             it varies about six-fold.
//
//  skewed     Heavy-tailed points per cell. The extent is divided into cells of `cell_size`
//             (give the resolution you will grid with; origin at the top-left corner, so the grid
//             heightgrid derives from the points lines up when xmin and ymax are multiples of it).
//             Each point draws a cell rank k from a Zipf law, P(k) ~ k^-s over the C cells
//             (continuous inverse CDF), ranks are scattered over the grid by a seeded bijection,
//             and the point lies uniformly inside its cell (1 % away from the cell's edges).
//             The expected count of the rank-k cell is about N (1 - s) k^-s / C^(1 - s) for s < 1.
//             With s = 0.6 and 2 points per cell on average (the default density): 10^8 points
//             -> ~92 % of cells hold 0-4 points, p99.9 ~50, the heaviest ~2.6 x 10^4;
//             10^9 points -> the heaviest ~1.1 x 10^5. z: terrain +- 1 m.
//
//  clustered  A few dense hotspots on a sparse background: half the points are uniform, the other
//             half split evenly over `hotspots` Gaussian blobs (centres in the middle 80 % of the
//             extent, sigma 0.3-1 % of its shorter side, wrapped around the extent's edges). The
//             shape does not depend on N at a fixed density: a hotspot's peak is 200-2200x the
//             background with 8 hotspots. z: terrain plus a 5-30 m tall structure per hotspot
//             (points spread uniformly over its height), terrain +- 0.5 m on the background.

#include "heightgrid/core/point_source.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace heightgrid {

enum class synth_kind {
  uniform,    ///< constant density
  lidar,      ///< terrain, buildings, multi-return vegetation, overlapping flight strips
  skewed,     ///< Zipf(s) law of points over the cells: most nearly empty, a few with 10^4-10^5
  clustered,  ///< uniform background plus a few dense Gaussian hotspots
};

[[nodiscard]] std::string_view synth_kind_name(synth_kind k) noexcept;
[[nodiscard]] std::optional<synth_kind> parse_synth_kind(std::string_view name) noexcept;
/// Every kind, in declaration order.
[[nodiscard]] std::vector<synth_kind> all_synth_kinds();
/// "uniform, lidar, skewed, clustered": for help texts and error messages.
[[nodiscard]] std::string synth_kind_list();

/// Average points per cell of `cell_size` a kind is generated at when neither an extent nor a
/// density is given: 10 for uniform, lidar and clustered (a typical gridding density), 2 for
/// skewed (so that most cells hold 0-4 points).
[[nodiscard]] double default_points_per_cell(synth_kind k) noexcept;

struct synth_options {
  synth_kind kind{synth_kind::uniform};
  std::uint64_t points{1000000};
  double xmin{0.0}, ymin{0.0}, xmax{1000.0}, ymax{1000.0};
  std::uint64_t seed{1};
  double cell_size{1.0};  ///< skewed: side of the cells the Zipf law ranks; all: extents are whole cells
  double zipf_s{0.6};     ///< skewed: exponent s of the Zipf law (0 = uniform over cells)
  int hotspots{8};        ///< clustered: number of hotspots
};

/// The extent for `points` at `density` points per square unit: a square with its lower-left
/// corner at (0, 0) and its side rounded up to a whole number of `cell_size` cells.
/// Throws error_kind::usage for a non-positive or non-finite density or cell size.
void set_extent_from_density(synth_options& options, double density);

/// A point_source that generates `options.points` points (OpenMP-parallel within a chunk).
/// lidar fills the classification, return_number, number_of_returns and flags columns; the other
/// kinds give x, y, z only.
class synthetic_source final : public point_source {
 public:
  /// Throws error_kind::usage for an empty extent or an out-of-range parameter.
  explicit synthetic_source(synth_options const& options);
  [[nodiscard]] source_info const& info() const override { return info_; }
  bool read(point_chunk& chunk, std::size_t max_points) override;

  /// Points [first, first + n) into `chunk` (resized to n), whatever was read before: the same
  /// points read() gives there. Safe to call from several threads at once.
  void generate(std::uint64_t first, std::size_t n, point_chunk& chunk) const;

 private:
  struct hotspot {
    double cx, cy, sigma, height;
  };

  void generate_uniform(point_chunk& chunk, std::uint64_t base, std::size_t n) const;
  void generate_lidar(point_chunk& chunk, std::uint64_t base, std::size_t n) const;
  void generate_skewed(point_chunk& chunk, std::uint64_t base, std::size_t n) const;
  void generate_clustered(point_chunk& chunk, std::uint64_t base, std::size_t n) const;

  synth_options options_;
  source_info info_;
  std::uint64_t next_{0};
  // skewed: the cell grid and the Zipf inverse CDF
  std::uint64_t cols_{1}, rows_{1};
  double zipf_base_{0.0};  ///< (C + 1)^(1 - s) - 1, or ln(C + 1) when s == 1
  int scramble_bits_{1};
  // clustered
  std::vector<hotspot> hotspots_;
};

/// The synthetic cloud as a concurrent part_source: part k is points [k * part_points, ...), read
/// by any thread in any order (the points do not depend on how they are read). Declared bounds
/// are the extent. Filters apply as to any source.
[[nodiscard]] std::unique_ptr<part_source> synthetic_parts(synth_options const& options, std::size_t part_points);

}  // namespace heightgrid
