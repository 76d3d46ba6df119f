#pragma once
// Any OGR vector source (GeoPackage, Shapefile, FlatGeobuf, GeoJSON, ...) of points as a point
// source.

#include "heightgrid/core/point_source.hpp"

#include <memory>
#include <string>

namespace heightgrid::io {

/// Opens layer `layer` of `path` (a name, or a 0-based index written as a string; empty: the
/// first layer) and streams its points and multipoints in feature order.
///
/// z comes from the geometry's Z, or, when `z_field` is not empty, from that numeric attribute
/// (a null attribute gives z = NaN, which the filter stage counts as non-finite). Features
/// without a geometry, and empty geometries, contribute no points.
///
/// Throws error_kind::input for an unknown layer (listing the layers), an unknown or non-numeric
/// `z_field` (listing the fields), 2D points without `z_field` (suggesting --z-field), and
/// non-point geometries (naming the layer and the feature id).
[[nodiscard]] std::unique_ptr<point_source> open_vector_source(std::string const& path,
                                                               std::string const& layer = {},
                                                               std::string const& z_field = {});

}  // namespace heightgrid::io
