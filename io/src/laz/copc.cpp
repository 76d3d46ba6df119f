#include "copc.hpp"

#include "heightgrid/core/error.hpp"
#include "las/las_internal.hpp"
#include "las/las_layout.hpp"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace heightgrid::io::laz {
namespace {

constexpr std::size_t vlr_header_bytes = 54;
constexpr std::size_t info_bytes = 160;
constexpr std::size_t entry_bytes = 32;
constexpr std::size_t max_pages = std::size_t{1} << 20;
constexpr std::size_t max_entries = std::size_t{1} << 26;
constexpr int max_level = 31;

[[noreturn]] void fail(las_header_info const& h, std::string const& what)
{
  throw error(error_kind::input, h.path + ": COPC: " + what);
}

}  // namespace

std::optional<copc_info> read_copc_info(las_header_info const& h, file_reader const& read)
{
  las_vlr_info const* vlr = nullptr;
  for (auto const& v : h.vlrs) {
    if (!v.extended && v.user_id == "copc" && v.record_id == 1) {
      vlr = &v;
      break;
    }
  }
  if (vlr == nullptr) { return std::nullopt; }
  if (vlr->length < info_bytes) {
    fail(h, "the info VLR holds " + std::to_string(vlr->length) + " bytes, fewer than its " +
              std::to_string(info_bytes));
  }
  std::uint8_t raw[info_bytes];
  read(vlr->offset + vlr_header_bytes, info_bytes, raw);
  copc_info info;
  for (int a = 0; a < 3; ++a) { info.center[a] = las_layout::load<double>(raw + 8 * a); }
  info.halfsize = las_layout::load<double>(raw + 24);
  info.spacing = las_layout::load<double>(raw + 32);
  info.root_page_offset = las_layout::load<std::uint64_t>(raw + 40);
  info.root_page_bytes = las_layout::load<std::uint64_t>(raw + 48);
  bool const finite = std::isfinite(info.center[0]) && std::isfinite(info.center[1]) &&
                      std::isfinite(info.center[2]) && std::isfinite(info.halfsize) && std::isfinite(info.spacing);
  if (!finite || !(info.halfsize > 0.0) || !(info.spacing > 0.0)) {
    fail(h, "the info VLR's cube (halfsize " + std::to_string(info.halfsize) + ") or spacing (" +
              std::to_string(info.spacing) + ") is not a positive finite number");
  }
  if (info.root_page_offset > h.file_size || info.root_page_bytes > h.file_size - info.root_page_offset) {
    fail(h, "the root hierarchy page (bytes " + std::to_string(info.root_page_offset) + " + " +
              std::to_string(info.root_page_bytes) + ") lies past the end of the file (" +
              std::to_string(h.file_size) + " bytes)");
  }
  return info;
}

