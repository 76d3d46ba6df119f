// `import heightgrid`: the grid job on numpy arrays (heightgrid.grid) and on files
// (heightgrid.grid_files), through the same pipeline as the CLI, returning numpy bands with the
// geotransform, the CRS as WKT and the nodata value (ready for rasterio / xarray).

#include "options.hpp"
#include "pipeline/grid_job.hpp"
#include "pipeline/sources.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/gdal_env.hpp"
#include "heightgrid/io/ground_raster.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace heightgrid;

namespace {

using double_array = py::array_t<double, py::array::c_style | py::array::forcecast>;

/// Points straight out of three numpy arrays: each part copies its slice into the batch (the copy
/// the pinned ring needs anyway), filtered as any source; float64 arrays are not copied before.
class array_part_source final : public part_source {
 public:
  array_part_source(double_array x, double_array y, double_array z, std::size_t part_points)
    : x_(std::move(x)), y_(std::move(y)), z_(std::move(z)), part_(part_points)
  {
    n_ = static_cast<std::size_t>(x_.size());
    HG_EXPECTS(y_.size() == x_.size() && z_.size() == x_.size(), error_kind::usage,
            "heightgrid.grid: x, y and z must have the same length (" + std::to_string(x_.size()) + ", " +
              std::to_string(y_.size()) + ", " + std::to_string(z_.size()) + ")");
    info_.path = "<numpy arrays>";
    info_.format = "numpy";
    info_.point_count = n_;
  }

  [[nodiscard]] source_info const& info() const override { return info_; }
  [[nodiscard]] std::optional<std::uint64_t> part_count() const override { return (n_ + part_ - 1) / part_; }
  [[nodiscard]] bool concurrent_parts() const override { return true; }
  [[nodiscard]] std::size_t max_part_points() const override { return part_; }

  part_result read_part(std::uint64_t k, filter_rules const& rules, point_batch& out) override
  {
    HG_EXPECTS(!rules.tagging(), error_kind::usage,
               "count:CLASSES, first and last count points by class and return: arrays of x, y, z have none "
               "(grid_files reads them from LAS/LAZ)");
    std::size_t const first = static_cast<std::size_t>(k) * part_;
    std::size_t const n = std::min(part_, n_ - first);
    double const* xs = x_.data() + first;
    double const* ys = y_.data() + first;
    double const* zs = z_.data() + first;
    out.encoding = coord_encoding::float64;
    part_result r;
    r.filtered.points_in = n;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < n; ++i) {
      auto const v = rules.judge(xs[i], ys[i], zs[i], false, 0, false, 0, false, 0, 0);
      if (v != filter_verdict::keep) {
        filter_rules::count(v, r.filtered);
        continue;
      }
      out.x()[kept] = xs[i];
      out.y()[kept] = ys[i];
      out.z()[kept] = zs[i] + 0.0;
      r.extent.extend(xs[i], ys[i]);
      r.z_min = std::min(r.z_min, zs[i] + 0.0);
      r.z_max = std::max(r.z_max, zs[i] + 0.0);
      ++kept;
    }
    out.size = kept;
    return r;
  }

 private:
  double_array x_, y_, z_;
  std::size_t n_{0};
  std::size_t part_;
  source_info info_;
};

/// The grid's rows collected into one numpy-ready buffer per band.
class array_output final : public app::grid_output {
 public:
  array_output(std::vector<metric> bands, float nodata) : bands_(std::move(bands)), nodata_(nodata) {}

  void begin(grid_spec const& grid, std::uint64_t) override
  {
    grid_ = grid;
    values_.assign(bands_.size(), {});
    counts_.clear();
    for (std::size_t b = 0; b < bands_.size(); ++b) {
      if (bands_[b] == metric::count) {
        counts_.assign(grid.num_cells(), 0);
      } else {
        values_[b].assign(grid.num_cells(), 0.0F);
      }
    }
  }

