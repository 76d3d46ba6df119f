#include "inputs.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/quote.hpp"
#include "heightgrid/io/catalogue.hpp"
#include "heightgrid/io/ept.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "heightgrid/io/raster_source.hpp"
#include "heightgrid/io/remote.hpp"
#include "heightgrid/io/text_source.hpp"
#include "heightgrid/io/vector_source.hpp"

#include <cpl_error.h>
#include <gdal_priv.h>
#include <glob.h>
#include <spdlog/spdlog.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>
#include <utility>

namespace heightgrid::app {
namespace fs = std::filesystem;

std::string lower_extension(std::string const& path)
{
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

namespace {

bool has_las_signature(std::string const& path)
{
  std::ifstream in(path, std::ios::binary);
  std::array<char, 4> magic{};
  return in.read(magic.data(), magic.size()) && std::string(magic.data(), 4) == "LASF";
}

bool is_text_extension(std::string const& ext)
{
  return ext == ".xyz" || ext == ".txt" || ext == ".csv" || ext == ".pts";
}

/// Which GDAL side opens the file, probed quietly (a failed probe is not an error yet).
/// `why` gets GDAL's own reason when no driver opens the file (a corrupt TIFF says what is
/// corrupt).
input_format probe_gdal(std::string const& path, std::string& why)
{
  CPLPushErrorHandler(CPLQuietErrorHandler);
  CPLErrorReset();
  input_format found = input_format::automatic;
  GDALDatasetUniquePtr ds{GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY)};
  if (!ds && CPLGetLastErrorType() >= CE_Failure) { why = CPLGetLastErrorMsg(); }
  if (ds && ds->GetRasterCount() > 0) {
    found = input_format::raster;
  } else if (GDALDatasetUniquePtr vs{GDALDataset::Open(path.c_str(), GDAL_OF_VECTOR | GDAL_OF_READONLY)};
             vs && vs->GetLayerCount() > 0) {
    found = input_format::vector;
  }
  CPLPopErrorHandler();
  return found;
}

/// "a FIFO", "a character device", ...: what a non-regular file is, for a message.
std::string file_kind(mode_t mode)
{
  if (S_ISFIFO(mode)) { return "a FIFO (named pipe)"; }
  if (S_ISCHR(mode)) { return "a character device"; }
  if (S_ISBLK(mode)) { return "a block device"; }
  if (S_ISSOCK(mode)) { return "a socket"; }
  if (S_ISDIR(mode)) { return "a directory"; }
  return "not a regular file";
}

/// Only regular files are read: opening a FIFO blocks until a writer comes, a device never
/// ends, and every reader needs to know the size or read twice. Checked with stat(), which opens
/// nothing, so a FIFO is refused at once.
void check_regular_file(std::string const& path)
{
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int const err = errno;
    throw error(error_kind::input, path + ": cannot read: " + std::generic_category().message(err));
  }
  HG_EXPECTS(S_ISREG(st.st_mode), error_kind::input,
          path + ": is " + file_kind(st.st_mode) + ", not a regular file; heightgrid reads only regular files");
}

/// The same file named twice (directly, through a glob or a directory, or a link) would be counted
/// twice: keep its first mention and warn.
std::vector<std::string> without_repeats(std::vector<std::string> const& paths)
{
  std::vector<std::string> out;
  // (device, inode) -> the path kept for it: a catalogue of 10^5 tiles is checked in n log n.
  std::map<std::pair<dev_t, ino_t>, std::size_t> seen;
  for (auto const& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      auto const [it, fresh] = seen.try_emplace(std::pair<dev_t, ino_t>{st.st_dev, st.st_ino}, out.size());
      if (!fresh) {
        spdlog::warn("{}: the same file as {} given again; it is read once", p, out[it->second]);
        continue;
      }
    }
    out.push_back(p);
  }
  return out;
}

/// 2^50 (10^15) points: days of generation at any speed, and far below where counts, sizes and
/// offsets derived from it would overflow 64 bits.
constexpr std::uint64_t max_synth_points = std::uint64_t{1} << 50;

void check_synth_points(std::uint64_t points)
{
  HG_EXPECTS(points <= max_synth_points, error_kind::usage,
          "--points: " + std::to_string(points) + " is more than the " + std::to_string(max_synth_points) +
            " points a synthetic cloud may have");
}

}  // namespace

bool looks_like_las(std::string const& path)
{
  auto const ext = lower_extension(path);
  return ext == ".las" || ext == ".laz" || has_las_signature(path);
}

