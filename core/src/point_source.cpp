#include "heightgrid/core/point_source.hpp"

#include "heightgrid/core/error.hpp"

#include <algorithm>

namespace heightgrid {

void copy_to_batch(point_chunk const& chunk, point_batch& out, part_result& r)
{
  HG_EXPECTS(out.capacity >= chunk.size(), error_kind::internal, "copy_to_batch: the batch is smaller than the chunk");
  out.encoding = coord_encoding::float64;
  out.size = chunk.size();
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

}  // namespace heightgrid