  void write_rows(std::uint32_t row0, std::uint32_t, cell_results const& w) override
  {
    std::size_t const at = std::size_t{row0} * grid_.cols;
    for (std::size_t b = 0; b < bands_.size(); ++b) {
      if (bands_[b] == metric::count) {
        std::copy(w.count.begin(), w.count.end(), counts_.begin() + static_cast<std::ptrdiff_t>(at));
      } else if (bands_[b].is_tag_count()) {
        // A float32 band, as in a GeoTIFF with other bands: nodata where the cell is empty.
        auto const& tags = w.tag_column(bands_[b]);
        for (std::size_t i = 0; i < tags.size(); ++i) {
          values_[b][at + i] = tags[i] == tag_empty ? nodata_ : static_cast<float>(tags[i]);
        }
      } else {
        copy(w.float_column(bands_[b]), b, at);  // every float band, percentiles included
      }
    }
  }

  void commit(std::uint64_t) override {}

  /// {"range": array (rows, cols) float32, "count": uint32, ...}
  [[nodiscard]] py::dict bands() const
  {
    py::dict out;
    std::vector<py::ssize_t> const shape{static_cast<py::ssize_t>(grid_.rows), static_cast<py::ssize_t>(grid_.cols)};
    for (std::size_t b = 0; b < bands_.size(); ++b) {
      std::string const name(metric_name(bands_[b]));
      if (bands_[b] == metric::count) {
        py::array_t<std::uint32_t> a(shape);
        std::memcpy(a.mutable_data(), counts_.data(), counts_.size() * sizeof(std::uint32_t));
        out[name.c_str()] = a;
      } else {
        py::array_t<float> a(shape);
        std::memcpy(a.mutable_data(), values_[b].data(), values_[b].size() * sizeof(float));
        out[name.c_str()] = a;
      }
    }
    return out;
  }

 private:
  void copy(column<float> const& from, std::size_t b, std::size_t at)
  {
    std::copy(from.begin(), from.end(), values_[b].begin() + static_cast<std::ptrdiff_t>(at));
  }

  std::vector<metric> bands_;
  float nodata_;
  grid_spec grid_;
  std::vector<std::vector<float>> values_;
  std::vector<std::uint32_t> counts_;
};

/// The options both functions share, checked as the CLI checks them.
struct common_args {
  py::object res;
  std::optional<std::vector<double>> tr;
  std::optional<std::vector<double>> te;
  bool tap{false};
  std::vector<std::string> metrics;
  double nodata{std::numeric_limits<double>::quiet_NaN()};
  std::string device;
  std::string edge_rule;
  int threads{0};
  bool keep_all{false};
  double cover_above{2.0};
};

app::grid_job_options job_options(common_args const& a, app::grid_geometry& geometry, std::vector<metric>& bands)
{
  if (!a.res.is_none()) { geometry.res = {a.res.cast<double>()}; }
  if (a.tr) { geometry.tr = *a.tr; }
  if (a.te) { geometry.te = *a.te; }
  HG_EXPECTS(geometry.tr.empty() || geometry.tr.size() == 2, error_kind::usage, "tr: give (xres, yres)");
  HG_EXPECTS(geometry.te.empty() || geometry.te.size() == 4, error_kind::usage, "te: give (xmin, ymin, xmax, ymax)");
  HG_EXPECTS(geometry.res.empty() || geometry.tr.empty(), error_kind::usage, "give res or tr, not both");
  geometry.tap = a.tap;
  geometry.edge_rule = a.edge_rule;
  std::string list;
  for (auto const& m : a.metrics) { list += (list.empty() ? "" : ",") + m; }
  bands = parse_metric_list(list);
  HG_EXPECTS(std::isfinite(a.cover_above), error_kind::usage,
             "cover_above: " + std::to_string(a.cover_above) + " is not a finite height");
  for (auto& m : bands) {
    if (m.kind == metric_kind::cover) { m.p = a.cover_above; }
  }
  HG_EXPECTS(std::isnan(a.nodata) || (std::isfinite(a.nodata) && std::abs(a.nodata) <= 3.4e38), error_kind::usage,
          "nodata: " + std::to_string(a.nodata) + " is not a Float32 value or nan");
  return app::base_job_options(geometry, metric_request::from(bands), static_cast<float>(a.nodata),
                               a.keep_all ? filter_options::keep_all() : filter_options{}, a.device, a.threads,
                               "device");
}

