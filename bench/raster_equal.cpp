// Whether two rasters hold the same cells, bit for bit: the check that a tiled job's mosaic (its
// VRT) equals the single-raster run of the same grid (issue #19), on machines without GDAL's
// command-line tools or Python bindings (the GPU machine). Compares size, geotransform, band count,
// each band's type and nodata, then every cell's bits in blocks of rows; a cell that no tile covers
// reads as the VRT band's nodata, exactly as the single run's empty cells do.
//
//   raster_equal A B        exit 0: equal; 1: they differ (the first differences are printed);
//                           2: a file cannot be read
//
// e.g.  raster_equal single.tif tiles/grid.vrt

#include <gdal_priv.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

struct dataset_closer {
  void operator()(GDALDataset* d) const { GDALClose(d); }
};
using dataset_ptr = std::unique_ptr<GDALDataset, dataset_closer>;

dataset_ptr open(char const* path)
{
  dataset_ptr d(static_cast<GDALDataset*>(GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, nullptr, nullptr, nullptr)));
  if (!d) { std::fprintf(stderr, "raster_equal: %s: cannot open as a raster: %s\n", path, CPLGetLastErrorMsg()); }
  return d;
}

/// Prints the first few differences of one sort; counts them all.
class differences {
 public:
  void add(std::string const& what)
  {
    if (++count_ <= 10) { std::printf("differs: %s\n", what.c_str()); }
  }
  [[nodiscard]] std::uint64_t count() const { return count_; }

 private:
  std::uint64_t count_{0};
};

}  // namespace

int main(int argc, char** argv)
{
  if (argc != 3) {
    std::fprintf(stderr, "usage: raster_equal A B\n");
    return 2;
  }
  GDALAllRegister();
  auto const a = open(argv[1]);
  auto const b = open(argv[2]);
  if (!a || !b) { return 2; }
  differences diff;
  int const cols = a->GetRasterXSize();
  int const rows = a->GetRasterYSize();
  if (cols != b->GetRasterXSize() || rows != b->GetRasterYSize()) {
    std::printf("differs: size %d x %d vs %d x %d\n", cols, rows, b->GetRasterXSize(), b->GetRasterYSize());
    return 1;
  }
  double ga[6] = {};
  double gb[6] = {};
  if (a->GetGeoTransform(ga) != CE_None || b->GetGeoTransform(gb) != CE_None || std::memcmp(ga, gb, sizeof ga) != 0) {
    diff.add("geotransform");
  }
  int const bands = a->GetRasterCount();
  if (bands != b->GetRasterCount()) {
    std::printf("differs: %d bands vs %d\n", bands, b->GetRasterCount());
    return 1;
  }
  std::uint64_t cells_compared = 0;
  for (int k = 1; k <= bands; ++k) {
    GDALRasterBand* ba = a->GetRasterBand(k);
    GDALRasterBand* bb = b->GetRasterBand(k);
    GDALDataType const type = ba->GetRasterDataType();
    if (type != bb->GetRasterDataType()) {
      diff.add("band " + std::to_string(k) + " type");
      continue;
    }
    int has_a = 0;
    int has_b = 0;
    double const nodata_a = ba->GetNoDataValue(&has_a);
    double const nodata_b = bb->GetNoDataValue(&has_b);
    if (has_a != has_b || (has_a != 0 && std::memcmp(&nodata_a, &nodata_b, sizeof nodata_a) != 0)) {
      diff.add("band " + std::to_string(k) + " nodata");
    }
    int const bytes = GDALGetDataTypeSizeBytes(type);
    int const step = std::max(1, std::min(rows, (64 << 20) / std::max(1, cols * bytes)));
    std::vector<std::uint8_t> ra(static_cast<std::size_t>(cols) * step * bytes);
    std::vector<std::uint8_t> rb(ra.size());
    for (int row = 0; row < rows; row += step) {
      int const n = std::min(step, rows - row);
      if (ba->RasterIO(GF_Read, 0, row, cols, n, ra.data(), cols, n, type, 0, 0) != CE_None ||
          bb->RasterIO(GF_Read, 0, row, cols, n, rb.data(), cols, n, type, 0, 0) != CE_None) {
        std::fprintf(stderr, "raster_equal: band %d rows %d-%d: read failed: %s\n", k, row, row + n - 1,
                     CPLGetLastErrorMsg());
        return 2;
      }
      std::size_t const cell_bytes = static_cast<std::size_t>(bytes);
      for (std::size_t i = 0; i < static_cast<std::size_t>(cols) * n; ++i) {
        if (std::memcmp(ra.data() + i * cell_bytes, rb.data() + i * cell_bytes, cell_bytes) != 0) {
          diff.add("band " + std::to_string(k) + " cell (col " + std::to_string(i % cols) + ", row " +
                   std::to_string(row + static_cast<int>(i / cols)) + ")");
        }
      }
      cells_compared += static_cast<std::uint64_t>(cols) * n;
    }
  }
  if (diff.count() != 0) {
    std::printf("%llu differences\n", static_cast<unsigned long long>(diff.count()));
    return 1;
  }
  std::printf("equal: %d x %d cells, %d band(s), %llu cells compared\n", cols, rows, bands,
              static_cast<unsigned long long>(cells_compared));
  return 0;
}
