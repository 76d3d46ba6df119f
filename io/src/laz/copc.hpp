#pragma once
// COPC (Cloud Optimized Point Cloud, copc.io, version 1.0): a LAZ 1.4 file whose variable-size
// chunks are the nodes of an octree. The `copc` info VLR (record 1) gives the root cube and the
// root's point spacing; the hierarchy (the `copc` EVLR, record 1000, pages of 32-byte entries)
// gives each node's key (level, x, y, z), its chunk's offset and size and its point count, or (a
// point count of -1) a child page. A node of level L is a cube of side 2 * halfsize / 2^L and its
// points lie in it; its spacing is the root's / 2^L. Readers use this to read only the nodes that
// meet a window, or only the levels coarse enough for a cell size.

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "laz_source.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace heightgrid::io::laz {

/// The `copc` info VLR.
struct copc_info {
  double center[3]{0.0, 0.0, 0.0};
  double halfsize{0.0};
  double spacing{0.0};  ///< the root node's point spacing
  std::uint64_t root_page_offset{0};
  std::uint64_t root_page_bytes{0};
};

/// One node with points: its octree key and its chunk.
struct copc_node {
  std::int32_t level{0}, x{0}, y{0}, z{0};
  std::uint64_t offset{0};  ///< the chunk's first byte
  std::uint64_t bytes{0};
  std::uint64_t points{0};
};

/// The info VLR of a COPC file, or nothing when the header has none (not COPC). Throws
/// error_kind::input naming the file when the record is too short, or its cube or hierarchy
/// location is impossible.
[[nodiscard]] std::optional<copc_info> read_copc_info(las_header_info const& header, file_reader const& read);

/// Every node with points, from the root page down (child pages followed; at most 2^20 pages and
/// 2^26 entries, depth below 32). Throws error_kind::input naming the file and the page or entry
/// that is malformed (a page past the end of the file or not a whole number of entries, a page
/// visited twice, a node whose chunk lies outside the file, a key outside its level).
[[nodiscard]] std::vector<copc_node> read_copc_hierarchy(las_header_info const& header, copc_info const& info,
                                                         file_reader const& read);

/// The x/y bounds of a node's cube.
[[nodiscard]] bounds copc_node_bounds(copc_info const& info, copc_node const& node) noexcept;

/// The level --copc-level auto reads down to for cells of `cell` units: the first whose spacing
/// (the root's / 2^level) is at most the cell, or `deepest` when none above it is; never above
/// `shallowest`, the first level with points.
[[nodiscard]] int copc_auto_level(copc_info const& info, double cell, int shallowest, int deepest) noexcept;

}  // namespace heightgrid::io::laz
