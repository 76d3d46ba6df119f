#include "grid_command.hpp"

#include "bandwidth.hpp"
#include "report.hpp"
#include "synth_command.hpp"

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/cell_stats.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/synthetic.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/geotiff_writer.hpp"
#include "heightgrid/kernels/grid_gpu.hpp"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace heightgrid::app {
namespace {

/// "thread, warp, cub, hybrid, atomic, auto": the values --mode takes.
std::string mode_list()
{
  std::string list;
  for (auto const m : all_modes()) { list += std::string(mode_name(m)) + ", "; }
  return list + std::string(auto_mode_name);
}

float parse_nodata(std::string const& text)
{
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "nan") { return default_nodata; }
  try {
    std::size_t used = 0;
    double const v = std::stod(text, &used);
    expects(used == text.size() && std::isfinite(v) && std::abs(v) <= 3.4e38, error_kind::usage,
            "--nodata: '" + text + "' is not a finite Float32 value or 'nan'");
    return static_cast<float>(v);
  } catch (std::logic_error const&) {
    throw error(error_kind::usage, "--nodata: '" + text + "' is not a number (use a value or 'nan')");
  }
}

std::string describe_filtered(filter_stats const& f)
{
  std::ostringstream s;
  s << with_commas(f.removed()) << " filtered";
  if (f.removed() > 0) {
    s << " (";
    char const* sep = "";
    auto part = [&](std::uint64_t n, char const* what) {
      if (n > 0) {
        s << sep << with_commas(n) << ' ' << what;
        sep = ", ";
      }
    };
    part(f.non_finite, "non-finite");
    part(f.by_class, "by class");
    part(f.withheld, "withheld");
    part(f.by_return, "by return");
    part(f.by_z, "by z");
    s << ")";
  }
  return s.str();
}

/// Host bytes the CPU backend needs beyond the points already read: cell ids and the
/// cell-ordered z per point, offsets (and per-thread histograms) per cell, and the output bands.
double cpu_bytes_needed(std::uint64_t points, std::uint64_t cells, std::size_t bands)
{
  double const threads = static_cast<double>(std::max(1, omp_get_max_threads()));
  double const hist = static_cast<double>(threads) * static_cast<double>(cells) <= static_cast<double>(points) ? threads : 1.0;
  return static_cast<double>(points) * (sizeof(cell_id) + sizeof(double)) +
         static_cast<double>(cells) * (sizeof(point_offset) * (1.0 + hist) + 4.0 * static_cast<double>(bands) * 2.0);
}

void check_memory(grid_spec const& grid, std::uint64_t points, std::size_t bands, bool gpu)
{
  double const needed = gpu ? static_cast<double>(grid.num_cells()) * 4.0 * static_cast<double>(bands) * 2.0
                            : cpu_bytes_needed(points, grid.num_cells(), bands);
  auto const available = static_cast<double>(available_memory_bytes());
  if (available > 0.0 && needed > 0.9 * available) {
    std::ostringstream msg;
    msg << "the grid of " << grid.cols << " x " << grid.rows << " cells (" << with_commas(grid.num_cells())
        << ") with " << with_commas(points) << " points needs about " << human_bytes(needed)
        << " of memory, but only " << human_bytes(available)
        << " is available; choose a coarser resolution (--res) or a smaller extent (--te)";
    throw error(error_kind::resource, msg.str());
  }
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  auto const n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Median of each phase separately.
gpu_phase_times median_times(std::vector<gpu_phase_times> const& runs)
{
  auto const of = [&](double gpu_phase_times::*field) {
    std::vector<double> v;
    for (auto const& r : runs) { v.push_back(r.*field); }
    return median(v);
  };
  gpu_phase_times m;
  m.h2d_ms = of(&gpu_phase_times::h2d_ms);
  m.cell_ids_ms = of(&gpu_phase_times::cell_ids_ms);
  m.csr_ms = of(&gpu_phase_times::csr_ms);
  m.reduce_ms = of(&gpu_phase_times::reduce_ms);
  m.d2h_ms = of(&gpu_phase_times::d2h_ms);
  m.total_ms = of(&gpu_phase_times::total_ms);
  return m;
}

/// The reduce phase against the memory: the fewest bytes it must move (offsets and z read once,
/// each band written once) over its time, next to a read bandwidth measured now on this device.
void report_reduce_bandwidth(std::uint64_t cells, std::uint64_t points, metric_request const& r, double reduce_ms)
{
  double const bytes = reduce_bytes(cells, points, r);
  auto const peak = measure_device_read_bandwidth();
  double const achieved = gigabytes_per_second(bytes, reduce_ms);
  spdlog::debug("reduce moved at least {} in {:.3f} ms: {:.1f} GB/s, {:.1f}% of the {:.1f} GB/s read bandwidth "
                "measured on {} ({} streaming read, median of {})",
                human_bytes(bytes), reduce_ms, achieved, 100.0 * achieved / peak.gbps, peak.gbps, peak.device,
                human_bytes(static_cast<double>(peak.probe_bytes)), peak.repeats);
}

}  // namespace

