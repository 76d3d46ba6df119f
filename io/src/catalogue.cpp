#include "heightgrid/io/catalogue.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"
#include "heightgrid/io/remote.hpp"

#include <cpl_error.h>
#include <cpl_json.h>
#include <cpl_vsi.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace heightgrid::io {
namespace {

std::string lower(std::string s)
{
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool ends_with(std::string const& s, std::string const& tail)
{
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// A name a catalogue may list: a LAS/LAZ file (COPC included) or an EPT dataset.
bool names_point_cloud(std::string const& path)
{
  std::string const ext = remote_extension(path);
  std::string const p = lower(path.substr(0, path.find_first_of("?#")));
  return ext == ".las" || ext == ".laz" || ends_with(p, "/ept.json") || p == "ept.json";
}

constexpr std::size_t max_catalogue_bytes = std::size_t{256} << 20;

/// The file's first `limit` bytes (local, or through GDAL's VSI layer for a URL); a catalogue larger
/// than 256 MiB is refused.
std::string slurp(std::string const& path, std::size_t limit = max_catalogue_bytes)
{
  std::string const gdal = remote_path(path).value_or(path);
  CPLErrorReset();
  VSILFILE* f = VSIFOpenL(gdal.c_str(), "rb");
  if (f == nullptr) {
    // GDAL gives no reason for a missing file, local or remote (404).
    std::string const why = CPLGetLastErrorType() >= CE_Failure ? gdal_last_error() : "not found or not reachable";
    throw error(error_kind::input, path + ": cannot open the catalogue: " + why);
  }
  // The size first: a remote read cut short (a reset connection) ends as the file's end would.
  bool const sized = VSIFSeekL(f, 0, SEEK_END) == 0;
  vsi_l_offset const size = sized ? VSIFTellL(f) : 0;
  std::string out;
  char buffer[65536];
  CPLErrorReset();
  bool const rewound = VSIFSeekL(f, 0, SEEK_SET) == 0;
  while (rewound) {
    std::size_t const n = VSIFReadL(buffer, 1, sizeof buffer, f);
    out.append(buffer, n);
    if (n < sizeof buffer || out.size() >= limit) { break; }
  }
  VSIFCloseL(f);
  if (!rewound || (sized && out.size() < size && out.size() < limit)) {
    throw error(error_kind::input,
                path + ": byte " + std::to_string(out.size()) + ": read failed: " + remote_read_failure());
  }
  if (limit == max_catalogue_bytes && out.size() >= limit) {
    throw error(error_kind::input, path + ": a catalogue of more than 256 MiB is not read");
  }
  return out;
}

/// The folder (or URL prefix) relative names resolve against, with its trailing '/'.
std::string base_of(std::string const& path)
{
  std::string const p = path.substr(0, path.find_first_of("?#"));
  auto const slash = p.find_last_of('/');
  return slash == std::string::npos ? std::string() : p.substr(0, slash + 1);
}

std::string resolve(std::string const& base, std::string href)
{
  if (href.rfind("./", 0) == 0) { href = href.substr(2); }
  if (is_remote(href) || (!href.empty() && href.front() == '/')) { return href; }
  return base + href;
}

bool stac_like(CPLJSONObject const& root)
{
  std::string const type = root.GetString("type", "");
  if (type == "Feature") { return root.GetObj("assets").IsValid(); }
  if (type != "FeatureCollection") { return false; }
  CPLJSONArray const features = root.GetArray("features");
  return features.IsValid() && features.Size() > 0 && features[0].GetObj("assets").IsValid();
}

/// Every line that is not blank or a comment names a point cloud (the last line of a sample cut
/// short is not looked at).
bool is_list(std::string const& text, bool sample)
{
  std::istringstream in(text);
  std::string line;
  bool any = false;
  while (std::getline(in, line)) {
    if (sample && in.eof()) { break; }
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line.front() == '#') { continue; }
    if (!names_point_cloud(line)) { return false; }
    any = true;
  }
  return any;
}

void add_feature(CPLJSONObject const& item, std::string const& base, std::string const& path, std::size_t index,
                 std::vector<catalogue_entry>& out)
{
  catalogue_entry e;
  CPLJSONObject const assets = item.GetObj("assets");
  for (auto const& a : assets.GetChildren()) {
    std::string const href = a.GetString("href", "");
    std::string const media = lower(a.GetString("type", ""));
    if (names_point_cloud(href) || media.find("laszip") != std::string::npos || media.find("copc") != std::string::npos) {
      e.path = resolve(base, href);
      break;
    }
  }
  if (e.path.empty()) {
    throw error(error_kind::input, path + ": item " + std::to_string(index) + " ('" + item.GetString("id", "") +
                                     "') has no .las/.laz/.copc.laz or ept.json asset");
  }
  CPLJSONObject const props = item.GetObj("properties");
  CPLJSONArray const box = props.GetArray("proj:bbox");
  if (box.IsValid() && (box.Size() == 4 || box.Size() == 6)) {
    int const n = box.Size() / 2;  // [xmin, ymin, (zmin,) xmax, ymax, (zmax)]
    bounds b;
    b.xmin = box[0].ToDouble(NAN);
    b.ymin = box[1].ToDouble(NAN);
    b.xmax = box[n].ToDouble(NAN);
    b.ymax = box[n + 1].ToDouble(NAN);
    if (std::isfinite(b.xmin) && std::isfinite(b.ymin) && std::isfinite(b.xmax) && std::isfinite(b.ymax) && !b.empty()) {
      e.extent = b;
    }
  }
  auto const count = props.GetLong("pc:count", -1);
  if (count >= 0) { e.points = static_cast<std::uint64_t>(count); }
  out.push_back(std::move(e));
}

}  // namespace

bool is_catalogue(std::string const& path)
{
  std::string const ext = remote_extension(path);
  if (ext == ".vpc") { return true; }
  if (ext == ".json") {
    std::string const p = lower(path.substr(0, path.find_first_of("?#")));
    if (ends_with(p, "ept.json")) { return false; }
    CPLJSONDocument doc;
    gdal_error_scope quiet;
    return doc.Load(remote_path(path).value_or(path)) && stac_like(doc.GetRoot());
  }
  if (ext == ".lst" || ext == ".list") { return true; }
  if (ext == ".txt") {
    try {
      return is_list(slurp(path, 65536), true);  // a sample: XYZ text fails on its first line
    } catch (error const&) {
      return false;  // not readable: let the readers say why
    }
  }
  return false;
}

std::vector<catalogue_entry> read_catalogue(std::string const& path)
{
  std::string const base = base_of(path);
  std::string const text = slurp(path);
  std::vector<catalogue_entry> out;
  std::string const ext = remote_extension(path);
  if (ext == ".lst" || ext == ".list" || ext == ".txt") {
    std::istringstream in(text);
    std::string line;
    std::size_t number = 0;
    while (std::getline(in, line)) {
      ++number;
      line.erase(0, line.find_first_not_of(" \t\r"));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (line.empty() || line.front() == '#') { continue; }
      if (!names_point_cloud(line)) {
        throw error(error_kind::input, path + ": line " + std::to_string(number) + " ('" + line +
                                         "') names no .las/.laz file or ept.json");
      }
      out.push_back({resolve(base, line), std::nullopt, std::nullopt});
    }
  } else {
    CPLJSONDocument doc;
    gdal_error_scope scope;
    if (!doc.LoadMemory(text)) { throw error(error_kind::input, path + ": not JSON: " + scope.message()); }
    CPLJSONObject const root = doc.GetRoot();
    if (!stac_like(root)) {
      throw error(error_kind::input, path + ": not a STAC Item or ItemCollection with point cloud assets");
    }
    if (root.GetString("type", "") == "Feature") {
      add_feature(root, base, path, 0, out);
    } else {
      CPLJSONArray const features = root.GetArray("features");
      for (int i = 0; i < features.Size(); ++i) { add_feature(features[i], base, path, static_cast<std::size_t>(i), out); }
    }
  }
  if (out.empty()) { throw error(error_kind::input, path + ": the catalogue names no point cloud"); }
  return out;
}

}  // namespace heightgrid::io
