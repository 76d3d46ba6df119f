#include "pipeline/tiles.hpp"

#include "pipeline/tile_work.hpp"
#include "report.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/vrt_writer.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

namespace heightgrid::app {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

constexpr char const* manifest_name = ".heightgrid-tiles";
constexpr char const* log_name = ".heightgrid-tiles.log";

/// FNV-1a, 64 bits: a stable fingerprint of the inputs' names for the manifest.
std::uint64_t fnv1a(std::string const& text, std::uint64_t h = 0xcbf29ce484222325ULL)
{
  for (unsigned char const c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string digits(double v)
{
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

/// What makes two tiled runs the same job: a --resume must continue the same one.
std::string manifest_text(tiling const& layout, std::vector<catalogue_entry> const& catalogue, tiled_job_options const& o)
{
  std::ostringstream m;
  auto const& g = layout.grid;
  m << "heightgrid tiled output 1\n";
  m << "grid " << digits(g.x0) << ' ' << digits(g.y0) << ' ' << digits(g.xres) << ' ' << digits(g.yres) << ' ' << g.cols
    << ' ' << g.rows << '\n';
  m << "tile " << layout.tile_cols << ' ' << layout.tile_rows << '\n';
  m << "name " << o.name << '\n';
  m << "bands";
  for (auto const b : o.bands) { m << ' ' << metric_name(b); }
  if (std::find(o.bands.begin(), o.bands.end(), metric::prange) != o.bands.end()) {
    m << " (prange " << digits(o.write.prange_lo) << ',' << digits(o.write.prange_hi) << ')';  // --prange
  }
  m << "\nnodata " << digits(o.write.nodata) << '\n';
  if (o.write.fill.method != io::fill_method::none) {
    m << "fill " << static_cast<int>(o.write.fill.method) << ' ' << digits(o.write.fill.radius) << ' '
      << digits(o.write.fill.max_edge) << '\n';
  }
  m << "format " << o.write.format;
  for (auto const& c : o.write.creation_options) { m << ' ' << c; }
  std::uint64_t h = fnv1a(o.write.crs_wkt);
  m << "\ncrs " << std::hex << h << std::dec << '\n';
  h = 0xcbf29ce484222325ULL;
  for (auto const& e : catalogue) { h = fnv1a(e.path + '\n', h); }
  m << "inputs " << catalogue.size() << ' ' << std::hex << h << std::dec << '\n';
  return m.str();
}

std::string read_file_text(fs::path const& p)
{
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool directory_is_empty(fs::path const& p)
{
  std::error_code ec;
  return fs::directory_iterator(p, ec) == fs::directory_iterator();
}

}  // namespace

std::string tile_file_name(std::string const& name, tiling const& layout, std::uint32_t tx, std::uint32_t ty)
{
  auto const width = [](std::uint32_t n) { return std::to_string(n > 0 ? n - 1 : 0).size(); };
  auto const pad = [](std::uint32_t v, std::size_t w) {
    std::string s = std::to_string(v);
    return std::string(w > s.size() ? w - s.size() : 0, '0') + s;
  };
  return name + "_" + pad(ty, width(layout.tiles_y())) + "_" + pad(tx, width(layout.tiles_x())) + ".tif";
}

grid_spec plan_tiled_grid(std::vector<catalogue_entry> const& catalogue, tile_source_opener const& open,
                          tiled_job_options const& o, bounds const& learnt)
{
  if (o.fixed_grid) { return *o.fixed_grid; }
  bounds all = learnt;
  std::vector<std::size_t> undeclared;
  for (std::size_t s = 0; s < catalogue.size(); ++s) {
    auto const& d = catalogue[s].declared;
    if (d && !d->empty()) {
      all.extend(*d);
    } else {
      undeclared.push_back(s);
    }
  }
  if (!undeclared.empty()) {
    auto const sources = open(grid_spec{}, 0, undeclared);
    all.extend(read_bounds(source_pointers(sources), o.job.filter, o.job.threads));
  }
  HG_EXPECTS(!all.empty(), error_kind::input,
          (catalogue.empty() ? std::string("input") : catalogue.front().path) + ": no points to grid");
  return grid_from_bounds(all, o.job.xres, o.job.yres, true, o.job.edge);
}

namespace {

/// Removes the hidden temporaries (hidden_temporary_path's ".NAME.tmp-PID..." of the writers and
/// ".NAME.fill-PID" of fill_tiles) that a killed process left in `dir`: those whose PID no process
/// on this host has. Returns how many.
std::size_t remove_stale_temporaries(fs::path const& dir)
{
  std::size_t removed = 0;
  std::error_code ec;
  for (auto const& entry : fs::directory_iterator(dir, ec)) {
    std::string const name = entry.path().filename().string();
    // ".tmp-PID" (writers) or ".fill-PID" (--fill's filled tiles before they replace theirs).
    auto at = name.rfind(".tmp-");
    std::size_t mark = 5;
    if (at == std::string::npos) {
      at = name.rfind(".fill-");
      mark = 6;
    }
    if (name.empty() || name[0] != '.' || at == std::string::npos || !entry.is_regular_file(ec)) { continue; }
    std::size_t digits = 0;
    while (at + mark + digits < name.size() && std::isdigit(static_cast<unsigned char>(name[at + mark + digits])) != 0) {
      ++digits;
    }
    if (digits == 0 || digits > 9) { continue; }
    auto const pid = static_cast<pid_t>(std::stol(name.substr(at + mark, digits)));
    // kill(pid, 0) fails with ESRCH only when no such process exists (EPERM: it exists).
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) { continue; }
    if (fs::remove(entry.path(), ec)) { ++removed; }
  }
  return removed;
}

/// The output directory: checked, created, and its manifest compared or written. With --resume or
/// --overwrite, the temporaries of killed runs go.
void prepare_directory(tiled_job_options const& o, std::string const& manifest)
{
  fs::path const dir(o.out_dir);
  std::error_code ec;
  auto const st = fs::symlink_status(dir, ec);
  bool const exists = !ec && fs::exists(st);
  if (exists && !fs::is_directory(fs::status(dir, ec))) {
    throw error(error_kind::output, o.out_dir + ": exists and is not a directory (tiled output writes a directory)");
  }
  fs::path const manifest_path = dir / manifest_name;
  if (o.resume) {
    HG_EXPECTS(exists && fs::exists(manifest_path, ec), error_kind::output,
            o.out_dir + ": no earlier tiled run to resume here (no " + manifest_name + "); run without --resume");
    HG_EXPECTS(read_file_text(manifest_path) == manifest, error_kind::output,
            o.out_dir + ": the tiles there were made by a different job (grid, tile size, bands, options or inputs "
                        "differ); use --overwrite to start over");
    (void)remove_stale_temporaries(dir);
    return;
  }
  if (exists && !directory_is_empty(dir) && !o.overwrite) {
    throw error(error_kind::output,
                o.out_dir + ": output directory exists; use --overwrite to replace its tiles or --resume to continue");
  }
  fs::create_directories(dir, ec);
  HG_EXPECTS(!ec, error_kind::output, o.out_dir + ": cannot create the output directory: " + ec.message());
  if (o.overwrite) { (void)remove_stale_temporaries(dir); }
  // The log of an earlier job is void; its tiles are replaced (or left, if this job has none there).
  fs::remove(dir / log_name, ec);
  std::ofstream out(manifest_path, std::ios::trunc);
  out << manifest;
  out.close();
  HG_EXPECTS(out.good(), error_kind::output, (manifest_path).string() + ": cannot write");
}

/// The log of finished tiles: "INDEX written|empty|pending", the last line of a tile wins.
std::map<std::uint64_t, bool> read_log(fs::path const& path)
{
  std::map<std::uint64_t, bool> done;  // index -> written
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::uint64_t index = 0;
    std::string what;
    if (!(s >> index >> what)) { continue; }  // a line cut by a kill
    if (what == "pending") {
      done.erase(index);
    } else if (what == "written" || what == "empty") {
      done[index] = what == "written";
    }
  }
  return done;
}

class log_writer {
 public:
  explicit log_writer(fs::path path) : out_(path, std::ios::app) {}
  void append(std::vector<std::string> const& lines)
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto const& l : lines) { out_ << l << '\n'; }
    out_.flush();
  }

 private:
  std::mutex mutex_;
  std::ofstream out_;
};

}  // namespace