std::pair<double, double> cell_size(std::vector<double> const& res, std::vector<double> const& tr)
{
  expects(!res.empty() || !tr.empty(), error_kind::usage, "give the cell size with --res R or --tr XRES YRES");
  double const xres = tr.empty() ? res.front() : tr[0];
  double const yres = tr.empty() ? res.front() : tr[1];
  expects(std::isfinite(xres) && std::isfinite(yres) && xres > 0.0 && yres > 0.0, error_kind::usage,
          "invalid resolution " + std::to_string(xres) + " x " + std::to_string(yres) +
            ": the cell size must be finite and > 0");
  return {xres, yres};
}

void add_input_options(CLI::App& cmd, grid_options& o)
{
  cmd.add_option("--input-format", o.input_format,
                 "Reader to use: auto (by extension/signature, then GDAL), las, text, raster, vector")
    ->default_val("auto");
  cmd.add_option("--band", o.input.band, "Raster band to read from a DEM input")->default_val(1);
  cmd.add_option("--layer", o.input.layer, "Vector layer (name or index) to read; default: the first");
  cmd.add_option("--z-field", o.input.z_field, "Vector attribute holding z (default: the geometry's Z)");
  cmd.add_option("--chunk-points", o.input.chunk_points, "Points per streamed chunk")
    ->default_val(default_chunk_points);

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

filter_options make_filter(grid_options const& o)
{
  filter_options f = o.keep_all ? filter_options::keep_all() : filter_options{};
  auto const to_classes = [](std::vector<int> const& in, char const* opt) {
    std::vector<std::uint8_t> out;
    for (int c : in) {
      expects(c >= 0 && c <= 255, error_kind::usage,
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
    expects(o.returns == "all", error_kind::usage, "--returns: '" + o.returns + "' is not all, first or last");
  }
  if (o.z_min) { f.z_min = *o.z_min; }
  if (o.z_max) { f.z_max = *o.z_max; }
  expects(f.z_min <= f.z_max, error_kind::usage, "--z-min is above --z-max");
  return f;
}

std::vector<std::unique_ptr<point_source>> open_inputs(grid_options const& o, std::vector<std::string>& paths,
                                                       std::optional<double> cell_size_hint)
{
  std::vector<std::unique_ptr<point_source>> sources;
  if (!o.synth.empty()) {
    expects(o.inputs.empty(), error_kind::usage, "give either input files or --synth, not both");
    auto const kind = parse_synth_kind_option(o.synth, "--synth");
    sources.push_back(std::make_unique<synthetic_source>(make_synth_options(kind, o.synthetic, cell_size_hint, "--synth-extent")));
    return sources;
  }
  expects(!o.inputs.empty(), error_kind::usage, "no input given (name files, a directory or a glob, or use --synth)");
  auto const format = parse_input_format(o.input_format);
  expects(format.has_value(), error_kind::usage,
          "--input-format: '" + o.input_format + "' is not auto, las, text, raster or vector");
  input_options in = o.input;
  in.format = *format;
  expects(in.chunk_points > 0, error_kind::usage, "--chunk-points must be > 0");
  paths = expand_inputs(o.inputs);
  for (auto const& p : paths) { sources.push_back(open_input(p, in)); }
  return sources;
}

CLI::App* add_grid_command(CLI::App& app, grid_options& o)
{
  auto* cmd = app.add_subcommand("grid", "Grid points into a GeoTIFF of per-cell statistics (default: height range)");
  cmd->add_option("inputs", o.inputs, "Input files (LAS, XYZ/CSV, GDAL raster DEMs or vector point layers), directories or globs");
  cmd->add_option("-o,--output", o.output, "Output GeoTIFF")->required();
  auto* res = cmd->add_option("--res", o.res, "Square cell size, in CRS units")->expected(1);
  auto* tr = cmd->add_option("--tr", o.tr, "Cell size XRES YRES (as gdalwarp -tr)")->expected(2);
  res->excludes(tr);
  cmd->add_option("--te", o.te, "Output extent XMIN YMIN XMAX YMAX; points outside are dropped")->expected(4);
  cmd->add_option("--metrics", o.metrics, "Bands to write, in order: range,min,max,count,mean,stddev")
    ->default_val("range");
  cmd->add_option("--nodata", o.nodata, "Value of empty cells in float bands ('nan' or a number)")->default_val("nan");
  cmd->add_option("--a_srs", o.a_srs, "Assign this CRS to the output (EPSG:code, WKT, PROJ string)");
  cmd->add_option("--of", o.output_format, "Output format: GTiff or COG")->default_val("GTiff");
  cmd->add_option("--co", o.creation_options, "GDAL creation option KEY=VALUE (repeatable)");
  cmd->add_flag("--overwrite", o.overwrite, "Replace an existing output file");
  cmd->add_option("--device", o.device, "Backend: auto (GPU if present), gpu or cpu")->default_val("auto");
  cmd->add_option("--mode", o.mode, "GPU reduction: " + mode_list() +
                                       "; auto picks one from the metrics and the grid, and says which and why")
    ->default_val(std::string(auto_mode_name));
  cmd->add_option("--csr", o.csr, "How the GPU builds the CSR: radix_sort or counting")
    ->default_val(std::string(csr_method_name(default_csr_method)));
  cmd->add_option("--repeat", o.repeat,
                 "GPU benchmarking: run the device pipeline once to warm up, then K times, and report "
                 "the median time of each phase")
    ->default_val(1);
  cmd->add_option("--threads", o.threads, "CPU threads (default: all cores)");
  cmd->add_flag("--progress", o.progress, "Show progress even when stderr is not a terminal");
  add_input_options(*cmd, o);
  cmd->footer(R"(Examples:
  heightgrid grid data/sample.xyz -o range.tif --res 1
  heightgrid grid tiles/ -o dsm_range.tif --res 0.5 --metrics range,min,max,count --a_srs EPSG:32633
  heightgrid grid dem.tif -o range_10m.tif --res 10 --of COG --overwrite
  heightgrid grid pts.gpkg --z-field elev -o out.tif --tr 2 2 --te 500000 4100000 501000 4101000
  heightgrid grid --synth uniform --points 100000000 --synth-extent 0 0 10000 10000 -o synth.tif --res 1 -v
  heightgrid grid --synth lidar --points 10000000 --density 10 -o lidar.tif --res 1 --metrics range,count)");
  return cmd;
}

int run_grid(grid_options const& o)
{
  stopwatch total;
  // --- every option, checked together before any work
  expects(!o.output.empty(), error_kind::usage, "-o/--output is required");
  auto const [xres, yres] = cell_size(o.res, o.tr);
  auto const metrics = parse_metric_list(o.metrics);
  auto const request = metric_request::from(metrics);
  float const nodata = parse_nodata(o.nodata);
  auto const filter = make_filter(o);
  expects(o.output_format == "GTiff" || o.output_format == "COG", error_kind::usage,
          "--of: '" + o.output_format + "' is not supported (use GTiff or COG)");
  for (auto const& co : o.creation_options) {
    expects(co.find('=') != std::string::npos && co.front() != '=', error_kind::usage,
            "--co: '" + co + "' is not KEY=VALUE");
  }
  expects(o.device == "auto" || o.device == "gpu" || o.device == "cpu", error_kind::usage,
          "--device: '" + o.device + "' is not auto, gpu or cpu");
  // --mode auto is resolved once the grid is known (choose_mode).
  bool const auto_mode = o.mode == auto_mode_name;
  auto const named_mode = parse_mode(o.mode);
  expects(auto_mode || named_mode.has_value(), error_kind::usage,
          "--mode: '" + o.mode + "' is not a GPU mode (" + mode_list() + ")");
  reduce_mode mode = named_mode.value_or(reduce_mode::hybrid);
  expects(auto_mode || mode_supports(mode, request), error_kind::usage,
          "--mode " + o.mode + " supports range,min,max,count; --metrics asks for '" + o.metrics + "'");
  auto const csr = parse_csr_method(o.csr);
  expects(csr.has_value(), error_kind::usage, "--csr: '" + o.csr + "' is not counting or radix_sort");
  expects(o.threads >= 0, error_kind::usage, "--threads must be >= 0");
  expects(o.repeat >= 1, error_kind::usage, "--repeat must be >= 1");
  if (o.threads > 0) { omp_set_num_threads(o.threads); }
  std::optional<grid_spec> fixed_grid;
  if (!o.te.empty()) { fixed_grid = grid_from_extent(o.te[0], o.te[1], o.te[2], o.te[3], xres, yres); }
  std::string assigned_crs;
  if (!o.a_srs.empty()) { assigned_crs = io::crs_from_user_input(o.a_srs); }

  bool use_gpu = false;
  std::string why_not;
  if (o.device != "cpu") {
    use_gpu = gpu_available(&why_not);
    expects(use_gpu || o.device == "auto", error_kind::device, "--device gpu: no usable GPU: " + why_not);
    if (!use_gpu) { spdlog::info("no usable GPU ({}); using the CPU backend", why_not); }
  }

  // --- inputs: all opened before any is read, so a bad file fails fast
  std::vector<std::string> paths;
  auto sources = open_inputs(o, paths, xres == yres ? std::optional<double>(xres) : std::nullopt);
  io::raster_write_options wopt;
  wopt.format = o.output_format;
  wopt.creation_options = o.creation_options;
  wopt.overwrite = o.overwrite;
  wopt.nodata = nodata;
  wopt.input_paths = paths;
  io::check_output_path(o.output, wopt);
  if (fixed_grid) { check_memory(*fixed_grid, 0, metrics.size(), use_gpu); }

  // --- read + filter
  stopwatch read_clock;
  auto loaded = load_points(sources, filter, o.input.chunk_points, o.progress || stderr_is_terminal());
  sources.clear();
  double const read_s = read_clock.seconds();
  if (loaded.filtered.non_finite > 0) {
    spdlog::warn("skipped {} points with NaN or infinite coordinates", with_commas(loaded.filtered.non_finite));
  }
  spdlog::debug("read {} points from {} input(s) in {}; kept {}", with_commas(loaded.filtered.points_in),
                loaded.sources.size(), human_seconds(read_s), with_commas(loaded.points.size()));
  expects(!loaded.points.empty() || fixed_grid.has_value(), error_kind::input,
          (paths.empty() ? std::string("input") : paths.front()) +
            (loaded.filtered.points_in == 0 ? ": no points to grid (the input is empty)"
                                            : ": no points left to grid after filtering (" +
                                                describe_filtered(loaded.filtered) + ")"));

  // --- CRS: --a_srs wins; inputs that disagree are worth a warning
  wopt.crs_wkt = assigned_crs.empty() ? loaded.crs_wkt : assigned_crs;
  for (auto const& s : loaded.sources) {
    if (!s.crs_wkt.empty() && !loaded.crs_wkt.empty() && !io::same_crs(s.crs_wkt, loaded.crs_wkt)) {
      spdlog::warn("{}: CRS {} differs from the first input's ({}); points are not reprojected", s.path,
                   io::crs_name(s.crs_wkt), io::crs_name(loaded.crs_wkt));
    }
  }
  if (wopt.crs_wkt.empty()) { spdlog::warn("the input has no CRS and none was given with --a_srs; the output will have none"); }

  // --- grid
  grid_spec const grid = fixed_grid ? *fixed_grid : grid_from_bounds(loaded.extent, xres, yres);
  check_memory(grid, loaded.points.size(), metrics.size(), use_gpu);
  spdlog::debug("grid {} x {} cells of {} x {}, origin ({}, {})", grid.cols, grid.rows, xres, yres, grid.x0, grid.y0);

  // --- bin + reduce
  cell_results results;
  binning_stats binned;
  double bin_s = 0.0, reduce_s = 0.0;
  std::uint64_t non_empty = 0;
  if (use_gpu) {
    stopwatch gpu_clock;
    // The count column is cheap (4 bytes a cell) and tells how many cells are non-empty.
    metric_request gpu_request = request;
    gpu_request.count = true;
    if (auto_mode) {
      cell_count_stats known;  // before binning: the grid and the number of points
      known.cells = grid.num_cells();
      known.points = loaded.points.size();
      auto const choice = choose_mode(gpu_request, known);
      spdlog::info("--mode auto: {} ({})", mode_name(choice.mode), choice.reason);
      mode = choice.mode;
    }
    auto gpu = grid_points_gpu(grid, loaded.points, gpu_request, nodata, mode, *csr, nullptr);
    double gpu_s = gpu_clock.seconds();
    if (o.repeat > 1) {  // the run above was the warm-up
      std::vector<gpu_phase_times> runs;
      std::vector<double> walls;
      for (int k = 0; k < o.repeat; ++k) {
        stopwatch run_clock;
        gpu = grid_points_gpu(grid, loaded.points, gpu_request, nodata, mode, *csr, nullptr);
        walls.push_back(run_clock.seconds());
        runs.push_back(gpu.times);
      }
      gpu.times = median_times(runs);
      gpu_s = median(walls);
    }
    results = std::move(gpu.results);
    binned = gpu.stats;
    auto const& t = gpu.times;
    spdlog::info("GPU ({} mode, {} CSR{}): H2D {:.2f} ms, cell ids {:.2f} ms, CSR {:.2f} ms, reduce {:.2f} ms, "
                 "D2H {:.2f} ms; device total {:.2f} ms, host wall {}",
                 mode_name(mode), gpu.csr_method,
                 o.repeat > 1 ? ", medians of " + std::to_string(o.repeat) + " runs after a warm-up" : "",
                 t.h2d_ms, t.cell_ids_ms, t.csr_ms, t.reduce_ms, t.d2h_ms, t.total_ms, human_seconds(gpu_s));
    if (spdlog::should_log(spdlog::level::debug)) {
      report_reduce_bandwidth(grid.num_cells(), binned.points_binned, gpu_request, t.reduce_ms);
    }
    bin_s = (t.cell_ids_ms + t.csr_ms) * 1e-3;
    reduce_s = t.reduce_ms * 1e-3;
    non_empty = static_cast<std::uint64_t>(
      std::count_if(results.count.begin(), results.count.end(), [](std::uint32_t n) { return n != 0; }));
  } else {
    stopwatch bin_clock;
    auto const csr = bin_points_cpu(grid, loaded.points, binned);
    bin_s = bin_clock.seconds();
    loaded.points = point_chunk{};  // the CSR holds what is still needed
    stopwatch reduce_clock;
    results = reduce_cells_cpu(csr, request, nodata);
    reduce_s = reduce_clock.seconds();
    for (std::size_t c = 0; c + 1 < csr.offsets.size(); ++c) { non_empty += csr.offsets[c + 1] != csr.offsets[c]; }
    spdlog::debug("CPU ({} threads): bin {}, reduce {}", omp_get_max_threads(), human_seconds(bin_s),
                  human_seconds(reduce_s));
  }
  if (binned.points_outside > 0) {
    spdlog::info("{} points fell outside --te and were dropped", with_commas(binned.points_outside));
  }

  // --- write
  stopwatch write_clock;
  auto const written = io::write_grid(o.output, grid, results, metrics, wopt);
  double const write_s = write_clock.seconds();
  for (auto const& note : written.notes) { spdlog::warn("{}", note); }

  spdlog::info("{} points read, {}, {} outside; grid {} x {} = {} cells, {} non-empty; "
               "read {}, bin {}, reduce {} ({}), write {}; total {}; wrote {}",
               with_commas(loaded.filtered.points_in), describe_filtered(loaded.filtered),
               with_commas(binned.points_outside), grid.cols, grid.rows, with_commas(grid.num_cells()),
               with_commas(non_empty), human_seconds(read_s), human_seconds(bin_s), human_seconds(reduce_s),
               use_gpu ? "GPU " + std::string(mode_name(mode)) : std::string("CPU"), human_seconds(write_s),
               human_seconds(total.seconds()), o.output);
  return 0;
}

}  // namespace heightgrid::app
