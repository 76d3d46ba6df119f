#include "grid_command.hpp"

#include "grid_report.hpp"
#include "grid_tiled.hpp"

#include "pipeline/driver_helper.hpp"
#include "pipeline/grid_job.hpp"
#include "pipeline/sources.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/quote.hpp"
#include "heightgrid/core/temp_registry.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/geotiff_writer.hpp"
#include "heightgrid/io/ground_raster.hpp"
#include "heightgrid/io/preview.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"
#include "heightgrid/kernels/reduce_mode.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>

#include <unistd.h>

namespace heightgrid::app {
namespace {

/// "thread, warp, cub, hybrid, atomic, auto": the values --mode takes.
std::string mode_list()
{
  std::string list;
  for (auto const m : all_modes()) { list += std::string(mode_name(m)) + ", "; }
  return list + std::string(auto_mode_name);
}

/// --copc-level N: a level 0-31 (auto is handled by the caller).
int parse_copc_level(std::string const& text)
{
  bool const digits = !text.empty() && text.size() <= 2 &&
                      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  int const level = digits ? std::stoi(text) : -1;
  HG_EXPECTS(level >= 0 && level <= 31, error_kind::usage,
             "--copc-level: '" + text + "' is not auto or a level from 0 to 31");
  return level;
}

float parse_nodata(std::string const& text)
{
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "nan") { return default_nodata; }
  try {
    std::size_t used = 0;
    double const v = std::stod(text, &used);
    HG_EXPECTS(used == text.size() && std::isfinite(v) && std::abs(v) <= 3.4e38, error_kind::usage,
            "--nodata: '" + text + "' is not a finite Float32 value or 'nan'");
    return static_cast<float>(v);
  } catch (std::logic_error const&) {
    throw error(error_kind::usage, "--nodata: '" + text + "' is not a number (use a value or 'nan')");
  }
}

/// The GeoTIFF side of a job: rows arrive window by window and stream to io::raster_writer, which
/// compresses whole block rows on GDAL's threads while the next window is finalized.
class geotiff_output final : public grid_output {
 public:
  geotiff_output(std::string path, std::vector<metric> bands, io::raster_write_options options)
    : path_(std::move(path)), bands_(std::move(bands)), options_(std::move(options))
  {
  }

  void begin(grid_spec const& grid, std::uint64_t max_count) override
  {
    auto const t = std::chrono::steady_clock::now();
    writer_.reset();  // a second begin (never expected) starts over
    writer_ = std::make_unique<io::raster_writer>(path_, grid, bands_, options_, max_count);
    write_seconds += seconds_since(t);
  }

  [[nodiscard]] std::uint32_t block_rows() const override
  {
    return writer_ != nullptr ? static_cast<std::uint32_t>(writer_->block_rows()) : 0;
  }

  void write_rows(std::uint32_t row0, std::uint32_t, cell_results const& w) override
  {
    auto const t = std::chrono::steady_clock::now();
    trace_moment("writing a window of rows");
    writer_->write_rows(row0, w);
    write_seconds += seconds_since(t);
  }

  void commit(std::uint64_t) override
  {
    auto const t = std::chrono::steady_clock::now();
    trace_moment("closing the output (the last blocks compressed, the file renamed into place)");
    written = writer_->commit();
    write_seconds += seconds_since(t);
    trace_moment("the output is closed");
    writer_.reset();
    for (auto const& note : written.notes) { spdlog::warn("{}", note); }
  }

  double write_seconds{0.0};  ///< time in the writer (GDAL's compression overlaps finalizing)
  io::write_report written;   ///< what commit() wrote

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t)
  {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  std::string path_;
  std::vector<metric> bands_;
  io::raster_write_options options_;
  std::unique_ptr<io::raster_writer> writer_;
};

}  // namespace