std::optional<input_format> parse_input_format(std::string const& name)
{
  if (name == "auto") { return input_format::automatic; }
  if (name == "las") { return input_format::las; }
  if (name == "text" || name == "xyz" || name == "csv") { return input_format::text; }
  if (name == "raster") { return input_format::raster; }
  if (name == "vector") { return input_format::vector; }
  return std::nullopt;
}

namespace {

bool meets(bounds const& a, bounds const& b)
{
  return a.xmin <= b.xmax && a.xmax >= b.xmin && a.ymin <= b.ymax && a.ymax >= b.ymin;
}

/// An EPT dataset's node files that `region` needs, appended to `out`.
void add_ept(std::string const& path, read_region const& region, std::vector<std::string>& out)
{
  io::ept_selection const ept = io::select_ept_nodes(path, region);
  auto const& r = ept.report;
  spdlog::debug("EPT {}: {} of {} nodes read (levels 0-{} of 0-{}), {} of {} points", path, r.nodes_read, r.nodes,
                r.deepest_read, r.deepest, r.points_read, r.points);
  HG_EXPECTS(r.nodes > 0, error_kind::input, path + ": the EPT hierarchy lists no points");
  out.insert(out.end(), ept.files.begin(), ept.files.end());
}

}  // namespace

std::vector<std::string> expand_inputs(std::vector<std::string> const& args, read_region const& region)
{
  std::vector<std::string> out;
  for (auto const& arg : args) {
    std::error_code ec;
    if (io::is_ept(arg)) {
      add_ept(arg, region, out);
      continue;
    }
    if (io::is_catalogue(arg)) {
      // Entries whose catalogued bounds miss the window are never opened.
      auto const entries = io::read_catalogue(arg);
      std::size_t kept = 0;
      for (auto const& e : entries) {
        if (region.window && e.extent && !meets(*e.extent, *region.window)) { continue; }
        ++kept;
        if (io::is_ept(e.path)) {
          add_ept(e.path, region, out);
        } else {
          out.push_back(e.path);
        }
      }
      spdlog::debug("catalogue {}: {} of {} entries read{}", arg, kept, entries.size(),
                    region.window ? " (those whose bounds meet the window)" : "");
      continue;
    }
    if (io::is_remote(arg)) {
      out.push_back(arg);  // a URL or GDAL path: no listing, no glob; opening it says whether it is there
      continue;
    }
    if (fs::is_directory(arg, ec)) {
      std::vector<std::string> found;
      for (auto const& entry : fs::directory_iterator(arg, ec)) {
        auto const ext = lower_extension(entry.path().string());
        if (entry.is_regular_file() && (ext == ".las" || ext == ".laz")) { found.push_back(entry.path().string()); }
      }
      HG_EXPECTS(!ec, error_kind::input, arg + ": cannot list directory: " + ec.message());
      HG_EXPECTS(!found.empty(), error_kind::input, arg + ": directory holds no .las or .laz files");
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(arg, ec)) {
      out.push_back(arg);
    } else if (arg.find_first_of("*?[") != std::string::npos) {
      glob_t g{};
      int const rc = ::glob(arg.c_str(), 0, nullptr, &g);
      std::vector<std::string> found;
      for (std::size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) { found.emplace_back(g.gl_pathv[i]); }
      ::globfree(&g);
      HG_EXPECTS(!found.empty(), error_kind::input, arg + ": pattern matches no file");
      out.insert(out.end(), found.begin(), found.end());  // glob() sorts
    } else {
      throw error(error_kind::input, arg + ": no such file or directory");
    }
  }
  for (auto const& p : out) {
    if (!io::is_remote(p)) { check_regular_file(p); }
  }
  return without_repeats(out);
}