py::dict result_of(app::grid_job_report const& r, array_output const& out, std::string const& crs_wkt, float nodata)
{
  py::dict d;
  d["bands"] = out.bands();
  auto const gt = r.grid.geotransform();
  d["geotransform"] = py::make_tuple(gt[0], gt[1], gt[2], gt[3], gt[4], gt[5]);
  d["crs_wkt"] = crs_wkt;
  d["nodata"] = nodata;
  d["width"] = r.grid.cols;
  d["height"] = r.grid.rows;
  d["points"] = r.read.filtered.points_in;
  d["binned"] = r.binned;
  d["non_empty"] = r.non_empty;
  d["route"] = r.route;
  return d;
}

/// heightgrid errors become Python exceptions: usage -> ValueError, input/output -> OSError, the rest RuntimeError.
template <typename F>
py::dict translate(F&& run)
{
  try {
    return run();
  } catch (error const& e) {
    if (e.kind() == error_kind::usage) { throw py::value_error(e.what()); }
    if (e.kind() == error_kind::input || e.kind() == error_kind::output) {
      PyErr_SetString(PyExc_OSError, e.what());
      throw py::error_already_set();
    }
    throw std::runtime_error(e.what());
  }
}

py::dict grid_arrays(double_array x, double_array y, double_array z, common_args const& a, std::string const& crs,
                     std::size_t chunk_points)
{
  return translate([&] {
    app::grid_geometry geometry;
    std::vector<metric> bands;
    auto const job = job_options(a, geometry, bands);
    std::string const wkt = crs.empty() ? std::string() : io::crs_from_user_input(crs);
    std::vector<std::unique_ptr<part_source>> sources;
    sources.push_back(std::make_unique<array_part_source>(std::move(x), std::move(y), std::move(z), chunk_points));
    array_output out(bands, job.nodata);
    app::grid_job_report r;
    {
      py::gil_scoped_release unlocked;  // the arrays are held by the source; workers read them
      r = app::run_grid_job(sources, job, out);
    }
    return result_of(r, out, wkt, job.nodata);
  });
}

py::dict grid_files(std::vector<std::string> const& paths, common_args const& a, std::string const& crs,
                    std::string const& dimension, std::string const& ground)
{
  return translate([&] {
    app::grid_geometry geometry;
    std::vector<metric> bands;
    auto const job = job_options(a, geometry, bands);
    app::input_selection in;
    in.inputs = paths;
    in.keep_all = a.keep_all;
    in.reader.dimension = dimension;
    auto const expanded = app::input_paths(in);
    if (!ground.empty()) {
      HG_EXPECTS(dimension.empty() || dimension == "Z" || dimension == "z", error_kind::usage,
                 "ground subtracts the terrain from Z; dimension=" + dimension + " grids another attribute");
      in.reader.ground = std::make_shared<io::ground_raster const>(ground);
    }
    auto opened = app::open_sources(in, expanded, job.xres == job.yres ? std::optional<double>(job.xres) : std::nullopt,
                                    job.threads);
    std::string wkt = crs.empty() ? std::string() : io::crs_from_user_input(crs);
    for (auto const& s : opened.sources) {
      if (wkt.empty()) { wkt = s->info().crs_wkt; }
    }
    array_output out(bands, job.nodata);
    app::grid_job_report r;
    {
      py::gil_scoped_release unlocked;
      r = app::run_grid_job(opened.sources, job, out);
    }
    return result_of(r, out, wkt, job.nodata);
  });
}

}  // namespace

