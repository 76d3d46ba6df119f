#include "heightgrid/io/vector_source.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "gdal/gdal_internal.hpp"

#include <ogrsf_frmts.h>

#include <algorithm>
#include <limits>

namespace heightgrid::io {
namespace {

std::string layer_names(GDALDataset& dataset)
{
  std::string out;
  for (auto* layer : dataset.GetLayers()) {
    out += (out.empty() ? "'" : ", '") + std::string(layer->GetName()) + "'";
  }
  return out.empty() ? "none" : out;
}

std::string field_names(OGRFeatureDefn const& defn)
{
  std::string out;
  for (int i = 0; i < defn.GetFieldCount(); ++i) {
    out += (out.empty() ? "'" : ", '") + std::string(defn.GetFieldDefn(i)->GetNameRef()) + "'";
  }
  return out.empty() ? "none" : out;
}

bool is_all_digits(std::string const& s)
{
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

class vector_source final : public point_source {
 public:
  vector_source(std::string const& path, std::string const& layer, std::string const& z_field)
  {
    detail::ensure_gdal_registered();
    gdal_error_scope errors;
    dataset_.reset(GDALDataset::Open(path.c_str(), GDAL_OF_VECTOR | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR));
    HG_EXPECTS(dataset_ != nullptr, error_kind::input, path + ": cannot open as a vector source: " + errors.message());
    HG_EXPECTS(dataset_->GetLayerCount() > 0, error_kind::input, path + ": has no layers");

    if (layer.empty()) {
      layer_ = dataset_->GetLayer(0);
    } else {
      layer_ = dataset_->GetLayerByName(layer.c_str());
      if (layer_ == nullptr && is_all_digits(layer)) { layer_ = dataset_->GetLayer(std::stoi(layer)); }
      HG_EXPECTS(layer_ != nullptr, error_kind::input,
              path + ": no layer '" + layer + "' (layers: " + layer_names(*dataset_) + ")");
    }
    where_ = path + ": layer '" + layer_->GetName() + "'";

    OGRFeatureDefn const& defn = *layer_->GetLayerDefn();
    if (!z_field.empty()) {
      z_field_ = defn.GetFieldIndex(z_field.c_str());
      HG_EXPECTS(z_field_ >= 0, error_kind::input,
              where_ + ": no field '" + z_field + "' (fields: " + field_names(defn) + ")");
      OGRFieldType const type = defn.GetFieldDefn(z_field_)->GetType();
      HG_EXPECTS(type == OFTInteger || type == OFTInteger64 || type == OFTReal, error_kind::input,
              where_ + ": field '" + z_field + "' is of type " + OGRFieldDefn::GetFieldTypeName(type) +
                ", not numeric (fields: " + field_names(defn) + ")");
    }

    // The layer's declared type catches the common mistakes up front; layers of mixed or
    // unknown type (GeoJSON, CSV) are checked again feature by feature.
    OGRwkbGeometryType const type = layer_->GetGeomType();
    OGRwkbGeometryType const flat = wkbFlatten(type);
    HG_EXPECTS(flat != wkbNone, error_kind::input, where_ + ": has no geometry");
    HG_EXPECTS(flat == wkbPoint || flat == wkbMultiPoint || flat == wkbUnknown, error_kind::input,
            where_ + ": has " + OGRGeometryTypeToName(type) + " geometries; only points and multipoints can be gridded");
    HG_EXPECTS(flat == wkbUnknown || wkbHasZ(type) || z_field_ >= 0, error_kind::input,
            where_ + ": has 2D points (no Z); use --z-field to take z from an attribute (fields: " +
              field_names(defn) + ")");

    info_.path = path;
    info_.format = std::string(dataset_->GetDriver()->GetDescription()) + " vector";
    auto const* srs = layer_->GetSpatialRef();
    info_.crs_wkt = detail::wkt_of(srs);
    info_.vertical_units = detail::vertical_units_of(srs);
    layer_->ResetReading();
  }

  [[nodiscard]] source_info const& info() const override { return info_; }

  bool read(point_chunk& chunk, std::size_t max_points) override
  {
    chunk.clear();
    gdal_error_scope errors;
    while (chunk.size() < max_points) {
      if (!pending_) {
        pending_.reset(layer_->GetNextFeature());
        if (!pending_) {
          HG_EXPECTS(!errors.failed(), error_kind::input, where_ + ": cannot read features: " + errors.message());
          break;
        }
        next_part_ = 0;
      }
      if (emit(*pending_, chunk, max_points)) { pending_.reset(); }
    }
    return !chunk.empty();
  }

 private:
  /// Appends the points of `feature` from part next_part_ on, at most up to max_points in the
  /// chunk. True when the feature is done.
  bool emit(OGRFeature& feature, point_chunk& chunk, std::size_t max_points)
  {
    OGRGeometry const* geometry = feature.GetGeometryRef();
    if (geometry == nullptr || geometry->IsEmpty()) { return true; }
    double z_value = std::numeric_limits<double>::quiet_NaN();
    if (z_field_ >= 0) {
      if (feature.IsFieldSetAndNotNull(z_field_)) { z_value = feature.GetFieldAsDouble(z_field_); }
    } else if (!geometry->Is3D()) {
      throw error(error_kind::input, where_ + ", feature " + std::to_string(feature.GetFID()) +
                                       ": point without Z; use --z-field to take z from an attribute");
    }
    auto const add = [&](OGRPoint const& p) {
      chunk.x.push_back(p.getX());
      chunk.y.push_back(p.getY());
      chunk.z.push_back(z_field_ >= 0 ? z_value : p.getZ());
    };
    switch (wkbFlatten(geometry->getGeometryType())) {
      case wkbPoint: add(*geometry->toPoint()); return true;
      case wkbMultiPoint: {
        auto const& points = *geometry->toMultiPoint();
        int const n = points.getNumGeometries();
        for (; next_part_ < n && chunk.size() < max_points; ++next_part_) {
          auto const* p = points.getGeometryRef(next_part_);
          if (!p->IsEmpty()) { add(*p); }
        }
        return next_part_ == n;
      }
      default:
        throw error(error_kind::input, where_ + ", feature " + std::to_string(feature.GetFID()) + ": " +
                                         geometry->getGeometryName() +
                                         " geometry; only points and multipoints can be gridded");
    }
  }

  source_info info_;
  gdal_dataset_ptr dataset_;
  OGRLayer* layer_{nullptr};
  std::string where_;  ///< "<path>: layer '<name>'", for messages
  int z_field_{-1};    ///< attribute index of z, -1 for the geometry's Z
  OGRFeatureUniquePtr pending_;  ///< the feature being emitted (a multipoint may span chunks)
  int next_part_{0};             ///< next point of a pending multipoint
};

}  // namespace

std::unique_ptr<point_source> open_vector_source(std::string const& path, std::string const& layer,
                                                 std::string const& z_field)
{
  return std::make_unique<vector_source>(path, layer, z_field);
}

}  // namespace heightgrid::io
