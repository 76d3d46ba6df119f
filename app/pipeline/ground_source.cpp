#include "pipeline/ground_source.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/crs.hpp"

#include <cmath>
#include <vector>

namespace heightgrid::app {
namespace {

class above_ground_source final : public part_source {
 public:
  above_ground_source(std::unique_ptr<part_source> inner, std::shared_ptr<io::ground_raster const> ground)
    : inner_(std::move(inner)), ground_(std::move(ground))
  {
    auto const& points = inner_->info().crs_wkt;
    HG_EXPECTS(points.empty() || ground_->crs_wkt().empty() || io::same_crs(points, ground_->crs_wkt()),
               error_kind::input,
               inner_->info().path + ": its CRS (" + io::crs_name(points) + ") is not the --ground raster's (" +
                 ground_->path() + ": " + io::crs_name(ground_->crs_wkt()) + ")");
  }

  [[nodiscard]] source_info const& info() const override { return inner_->info(); }
  [[nodiscard]] std::optional<bounds> declared_bounds() const override { return inner_->declared_bounds(); }
  [[nodiscard]] std::optional<std::uint64_t> part_count() const override { return inner_->part_count(); }
  [[nodiscard]] bool concurrent_parts() const override { return inner_->concurrent_parts(); }
  [[nodiscard]] std::size_t max_part_points() const override { return inner_->max_part_points(); }
  region_report restrict_to(read_region const& region) override { return inner_->restrict_to(region); }
  void release() override { inner_->release(); }

  part_result read_part(std::uint64_t k, filter_rules const& filter, point_batch& out) override
  {
    // The inner source's points into a scratch batch of this thread, then the heights into `out`.
    thread_local std::vector<double> scratch;
    scratch.resize(batch_bytes(inner_->max_part_points()) / sizeof(double));
    point_batch in;
    in.data = scratch.data();
    in.capacity = inner_->max_part_points();
    part_result r = inner_->read_part(k, filter, in);
    part_result kept;
    kept.filtered = r.filtered;
    kept.last = r.last;
    std::size_t n = 0;
    for (std::size_t i = 0; i < in.size; ++i) {
      double const x = in.x_at(i), y = in.y_at(i);
      auto const g = ground_->at(x, y);
      if (!g) {
        ++kept.filtered.off_ground;
        continue;
      }
      double const z = in.z_at(i) - *g;
      out.x()[n] = x;
      out.y()[n] = y;
      out.z()[n] = z;
      if (in.tagged) { out.tags()[n] = in.tags()[i]; }
      ++n;
      kept.extent.extend(x, y);
      kept.z_min = z < kept.z_min ? z : kept.z_min;
      kept.z_max = z > kept.z_max ? z : kept.z_max;
    }
    out.size = n;
    out.encoding = coord_encoding::float64;
    out.tagged = in.tagged;
    return kept;
  }

 private:
  std::unique_ptr<part_source> inner_;
  std::shared_ptr<io::ground_raster const> ground_;
};

}  // namespace

std::unique_ptr<part_source> above_ground(std::unique_ptr<part_source> inner,
                                          std::shared_ptr<io::ground_raster const> ground)
{
  return std::make_unique<above_ground_source>(std::move(inner), std::move(ground));
}

}  // namespace heightgrid::app
