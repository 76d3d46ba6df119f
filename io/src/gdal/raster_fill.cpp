// --fill: empty cells of the written bands filled after reduction, in the file before it is
// published (raster_writer::commit). idw is GDAL's GDALFillNodata (inverse distance weighting from
// the valid cells around each hole, at most the radius away: gdal_fillnodata.py's algorithm, no
// smoothing); nearest takes the value of the closest valid cell within the radius (GDAL 3.6 has no
// nearest mode: written here, by Euclidean distance in cells, ties to the first in row order); tin
// interpolates linearly in the triangles of GDAL's Delaunay triangulation of the non-empty cells.

#include "gdal/raster_fill.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include <gdal_alg.h>
#include <gdal_priv.h>

#include <algorithm>
#include <array>
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

/// A cell centre's displacement along one axis, in cells: a fixed rule of the cell's place in the
/// whole grid (`salt` tells the axes apart), |d| < 2^-18: a plane's interpolation moves by less than
/// its slope over 2^-18 of a cell, far below a Float32 height's step.
double displacement(std::int64_t col, std::int64_t row, std::uint64_t salt) noexcept
{
  std::uint64_t h = static_cast<std::uint64_t>(col) * 0x9E3779B97F4A7C15ULL ^ static_cast<std::uint64_t>(row) * 0xC2B2AE3D27D4EB4FULL ^ salt;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 29;
  return (static_cast<double>(h >> 11) * 0x1.0p-53 - 0.5) * 0x1.0p-17;
}

