#pragma once
// Seeded synthetic point clouds generated in memory, so that 10^9-point runs need no disk.
//
// Every point is a pure function of (seed, kind, index): a counter-based generator, so the
// cloud is the same whatever the chunk size or thread count.

#include "heightgrid/core/point_source.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace heightgrid {

enum class synth_kind {
  /// Constant density: x, y uniform over the extent; z a smooth terrain plus +-0.5 m noise.
  uniform,
};

[[nodiscard]] std::string_view synth_kind_name(synth_kind k) noexcept;
[[nodiscard]] std::optional<synth_kind> parse_synth_kind(std::string_view name) noexcept;

struct synth_options {
  synth_kind kind{synth_kind::uniform};
  std::uint64_t points{1000000};
  double xmin{0.0}, ymin{0.0}, xmax{1000.0}, ymax{1000.0};
  std::uint64_t seed{1};
};

/// A point_source that generates `options.points` points (OpenMP-parallel within a chunk).
class synthetic_source final : public point_source {
 public:
  explicit synthetic_source(synth_options const& options);
  [[nodiscard]] source_info const& info() const override { return info_; }
  bool read(point_chunk& chunk, std::size_t max_points) override;

 private:
  synth_options options_;
  source_info info_;
  std::uint64_t next_{0};
};

}  // namespace heightgrid
