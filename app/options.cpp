#include "options.hpp"

#include "synth_command.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_source.hpp"
#include "heightgrid/core/synthetic.hpp"

#include <omp.h>

#include <cctype>
#include <cmath>
#include <sstream>
#include <thread>

namespace heightgrid::app {
namespace {

std::string format_number(double v)
{
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

void add_input_options(CLI::App& cmd, input_selection& o)
{
  cmd.add_option("--input-format", o.input_format,
                 "Reader to use: auto (by extension/signature, then GDAL), las, text, raster, vector")
    ->default_val("auto");
  cmd.add_option("--band", o.reader.band, "Raster band to read from a DEM input")->default_val(1);
  cmd.add_option("--layer", o.reader.layer, "Vector layer (name or index) to read; default: the first");
  cmd.add_option("--z-field", o.reader.z_field, "Vector attribute holding z (default: the geometry's Z)");
  cmd.add_option("--dimension", o.reader.dimension,
                 "Attribute to grid instead of Z, as PDAL's writers.gdal dimension: Intensity, GpsTime, ReturnNumber, "
                 "NumberOfReturns, Classification, ScanAngleRank, UserData, PointSourceId, Red, Green, Blue, Infrared, "
                 "or a LAS extra byte by name; a vector layer's attribute by name (as --z-field)");
  cmd.add_option("--chunk-points", o.reader.chunk_points,
                 "Points per part: the unit of parallel reading and of one batch to the CPU or GPU")
    ->default_val(default_part_points);

  cmd.add_option("--classes", o.classes, "Keep only these ASPRS classes (e.g. 2,3,4,5,6)")->delimiter(',');
  cmd.add_option("--drop-classes", o.drop_classes, "Drop these classes (default: 7,18, the noise classes)")
    ->delimiter(',');
  cmd.add_flag("--keep-all", o.keep_all, "Keep noise classes and withheld points (no class/return filtering)");
  cmd.add_option("--returns", o.returns, "Which returns to keep: all, first or last")->default_val("all");
  cmd.add_option("--z-min", o.z_min, "Drop points with z below this");
  cmd.add_option("--z-max", o.z_max, "Drop points with z above this");

  cmd.add_option("--synth", o.synth,
                 "Generate a synthetic cloud in memory instead of reading files: " + synth_kind_list() +
                   " (see heightgrid synth --help)");
  add_synth_shape_options(cmd, o.synthetic, "--synth-extent");
}

filter_options make_filter(input_selection const& o)
{
  filter_options f = o.keep_all ? filter_options::keep_all() : filter_options{};
  auto const to_classes = [](std::vector<int> const& in, char const* opt) {
    std::vector<std::uint8_t> out;
    for (int c : in) {
      HG_EXPECTS(c >= 0 && c <= 255, error_kind::usage,
              std::string(opt) + ": class " + std::to_string(c) + " is not in 0..255");
      out.push_back(static_cast<std::uint8_t>(c));
    }
    return out;
  };
  f.classes = to_classes(o.classes, "--classes");
  if (!o.drop_classes.empty()) { f.drop_classes = to_classes(o.drop_classes, "--drop-classes"); }
  if (o.returns == "first") {
    f.returns = return_filter::first;
  } else if (o.returns == "last") {
    f.returns = return_filter::last;
  } else {
    HG_EXPECTS(o.returns == "all", error_kind::usage, "--returns: '" + o.returns + "' is not all, first or last");
  }
  if (o.z_min) {
    HG_EXPECTS(!std::isnan(*o.z_min), error_kind::usage, "--z-min: nan is not a height (give a number)");
    f.z_min = *o.z_min;
  }
  if (o.z_max) {
    HG_EXPECTS(!std::isnan(*o.z_max), error_kind::usage, "--z-max: nan is not a height (give a number)");
    f.z_max = *o.z_max;
  }
  HG_EXPECTS(f.z_min <= f.z_max, error_kind::usage,
          "--z-min " + format_number(f.z_min) + " is above --z-max " + format_number(f.z_max));
  return f;
}

void add_geometry_options(CLI::App& cmd, grid_geometry& g)
{
  auto* res = cmd.add_option("--res", g.res, "Square cell size, in CRS units")->expected(1);
  auto* tr = cmd.add_option("--tr", g.tr, "Cell size XRES YRES (as gdalwarp -tr)")->expected(2);
  res->excludes(tr);
  cmd.add_option("--te", g.te, "Output extent XMIN YMIN XMAX YMAX; points outside are dropped")->expected(4);
  cmd.add_flag("--tap", g.tap,
               "Target-aligned pixels (as gdalwarp -tap): --te's edges move outwards to multiples of the cell size; "
               "an extent taken from the points is always aligned");
  cmd.add_option("--edge-rule", g.edge_rule,
                 "Cell of a point exactly on a horizontal cell edge: gdal (the cell below; rows counted from the top, "
                 "as GDAL) or pdal (the cell above, as PDAL's writers.gdal, which counts rows from the bottom)")
    ->default_val("gdal");
}

edge_rule cell_edge_rule(grid_geometry const& g)
{
  if (g.edge_rule == "gdal") { return edge_rule::gdal; }
  HG_EXPECTS(g.edge_rule == "pdal", error_kind::usage, "--edge-rule: '" + g.edge_rule + "' is not gdal or pdal");
  return edge_rule::pdal;
}

std::pair<double, double> cell_size(grid_geometry const& g)
{
  HG_EXPECTS(!g.res.empty() || !g.tr.empty(), error_kind::usage, "give the cell size with --res R or --tr XRES YRES");
  double const xres = g.tr.empty() ? g.res.front() : g.tr[0];
  double const yres = g.tr.empty() ? g.res.front() : g.tr[1];
  HG_EXPECTS(std::isfinite(xres) && std::isfinite(yres) && xres > 0.0 && yres > 0.0, error_kind::usage,
          "invalid resolution " + std::to_string(xres) + " x " + std::to_string(yres) +
            ": the cell size must be finite and > 0");
  return {xres, yres};
}

std::optional<grid_spec> fixed_grid(grid_geometry const& g)
{
  if (g.te.empty()) { return std::nullopt; }
  auto const [xres, yres] = cell_size(g);
  auto const edge = cell_edge_rule(g);
  if (!g.tap) { return grid_from_extent(g.te[0], g.te[1], g.te[2], g.te[3], xres, yres, false, edge); }
  // gdalwarp -tap: floor the minimum and ceil the maximum to whole cells, so the span is a whole
  // number of cells and grid_from_extent's rounding changes nothing.
  return grid_from_extent(std::floor(g.te[0] / xres) * xres, std::floor(g.te[1] / yres) * yres,
                          std::ceil(g.te[2] / xres) * xres, std::ceil(g.te[3] / yres) * yres, xres, yres, false, edge);
}

void add_metrics_option(CLI::App& cmd, std::string& metrics, std::string const& what)
{
  cmd.add_option("--metrics", metrics,
                 what + ": range,min,max,count,mean,stddev, pNN (a percentile 0-100, e.g. p95, p2.5), median, "
                        "prange (robust range, see --prange), skewness, kurtosis, cover (share above --cover-above), "
                        "above:H (share above H), zbin:H1,H2,... (share in each slice [Hi, Hi+1), a band each), "
                        "entropy (lidR's, 1-unit bins), density (points per square unit), count:CLASSES (points of "
                        "these ASPRS classes, e.g. count:2 or count:3,4,5), first / last (first / last returns)")
    ->default_val("range");
}

void add_cover_option(CLI::App& cmd, double& cover_above)
{
  cmd.add_option("--cover-above", cover_above, "Height above which points count for the cover metric")
    ->default_val(2.0);
}

void add_prange_option(CLI::App& cmd, std::string& prange)
{
  cmd.add_option("--prange", prange, "Percentiles LO,HI of the prange metric (pHI - pLO)")->default_val("5,95");
}

metric_selection parse_metrics(std::string const& metrics, std::string const& prange, double cover_above)
{
  HG_EXPECTS(std::isfinite(cover_above), error_kind::usage,
             "--cover-above: " + std::to_string(cover_above) + " is not a finite height");
  metric_selection s;
  s.bands = parse_metric_list(metrics);
  for (auto& m : s.bands) {
    if (m.kind == metric_kind::cover) { m.p = cover_above; }
  }
  auto const [lo, hi] = parse_prange(prange);
  s.request = metric_request::from(s.bands, lo, hi);
  return s;
}

void add_run_options(CLI::App& cmd, run_options& r)
{
  cmd.add_option("--device", r.device,
                 "Backend: auto (the CPU, joined by the GPU once it has started when the job is large enough), "
                 "gpu or cpu")
    ->default_val("auto");
  cmd.add_option("--threads", r.threads, "Threads reading and binning (default: all cores)");
  cmd.add_option("--memory", r.memory,
                 "Most memory for the grid's accumulators, on the host and on the device, e.g. 4G or 512M "
                 "(default: half of the available host memory, 80 % of the free device memory); a grid that "
                 "needs more is processed in bands of rows, one pass over the points each");
  cmd.add_flag("--progress", r.progress, "Show progress even when stderr is not a terminal");
}

std::uint64_t parse_memory(std::string const& text, std::string const& option)
{
  if (text.empty()) { return 0; }
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (std::logic_error const&) {
    throw error(error_kind::usage, option + ": '" + text + "' is not a size (e.g. 4G, 512M, 1.5G)");
  }
  std::string unit = text.substr(used);
  for (auto& c : unit) { c = static_cast<char>(std::toupper(static_cast<unsigned char>(c))); }
  if (!unit.empty() && unit.back() == 'B') { unit.pop_back(); }
  if (unit.size() == 2 && unit.back() == 'I') { unit.pop_back(); }
  double scale = 1.0;
  if (unit == "K") {
    scale = 1024.0;
  } else if (unit == "M") {
    scale = 1024.0 * 1024.0;
  } else if (unit == "G") {
    scale = 1024.0 * 1024.0 * 1024.0;
  } else if (unit == "T") {
    scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  } else {
    HG_EXPECTS(unit.empty(), error_kind::usage, option + ": unknown unit in '" + text + "' (use K, M, G or T)");
  }
  double const bytes = value * scale;
  HG_EXPECTS(std::isfinite(bytes) && bytes >= 1024.0 * 1024.0 && bytes < 0x1.0p62, error_kind::usage,
          option + ": '" + text + "' is not a usable size (at least 1M)");
  return static_cast<std::uint64_t>(bytes);
}

unsigned apply_threads(int threads)
{
  // Far more threads than cores only costs memory and time, and libgomp exits the process (its own
  // "Thread creation failed", no cleanup) when the system refuses one: with 1024 threads and 2 GB
  // of address space it did (issue 24). Four per core, and at least 64, leaves room for reading
  // from slow disks.
  unsigned const cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned const most = std::max(64u, 4 * cores);
  HG_EXPECTS(threads >= 0 && static_cast<unsigned>(threads) <= most, error_kind::usage,
          "--threads: " + std::to_string(threads) + " is not in 0.." + std::to_string(most) +
            " (0: every core, " + std::to_string(cores) + " here)");
  if (threads > 0) { omp_set_num_threads(threads); }
  return threads > 0 ? static_cast<unsigned>(threads) : static_cast<unsigned>(std::max(1, omp_get_max_threads()));
}

device_choice parse_device(std::string const& text, std::string const& option)
{
  HG_EXPECTS(text == "auto" || text == "gpu" || text == "cpu", error_kind::usage,
             option + ": '" + text + "' is not auto, gpu or cpu");
  return text == "gpu" ? device_choice::gpu : text == "cpu" ? device_choice::cpu : device_choice::automatic;
}

grid_job_options base_job_options(grid_geometry const& geometry, metric_request const& request, float nodata,
                                  filter_options const& filter, std::string const& device, int threads,
                                  std::string const& device_option)
{
  grid_job_options job;
  auto const [xres, yres] = cell_size(geometry);
  job.xres = xres;
  job.yres = yres;
  job.fixed_grid = fixed_grid(geometry);
  job.edge = cell_edge_rule(geometry);
  job.request = request;
  job.nodata = nodata;
  job.filter = filter;
  job.device = parse_device(device, device_option);
  job.threads = apply_threads(threads);
  return job;
}

}  // namespace heightgrid::app
