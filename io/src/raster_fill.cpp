// --fill: empty cells of the written bands filled after reduction, in the file before it is
// published (raster_writer::commit). idw is GDAL's GDALFillNodata (inverse distance weighting from
// the valid cells around each hole, at most the radius away: gdal_fillnodata.py's algorithm, no
// smoothing); nearest takes the value of the closest valid cell within the radius (GDAL 3.6 has no
// nearest mode: written here, by Euclidean distance in cells, ties to the first in row order); tin
// interpolates linearly in the triangles of GDAL's Delaunay triangulation of the non-empty cells.

#include "raster_fill.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include <gdal_alg.h>
#include <gdal_priv.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace heightgrid::io::detail {
namespace {

bool is_nodata(double v, double nodata) noexcept { return std::isnan(nodata) ? std::isnan(v) : v == nodata; }

std::vector<double> read_band(GDALRasterBand& band, int cols, int rows, std::string const& path)
{
  std::vector<double> v(static_cast<std::size_t>(cols) * static_cast<std::size_t>(rows));
  gdal_error_scope errors;
  bool const read = band.RasterIO(GF_Read, 0, 0, cols, rows, v.data(), cols, rows, GDT_Float64, 0, 0) == CE_None;
  HG_EXPECTS(read, error_kind::output, path + ": --fill cannot read the band back: " + errors.message());
  return v;
}

void write_band(GDALRasterBand& band, int cols, int rows, std::vector<double>& v, std::string const& path)
{
  gdal_error_scope errors;
  bool const written = band.RasterIO(GF_Write, 0, 0, cols, rows, v.data(), cols, rows, GDT_Float64, 0, 0) == CE_None;
  HG_EXPECTS(written, error_kind::output, path + ": --fill cannot write the band: " + errors.message());
}

/// Each nodata cell takes the value of the nearest valid cell at most `radius` cells away (Euclidean,
/// between cell centres); the first such cell in row order wins a tie. Cells with none stay nodata.
void fill_nearest(std::vector<double>& v, int cols, int rows, double radius, double nodata)
{
  std::vector<double> const in = v;
  int const r = static_cast<int>(std::floor(radius));
  double const r2 = radius * radius;
  auto const n_rows = static_cast<std::int64_t>(rows);
#pragma omp parallel for schedule(dynamic, 16)
  for (std::int64_t row = 0; row < n_rows; ++row) {
    for (int col = 0; col < cols; ++col) {
      std::size_t const at = static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(col);
      if (!is_nodata(in[at], nodata)) { continue; }
      double best = std::numeric_limits<double>::infinity();
      double value = in[at];
      for (int dr = -r; dr <= r; ++dr) {
        std::int64_t const y = row + dr;
        if (y < 0 || y >= rows) { continue; }
        for (int dc = -r; dc <= r; ++dc) {
          int const x = col + dc;
          if (x < 0 || x >= cols) { continue; }
          double const d2 = static_cast<double>(dr) * dr + static_cast<double>(dc) * dc;
          if (d2 > r2 || !(d2 < best)) { continue; }
          double const w = in[static_cast<std::size_t>(y) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(x)];
          if (is_nodata(w, nodata)) { continue; }
          best = d2;
          value = w;
        }
      }
      v[at] = value;
    }
  }
}

/// Each nodata cell inside a triangle of the Delaunay triangulation of the valid cells' centres
/// (GDAL's, through qhull) whose longest edge is at most `max_edge` cells (0: any) takes the linear
/// interpolation of the triangle's three values; the others stay nodata. Returns a warning, or "".
std::string fill_tin(std::vector<double>& v, int cols, int rows, double max_edge, double nodata, std::string const& band)
{
  std::vector<double> xs, ys, zs;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      double const z = v[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)];
      if (is_nodata(z, nodata)) { continue; }
      xs.push_back(c + 0.5);
      ys.push_back(r + 0.5);
      zs.push_back(z);
    }
  }
  if (xs.size() < 3) {
    return "--fill tin: band " + band + " has " + std::to_string(xs.size()) +
           " non-empty cells, fewer than a triangle needs: not filled";
  }
  std::unique_ptr<GDALTriangulation, void (*)(GDALTriangulation*)> tin(
    GDALTriangulationCreateDelaunay(static_cast<int>(xs.size()), xs.data(), ys.data()), GDALTriangulationFree);
  if (tin == nullptr || !GDALTriangulationComputeBarycentricCoefficients(tin.get(), xs.data(), ys.data())) {
    return "--fill tin: band " + band + ": its non-empty cells cannot be triangulated (all on one line?): not filled";
  }
  // Triangles with an edge longer than max_edge are left out.
  std::vector<char> usable(static_cast<std::size_t>(tin->nFacets), 1);
  if (max_edge > 0.0) {
    for (int f = 0; f < tin->nFacets; ++f) {
      int const* k = tin->pasFacets[f].anVertexIdx;
      for (int e = 0; e < 3; ++e) {
        auto const a = static_cast<std::size_t>(k[e]), b = static_cast<std::size_t>(k[(e + 1) % 3]);
        double const dx = xs[a] - xs[b], dy = ys[a] - ys[b];
        if (dx * dx + dy * dy > max_edge * max_edge) { usable[static_cast<std::size_t>(f)] = 0; }
      }
    }
  }
  int facet = 0;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      double& z = v[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)];
      if (!is_nodata(z, nodata)) { continue; }
      double const x = c + 0.5, y = r + 0.5;
      int found = -1;
      // A walk from the last cell's triangle (the neighbour along the row, mostly); the brute-force
      // search when the walk ends outside the hull.
      if (!GDALTriangulationFindFacetDirected(tin.get(), facet, x, y, &found) || found < 0) {
        if (!GDALTriangulationFindFacetBruteForce(tin.get(), x, y, &found)) { found = -1; }
      }
      if (found < 0) { continue; }
      facet = found;
      if (!usable[static_cast<std::size_t>(found)]) { continue; }
      double l1 = 0.0, l2 = 0.0, l3 = 0.0;
      if (!GDALTriangulationComputeBarycentricCoordinates(tin.get(), found, x, y, &l1, &l2, &l3)) { continue; }
      int const* k = tin->pasFacets[found].anVertexIdx;
      z = l1 * zs[static_cast<std::size_t>(k[0])] + l2 * zs[static_cast<std::size_t>(k[1])] +
          l3 * zs[static_cast<std::size_t>(k[2])];
    }
  }
  return {};
}

}  // namespace

