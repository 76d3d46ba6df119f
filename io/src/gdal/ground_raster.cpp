#include "heightgrid/io/ground_raster.hpp"

#include "gdal/gdal_internal.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"
#include "heightgrid/io/remote.hpp"

#include <gdal_priv.h>

#include <cmath>
#include <memory>

namespace heightgrid::io {

ground_raster::ground_raster(std::string path) : path_(std::move(path))
{
  detail::ensure_gdal_registered();
  gdal_error_scope errors;
  std::string const gdal_path = remote_path(path_).value_or(path_);
  std::unique_ptr<GDALDataset> ds(GDALDataset::Open(gdal_path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  HG_EXPECTS(ds != nullptr, error_kind::input, path_ + ": --ground: cannot open it as a raster: " + errors.message());
  HG_EXPECTS(ds->GetRasterCount() >= 1, error_kind::input, path_ + ": --ground: the raster has no band");
  bool const has_gt = ds->GetGeoTransform(gt_) == CE_None;
  HG_EXPECTS(has_gt && gt_[2] == 0.0 && gt_[4] == 0.0 && gt_[1] > 0.0 && gt_[5] < 0.0, error_kind::input,
             path_ + ": --ground: the raster is not north-up (a geotransform without rotation, rows from the top)");
  cols_ = ds->GetRasterXSize();
  rows_ = ds->GetRasterYSize();
  if (auto const* srs = ds->GetSpatialRef()) { crs_wkt_ = detail::wkt_of(srs); }
  GDALRasterBand* band = ds->GetRasterBand(1);
  int has_nodata = 0;
  double const nodata = band->GetNoDataValue(&has_nodata);
  if (has_nodata != 0) { nodata_ = nodata; }
  v_.resize(static_cast<std::size_t>(cols_) * static_cast<std::size_t>(rows_));
  bool const read = band->RasterIO(GF_Read, 0, 0, cols_, rows_, v_.data(), cols_, rows_, GDT_Float64, 0, 0) == CE_None;
  HG_EXPECTS(read, error_kind::input, path_ + ": --ground: cannot read band 1: " + errors.message());
}

std::optional<double> ground_raster::at(double x, double y) const noexcept
{
  // Column and row of (x, y) in cell units, 0 at the raster's top-left corner.
  double const u = (x - gt_[0]) / gt_[1];
  double const w = (y - gt_[3]) / gt_[5];
  if (!(u >= 0.0 && u <= cols_ && w >= 0.0 && w <= rows_)) { return std::nullopt; }
  // Between the centres: fractional index from the first centre, clamped to the edge cells.
  double const fu = std::fmin(std::fmax(u - 0.5, 0.0), cols_ - 1.0);
  double const fw = std::fmin(std::fmax(w - 0.5, 0.0), rows_ - 1.0);
  auto const c0 = static_cast<int>(std::floor(fu));
  auto const r0 = static_cast<int>(std::floor(fw));
  int const c1 = c0 + 1 < cols_ ? c0 + 1 : c0;
  int const r1 = r0 + 1 < rows_ ? r0 + 1 : r0;
  double const tu = fu - c0, tw = fw - r0;
  auto const cell = [this](int c, int r) { return v_[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols_) + c]; };
  double const a = cell(c0, r0), b = cell(c1, r0), c = cell(c0, r1), d = cell(c1, r1);
  for (double const v : {a, b, c, d}) {
    if (std::isnan(v) || (nodata_ && v == *nodata_)) { return std::nullopt; }
  }
  double const top = a + (b - a) * tu;
  double const bottom = c + (d - c) * tu;
  return top + (bottom - top) * tw;
}

}  // namespace heightgrid::io