PYBIND11_MODULE(heightgrid, m)
{
  m.doc() = "heightgrid: grid point clouds into per-cell statistics (range, min, max, count, mean, stddev) "
            "on the GPU or the CPU";
  io::init_gdal([](io::gdal_message_level, std::string const&) {});
  auto const common = [](py::object res, std::optional<std::vector<double>> tr, std::optional<std::vector<double>> te,
                         bool tap, std::vector<std::string> metrics, double nodata, std::string device,
                         std::string edge_rule, int threads, bool keep_all, double cover_above) {
    return common_args{std::move(res), std::move(tr), std::move(te), tap, std::move(metrics), nodata,
                       std::move(device), std::move(edge_rule), threads, keep_all, cover_above};
  };
  double const nan = std::numeric_limits<double>::quiet_NaN();
  m.def(
    "grid",
    [common](double_array x, double_array y, double_array z, py::object res, std::optional<std::vector<double>> tr,
             std::optional<std::vector<double>> te, bool tap, std::vector<std::string> metrics, double nodata,
             std::string device, std::string edge_rule, std::string crs, int threads, std::size_t chunk_points,
             double cover_above) {
      return grid_arrays(std::move(x), std::move(y), std::move(z),
                         common(std::move(res), std::move(tr), std::move(te), tap, std::move(metrics), nodata,
                                std::move(device), std::move(edge_rule), threads, true, cover_above),
                         crs, chunk_points);
    },
    py::arg("x"), py::arg("y"), py::arg("z"), py::kw_only(), py::arg("res") = py::none(), py::arg("tr") = py::none(),
    py::arg("te") = py::none(), py::arg("tap") = false, py::arg("metrics") = std::vector<std::string>{"range"},
    py::arg("nodata") = nan, py::arg("device") = "auto", py::arg("edge_rule") = "gdal", py::arg("crs") = "",
    py::arg("threads") = 0, py::arg("chunk_points") = std::size_t{1} << 20, py::arg("cover_above") = 2.0,
    R"(Grid points given as three 1-D arrays (converted to float64 only if they are not already).

Returns a dict: bands ({metric: 2-D array, float32, count uint32}), geotransform (GDAL's six terms),
crs_wkt (from crs=, e.g. "EPSG:32633"), nodata, width, height, points, binned, non_empty, route.
The grid is the CLI's: res (or tr=(xres, yres)) and optionally te=(xmin, ymin, xmax, ymax), tap,
edge_rule "gdal" or "pdal"; device "auto", "cpu" or "gpu"; metrics as --metrics (range, ..., skewness,
kurtosis, cover with cover_above=, above:H, zbin:H1,H2,..., entropy, density).)");
  m.def(
    "grid_files",
    [common](std::vector<std::string> paths, py::object res, std::optional<std::vector<double>> tr,
             std::optional<std::vector<double>> te, bool tap, std::vector<std::string> metrics, double nodata,
             std::string device, std::string edge_rule, std::string crs, std::string dimension, int threads,
             bool keep_all, double cover_above, std::string ground) {
      return grid_files(paths,
                        common(std::move(res), std::move(tr), std::move(te), tap, std::move(metrics), nodata,
                               std::move(device), std::move(edge_rule), threads, keep_all, cover_above),
                        crs, dimension, ground);
    },
    py::arg("paths"), py::kw_only(), py::arg("res") = py::none(), py::arg("tr") = py::none(), py::arg("te") = py::none(),
    py::arg("tap") = false, py::arg("metrics") = std::vector<std::string>{"range"}, py::arg("nodata") = nan,
    py::arg("device") = "auto", py::arg("edge_rule") = "gdal", py::arg("crs") = "", py::arg("dimension") = "",
    py::arg("threads") = 0, py::arg("keep_all") = false, py::arg("cover_above") = 2.0, py::arg("ground") = "",
    R"(Grid files (LAS/LAZ, XYZ/CSV, GDAL rasters and vector layers; directories and globs) as
`heightgrid grid` does, with the CLI's filters (keep_all=True keeps noise and withheld points) and
dimension= (Intensity, GpsTime, ...), ground= (a DTM raster subtracted from z: heights above ground)
and cover_above= (the cover metric's height). Returns what heightgrid.grid returns; crs_wkt is the
inputs' CRS unless crs= assigns one.)");
  m.attr("__version__") = "0.1.0";
}
