// --fill across the tiles of a mosaic (fill_tiles): each tile filled from the unfilled mosaic around
// it, so that a cell near a tile's edge takes values from the neighbouring tile as in one raster.

#include "heightgrid/io/geotiff_writer.hpp"

#include "gdal/gdal_internal.hpp"
#include "gdal/raster_fill.hpp"
#include "gdal/raster_options.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/temp_registry.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include <cpl_conv.h>
#include <gdal_priv.h>
#include <gdal_utils.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace heightgrid::io {
namespace {

namespace fs = std::filesystem;

/// A mosaic of `tiles` in GDAL's memory file system, removed with the object.
class memory_vrt {
 public:
  explicit memory_vrt(std::vector<std::string> const& tiles)
  {
    static std::atomic<unsigned> counter{0};
    path_ = "/vsimem/heightgrid-fill-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".vrt";
    std::vector<char const*> names;
    for (auto const& t : tiles) { names.push_back(t.c_str()); }
    char const* argv[] = {"-strict", nullptr};
    std::unique_ptr<GDALBuildVRTOptions, decltype(&GDALBuildVRTOptionsFree)> options(
      GDALBuildVRTOptionsNew(const_cast<char**>(argv), nullptr), &GDALBuildVRTOptionsFree);
    HG_EXPECTS(options != nullptr, error_kind::internal, "GDALBuildVRTOptionsNew failed");
    gdal_error_scope errors;
    int usage_error = 0;
    GDALDatasetH vrt = GDALBuildVRT(path_.c_str(), static_cast<int>(names.size()), nullptr, names.data(), options.get(),
                                    &usage_error);
    HG_EXPECTS(vrt != nullptr && usage_error == 0, error_kind::output,
               tiles.front() + ": --fill cannot make a mosaic of the " + std::to_string(tiles.size()) +
                 " tiles: " + errors.message());
    GDALClose(vrt);  // writes the file, which every filling thread opens
    dataset_.reset(GDALDataset::Open(path_.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
    HG_EXPECTS(dataset_ != nullptr, error_kind::output,
               tiles.front() + ": --fill cannot open the mosaic of the tiles: " + errors.message());
  }
  memory_vrt(memory_vrt const&) = delete;
  memory_vrt& operator=(memory_vrt const&) = delete;
  ~memory_vrt()
  {
    dataset_.reset();
    VSIUnlink(path_.c_str());
  }
  [[nodiscard]] GDALDataset& dataset() const { return *dataset_; }
  [[nodiscard]] std::string const& path() const noexcept { return path_; }

 private:
  std::string path_;
  gdal_dataset_ptr dataset_;
};

/// A dataset in memory of `cols` x `rows` and `bands` bands of `type`.
gdal_dataset_ptr memory_dataset(int cols, int rows, int bands, GDALDataType type, std::string const& path)
{
  GDALDriver* mem = GetGDALDriverManager()->GetDriverByName("MEM");
  HG_EXPECTS(mem != nullptr, error_kind::internal, "GDAL has no MEM driver");
  gdal_error_scope errors;
  gdal_dataset_ptr ds(mem->Create("", cols, rows, bands, type, nullptr));
  HG_EXPECTS(ds != nullptr, error_kind::resource,
             path + ": --fill cannot hold a window of " + std::to_string(cols) + " x " + std::to_string(rows) +
               " cells in memory: " + errors.message());
  return ds;
}

/// Copies a window of band `from` into band `to` (same type) at (tx, ty).
void copy_window(GDALRasterBand& from, int fx, int fy, int cols, int rows, GDALRasterBand& to, int tx, int ty,
                 std::string const& path)
{
  GDALDataType const type = to.GetRasterDataType();
  std::vector<std::byte> buffer(static_cast<std::size_t>(cols) * static_cast<std::size_t>(rows) *
                                static_cast<std::size_t>(GDALGetDataTypeSizeBytes(type)));
  gdal_error_scope errors;
  bool const read = from.RasterIO(GF_Read, fx, fy, cols, rows, buffer.data(), cols, rows, type, 0, 0) == CE_None;
  bool const written = read && to.RasterIO(GF_Write, tx, ty, cols, rows, buffer.data(), cols, rows, type, 0, 0) == CE_None;
  HG_EXPECTS(written, error_kind::output, path + ": --fill cannot copy cells: " + errors.message());
}

}  // namespace

bool fill_applies(metric m) noexcept { return !m.is_count_like() && m != metric::density; }

int fill_margin(fill_options const& fill) noexcept
{
  // What a value may come from: nearest and idw read at most the radius away, tin the triangles'
  // longest edge; twice that, as a triangle's circle reaches past its corners.
  double const reach = fill.method == fill_method::tin ? fill.max_edge : fill.radius;
  return 2 * static_cast<int>(std::ceil(reach)) + 1;
}

void check_fill(std::vector<metric> const& bands, fill_options const& fill, bool tiled)
{
  if (fill.method == fill_method::none) { return; }
  HG_EXPECTS(std::isfinite(fill.radius) && fill.radius >= 1.0, error_kind::usage,
             "--fill-radius: " + std::to_string(fill.radius) + " is not a distance of at least 1 cell");
  HG_EXPECTS(std::isfinite(fill.max_edge) && fill.max_edge >= 0.0, error_kind::usage,
             "--fill-max-edge: " + std::to_string(fill.max_edge) + " is not a length in cells (0: any)");
  HG_EXPECTS(std::any_of(bands.begin(), bands.end(), [](metric m) { return fill_applies(m); }), error_kind::usage,
             "--fill: no band to fill (count and density stay as counted; ask for a float metric)");
  HG_EXPECTS(!tiled || fill.method != fill_method::tin || fill.max_edge > 0.0, error_kind::usage,
             "--fill tin with --tile-size needs --fill-max-edge E: each tile is triangulated with the cells up to E "
             "around it (a triangle of any length could reach across the whole mosaic)");
}

std::vector<std::string> fill_tiles(grid_spec const& whole, std::vector<mosaic_tile> const& tiles,
                                    std::vector<metric> const& bands, raster_write_options const& options,
                                    std::vector<std::string>& made)
{
  std::vector<std::string> notes;
  made.clear();
  std::vector<std::string> written;
  for (auto const& t : tiles) {
    if (t.written) { written.push_back(t.path); }
  }
  if (options.fill.method == fill_method::none || written.empty()) { return notes; }
  check_fill(bands, options.fill, true);
  detail::ensure_gdal_registered();
  auto const format = detail::parse_format(options.format);
  CPLStringList const co = detail::merged_creation_options(format, options.creation_options);
  GDALDriver* driver = GetGDALDriverManager()->GetDriverByName(format == detail::output_format::cog ? "COG" : "GTiff");
  HG_EXPECTS(driver != nullptr, error_kind::internal, "GDAL has no " + options.format + " driver");
  int const margin = fill_margin(options.fill);
  int const n = static_cast<int>(bands.size());
  std::vector<int> targets;
  for (int b = 0; b < n; ++b) {
    if (fill_applies(bands[static_cast<std::size_t>(b)])) { targets.push_back(b + 1); }
  }
  memory_vrt const mosaic(written);
  GDALDataset& vrt = mosaic.dataset();
  double vgt[6];
  HG_EXPECTS(vrt.GetGeoTransform(vgt) == CE_None, error_kind::internal, "--fill: the mosaic has no geotransform");
  HG_EXPECTS(vrt.GetRasterCount() == n, error_kind::output,
             written.front() + ": holds " + std::to_string(vrt.GetRasterCount()) + " bands, not the job's " +
               std::to_string(n) + " (tiles filled by an earlier run? run again with --overwrite)");
  // The mosaic's first cell in the whole grid (its first tile row or column may have had no point).
  auto const v_col0 = static_cast<std::int64_t>(std::llround((vgt[0] - whole.x0) / whole.xres));
  auto const v_row0 = static_cast<std::int64_t>(std::llround((whole.y0 - vgt[3]) / whole.yres));
  std::int64_t const v_cols = vrt.GetRasterXSize(), v_rows = vrt.GetRasterYSize();
  // What every tile is described with: the first written tile's bands, type, nodata and CRS.
  struct description {
    std::string name, metric;
  };
  std::vector<description> described;
  GDALDataType type = GDT_Float32;
  int has_nodata = 0;
  double nodata = 0.0;
  std::string srs_wkt;
  {
    gdal_error_scope errors;
    gdal_dataset_ptr model(GDALDataset::Open(written.front().c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
    HG_EXPECTS(model != nullptr, error_kind::output, written.front() + ": --fill cannot reopen the tile: " + errors.message());
    type = model->GetRasterBand(1)->GetRasterDataType();
    nodata = model->GetRasterBand(1)->GetNoDataValue(&has_nodata);
    for (int b = 1; b <= n; ++b) {
      char const* d = model->GetRasterBand(b)->GetMetadataItem("METRIC_DESCRIPTION");
      described.push_back({model->GetRasterBand(b)->GetDescription(), d != nullptr ? d : ""});
    }
    if (auto const* srs = model->GetSpatialRef()) {
      char* w = nullptr;
      if (srs->exportToWkt(&w) == OGRERR_NONE && w != nullptr) { srs_wkt = w; }
      CPLFree(w);
    }
  }
  double const fill_nodata = has_nodata != 0 ? nodata : static_cast<double>(options.nodata);

  // Each tile is filled into a hidden file; all replace (or become) their tiles once every one is
  // done (a tile filled in place would be read, filled, as another's neighbour). Not registered for
  // signals (a mosaic has more tiles than the registry holds): a killed run leaves them, and the
  // next --resume or --overwrite removes them (remove_stale_temporaries).
  struct result {
    bool kept{false};
    fs::path temp;
    std::vector<std::string> notes;
  };
  std::vector<result> results(tiles.size());
  auto const fill_one = [&](mosaic_tile const& t, GDALDataset& from, result& out) {
    gdal_error_scope errors;
    // The tile and its margin, within the whole grid (GDALFillNodata's result depends on where the
    // raster ends: the window ends where the whole raster does).
    std::int64_t const wx0 = std::max<std::int64_t>(0, std::int64_t{t.col0} - margin);
    std::int64_t const wy0 = std::max<std::int64_t>(0, std::int64_t{t.row0} - margin);
    std::int64_t const wx1 = std::min<std::int64_t>(whole.cols, std::int64_t{t.col0} + t.cols + margin);
    std::int64_t const wy1 = std::min<std::int64_t>(whole.rows, std::int64_t{t.row0} + t.rows + margin);
    // The part of the window the mosaic covers (the rest stays empty: nodata).
    std::int64_t const cx0 = std::max(wx0, v_col0), cy0 = std::max(wy0, v_row0);
    std::int64_t const cx1 = std::min(wx1, v_col0 + v_cols), cy1 = std::min(wy1, v_row0 + v_rows);
    if (cx0 >= cx1 || cy0 >= cy1) { return; }  // an empty tile no value reaches
    auto const ww = static_cast<int>(wx1 - wx0), wh = static_cast<int>(wy1 - wy0);
    auto window = memory_dataset(ww, wh, n + 1, type, t.path);
    for (int b = 1; b <= n; ++b) {
      GDALRasterBand* to = window->GetRasterBand(b);
      to->SetDescription(described[static_cast<std::size_t>(b - 1)].name.c_str());
      if (has_nodata != 0) { to->SetNoDataValue(nodata); }
      HG_EXPECTS(to->Fill(fill_nodata) == CE_None, error_kind::internal, t.path + ": --fill cannot clear a window");
      copy_window(*from.GetRasterBand(b), static_cast<int>(cx0 - v_col0), static_cast<int>(cy0 - v_row0),
                  static_cast<int>(cx1 - cx0), static_cast<int>(cy1 - cy0), *to, static_cast<int>(cx0 - wx0),
                  static_cast<int>(cy0 - wy0), t.path);
    }
    auto more = detail::fill_bands(*window, targets, n + 1, options.fill, fill_nodata, t.path, wx0, wy0);
    // A window with fewer than three cells to triangulate is no news (the whole raster's may have more).
    for (auto& note : more) {
      if (note.find("fewer than a triangle needs") == std::string::npos) { out.notes.push_back(std::move(note)); }
    }
    auto interior = memory_dataset(static_cast<int>(t.cols), static_cast<int>(t.rows), n + 1, type, t.path);
    for (int b = 1; b <= n + 1; ++b) {
      copy_window(*window->GetRasterBand(b), static_cast<int>(t.col0 - wx0), static_cast<int>(t.row0 - wy0),
                  static_cast<int>(t.cols), static_cast<int>(t.rows), *interior->GetRasterBand(b), 0, 0, t.path);
    }
    if (!t.written) {
      // Kept only where the fill reached into it.
      std::vector<double> mask(static_cast<std::size_t>(t.cols) * t.rows);
      HG_EXPECTS(interior->GetRasterBand(n + 1)->RasterIO(GF_Read, 0, 0, static_cast<int>(t.cols), static_cast<int>(t.rows),
                                                         mask.data(), static_cast<int>(t.cols), static_cast<int>(t.rows),
                                                         GDT_Float64, 0, 0) == CE_None,
                 error_kind::internal, t.path + ": --fill cannot read a window back");
      if (std::none_of(mask.begin(), mask.end(), [](double v) { return v == 1.0; })) { return; }
    }
    double tgt[6] = {whole.x0 + t.col0 * whole.xres, whole.xres, 0.0, whole.y0 - t.row0 * whole.yres, 0.0, -whole.yres};
    interior->SetGeoTransform(tgt);
    if (!srs_wkt.empty()) { interior->SetProjection(srs_wkt.c_str()); }
    for (int b = 1; b <= n + 1; ++b) {
      GDALRasterBand* to = interior->GetRasterBand(b);
      if (b <= n) {
        auto const& d = described[static_cast<std::size_t>(b - 1)];
        to->SetDescription(d.name.c_str());
        if (!d.metric.empty()) { to->SetMetadataItem("METRIC_DESCRIPTION", d.metric.c_str()); }
      } else {
        to->SetDescription("filled");
        to->SetMetadataItem("METRIC_DESCRIPTION", "1 where --fill filled the cell (in the first filled band), else 0");
      }
      if (has_nodata != 0) { to->SetNoDataValue(nodata); }
    }
    fs::path const target(t.path);
    out.temp = hidden_temporary_path(t.path, "fill");
    out.kept = true;
    gdal_dataset_ptr copy(driver->CreateCopy(out.temp.c_str(), interior.get(), FALSE, co.List(), nullptr, nullptr));
    HG_EXPECTS(copy != nullptr && !errors.failed(), error_kind::output,
               t.path + ": --fill cannot write the filled tile: " + errors.message());
    copy.reset();
    HG_EXPECTS(!errors.failed(), error_kind::output, t.path + ": --fill cannot write the filled tile: " + errors.message());
  };

  // Tiles are filled side by side, as many at once as half the free memory holds (a tin window keeps
  // qhull's structures: ~1 KB a cell, measured), each thread reading the mosaic through its own handle.
  std::uint64_t const window_cells = (std::uint64_t{tiles.front().cols} + 2 * static_cast<std::uint64_t>(margin)) *
                                     (std::uint64_t{tiles.front().rows} + 2 * static_cast<std::uint64_t>(margin));
  std::uint64_t const per_thread = window_cells * (options.fill.method == fill_method::tin ? 1024 : 64);
  long const pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  std::uint64_t const free_bytes = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                                                         : std::uint64_t{1} << 32;
  int const threads = static_cast<int>(std::clamp<std::uint64_t>(free_bytes / 2 / std::max<std::uint64_t>(per_thread, 1), 1,
                                                                  static_cast<std::uint64_t>(omp_get_max_threads())));
  std::string const vrt_path = mosaic.path();
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto const fail = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(failure_mutex);
    if (!failure) { failure = std::move(e); }
  };
  auto const failed = [&] {
    std::lock_guard<std::mutex> lock(failure_mutex);
    return failure != nullptr;
  };
  auto const count = static_cast<std::int64_t>(tiles.size());
#pragma omp parallel num_threads(threads)
  {
    gdal_dataset_ptr own;
    try {
      gdal_error_scope errors;
      own.reset(GDALDataset::Open(vrt_path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
      HG_EXPECTS(own != nullptr, error_kind::internal, "--fill cannot reopen the mosaic: " + errors.message());
    } catch (...) {
      fail(std::current_exception());
    }
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t i = 0; i < count; ++i) {
      if (own == nullptr || failed()) { continue; }
      try {
        fill_one(tiles[static_cast<std::size_t>(i)], *own, results[static_cast<std::size_t>(i)]);
      } catch (...) {
        fail(std::current_exception());
      }
    }
  }
  auto const remove_all = [&results] {
    std::error_code ec;
    for (auto const& r : results) {
      if (r.kept) { fs::remove(r.temp, ec); }
    }
  };
  if (failure) {
    remove_all();
    std::rethrow_exception(failure);
  }
  try {
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      auto& r = results[i];
      notes.insert(notes.end(), r.notes.begin(), r.notes.end());
      if (!r.kept) { continue; }
      std::error_code ec;
      fs::rename(r.temp, tiles[i].path, ec);
      HG_EXPECTS(!ec, error_kind::output, tiles[i].path + ": cannot rename the filled tile into place: " + ec.message());
      r.kept = false;
      if (!tiles[i].written) { made.push_back(tiles[i].path); }
    }
  } catch (...) {
    remove_all();
    throw;
  }
  return notes;
}

}  // namespace heightgrid::io