input_format resolve_input_format(std::string const& path, input_format requested)
{
  if (io::is_remote(path)) {
    // Read through GDAL's VSI layer: LAS/LAZ (COPC) by their extension, anything else GDAL opens
    // by its /vsi path (rasters, vectors).
    std::string const ext = io::remote_extension(path);
    if (requested == input_format::las || (requested == input_format::automatic && (ext == ".las" || ext == ".laz"))) {
      return input_format::las;
    }
    HG_EXPECTS(requested != input_format::text, error_kind::usage,
               path + ": text inputs are read from local files only");
    if (requested != input_format::automatic) { return requested; }
    std::string why;
    auto const format = probe_gdal(*io::remote_path(path), why);
    HG_EXPECTS(format != input_format::automatic, error_kind::input,
               path + ": not a LAS/LAZ URL (.las, .laz) and GDAL cannot open it as a raster or vector: " + why);
    return format;
  }
  std::error_code ec;
  HG_EXPECTS(!fs::is_directory(path, ec), error_kind::input, path + ": is a directory");
  check_regular_file(path);
  {
    // A plain open, not a stream: thousands of tiles are probed at once on every core, and a
    // stream's locale and buffer cost more than the open itself.
    int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    HG_EXPECTS(fd >= 0, error_kind::input, path + ": cannot open for reading");
    ::close(fd);
  }
  if (requested != input_format::automatic) { return requested; }
  auto const ext = lower_extension(path);
  if (looks_like_las(path)) { return input_format::las; }
  if (is_text_extension(ext)) { return input_format::text; }
  std::string why;
  auto const format = probe_gdal(path, why);
  HG_EXPECTS(format != input_format::automatic, error_kind::input,
          path + ": unknown format (not LAS, not XYZ/CSV text by extension, and GDAL opens it "
                 "neither as a raster nor as a vector layer" +
            (why.empty() ? std::string() : "; GDAL: " + quote_for_message(why, 200)) +
            "); use --input-format to force one");
  return format;
}

std::unique_ptr<point_source> open_input(std::string const& path, input_options const& options)
{
  if (io::is_ept_node(path)) { return io::open_ept_node_source(path, options.dimension); }
  io::las_read_options las;
  las.chunk_points = options.chunk_points;
  switch (resolve_input_format(path, options.format)) {
    case input_format::las: return io::open_las_source(path, las);
    case input_format::text: return io::open_text_source(path);
    case input_format::raster: return io::open_raster_source(path, options.band);
    case input_format::vector: return io::open_vector_source(path, options.layer, options.z_field);
    case input_format::automatic: break;
  }
  throw error(error_kind::internal, path + ": no reader chosen");
}

synth_kind parse_synth_kind_option(std::string const& name, std::string const& option)
{
  auto const kind = parse_synth_kind(name);
  HG_EXPECTS(kind.has_value(), error_kind::usage,
          option + ": unknown synthetic kind '" + name + "' (expected one of " + synth_kind_list() + ")");
  return *kind;
}

synth_options make_synth_options(synth_kind kind, synth_params const& p, std::optional<double> cell_size_hint,
                                  std::string const& extent_option)
{
  synth_options s;
  s.kind = kind;
  s.seed = p.seed;
  s.zipf_s = p.zipf_s;
  s.hotspots = p.hotspots;
  s.cell_size = p.cell_size ? *p.cell_size : cell_size_hint ? *cell_size_hint : 1.0;
  HG_EXPECTS(std::isfinite(s.cell_size) && s.cell_size > 0.0, error_kind::usage,
          "--cell-size: " + std::to_string(s.cell_size) + " is not a positive cell size");
  bool const has_extent = !p.extent.empty();
  HG_EXPECTS(!(has_extent && p.density && p.points), error_kind::usage,
          "--points, " + extent_option + " and --density: give at most two (any two give the third)");
  if (has_extent) {
    HG_EXPECTS(p.extent.size() == 4, error_kind::usage, extent_option + " takes XMIN YMIN XMAX YMAX");
    s.xmin = p.extent[0];
    s.ymin = p.extent[1];
    s.xmax = p.extent[2];
    s.ymax = p.extent[3];
    HG_EXPECTS(std::isfinite(s.xmin) && std::isfinite(s.ymin) && std::isfinite(s.xmax) && std::isfinite(s.ymax) &&
              s.xmin < s.xmax && s.ymin < s.ymax,
            error_kind::usage, extent_option + ": the extent must be finite with XMIN < XMAX and YMIN < YMAX");
    if (p.density) {
      HG_EXPECTS(std::isfinite(*p.density) && *p.density > 0.0, error_kind::usage,
              "--density: " + std::to_string(*p.density) + " is not a positive number of points per square unit");
      double const n = std::round(*p.density * (s.xmax - s.xmin) * (s.ymax - s.ymin));
      HG_EXPECTS(n < 0x1.0p62, error_kind::usage, "--density: too many points for " + extent_option);
      s.points = static_cast<std::uint64_t>(n);
    } else {
      s.points = p.points.value_or(1000000);
    }
    check_synth_points(s.points);
  } else {
    s.points = p.points.value_or(1000000);
    check_synth_points(s.points);
    set_extent_from_density(s, p.density.value_or(default_points_per_cell(kind) / (s.cell_size * s.cell_size)));
  }
  return s;
}

}  // namespace heightgrid::app