std::vector<copc_node> read_copc_hierarchy(las_header_info const& h, copc_info const& info, file_reader const& read)
{
  std::vector<copc_node> nodes;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> todo{{info.root_page_offset, info.root_page_bytes}};
  std::set<std::uint64_t> seen;
  std::vector<std::uint8_t> page;
  std::size_t entries = 0;
  while (!todo.empty()) {
    auto const [at, size] = todo.back();
    todo.pop_back();
    std::string const where = "the hierarchy page at byte " + std::to_string(at);
    if (!seen.insert(at).second) { fail(h, where + " is referenced twice"); }
    if (seen.size() > max_pages) { fail(h, "more than " + std::to_string(max_pages) + " hierarchy pages"); }
    if (at > h.file_size || size > h.file_size - at) {
      fail(h, where + " (" + std::to_string(size) + " bytes) runs past the end of the file");
    }
    if (size % entry_bytes != 0) {
      fail(h, where + " holds " + std::to_string(size) + " bytes, not a whole number of 32-byte entries");
    }
    entries += size / entry_bytes;
    if (entries > max_entries) { fail(h, "more than " + std::to_string(max_entries) + " hierarchy entries"); }
    page.resize(size);
    if (size > 0) { read(at, size, page.data()); }
    for (std::size_t e = 0; e < size / entry_bytes; ++e) {
      std::uint8_t const* p = page.data() + e * entry_bytes;
      copc_node n;
      n.level = las_layout::load<std::int32_t>(p);
      n.x = las_layout::load<std::int32_t>(p + 4);
      n.y = las_layout::load<std::int32_t>(p + 8);
      n.z = las_layout::load<std::int32_t>(p + 12);
      auto const offset = las_layout::load<std::uint64_t>(p + 16);
      auto const bytes = las_layout::load<std::int32_t>(p + 24);
      auto const points = las_layout::load<std::int32_t>(p + 28);
      std::string const entry = where + ", entry " + std::to_string(e) + " (node " + std::to_string(n.level) + "-" +
                                std::to_string(n.x) + "-" + std::to_string(n.y) + "-" + std::to_string(n.z) + ")";
      std::int64_t const cells = n.level >= 0 && n.level <= max_level ? std::int64_t{1} << n.level : 0;
      if (cells == 0 || n.x < 0 || n.y < 0 || n.z < 0 || n.x >= cells || n.y >= cells || n.z >= cells) {
        fail(h, entry + ": the key lies outside its level (levels 0-" + std::to_string(max_level) + ")");
      }
      if (bytes < 0 || offset > h.file_size || static_cast<std::uint64_t>(bytes) > h.file_size - offset) {
        fail(h, entry + ": " + std::to_string(bytes) + " bytes at " + std::to_string(offset) +
                  " lie outside the file");
      }
      if (points == -1) {
        todo.emplace_back(offset, static_cast<std::uint64_t>(bytes));  // a child page
      } else if (points < -1) {
        fail(h, entry + ": a point count of " + std::to_string(points));
      } else if (points > 0) {
        n.offset = offset;
        n.bytes = static_cast<std::uint64_t>(bytes);
        n.points = static_cast<std::uint64_t>(points);
        nodes.push_back(n);
      }
    }
  }
  return nodes;
}

bounds copc_node_bounds(copc_info const& info, copc_node const& node) noexcept
{
  double const side = 2.0 * info.halfsize / std::ldexp(1.0, node.level);
  bounds b;
  b.xmin = info.center[0] - info.halfsize + side * node.x;
  b.ymin = info.center[1] - info.halfsize + side * node.y;
  b.xmax = b.xmin + side;
  b.ymax = b.ymin + side;
  return b;
}

int copc_auto_level(copc_info const& info, double cell, int shallowest, int deepest) noexcept
{
  for (int level = 0; level < deepest; ++level) {
    if (info.spacing / std::ldexp(1.0, level) <= cell) { return level > shallowest ? level : shallowest; }
  }
  return deepest;
}

}  // namespace heightgrid::io::laz

namespace heightgrid::io {

std::optional<copc_summary> read_copc_summary(std::string const& path)
{
  detail::las_file const file(path);
  las_header_info const h = read_las_header(path);
  laz::file_reader const read = [&file](std::uint64_t offset, std::size_t count, std::uint8_t* bytes) {
    file.read_exact(offset, count, bytes);
  };
  std::optional<laz::copc_info> const info = laz::read_copc_info(h, read);
  if (!info) { return std::nullopt; }
  copc_summary s;
  for (int a = 0; a < 3; ++a) { s.center[a] = info->center[a]; }
  s.halfsize = info->halfsize;
  s.spacing = info->spacing;
  std::map<int, copc_summary::level> levels;
  for (auto const& n : laz::read_copc_hierarchy(h, *info, read)) {
    auto& l = levels[n.level];
    l.depth = n.level;
    l.spacing = info->spacing / std::ldexp(1.0, n.level);
    l.nodes += 1;
    l.points += n.points;
    l.bytes += n.bytes;
  }
  for (auto const& [depth, l] : levels) { s.levels.push_back(l); }
  return s;
}

}  // namespace heightgrid::io
