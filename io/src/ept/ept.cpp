#include "heightgrid/io/ept.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"
#include "heightgrid/io/remote.hpp"

#include <cpl_json.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace heightgrid::io {
namespace {

using key = std::array<std::int64_t, 4>;  // depth, x, y, z

std::string key_name(key const& k)
{
  return std::to_string(k[0]) + "-" + std::to_string(k[1]) + "-" + std::to_string(k[2]) + "-" + std::to_string(k[3]);
}

/// "D-X-Y-Z" -> key; false for anything else.
bool parse_key(std::string const& s, key& k)
{
  std::istringstream in(s);
  char d1 = 0, d2 = 0, d3 = 0;
  if (!(in >> k[0] >> d1 >> k[1] >> d2 >> k[2] >> d3 >> k[3]) || d1 != '-' || d2 != '-' || d3 != '-') { return false; }
  if (in.peek() != std::char_traits<char>::eof()) { return false; }
  if (k[0] < 0 || k[0] > 62) { return false; }
  std::int64_t const cells = std::int64_t{1} << k[0];
  return k[1] >= 0 && k[2] >= 0 && k[3] >= 0 && k[1] < cells && k[2] < cells && k[3] < cells;
}

/// Loads a JSON file (a local path or a /vsi path); throws naming `shown` when it cannot.
CPLJSONObject load(std::string const& gdal_path, std::string const& shown)
{
  CPLJSONDocument doc;
  gdal_error_scope scope;
  if (!doc.Load(gdal_path)) { throw error(error_kind::input, shown + ": cannot read it as JSON: " + scope.message()); }
  return doc.GetRoot();
}

}  // namespace

bool is_ept(std::string const& path)
{
  std::string const p = path.substr(0, path.find_first_of("?#"));
  auto const slash = p.find_last_of('/');
  std::string const name = slash == std::string::npos ? p : p.substr(slash + 1);
  if (name == "ept.json") { return true; }
  if (is_remote(path)) { return false; }
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::is_regular_file(std::filesystem::path(path) / "ept.json", ec);
}

ept_selection select_ept_nodes(std::string const& path, read_region const& region)
{
  // The dataset's folder, as given (for messages and the node files' names) and for GDAL.
  std::string base = path;
  if (base.size() >= 8 && base.compare(base.size() - 8, 8, "ept.json") == 0) { base.resize(base.size() - 8); }
  while (base.size() > 1 && base.back() == '/') { base.pop_back(); }
  std::string const gdal_base = remote_path(base).value_or(base);
  std::string const shown_json = base + "/ept.json";
  CPLJSONObject const root = load(gdal_base + "/ept.json", shown_json);
  std::string const type = root.GetString("dataType", "");
  // Node files: ept-data/D-X-Y-Z.laz (laszip), .bin (binary records by the schema), .zst (those
  // records zstandard-compressed).
  std::string const extension = type == "laszip" ? ".laz" : type == "binary" ? ".bin" : type == "zstandard" ? ".zst" : "";
  if (extension.empty()) {
    throw error(error_kind::input, shown_json + ": dataType '" + type + "' is not laszip, binary or zstandard");
  }
  CPLJSONArray const b = root.GetArray("bounds");
  if (!b.IsValid() || b.Size() != 6) { throw error(error_kind::input, shown_json + ": 'bounds' is not 6 numbers"); }
  double const xmin = b[0].ToDouble(NAN), ymin = b[1].ToDouble(NAN), xmax = b[3].ToDouble(NAN);
  double const side0 = xmax - xmin;
  double const span = root.GetDouble("span", NAN);
  if (!std::isfinite(xmin) || !std::isfinite(ymin) || !(side0 > 0.0) || !std::isfinite(side0) || !(span > 0.0)) {
    throw error(error_kind::input, shown_json + ": 'bounds' or 'span' is not a positive finite cube and span");
  }
  // The hierarchy: from 0-0-0-0.json, following counts of -1 into their own files.
  std::map<key, std::uint64_t> nodes;
  std::vector<key> todo{{0, 0, 0, 0}};
  std::set<key> loaded;
  while (!todo.empty()) {
    key const at = todo.back();
    todo.pop_back();
    if (!loaded.insert(at).second || loaded.size() > (std::size_t{1} << 20)) {
      throw error(error_kind::input, base + "/ept-hierarchy: " + key_name(at) + ".json is referenced twice, or too many files");
    }
    std::string const name = "/ept-hierarchy/" + key_name(at) + ".json";
    CPLJSONObject const page = load(gdal_base + name, base + name);
    if (page.GetType() != CPLJSONObject::Type::Object) {
      throw error(error_kind::input, base + name + ": not a JSON object of node keys and point counts");
    }
    for (auto const& entry : page.GetChildren()) {
      key k{};
      auto const count = entry.ToLong(std::numeric_limits<GInt64>::min());
      if (!parse_key(entry.GetName(), k) || count < -1) {
        throw error(error_kind::input, base + name + ": entry '" + entry.GetName() + "' is not a node key with a count");
      }
      if (count == -1) {
        if (k != at) { todo.push_back(k); }
      } else if (count > 0) {
        nodes[k] = static_cast<std::uint64_t>(count);
      }
    }
  }
  ept_selection out;
  out.side = side0;
  out.span = span;
  out.data_type = type;
  for (auto const& [k, points] : nodes) {
    if (out.levels.empty() || out.levels.back().depth != static_cast<int>(k[0])) {
      out.levels.push_back({static_cast<int>(k[0]), side0 / span / std::ldexp(1.0, static_cast<int>(k[0])), 0, 0});
    }
    out.levels.back().nodes += 1;
    out.levels.back().points += points;
  }
  region_report& r = out.report;
  r.sources = 1;
  for (auto const& [k, points] : nodes) { r.deepest = std::max(r.deepest, static_cast<int>(k[0])); }
  int shallowest = std::numeric_limits<int>::max();
  for (auto const& [k, points] : nodes) { shallowest = std::min(shallowest, static_cast<int>(k[0])); }
  int max_level = region.max_level.value_or(std::numeric_limits<int>::max());
  if (region.auto_level_cell > 0.0) {
    // The first level fine enough for the cell, but not above the first level that has points.
    max_level = std::max(r.deepest, 0);
    for (int level = 0; level < r.deepest; ++level) {
      if (side0 / span / std::ldexp(1.0, level) <= region.auto_level_cell) {
        max_level = std::max(level, shallowest);
        break;
      }
    }
  }
  for (auto const& [k, points] : nodes) {
    r.nodes += 1;
    r.points += points;
    bool keep = k[0] <= max_level;
    if (keep && region.window) {
      double const side = side0 / std::ldexp(1.0, static_cast<int>(k[0]));
      double const x0 = xmin + side * static_cast<double>(k[1]), y0 = ymin + side * static_cast<double>(k[2]);
      double const pad = side * 1e-6;
      keep = x0 - pad <= region.window->xmax && x0 + side + pad >= region.window->xmin &&
             y0 - pad <= region.window->ymax && y0 + side + pad >= region.window->ymin;
    }
    if (!keep) { continue; }
    r.nodes_read += 1;
    r.points_read += points;
    r.deepest_read = std::max(r.deepest_read, static_cast<int>(k[0]));
    out.files.push_back(base + "/ept-data/" + key_name(k) + extension);
  }
  return out;
}

}  // namespace heightgrid::io