tiled_job_report run_tiled_job(std::vector<catalogue_entry> const& catalogue, tile_source_opener const& open,
                               tiled_job_options const& options)
{
  return run_tiled_job(catalogue, open, options, nullptr);
}

tiled_job_report run_tiled_job(std::vector<catalogue_entry> const& catalogue, tile_source_opener const& open,
                               tiled_job_options const& options, remote_tile_workers* remote)
{
  auto const start = clock_type::now();
  tiled_job_options o = options;
  tiled_job_report report;
  unsigned const threads = worker_threads(o.job.threads);
  if (remote != nullptr) { remote->check_catalogue(catalogue); }
  bounds learnt;  // points found outside every header's bounds
  double plan_s = 0.0;
  double tiles_s = 0.0;
  auto const since = [](clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); };
  for (;;) {
    auto const round_start = clock_type::now();
    auto const grid = plan_tiled_grid(catalogue, open, o, learnt);
    tiling const layout = make_tiling(grid, o.tile_cols, o.tile_rows);
    auto const manifest = manifest_text(layout, catalogue, o);
    prepare_directory(o, manifest);
    fs::path const dir(o.out_dir);
    tile_coordinator c(layout, catalogue, o);
    if (o.resume) {
      for (auto const& [index, written] : read_log(dir / log_name)) {
        auto const tx = static_cast<std::uint32_t>(index % layout.tiles_x());
        auto const ty = static_cast<std::uint32_t>(index / layout.tiles_x());
        std::error_code ec;
        if (!written || fs::exists(dir / tile_file_name(o.name, layout, tx, ty), ec)) { c.mark_done_earlier(index, written); }
      }
    }
    log_writer log(dir / log_name);
    tile_log const append = [&](std::vector<std::string> const& lines) { log.append(lines); };
    plan_s += since(round_start);
    auto const tiles_start = clock_type::now();
    bool const progress = o.job.progress_terminal;
    // Workers: with MPI ranks, one here (on a thread of its own: this thread talks to the ranks)
    // beside theirs; else one per GPU, the cores shared among them; else one worker with every core.
    std::vector<std::unique_ptr<tile_worker>> workers;
    if (remote != nullptr) {
      workers.push_back(
        std::make_unique<tile_worker>(o, layout, catalogue, open, o.gpus.empty() ? -1 : o.gpus.front(), threads));
      workers.front()->set_label(remote->local_label());
      std::exception_ptr local_failure;
      std::thread local([&] {
        try {
          run_tiles_here(c, workers, append, false);
        } catch (...) {
          local_failure = std::current_exception();
          c.fail(error(error_kind::internal, "rank 0's tile worker stopped"));
        }
      });
      try {
        remote->run(c, layout, append, progress);
      } catch (...) {
        c.fail(error(error_kind::internal, "MPI: the conversation with the ranks failed"));  // stops the worker here
        local.join();
        throw;
      }
      local.join();
      if (local_failure) { std::rethrow_exception(local_failure); }
    } else {
      // Every GPU gets `tiles_per_gpu` workers, dealt round the GPUs so that the first tiles spread
      // over all of them; a CPU job has one worker with every core.
      bool const on_gpu = !o.gpus.empty() || o.job.device == device_choice::gpu;
      std::vector<int> const devices = o.gpus.empty() ? std::vector<int>{-1} : o.gpus;
      std::size_t const per_gpu = on_gpu ? std::max(1u, o.tiles_per_gpu) : 1;
      std::size_t const n = devices.size() * per_gpu;
      unsigned const per_worker = std::max(1u, threads / static_cast<unsigned>(n));
      for (std::size_t k = 0; k < per_gpu; ++k) {
        for (int const device : devices) {
          workers.push_back(std::make_unique<tile_worker>(o, layout, catalogue, open, device, per_worker));
          if (per_gpu > 1) { workers.back()->set_ordinal("worker " + std::to_string(workers.size())); }
        }
      }
      run_tiles_here(c, workers, append, progress);
    }
    tiles_s += since(tiles_start);
    if (progress) { std::fprintf(stderr, "\n"); }
    report.layout = layout;
    auto earlier = std::move(report.warnings);
    c.fill(report);
    report.warnings.insert(report.warnings.begin(), earlier.begin(), earlier.end());
    for (auto const& w : workers) {
      report.workers.push_back({w->name(), w->tiles(), w->busy_seconds(), w->gpu_seconds()});
    }
    if (remote != nullptr) { remote->describe(report); }
    if (auto const f = c.fatal()) { throw *f; }
    if (c.replan()) {
      // A point outside every header's grid: the grid grows to hold it, and the job starts over.
      HG_EXPECTS(report.replans < 8, error_kind::internal, "tiled job: the grid was planned 8 times and still misses points");
      int const replans = report.replans + 1;
      learnt.extend(c.replan_bounds());
      o.resume = false;
      o.overwrite = true;
      auto warnings = std::move(report.warnings);
      report = tiled_job_report{};
      report.replans = replans;
      report.warnings = std::move(warnings);
      continue;
    }
    auto const written = c.written_tiles();
    if (written.empty()) {
      throw error(error_kind::input, (catalogue.empty() ? std::string("input") : catalogue.front().path) +
                                       ": no points to grid in any tile (the inputs are empty or every point was filtered "
                                       "out or lies outside --te)");
    }
    std::vector<std::string> paths;
    for (auto const index : written) {
      auto const tx = static_cast<std::uint32_t>(index % layout.tiles_x());
      auto const ty = static_cast<std::uint32_t>(index / layout.tiles_x());
      paths.push_back((dir / tile_file_name(o.name, layout, tx, ty)).string());
    }
    if (o.write.fill.method != io::fill_method::none) {
      // Every tile is written: each is filled from the mosaic around it (values across its edges).
      auto const fill_start = clock_type::now();
      // Every tile near a written one: a tile without a point gets values where the fill reaches in.
      std::vector<char> is_written(static_cast<std::size_t>(layout.count()), 0);
      for (auto const index : written) { is_written[static_cast<std::size_t>(index)] = 1; }
      auto const margin = static_cast<std::uint32_t>(io::fill_margin(o.write.fill));
      std::uint32_t const kx = (margin + layout.tile_cols - 1) / layout.tile_cols;
      std::uint32_t const ky = (margin + layout.tile_rows - 1) / layout.tile_rows;
      std::vector<io::mosaic_tile> places;
      for (std::uint32_t ty = 0; ty < layout.tiles_y(); ++ty) {
        for (std::uint32_t tx = 0; tx < layout.tiles_x(); ++tx) {
          bool const own = is_written[std::uint64_t{ty} * layout.tiles_x() + tx] != 0;
          bool near = own;
          for (std::uint32_t y = ty >= ky ? ty - ky : 0; !near && y <= std::min(ty + ky, layout.tiles_y() - 1); ++y) {
            for (std::uint32_t x = tx >= kx ? tx - kx : 0; !near && x <= std::min(tx + kx, layout.tiles_x() - 1); ++x) {
              near = is_written[std::uint64_t{y} * layout.tiles_x() + x] != 0;
            }
          }
          if (!near) { continue; }
          auto const g = layout.tile(tx, ty);
          places.push_back({(dir / tile_file_name(o.name, layout, tx, ty)).string(), tx * layout.tile_cols,
                            ty * layout.tile_rows, g.cols, g.rows, own});
        }
      }
      std::vector<std::string> made;
      auto notes = io::fill_tiles(layout.grid, places, o.bands, o.write, made);
      report.warnings.insert(report.warnings.end(), notes.begin(), notes.end());
      paths.insert(paths.end(), made.begin(), made.end());
      report.tiles_filled_in = made.size();
      report.fill_s = since(fill_start);
    }
    report.vrt = (dir / (o.name + ".vrt")).string();
    auto const vrt_start = clock_type::now();
    std::vector<int> without_nodata;  // --fill's mask: 0 where no tile lies, as in one raster
    if (o.write.fill.method != io::fill_method::none) { without_nodata.push_back(static_cast<int>(o.bands.size()) + 1); }
    io::build_vrt(report.vrt, paths, without_nodata);
    report.vrt_s = since(vrt_start);
    report.plan_s = plan_s;
    report.tiles_s = tiles_s;
    report.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    return report;
  }
}

}  // namespace heightgrid::app