std::vector<std::string> fill_bands(GDALDataset& dataset, std::vector<int> const& bands, int filled_band,
                                    fill_options const& fill, double nodata, std::string const& path)
{
  std::vector<std::string> notes;
  int const cols = dataset.GetRasterXSize();
  int const rows = dataset.GetRasterYSize();
  std::vector<double> before;
  for (std::size_t k = 0; k < bands.size(); ++k) {
    GDALRasterBand* band = dataset.GetRasterBand(bands[k]);
    if (k == 0) { before = read_band(*band, cols, rows, path); }
    if (fill.method == fill_method::idw) {
      gdal_error_scope errors;
      bool const done = GDALFillNodata(band, nullptr, fill.radius, 0, 0, nullptr, nullptr, nullptr) == CE_None;
      HG_EXPECTS(done, error_kind::output, path + ": --fill idw: " + errors.message());
    } else {
      auto v = k == 0 ? before : read_band(*band, cols, rows, path);
      if (fill.method == fill_method::tin) {
        auto note = fill_tin(v, cols, rows, fill.max_edge, nodata, band->GetDescription());
        if (!note.empty()) { notes.push_back(path + ": " + note); }
      } else {
        fill_nearest(v, cols, rows, fill.radius, nodata);
      }
      write_band(*band, cols, rows, v, path);
    }
  }
  if (filled_band <= 0 || bands.empty()) { return notes; }
  // 1 where the first filled band was nodata and the fill gave it a value.
  auto const after = read_band(*dataset.GetRasterBand(bands.front()), cols, rows, path);
  std::vector<double> mask(after.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    mask[i] = is_nodata(before[i], nodata) && !is_nodata(after[i], nodata) ? 1.0 : 0.0;
  }
  write_band(*dataset.GetRasterBand(filled_band), cols, rows, mask, path);
  return notes;
}

}  // namespace heightgrid::io::detail

namespace heightgrid::io {

std::optional<fill_method> parse_fill_method(std::string const& name)
{
  if (name == "none") { return fill_method::none; }
  if (name == "nearest") { return fill_method::nearest; }
  if (name == "idw") { return fill_method::idw; }
  if (name == "tin") { return fill_method::tin; }
  return std::nullopt;
}

}  // namespace heightgrid::io