/// Each nodata cell inside a triangle of the Delaunay triangulation of the valid cells' centres
/// (GDAL's, through qhull) whose longest edge and circumradius are at most `max_edge` cells (0: any)
/// takes the linear
/// interpolation of the triangle's three values; the others stay nodata. Returns a warning, or "".
/// The band is the window of the whole grid whose first cell is (col0, row0) (a tile and its margin,
/// or the whole raster). Cell centres on a lattice are co-circular four by four, so their Delaunay
/// triangulation is not unique and qhull's choice depends on every point: each vertex is displaced
/// by less than 2^-18 of a cell by a rule of its place in the whole grid, which makes the
/// triangulation unique, so that a window and the whole raster make the same triangles where their
/// points are the same, and the interpolation runs on the whole grid's coordinates (the same
/// arithmetic in both).
std::string fill_tin(std::vector<double>& v, int cols, int rows, double max_edge, double nodata, std::string const& band,
                     std::int64_t col0, std::int64_t row0)
{
  std::vector<double> xs, ys, zs, local_x, local_y;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      double const z = v[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)];
      if (is_nodata(z, nodata)) { continue; }
      std::int64_t const gc = col0 + c, gr = row0 + r;
      double const dx = displacement(gc, gr, 1), dy = displacement(gc, gr, 2);
      xs.push_back(static_cast<double>(gc) + 0.5 + dx);
      ys.push_back(static_cast<double>(gr) + 0.5 + dy);
      // qhull gets small numbers (its round-off grows with the coordinates' size).
      local_x.push_back(c + 0.5 + dx);
      local_y.push_back(r + 0.5 + dy);
      zs.push_back(z);
    }
  }
  if (xs.size() < 3) {
    return "--fill tin: band " + band + " has " + std::to_string(xs.size()) +
           " non-empty cells, fewer than a triangle needs: not filled";
  }
  std::unique_ptr<GDALTriangulation, void (*)(GDALTriangulation*)> tin(
    GDALTriangulationCreateDelaunay(static_cast<int>(xs.size()), local_x.data(), local_y.data()), GDALTriangulationFree);
  // The walk (FindFacetDirected) runs on the window's own coordinates, as qhull did.
  if (tin == nullptr || !GDALTriangulationComputeBarycentricCoefficients(tin.get(), local_x.data(), local_y.data())) {
    return "--fill tin: band " + band + ": its non-empty cells cannot be triangulated (all on one line?): not filled";
  }
  // Triangles with an edge longer than max_edge, or a circumcircle wider than max_edge in radius
  // (slivers along a straight stretch of the hull or of a hole's edge), are left out. The second
  // rule makes tiles exact: a triangle of circumradius R holding a cell lies with its (empty) circle
  // within 2R of the cell, so any window reaching 2 * max_edge past the cell makes the same usable
  // triangles there as the whole grid (tile_fill.cpp's margin).
  std::vector<char> usable(static_cast<std::size_t>(tin->nFacets), 1);
  if (max_edge > 0.0) {
    double const limit2 = max_edge * max_edge;
    for (int f = 0; f < tin->nFacets; ++f) {
      int const* k = tin->pasFacets[f].anVertexIdx;
      double sides2[3];
      for (int e = 0; e < 3; ++e) {
        auto const a = static_cast<std::size_t>(k[e]), b = static_cast<std::size_t>(k[(e + 1) % 3]);
        double const dx = xs[a] - xs[b], dy = ys[a] - ys[b];
        sides2[e] = dx * dx + dy * dy;
        if (sides2[e] > limit2) { usable[static_cast<std::size_t>(f)] = 0; }
      }
      // R = abc / (4 area) = abc / (2 |cross|): R <= E  <=>  a^2 b^2 c^2 <= 4 cross^2 E^2.
      auto const p0 = static_cast<std::size_t>(k[0]), p1 = static_cast<std::size_t>(k[1]), p2 = static_cast<std::size_t>(k[2]);
      double const cross = (xs[p1] - xs[p0]) * (ys[p2] - ys[p0]) - (ys[p1] - ys[p0]) * (xs[p2] - xs[p0]);
      if (sides2[0] * sides2[1] * sides2[2] > 4.0 * cross * cross * limit2) { usable[static_cast<std::size_t>(f)] = 0; }
    }
  }
  int facet = 0;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      double& z = v[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)];
      if (!is_nodata(z, nodata)) { continue; }
      double const x = static_cast<double>(col0 + c) + 0.5, y = static_cast<double>(row0 + r) + 0.5;
      int found = -1;
      // A walk from the last cell's triangle (the neighbour along the row, mostly); the brute-force
      // search when the walk ends outside the hull.
      double const lx = c + 0.5, ly = r + 0.5;
      // A walk that ends outside the hull leaves the hull's triangle it stopped at: a cell on the
      // hull's edge (to rounding) is then judged by the coordinates below like any other.
      if (!GDALTriangulationFindFacetDirected(tin.get(), facet, lx, ly, &found) && found < 0) {
        if (!GDALTriangulationFindFacetBruteForce(tin.get(), lx, ly, &found)) { found = -1; }
      }
      if (found < 0) { continue; }
      facet = found;
      // The triangle that holds the cell by its barycentric coordinates alone (GDAL's search allows a
      // little outside, as far as its walk happened to go): the one found or a neighbour across an
      // edge; of two that both hold it (a cell on their edge, to rounding), the one whose corners
      // come first in the whole grid. A window and the whole raster then choose alike.
      // Each candidate's corners in one order (by row, then column, in the whole grid) and the
      // coordinates computed here from them, so that the same triangle gives the same bits whatever
      // order qhull listed its corners in.
      double best = 0.0;
      int chosen = -1;
      std::array<double, 7> chosen_key{};
      int const candidates[4] = {found, tin->pasFacets[found].anNeighborIdx[0], tin->pasFacets[found].anNeighborIdx[1],
                                 tin->pasFacets[found].anNeighborIdx[2]};
      for (int const f : candidates) {
        if (f < 0) { continue; }
        int const* k = tin->pasFacets[f].anVertexIdx;
        std::array<std::size_t, 3> v{static_cast<std::size_t>(k[0]), static_cast<std::size_t>(k[1]),
                                     static_cast<std::size_t>(k[2])};
        std::sort(v.begin(), v.end(), [&](std::size_t p, std::size_t q) {
          return ys[p] < ys[q] || (ys[p] == ys[q] && xs[p] < xs[q]);
        });
        double const x1 = xs[v[0]], y1 = ys[v[0]], x2 = xs[v[1]], y2 = ys[v[1]], x3 = xs[v[2]], y3 = ys[v[2]];
        double const den = (y2 - y3) * (x1 - x3) + (x3 - x2) * (y1 - y3);
        if (den == 0.0) { continue; }
        double const l1 = ((y2 - y3) * (x - x3) + (x3 - x2) * (y - y3)) / den;
        double const l2 = ((y3 - y1) * (x - x3) + (x1 - x3) * (y - y3)) / den;
        double const l3 = 1.0 - l1 - l2;
        if (l1 < 0.0 || l2 < 0.0 || l3 < 0.0) { continue; }
        // A usable triangle first (a cell on the edge between a short triangle and a long one is
        // filled: the long one may exist in the whole raster and not in a window, or the reverse).
        std::array<double, 7> const key{usable[static_cast<std::size_t>(f)] ? 0.0 : 1.0, y1, x1, y2, x2, y3, x3};
        if (chosen < 0 || key < chosen_key) {
          chosen = f;
          chosen_key = key;
          best = l1 * zs[v[0]] + l2 * zs[v[1]] + l3 * zs[v[2]];
        }
      }
      if (chosen < 0 || !usable[static_cast<std::size_t>(chosen)]) { continue; }
      z = best;
    }
  }
  return {};
}

}  // namespace

std::vector<std::string> fill_bands(GDALDataset& dataset, std::vector<int> const& bands, int filled_band,
                                    fill_options const& fill, double nodata, std::string const& path, std::int64_t col0,
                                    std::int64_t row0)
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
        auto note = fill_tin(v, cols, rows, fill.max_edge, nodata, band->GetDescription(), col0, row0);
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