CLI::App* add_grid_command(CLI::App& app, grid_options& o)
{
  auto* cmd = app.add_subcommand("grid", "Grid points into a GeoTIFF of per-cell statistics (default: height range)");
  cmd->add_option("inputs", o.in.inputs,
                  "Input files (LAS/LAZ, XYZ/CSV, GDAL raster DEMs or vector point layers), directories or globs");
  cmd->add_option("-o,--output", o.output, "Output GeoTIFF (with --tile-size: a directory of tiles and a VRT)")->required();
  add_geometry_options(*cmd, o.geometry);
  add_metrics_option(*cmd, o.metrics, "Bands to write, in order");
  add_prange_option(*cmd, o.prange);
  add_cover_option(*cmd, o.cover_above);
  cmd->add_option("--ground", o.ground,
                  "A terrain raster (DTM) subtracted from every point's z before the metrics (bilinear between "
                  "cell centres): heights above ground; points outside it or on its nodata are dropped and counted. "
                  "auto: the DTM is gridded first from the inputs' ground points (class 2) as --classes 2 "
                  "--metrics min --fill tin would, at the job's cell size");
  cmd->add_option("--fill", o.fill,
                  "Fill empty cells of the float bands after reduction: none, nearest (the nearest non-empty cell "
                  "within --fill-radius), idw (GDALFillNodata's inverse distance weighting, as gdal_fillnodata.py) "
                  "or tin (linear in a Delaunay triangulation of the non-empty cells, see --fill-max-edge); "
                  "adds a last band 'filled' (1 where a cell was filled)")
    ->default_val("none");
  cmd->add_option("--fill-radius", o.fill_radius, "How far --fill nearest|idw looks for values, in cells")
    ->default_val(10.0);
  cmd->add_option("--fill-max-edge", o.fill_max_edge,
                  "--fill tin: triangles with an edge longer than this many cells stay empty (0: any)")
    ->default_val(0.0);
  cmd->add_option("--nodata", o.nodata, "Value of empty cells in float bands ('nan' or a number)")->default_val("nan");
  cmd->add_option("--a_srs", o.a_srs, "Assign this CRS to the output (EPSG:code, WKT, PROJ string)");
  cmd->add_option("--of", o.output_format,
                  "Output format: GTiff or COG (default: from -o's extension, as GDAL's tools; .tif is GTiff)");
  cmd->add_option("--ot", o.output_type,
                  "Output data type: Float32 (default; Float64 when a count exceeds 2^24), Float64, or UInt32 for "
                  "count alone (its default)");
  cmd->add_option("--co", o.creation_options, "GDAL creation option KEY=VALUE (repeatable)");
  cmd->add_flag("--overwrite", o.overwrite, "Replace an existing output file");
  cmd->add_option("--preview", o.preview,
                  "Also render the first band to this PNG: a colour ramp, a legend with its range, nodata cells grey");
  cmd->add_flag("--json", o.json,
                "Print what was written as JSON on stdout: path(s), size, geotransform, CRS, bands, counts, timings");
  add_run_options(*cmd, o.run);
  cmd->add_option("--mode", o.mode,
                  "How the GPU folds each batch into the grid: atomic (per-point atomics; range, min, max, count), "
                  "or a CSR mode (thread, warp, cub, hybrid) reducing the batch sorted by cell; auto: atomic, or "
                  "thread for mean/stddev (sums in the CPU's order: bit-identical to --device cpu)")
    ->default_val(std::string(auto_mode_name));
  cmd->add_option("--read-ahead", o.read_ahead,
                  "GPU jobs of range/min/max/count: batch memory the readers may fill while CUDA starts, e.g. 1G "
                  "(default: none when uncompressed LAS records go to the GPU, else 2G or a quarter of the host "
                  "budget, the smaller; 0: the readers wait for the GPU)");
  cmd->add_option("--gpu-start", o.gpu_start,
                  "GPU jobs of range/min/max/count: what happens to the batches read while CUDA starts: cpu (the "
                  "CPU bins them and the GPU the rest, the two grids merged; where the host's accumulators stay "
                  "within 512 MiB and no LAZ chunk goes to the GPU decoder) or wait (every batch goes to the GPU; "
                  "--read-ahead applies)")
    ->default_val("cpu");
  cmd->add_option("--gpu-memory-wait", o.gpu_memory_wait,
                  "--device gpu, where other processes hold the device's memory: seconds to wait for it (polling) "
                  "after shrinking the device batches and bands, before failing (0: fail at once; auto never waits: "
                  "the CPU takes over)")
    ->default_val(600.0);
  cmd->add_option("--las-decoder", o.las_decoder,
                  "Where uncompressed LAS records are decoded when the GPU bins range/min/max/count: auto (on the "
                  "GPU: the readers only copy records into page-locked memory) or cpu (the readers decode and "
                  "filter, 12 bytes a point travel)")
    ->default_val("auto");
  cmd->add_option("--laz-decoder", o.laz_decoder,
                  "Where LAZ chunks are decoded: auto (the GPU decoder where its estimate beats the CPU's or under "
                  "--device gpu; in jobs of 4*10^8 points or more, pointwise ones counting thrice, the readers decode "
                  "a share beside it, sized to finish with the GPU), both (that share in a job of any size), gpu "
                  "(every chunk the GPU decoder takes) or cpu")
    ->default_val("auto");
  cmd->add_option("--copc-level", o.copc_level,
                  "COPC and EPT inputs: read octree levels 0..N only, or auto: down to the first level whose point "
                  "spacing (COPC: the info VLR's spacing / 2^level; EPT: the cube's side / span / 2^level) is at most "
                  "the cell size (default: every level, the exact result). With -te or tiles only the nodes that "
                  "meet the grid are read either way");
  add_input_options(*cmd, o.in);
  auto* tiles = cmd->add_option_group("Tiled output", "Cut the grid into tiles, each its own GeoTIFF, with a VRT over them");
  tiles->add_option("--tile-size", o.tile_size,
                    "Tiles of CELLS x CELLS (or COLSxROWS) cells; -o names a directory that gets NAME_ROW_COL.tif "
                    "and NAME.vrt");
  tiles->add_option("--tile-size-m", o.tile_size_m, "Tiles of this side in CRS units (a whole number of cells)");
  tiles->add_option("--tile-name", o.tile_name, "File name prefix of the tiles and the VRT (default: the directory's name)");
  tiles->add_flag("--resume", o.resume, "Continue an interrupted tiled run: skip the tiles it finished");
  tiles->add_flag("--skip-bad", o.skip_bad,
                  "Leave out inputs that cannot be read (warn, list them at the end, exit 7) instead of failing");
  tiles->add_option("--gpus", o.gpus,
                    "GPUs to spread tiles over: all, a count N, or a list like 0,2 (--tiles-per-gpu tile workers "
                    "on each, the cores shared)");
  tiles->add_option("--tiles-per-gpu", o.tiles_per_gpu,
                    "Tiles gridded at once on each GPU (default: 3; MPI ranks grid one tile each). A tile's LAZ "
                    "chunks fill less than half of an H200's decoder, and its finalize and write leave the GPU "
                    "idle: several tiles share each GPU")
    ->check(CLI::Range(1u, 16u));
  cmd->footer(R"(Examples:
  heightgrid grid data/sample.xyz -o range.tif --res 1
  heightgrid grid tiles/ -o dsm_range.tif --res 0.5 --metrics range,min,max,count --a_srs EPSG:32633
  heightgrid grid dem.tif -o range_10m.tif --res 10 --of COG --overwrite
  heightgrid grid pts.gpkg --z-field elev -o out.tif --tr 2 2 --te 500000 4100000 501000 4101000
  heightgrid grid --synth uniform --points 100000000 --synth-extent 0 0 10000 10000 -o synth.tif --res 1 -v
  heightgrid grid --synth lidar --points 10000000 --density 10 -o lidar.tif --res 1 --metrics range,count
  heightgrid grid tiles/ -o dsm/ --res 1 --tile-size 4000 --gpus all   # dsm/dsm_R_C.tif + dsm/dsm.vrt)");
  return cmd;
}

namespace {

/// How long a job waits for the driver helper's answer before it takes the driver for hung.
constexpr double driver_helper_timeout_s = 120.0;

/// --device gpu on LAS files that the CPU, binning while CUDA starts, is expected to finish before a
/// GPU context would pay (cpu_bins_before_a_context_pays, from the points the files' sizes suggest):
/// the job's stage may ask the driver from the helper process (driver_helper.hpp), whose start and
/// teardown then happen beside the job. It does where the job's route is the cooperative one (the
/// grid small enough to keep on both sides: grid_job decides once the headers are read); a CPU
/// slower than expected still gets its context (made in this process once the helper has answered).
bool driver_question_for_helper(grid_job_options const& job, input_selection const& in,
                                std::vector<std::string> const& paths)
{
  if (job.device != device_choice::gpu || !job_may_share_with_cpu(job) || !in.synth.empty() || paths.empty() ||
      !driver_helper_waiting()) {
    return false;
  }
  // The model is LAS's: LAZ, text and rasters take the CPU longer than it says.
  bool const las =
    std::all_of(paths.begin(), paths.end(), [](std::string const& p) { return lower_extension(p) == ".las"; });
  return las && cpu_bins_before_a_context_pays(guess_points(in, paths), job.request, worker_threads(job.threads));
}

/// --ground auto's DTM: a hidden file next to the output, removed when the run ends (or is stopped
/// by a signal).
struct auto_ground {
  explicit auto_ground(std::string const& output)
    : path(hidden_temporary_path(output, "ground.tmp", ".tif")),
      registration(path)
  {
  }
  auto_ground(auto_ground const&) = delete;
  auto_ground& operator=(auto_ground const&) = delete;
  ~auto_ground()
  {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  std::string path;
  temporary_registration registration;
};

/// --ground auto: grids the DTM the job's heights are taken above from the same inputs first, as
/// `--classes 2 --metrics min --fill tin` would (the job's cell size, grid and filters, every
/// return, the ground class alone), into `path`.
void make_auto_ground(grid_options const& o, grid_job_options const& job, std::vector<std::string> const& paths,
                      std::string const& path)
{
  stopwatch const t;
  grid_job_options dtm = job;
  dtm.filter.classes = {2};
  dtm.filter.returns = return_filter::all;
  dtm.filter.z_min = -std::numeric_limits<double>::infinity();
  dtm.filter.z_max = std::numeric_limits<double>::infinity();
  dtm.request = metric_request{};
  dtm.request.min = true;
  dtm.progress = false;
  io::raster_write_options w;
  w.overwrite = true;
  w.nodata = default_nodata;
  w.fill.method = io::fill_method::tin;
  w.fill.max_edge = o.fill_max_edge;
  input_selection in = o.in;
  in.reader.ground = nullptr;
  auto opened = open_sources(in, paths, job.xres == job.yres ? std::optional<double>(job.xres) : std::nullopt, job.threads);
  for (auto const& s : opened.sources) {
    // Only LAS/LAZ/COPC and EPT points carry a class (a class filter does not apply to the others).
    auto const& f = s->info().format;
    HG_EXPECTS(f.rfind("LAS ", 0) == 0 || f.rfind("EPT ", 0) == 0, error_kind::input,
               s->info().path + ": --ground auto grids the ground points (class 2), and this input (" + f +
                 ") has no classes; give a terrain raster to --ground");
    if (w.crs_wkt.empty()) { w.crs_wkt = s->info().crs_wkt; }
  }
  if (!o.a_srs.empty()) { w.crs_wkt = io::crs_from_user_input(o.a_srs); }
  geotiff_output out(path, {metric::min}, w);
  grid_job_report r;
  try {
    r = run_grid_job(opened.sources, dtm, out);
  } catch (error const& e) {
    throw error(e.kind(), std::string("--ground auto: no terrain model from the ground points (class 2): ") + e.what());
  }
  spdlog::info("--ground auto: a DTM of {} ground points (class 2), {} x {} cells, filled by tin, in {}",
               with_commas(r.binned), r.grid.cols, r.grid.rows, human_seconds(t.seconds()));
}

}  // namespace

int run_grid(grid_options const& given)
{
  stopwatch total;
  grid_options o = given;  // --ground's raster joins the reader options once it is read
  // --- every option, checked together before any work
  HG_EXPECTS(!o.output.empty(), error_kind::usage, "-o/--output is required");
  auto const [xres, yres] = cell_size(o.geometry);
  auto const fixed = fixed_grid(o.geometry);
  auto const [metrics, request] = parse_metrics(o.metrics, o.prange, o.cover_above);
  float const nodata = parse_nodata(o.nodata);
  auto const filter = make_filter(o.in);
  std::optional<io::raster_data_type> output_type;
  if (!o.output_type.empty()) {
    output_type = io::parse_raster_data_type(o.output_type);
    bool const counts = std::all_of(metrics.begin(), metrics.end(), [](metric m) { return m.is_count_like(); });
    HG_EXPECTS(*output_type != io::raster_data_type::uint32 || counts, error_kind::usage,
               "--ot UInt32 holds count bands alone (count, count:CLASSES, first, last); --metrics asks for '" +
                 o.metrics + "'");
  }
  // Until the output's extension is read (after the checks that name the output itself, such as
  // an output that is an input); a tiled output's -o is a directory and its tiles are .tif.
  std::string const format = o.output_format.empty() ? std::string("GTiff") : o.output_format;
  for (auto const& co : o.creation_options) {
    HG_EXPECTS(co.find('=') != std::string::npos && co.front() != '=', error_kind::usage,
            "--co: '" + co + "' is not KEY=VALUE");
  }
  grid_job_options job = base_job_options(o.geometry, request, nodata, filter, o.run.device, o.run.threads);
  if (o.mode != auto_mode_name) {
    auto const mode = parse_mode(o.mode);
    HG_EXPECTS(mode.has_value(), error_kind::usage, "--mode: '" + o.mode + "' is not a GPU mode (" + mode_list() + ")");
    HG_EXPECTS(mode_supports(*mode, request), error_kind::usage,
            "--mode " + o.mode + " supports range,min,max,count; --metrics asks for '" + o.metrics + "'");
    job.reduction = mode_reduces_csr(*mode) ? batch_reduction::sorted : batch_reduction::atomic;
    if (mode_reduces_csr(*mode)) { job.mode = *mode; }
  }
  job.host_memory = job.device_memory = parse_memory(o.run.memory);
  HG_EXPECTS(o.las_decoder == "auto" || o.las_decoder == "cpu", error_kind::usage,
             "--las-decoder: '" + o.las_decoder + "' is not auto or cpu");
  job.las_decoder = o.las_decoder == "cpu" ? las_decoder_choice::cpu : las_decoder_choice::automatic;
  HG_EXPECTS(o.laz_decoder == "auto" || o.laz_decoder == "cpu" || o.laz_decoder == "gpu" || o.laz_decoder == "both",
             error_kind::usage, "--laz-decoder: '" + o.laz_decoder + "' is not auto, cpu, gpu or both");
  job.laz_decoder = o.laz_decoder == "cpu"   ? laz_decoder_choice::cpu
                    : o.laz_decoder == "gpu" ? laz_decoder_choice::gpu
                                             : laz_decoder_choice::automatic;
  // gpu: the GPU decoder takes every chunk it can; both: the readers share the work in a job of any size.
  if (o.laz_decoder == "gpu") { job.laz_gpu_sizes.share_min_points = UINT64_MAX; }
  if (o.laz_decoder == "both") {
    job.laz_decoder = laz_decoder_choice::gpu;
    job.laz_gpu_sizes.share_min_points = 0;
  }
  HG_EXPECTS(o.gpu_start == "cpu" || o.gpu_start == "wait", error_kind::usage,
             "--gpu-start: '" + o.gpu_start + "' is not cpu or wait");
  job.cpu_while_gpu_starts = o.gpu_start == "cpu";
  HG_EXPECTS(std::isfinite(o.gpu_memory_wait) && o.gpu_memory_wait >= 0.0, error_kind::usage,
             "--gpu-memory-wait: " + std::to_string(o.gpu_memory_wait) + " is not a number of seconds >= 0");
  job.device_memory_wait_s = o.gpu_memory_wait;
  if (!o.read_ahead.empty()) { job.read_ahead = o.read_ahead == "0" ? 0 : parse_memory(o.read_ahead, "--read-ahead"); }
  if (o.copc_level == "auto") {
    job.copc_level_auto = true;
  } else if (!o.copc_level.empty()) {
    job.copc_level = parse_copc_level(o.copc_level);
  }
  job.progress = o.run.progress || stderr_is_terminal();
  job.progress_terminal = stderr_is_terminal();
  std::string assigned_crs;
  if (!o.a_srs.empty()) { assigned_crs = io::crs_from_user_input(o.a_srs); }

  // --- the output can be written, before any input is read
  // EPT inputs expand into the node files of the window (-te; tiles pick theirs by the nodes'
  // headers) and of the levels asked for.
  read_region region;
  if (fixed && !tiled_output_requested(o)) {
    bounds w;
    w.xmin = fixed->x0;
    w.xmax = fixed->x0 + fixed->xres * fixed->cols;
    w.ymax = fixed->y0;
    w.ymin = fixed->y0 - fixed->yres * fixed->rows;
    region.window = w;
  }
  region.max_level = job.copc_level;
  if (job.copc_level_auto) { region.auto_level_cell = std::min(xres, yres); }
  auto const paths = input_paths(o.in, region);
  std::optional<auto_ground> made_ground;  // --ground auto's DTM, removed when the run ends
  if (!o.ground.empty()) {
    HG_EXPECTS(o.in.reader.dimension.empty() || o.in.reader.dimension == "Z" || o.in.reader.dimension == "z",
               error_kind::usage, "--ground subtracts the terrain from Z; --dimension " + o.in.reader.dimension +
                                    " grids another attribute");
    std::string ground_path = o.ground;
    if (o.ground == "auto") {
      HG_EXPECTS(!tiled_output_requested(o), error_kind::usage,
                 "--ground auto makes one DTM for one output raster; with --tile-size make it first (--classes 2 "
                 "--metrics min --fill tin -o dtm.tif) and give it to --ground");
      made_ground.emplace(o.output);
      make_auto_ground(o, job, paths, made_ground->path);
      ground_path = made_ground->path;
    }
    o.in.reader.ground = std::make_shared<io::ground_raster const>(ground_path);
  }
  io::raster_write_options wopt;
  wopt.format = format;
  wopt.data_type = output_type;
  wopt.creation_options = o.creation_options;
  wopt.overwrite = o.overwrite;
  wopt.nodata = nodata;
  wopt.inputs = io::input_files(paths);
  wopt.prange_lo = request.prange_lo;
  wopt.prange_hi = request.prange_hi;
  auto const fill = io::parse_fill_method(o.fill);
  HG_EXPECTS(fill.has_value(), error_kind::usage, "--fill: '" + o.fill + "' is not none, nearest, idw or tin");
  wopt.fill.method = *fill;
  wopt.fill.radius = o.fill_radius;
  wopt.fill.max_edge = o.fill_max_edge;
  if (!o.preview.empty()) { io::check_preview_path(o.preview, o.overwrite); }
  if (tiled_output_requested(o)) {
    io::check_fill(metrics, wopt.fill, true);
    wopt.crs_wkt = assigned_crs;
    return run_grid_tiled(o, job, metrics, wopt, paths);
  }
  HG_EXPECTS(!o.resume && !o.skip_bad, error_kind::usage, "--resume and --skip-bad apply to tiled output (--tile-size)");
  HG_EXPECTS(o.tiles_per_gpu == 0, error_kind::usage, "--tiles-per-gpu applies to tiled output (--tile-size)");
  io::check_output_path(o.output, wopt);
  wopt.format = io::output_format_for(o.output, o.output_format);
  if (!o.gpus.empty()) {
    auto const gpus = parse_gpus(o.gpus);
    if (gpus.size() > 1) {
      spdlog::warn("--gpus {}: one output raster is gridded on one GPU (GPU {}); --tile-size spreads tiles over several",
                   o.gpus, gpus.front());
    }
    HG_EXPECTS(job.device != device_choice::cpu, error_kind::usage, "--gpus cannot be used with --device cpu");
    job.gpu_device = gpus.front();
    if (job.device == device_choice::automatic) { job.device = device_choice::gpu; }
  }

  // --- the GPU starts now, in the background, if the job may want it (CUDA takes ~0.3 s to start)
  std::unique_ptr<gpu_stage> gpu;
  bool const early_gpu = job.device == device_choice::gpu ||
                         (job.device == device_choice::automatic &&
                          auto_wants_gpu(guess_points(o.in, paths), request, worker_threads(job.threads)));
  if (early_gpu) {
    std::function<bool(std::string*)> find_driver;
    if (driver_question_for_helper(job, o.in, paths)) {
      find_driver = driver_helper_finder(job.gpu_device, driver_helper_timeout_s);
    }
    gpu = std::make_unique<gpu_stage>(o.in.reader.chunk_points, gpu_ring_slots(job.threads), job.gpu_device,
                                      std::function<bool()>{}, std::move(find_driver));
  }

  // --- inputs (headers)
  stopwatch const opening;
  trace_moment("opening the inputs");
  auto opened = open_sources(o.in, paths, xres == yres ? std::optional<double>(xres) : std::nullopt, job.threads);
  double const open_s = opening.seconds();
  trace_moment("inputs opened");
  std::string first_crs;
  std::string first_crs_path;
  double input_bytes = 0.0;
  for (auto const& s : opened.sources) {
    auto const& info = s->info();
    for (auto const& note : info.notes) { spdlog::warn("{}", printable(note)); }
    if (first_crs.empty() && !info.crs_wkt.empty()) {
      first_crs = info.crs_wkt;
      first_crs_path = info.path;
    }
    std::error_code ec;
    auto const bytes = std::filesystem::file_size(info.path, ec);
    if (!ec) { input_bytes += static_cast<double>(bytes); }
  }
  for (auto const& s : opened.sources) {
    auto const& info = s->info();
    if (!info.crs_wkt.empty() && !first_crs.empty() && !io::same_crs(info.crs_wkt, first_crs)) {
      spdlog::warn("{}: CRS {} differs from {}'s ({}); points are not reprojected", info.path, io::crs_name(info.crs_wkt),
                   first_crs_path, io::crs_name(first_crs));
    }
  }
  wopt.crs_wkt = assigned_crs.empty() ? first_crs : assigned_crs;
  if (wopt.crs_wkt.empty()) { spdlog::warn("the input has no CRS and none was given with --a_srs; the output will have none"); }
  if (auto const why = io::cell_size_warning(wopt.crs_wkt, xres, yres); !why.empty()) {
    spdlog::warn("implausible cell size: {}", why);
  }

  // --- read, bin, write
  geotiff_output output(o.output, metrics, wopt);
  double const before_job_s = total.seconds();
  job.gpu_stage_private = true;  // started above for this job alone
  job.release_device_when_done = true;  // nothing else in this process uses CUDA
  auto const r = run_grid_job(opened.sources, job, output, std::move(gpu));
  double const job_s = total.seconds() - before_job_s;
  trace_moment("the job ended (output written)");
  for (auto const& w : r.warnings) { spdlog::warn("{}", printable(w)); }
  if (auto const off = r.read.filtered.off_ground; off > 0) {
    auto const read = r.read.filtered.points_in;
    spdlog::warn("{}: {} of {} points ({:.2f} %) lie outside the --ground raster or use a nodata cell of it, and "
                 "were dropped",
                 made_ground ? std::string("--ground auto's DTM") : o.ground, with_commas(off), with_commas(read),
                 read > 0 ? 100.0 * static_cast<double>(off) / read : 0.0);
  }
  if (r.read.filtered.non_finite > 0) {
    spdlog::warn("skipped {} points with NaN or infinite coordinates", with_commas(r.read.filtered.non_finite));
  }
  if (r.outside > 0) { spdlog::info("{} points fell outside --te and were dropped", with_commas(r.outside)); }
  double const cells = static_cast<double>(r.grid.num_cells());
  if (cells > 1e6 && static_cast<double>(r.non_empty) < 0.01 * cells && !fixed) {
    spdlog::warn("the grid of {} x {} cells is {:.2f} % empty: a few far points may set its extent ({}); check "
                 "them with heightgrid info, or give the extent with --te",
                 r.grid.cols, r.grid.rows, 100.0 - 100.0 * static_cast<double>(r.non_empty) / cells,
                 "x " + std::to_string(r.read.extent.xmin) + " .. " + std::to_string(r.read.extent.xmax) + ", y " +
                   std::to_string(r.read.extent.ymin) + " .. " + std::to_string(r.read.extent.ymax));
  }
  double const total_s = total.seconds();
  spdlog::info("{} points read, {}, {} outside; grid {} x {} = {} cells, {} non-empty; {} on {} threads{}; "
               "read + bin {}, write {}; total {} ({:.1f} M points/s); wrote {}",
               with_commas(r.read.filtered.points_in), describe_filtered(r.read.filtered), with_commas(r.outside),
               r.grid.cols, r.grid.rows, with_commas(r.grid.num_cells()), with_commas(r.non_empty), r.route, r.threads,
               r.passes > 1 ? " (" + std::to_string(r.passes) + " passes)" : std::string(), human_seconds(r.bin_pass_s + r.bounds_s),
               human_seconds(output.write_seconds + r.finalize_s), human_seconds(total_s),
               static_cast<double>(r.read.filtered.points_in) / std::max(total_s, 1e-9) / 1e6, o.output);
  if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("before the job {} (options, output, inputs), the job {}", human_seconds(before_job_s),
                  human_seconds(job_s));
    report_stages(r, input_bytes, open_s, opened.sources.size(), output.write_seconds, total_s);
  }
  if (!o.preview.empty()) {
    io::write_preview(o.output, o.preview, o.overwrite);
    spdlog::info("preview of band 1 ({}): {}", metric_name(metrics.front()), o.preview);
  }
  if (o.json) {
    nlohmann::ordered_json bands = nlohmann::ordered_json::array();
    for (auto const m : metrics) { bands.push_back({{"name", metric_name(m)}, {"description", metric_description(m)}}); }
    auto const f = r.read.filtered;
    nlohmann::ordered_json const doc{
      {"outputs",
       {{{"path", o.output},
         {"format", wopt.format},
         {"data_type", io::raster_data_type_name(output.written.data_type)},
         {"size", {r.grid.cols, r.grid.rows}},
         {"geotransform", r.grid.geotransform()},
         {"crs", wopt.crs_wkt.empty() ? nlohmann::ordered_json(nullptr)
                                      : nlohmann::ordered_json{{"name", io::crs_name(wopt.crs_wkt)}, {"wkt", wopt.crs_wkt}}},
         {"nodata", output.written.data_type == io::raster_data_type::uint32 ? nlohmann::ordered_json(0)
                    : std::isnan(nodata)                                  ? nlohmann::ordered_json("nan")
                                                                          : nlohmann::ordered_json(nodata)},
         {"bands", bands}}}},
      {"preview", o.preview.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(o.preview)},
      {"inputs", paths},
      {"points",
       {{"read", f.points_in},
        {"filtered", f.removed()},
        {"outside", r.outside},
        {"binned", f.points_in - f.removed() - r.outside}}},
      {"cells", {{"total", r.grid.num_cells()}, {"non_empty", r.non_empty}}},
      {"route", r.route},
      {"threads", r.threads},
      {"passes", r.passes},
      {"seconds",
       {{"read_bin", r.bin_pass_s + r.bounds_s}, {"finalize_write", output.write_seconds + r.finalize_s}, {"total", total_s}}},
      {"device_memory", r.device_memory_notes},
      {"warnings", r.warnings}};
    std::printf("%s\n", doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  }
  return 0;
}

}  // namespace heightgrid::app
