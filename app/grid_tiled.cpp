#include "grid_tiled.hpp"

#include "cli.hpp"

#include "pipeline/sources.hpp"
#include "pipeline/tiles.hpp"
#if HEIGHTGRID_HAVE_MPI
#include "pipeline/tiles_mpi.hpp"
#endif
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/quote.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/preview.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <future>
#include <optional>
#include <sstream>

namespace heightgrid::app {
namespace {

namespace fs = std::filesystem;

std::uint32_t parse_cells(std::string const& text, std::string const& whole)
{
  try {
    std::size_t used = 0;
    long long const v = std::stoll(text, &used);
    if (used == text.size() && v >= 1 && v <= 1'000'000) { return static_cast<std::uint32_t>(v); }
  } catch (std::logic_error const&) {
  }
  throw error(error_kind::usage, "--tile-size: '" + whole + "' is not CELLS or COLSxROWS with 1..1000000 cells a side");
}

/// Tile size in cells from --tile-size CELLS|COLSxROWS or --tile-size-m SIDE.
std::pair<std::uint32_t, std::uint32_t> tile_cells(grid_options const& o, double xres, double yres)
{
  HG_EXPECTS(o.tile_size.empty() || !o.tile_size_m, error_kind::usage, "give --tile-size or --tile-size-m, not both");
  if (!o.tile_size.empty()) {
    auto const x = o.tile_size.find_first_of("xX");
    if (x == std::string::npos) {
      auto const n = parse_cells(o.tile_size, o.tile_size);
      return {n, n};
    }
    return {parse_cells(o.tile_size.substr(0, x), o.tile_size), parse_cells(o.tile_size.substr(x + 1), o.tile_size)};
  }
  double const side = *o.tile_size_m;
  HG_EXPECTS(std::isfinite(side) && side > 0.0, error_kind::usage, "--tile-size-m: the tile side must be finite and > 0");
  auto const cells = [&](double res, char const* axis) {
    double const n = std::round(side / res);
    std::ostringstream m;
    m << "--tile-size-m " << side << " is not a whole number of " << axis << " cells of " << res
      << " (tiles must hold whole cells; use --tile-size CELLS)";
    HG_EXPECTS(n >= 1.0 && n <= 1e6 && std::abs(n * res - side) <= 1e-9 * side, error_kind::usage, m.str());
    return static_cast<std::uint32_t>(n);
  };
  return {cells(xres, "x"), cells(yres, "y")};
}

/// Mixes a seed with a tile's index (splitmix64's finaliser): each tile's synthetic points come
/// from their own stream.
std::uint64_t tile_seed(std::uint64_t seed, std::uint64_t index) noexcept
{
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double overlap(double a0, double a1, double b0, double b1) noexcept { return std::max(0.0, std::min(a1, b1) - std::max(a0, b0)); }

/// The synthetic cloud of a tiled run, made tile by tile: tile k holds the share of the points its
/// area of the extent has (split so the shares add up to the total), generated from its own seed
/// inside its own extent, so no tile generates another's points.
std::vector<std::unique_ptr<part_source>> synthetic_tile(synth_options const& whole, grid_spec const& tile,
                                                         std::uint64_t index, std::size_t part_points)
{
  std::vector<std::unique_ptr<part_source>> out;
  if (tile.cols == 0) {  // planning: the whole cloud
    out.push_back(synthetic_parts(whole, part_points));
    return out;
  }
  // The whole grid's tiles in row-major order; the area before tile k in that order.
  double const W = whole.xmax - whole.xmin;
  double const H = whole.ymax - whole.ymin;
  double const tx0 = tile.x0 + static_cast<double>(tile.col0) * tile.xres;
  double const tx1 = tx0 + static_cast<double>(tile.cols) * tile.xres;
  double const ty1 = tile.y0 - static_cast<double>(tile.row0) * tile.yres;
  double const ty0 = ty1 - static_cast<double>(tile.rows) * tile.yres;
  double const w = overlap(tx0, tx1, whole.xmin, whole.xmax);
  double const h = overlap(ty0, ty1, whole.ymin, whole.ymax);
  if (w <= 0.0 || h <= 0.0) { return out; }
  double const above = overlap(ty1, HUGE_VAL, whole.ymin, whole.ymax);  // rows of tiles north of this one
  double const left = overlap(-HUGE_VAL, tx0, whole.xmin, whole.xmax);  // tiles west of it, same row
  long double const total = static_cast<long double>(whole.points);
  long double const area = static_cast<long double>(W) * H;
  long double const before = static_cast<long double>(above) * W + static_cast<long double>(h) * left;
  auto const share = [&](long double a) { return static_cast<std::uint64_t>(std::floor(total * a / area)); };
  std::uint64_t const first = share(before);
  std::uint64_t const last = std::min<std::uint64_t>(whole.points, share(before + static_cast<long double>(w) * h));
  if (last <= first) { return out; }
  synth_options t = whole;
  t.points = last - first;
  t.xmin = std::max(tx0, whole.xmin);
  t.xmax = std::min(tx1, whole.xmax);
  t.ymin = std::max(ty0, whole.ymin);
  t.ymax = std::min(ty1, whole.ymax);
  t.seed = tile_seed(whole.seed, index);
  out.push_back(synthetic_parts(t, part_points));
  return out;
}

}  // namespace

bool tiled_output_requested(grid_options const& o) noexcept { return !o.tile_size.empty() || o.tile_size_m.has_value(); }

gpu_request parse_gpu_request(std::string const& text)
{
  gpu_request r;
  if (text.empty()) { return r; }
  if (text == "all") {
    r.all = true;
    return r;
  }
  r.list = text.find(',') != std::string::npos;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    int v = -1;
    try {
      std::size_t used = 0;
      v = std::stoi(item, &used);
      if (used != item.size()) { v = -1; }
    } catch (std::logic_error const&) {
      v = -1;
    }
    HG_EXPECTS(v >= (r.list ? 0 : 1) && v <= 1024, error_kind::usage,
            "--gpus: '" + text + "' is not all, a count N or a list of device numbers like 0,1");
    r.devices.push_back(v);
  }
  if (r.list) {
    std::vector<int> seen = r.devices;
    std::sort(seen.begin(), seen.end());
    HG_EXPECTS(std::adjacent_find(seen.begin(), seen.end()) == seen.end(), error_kind::usage,
            "--gpus: '" + text + "' names a device twice");
  }
  return r;
}

std::vector<int> resolve_gpus(gpu_request const& r, std::string const& text, int present)
{
  if (text.empty()) { return {}; }
  if (present == 0) {
    std::string reason;
    (void)gpu_available(&reason);
    throw error(error_kind::device, "--gpus " + text + ": no usable GPU (" + reason + ")");
  }
  std::vector<int> out;
  if (r.all) {
    for (int d = 0; d < present; ++d) { out.push_back(d); }
    return out;
  }
  if (!r.list) {
    int const n = r.devices.front();
    HG_EXPECTS(n <= present, error_kind::usage,
            "--gpus " + text + ": this machine has " + std::to_string(present) + " GPU" + (present == 1 ? "" : "s"));
    for (int d = 0; d < n; ++d) { out.push_back(d); }
    return out;
  }
  int const last = *std::max_element(r.devices.begin(), r.devices.end());
  HG_EXPECTS(last < present, error_kind::usage,
          "--gpus " + text + ": device " + std::to_string(last) + " asked for, but this machine has " +
            std::to_string(present) + " (devices 0.." + std::to_string(present - 1) + ")");
  return r.devices;
}

std::vector<int> parse_gpus(std::string const& text)
{
  auto const r = parse_gpu_request(text);
  return resolve_gpus(r, text, text.empty() ? 0 : gpu_count());
}

namespace {

/// A tiled job before it runs: its options and the catalogue of its inputs (every rank of an MPI
/// job makes its own, the same).
struct tiled_setup {
  tiled_job_options t;
  std::vector<catalogue_entry> catalogue;
  tile_source_opener open;
  std::vector<skipped_input> unopened;  ///< inputs that failed to open (--skip-bad)
};

/// What this process does in a tiled job.
enum class tiled_role {
  alone,        ///< plans, writes the directory and grids every tile
  coordinator,  ///< MPI rank 0: plans, writes the directory, hands out tiles, and grids some too
  worker,       ///< another MPI rank: grids the tiles rank 0 hands it
};

/// Checks the options, opens every input's header and decides the device. The output directory is
/// checked first by the process that will write it (not by MPI workers, which would find it as rank
/// 0 made it); the devices are those of a process that grids.
tiled_setup open_catalogue(grid_options const& o, grid_job_options const& job, std::vector<metric> const& bands,
                           io::raster_write_options const& write, std::vector<std::string> const& paths,
                           tiled_role role)
{
  tiled_setup setup;
  tiled_job_options& t = setup.t;
  t.job = job;
  t.fixed_grid = job.fixed_grid;
  t.job.fixed_grid.reset();
  std::tie(t.tile_cols, t.tile_rows) = tile_cells(o, job.xres, job.yres);
  HG_EXPECTS(!(o.resume && o.overwrite), error_kind::usage, "give --resume or --overwrite, not both");
  t.out_dir = o.output;
  while (t.out_dir.size() > 1 && t.out_dir.back() == '/') { t.out_dir.pop_back(); }
  t.name = o.tile_name.empty() ? fs::path(t.out_dir).filename().string() : o.tile_name;
  HG_EXPECTS(!t.name.empty() && t.name != "." && t.name != ".." && t.name.find('/') == std::string::npos,
          error_kind::usage, "--tile-name: '" + t.name + "' cannot name files (give --tile-name NAME)");
  t.bands = bands;
  t.write = write;
  t.overwrite = o.overwrite;
  t.resume = o.resume;
  t.skip_bad = o.skip_bad;
  t.batch_points = o.in.reader.chunk_points;
  HG_EXPECTS(o.gpus.empty() || job.device != device_choice::cpu, error_kind::usage, "--gpus cannot be used with --device cpu");
  // --gpus: its syntax now; the devices counted beside the catalogue's opening (CUDA's driver and
  // first context take ~0.5 s, which came before the headers were read).
  gpu_request const gpu_ask = parse_gpu_request(o.gpus);
  std::future<int> gpus_present;
  if (!o.gpus.empty()) { gpus_present = std::async(std::launch::async, [] { return gpu_count(); }); }
  HG_EXPECTS(o.tiles_per_gpu == 0 || job.device != device_choice::cpu, error_kind::usage,
             "--tiles-per-gpu cannot be used with --device cpu");
  t.tiles_per_gpu = o.tiles_per_gpu != 0 ? o.tiles_per_gpu : default_tiles_per_gpu;

  // The output directory, before any input is read.
  if (role != tiled_role::worker) {
    std::error_code ec;
    fs::path const dir(t.out_dir);
    if (fs::exists(dir, ec)) {
      HG_EXPECTS(fs::is_directory(dir, ec), error_kind::output,
              t.out_dir + ": exists and is not a directory (with --tile-size, -o names a directory)");
      HG_EXPECTS(o.resume || o.overwrite || fs::directory_iterator(dir, ec) == fs::directory_iterator(), error_kind::output,
              t.out_dir + ": output directory exists; use --overwrite to replace its tiles or --resume to continue");
    } else {
      HG_EXPECTS(!o.resume, error_kind::output, t.out_dir + ": no earlier tiled run to resume (the directory does not exist)");
    }
  }

  // The catalogue: every input's header (bounds, point count, CRS), opened once.
  auto& catalogue = setup.catalogue;
  auto& open = setup.open;
  auto& unopened = setup.unopened;
  input_options const reader = o.in.synth.empty() ? reader_options(o.in) : o.in.reader;
  std::string crs = write.crs_wkt;
  if (!o.in.synth.empty()) {
    auto opened = open_sources(o.in, {}, job.xres == job.yres ? std::optional<double>(job.xres) : std::nullopt, job.threads);
    synth_options const whole = *opened.synth;
    catalogue.push_back({opened.sources.front()->info().path, opened.sources.front()->declared_bounds(), whole.points});
    std::size_t const part = o.in.reader.chunk_points;
    open = [whole, part](grid_spec const& tile, std::uint64_t index, std::vector<std::size_t> const&) {
      return synthetic_tile(whole, tile, index, part);
    };
  } else {
    auto opened = open_sources(o.in, paths, std::nullopt, job.threads, o.skip_bad);
    for (auto const& [path, why] : opened.failed) { unopened.push_back({path, why}); }
    std::string first_crs_path;
    std::string first_crs;
    for (std::size_t i = 0; i < opened.sources.size(); ++i) {
      auto const& info = opened.sources[i]->info();
      for (auto const& note : info.notes) { spdlog::warn("{}", printable(note)); }
      catalogue.push_back({opened.paths[i], opened.sources[i]->declared_bounds(), info.point_count.value_or(0)});
      if (info.crs_wkt.empty()) { continue; }
      if (first_crs.empty()) {
        first_crs = info.crs_wkt;
        first_crs_path = info.path;
      } else if (!io::same_crs(info.crs_wkt, first_crs)) {
        throw error(error_kind::input, info.path + ": CRS " + io::crs_name(info.crs_wkt) + " differs from " +
                                         first_crs_path + "'s (" + io::crs_name(first_crs) +
                                         "); a tiled job needs one CRS (points are not reprojected)");
      }
    }
    if (crs.empty()) { crs = first_crs; }
    std::vector<std::string> const files = opened.paths;
    open = [files, reader](grid_spec const&, std::uint64_t, std::vector<std::size_t> const& which) {
      std::vector<std::unique_ptr<part_source>> out;
      for (auto const i : which) { out.push_back(open_part_source(files.at(i), reader)); }
      return out;
    };
    if (catalogue.empty()) {
      throw error(error_kind::input, "every input failed to open; the first: " + unopened.front().path + ": " +
                                       printable(unopened.front().reason));
    }
  }
  trace_moment("tiled job: the catalogue's headers are read");
  if (gpus_present.valid()) {
    t.gpus = resolve_gpus(gpu_ask, o.gpus, gpus_present.get());
    trace_moment("tiled job: the GPUs are counted");
  }
  t.write.crs_wkt = crs;
  if (crs.empty()) { spdlog::warn("the input has no CRS and none was given with --a_srs; the tiles will have none"); }

  // Where the tiles are gridded: --gpus, else the job's device choice (auto: the GPU when the whole
  // catalogue is big enough; its stage then serves every tile).
  if (t.gpus.empty() && job.device == device_choice::automatic) {
    std::uint64_t points = 0;
    for (auto const& e : catalogue) { points += e.points; }
    bool const gpu = points > 0 && auto_wants_gpu(points, job.request, worker_threads(job.threads)) && gpu_available();
    t.job.device = gpu ? device_choice::gpu : device_choice::cpu;
  }

  return setup;
}

/// Says what the job did (the summary line, warnings, skipped inputs) and returns the exit code.
int report_tiled(tiled_job_report r, std::vector<skipped_input> const& unopened,
                 std::chrono::steady_clock::time_point start, double setup_s, std::size_t inputs, grid_options const& o)
{
  for (auto const& s : unopened) { r.skipped.insert(r.skipped.begin(), s); }
  for (auto const& w : r.warnings) { spdlog::warn("{}", printable(w)); }
  double const total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream workers;
  for (std::size_t i = 0; i < r.workers.size(); ++i) {
    auto const& w = r.workers[i];
    workers << (i ? "; " : "") << w.name << ": " << w.tiles << " tiles, busy " << human_seconds(w.busy_s) << " ("
            << static_cast<int>(100.0 * w.busy_s / std::max(total_s, 1e-9)) << " %)";
    if (w.gpu_s > 0.0) {
      workers << ", GPU compute " << human_seconds(w.gpu_s) << " (" << static_cast<int>(100.0 * w.gpu_s / std::max(total_s, 1e-9))
              << " %)";
    }
  }
  spdlog::info("{} x {} tiles of {} x {} cells over a grid of {} x {}: {} written{}, {} empty, {} resumed, {} gridded "
               "again; {} records read, {} points in {} cells; {}; total {} ({:.1f} M points/s); wrote {}",
               r.layout.tiles_x(), r.layout.tiles_y(), r.layout.tile_cols, r.layout.tile_rows, r.layout.grid.cols,
               r.layout.grid.rows, r.tiles_written,
               r.tiles_filled_in > 0 ? " (+" + std::to_string(r.tiles_filled_in) + " without points, filled in by --fill)"
                                     : std::string(),
               r.tiles_empty, r.tiles_resumed, r.tiles_redone, with_commas(r.records),
               with_commas(r.binned), with_commas(r.non_empty), workers.str(), human_seconds(total_s),
               static_cast<double>(r.records) / std::max(total_s, 1e-9) / 1e6, r.vrt);
  spdlog::debug("stages: start and catalogue {} ({} inputs), planning {}, tiles {} ({:.1f} M records/s), fill {}, VRT {}",
                human_seconds(setup_s), inputs, human_seconds(r.plan_s),
                human_seconds(r.tiles_s), static_cast<double>(r.records) / std::max(r.tiles_s, 1e-9) / 1e6,
                human_seconds(r.fill_s), human_seconds(r.vrt_s));
  if (!o.preview.empty() && !r.vrt.empty()) { io::write_preview(r.vrt, o.preview, o.overwrite); }
  if (o.json) {
    // --json: what was written (the VRT over the tiles, and the tiles' layout), as grid does.
    nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
    for (auto const& s : r.skipped) { skipped.push_back({{"path", s.path}, {"reason", printable(s.reason)}}); }
    nlohmann::ordered_json const doc{
      {"outputs", {{{"path", r.vrt}, {"format", "VRT"}, {"size", {r.layout.grid.cols, r.layout.grid.rows}},
                    {"geotransform", r.layout.grid.geotransform()}}}},
      {"tiles", {{"size", {r.layout.tile_cols, r.layout.tile_rows}}, {"count", {r.layout.tiles_x(), r.layout.tiles_y()}},
                 {"written", r.tiles_written}, {"empty", r.tiles_empty}, {"resumed", r.tiles_resumed},
                 {"redone", r.tiles_redone}}},
      {"points", {{"read", r.records}, {"binned", r.binned}}},
      {"cells", {{"total", r.layout.grid.num_cells()}, {"non_empty", r.non_empty}}},
      {"skipped", skipped},
      {"seconds", {{"total", total_s}}},
      {"warnings", r.warnings}};
    std::printf("%s\n", doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  }
  if (!r.skipped.empty()) {
    for (auto const& s : r.skipped) { spdlog::warn("skipped {}: {}", s.path, printable(s.reason)); }
    spdlog::warn("{} input{} skipped (--skip-bad); exit code {}", r.skipped.size(), r.skipped.size() == 1 ? "" : "s",
                 exit_skipped_inputs);
    return exit_skipped_inputs;
  }
  return 0;
}

/// How many ranks an MPI launcher (mpirun, mpiexec, srun) started, from this process's environment
/// alone: 1 when none did, 0 when one did but the count is not there (PMIx outside Slurm). MPI is
/// started only when there are other ranks, so a plain run never initialises it.
int launched_ranks()
{
  auto const number = [](char const* name) -> std::optional<int> {
    char const* v = std::getenv(name);
    if (v == nullptr || *v == '\0') { return std::nullopt; }
    char* end = nullptr;
    long const n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 1 || n > 1'000'000) { return std::nullopt; }
    return static_cast<int>(n);
  };
  // Open MPI's mpirun; MPICH's Hydra and Slurm's PMI-2; PMIx (Slurm's --mpi=pmix, prterun).
  if (auto const n = number("OMPI_COMM_WORLD_SIZE")) { return *n; }
  if (auto const n = number("PMI_SIZE")) { return *n; }
  if (std::getenv("PMIX_RANK") != nullptr) { return number("SLURM_STEP_NUM_TASKS").value_or(0); }
  return 1;
}

}  // namespace

#if HEIGHTGRID_HAVE_MPI
namespace {

/// The threads of this rank's tile worker: the host's cores are shared by its ranks unless
/// --threads says how many each takes.
unsigned rank_threads(mpi_world const& world, grid_options const& o, grid_job_options const& job)
{
  if (o.run.threads != 0) { return job.threads; }
  unsigned const threads = std::max(1u, job.threads / static_cast<unsigned>(world.local_workers()));
  omp_set_num_threads(static_cast<int>(threads));
  return threads;
}

/// A rank other than 0: quiet (rank 0 reports; warnings come to it with each tile's outcome), its
/// own catalogue, then the tiles rank 0 hands it.
int serve_tiles(mpi_world const& world, grid_options const& o, grid_job_options const& job,
                std::vector<metric> const& bands, io::raster_write_options const& write,
                std::vector<std::string> const& paths)
{
  spdlog::set_pattern("heightgrid[rank " + std::to_string(world.rank()) + "]: %^%l%$: %v");
  if (spdlog::get_level() > spdlog::level::debug) { spdlog::set_level(spdlog::level::err); }
  tiled_setup s;
  try {
    s = open_catalogue(o, job, bands, write, paths, tiled_role::worker);
  } catch (error const& e) {
    return fail_tile_rank(world, e);
  } catch (std::bad_alloc const&) {
    return fail_tile_rank(world, error(error_kind::resource, "out of host memory while opening the inputs"));
  } catch (std::exception const& e) {
    return fail_tile_rank(world, error(error_kind::internal, e.what()));
  }
  unsigned const threads = rank_threads(world, o, job);
  auto const& gpus = s.t.gpus;
  int const device = gpus.empty() ? -1 : gpus[static_cast<std::size_t>(world.local_worker()) % gpus.size()];
  try {
    return serve_tile_rank(world, s.catalogue, s.open, s.t, device, threads);
  } catch (...) {
    // Tiles fail into their outcomes; this is the conversation failing (MPI, or a message this rank
    // cannot read). Rank 0 would wait for this rank for ever: end every rank.
    world.abort(report_failure(std::current_exception()));  // said before the ranks are told to end
  }
}

}  // namespace
#endif

int run_grid_tiled(grid_options const& o, grid_job_options const& job, std::vector<metric> const& bands,
                   io::raster_write_options const& write, std::vector<std::string> const& paths)
{
  auto const start = std::chrono::steady_clock::now();
  auto const here = [&] {
    auto s = open_catalogue(o, job, bands, write, paths, tiled_role::alone);
    double const setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report_tiled(run_tiled_job(s.catalogue, s.open, s.t), s.unopened, start, setup_s, s.catalogue.size(), o);
  };
  int const launched = launched_ranks();
  if (launched == 1) { return here(); }
#if HEIGHTGRID_HAVE_MPI
  mpi_world world;
  if (world.size() == 1) { return here(); }
  if (world.rank() != 0) { return serve_tiles(world, o, job, bands, write, paths); }
  // Rank 0 coordinates: it plans, writes the manifest, the log and the VRT, and hands out tiles;
  // a worker of its own grids tiles too (its share of the host's cores, like every rank).
  mpi_tile_ranks ranks(world);
  int code = 0;
  try {
    grid_job_options rank_job = job;
    rank_job.threads = rank_threads(world, o, job);
    auto s = open_catalogue(o, rank_job, bands, write, paths, tiled_role::coordinator);
    double const setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    code = report_tiled(run_tiled_job(s.catalogue, s.open, s.t, &ranks), s.unopened, start, setup_s, s.catalogue.size(),
                        o);
  } catch (...) {
    code = report_failure(std::current_exception());
  }
  try {
    ranks.finish(code);
  } catch (...) {
    world.abort(report_failure(std::current_exception()));
  }
  return code;
#else
  throw error(error_kind::usage,
              "started as one of " + (launched > 0 ? std::to_string(launched) : std::string("several")) +
                " MPI ranks, but this heightgrid was built without MPI (HEIGHTGRID_MPI=OFF): every rank would grid "
                "every tile; run it once, without mpirun/srun, or build it with MPI");
#endif
}

}  // namespace heightgrid::app
