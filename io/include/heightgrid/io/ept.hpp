#pragma once
// EPT (Entwine Point Tile, entwine.io): a point cloud as an octree of files: `ept.json` (the cube
// `bounds`, `span`, `dataType`, `points`), `ept-hierarchy/D-X-Y-Z.json` (node key -> point count, -1
// for a subtree in a file of its own) and one data file a node, `ept-data/D-X-Y-Z.laz` for the
// `laszip` data type (an ordinary LAZ file), `.bin` for `binary` (the points as records laid out by
// ept.json's `schema`) and `.zst` for `zstandard` (those records zstandard-compressed). heightgrid
// reads an EPT input as the node files a job needs: those whose cube meets the grid's window, down to
// the level asked for; a LAZ node then reads as any LAZ tile, a binary or zstandard node through
// open_ept_node_source. Local folders and URLs (through GDAL's VSI layer) alike.

#include "heightgrid/core/point_source.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace heightgrid::io {

/// The nodes of an EPT dataset a job reads, and the whole hierarchy level by level (for info).
struct ept_selection {
  std::vector<std::string> files;  ///< the node data files, in key order
  region_report report;            ///< nodes and points kept of all (bytes: not known from the hierarchy)
  std::string data_type;           ///< laszip, binary or zstandard
  double side{0.0};                ///< the cube's side
  double span{0.0};
  struct level {
    int depth{0};
    double spacing{0.0};  ///< side / span / 2^depth
    std::uint64_t nodes{0}, points{0};
  };
  std::vector<level> levels;  ///< increasing depth, levels with points only
};

/// Whether `path` names an EPT dataset: a file (or URL) named `ept.json`, or a local folder holding
/// one.
[[nodiscard]] bool is_ept(std::string const& path);

/// The node files of the EPT dataset at `path` that `region` needs (its window and level, as
/// part_source::restrict_to: a node is kept when its cube, widened by a millionth of its side, meets
/// the window). Throws error_kind::input naming the file for a malformed ept.json or hierarchy file,
/// and for a data type other than laszip, binary and zstandard.
[[nodiscard]] ept_selection select_ept_nodes(std::string const& path, read_region const& region);

/// Whether `path` names a node file of a binary or zstandard EPT dataset (`.../ept-data/KEY.bin` or
/// `.zst`): open it with open_ept_node_source, not as a LAS/LAZ file.
[[nodiscard]] bool is_ept_node(std::string const& path);

/// The points of a binary or zstandard EPT node file (local or remote), by the schema, CRS (`srs`)
/// and data type of the dataset's ept.json (read once per dataset): X, Y and the dimension called
/// `dimension` ("" or "Z": Z; else a schema name, case-insensitive) with their scale and offset, and
/// Classification, ReturnNumber/NumberOfReturns and the flags (ClassFlags, or Synthetic, KeyPoint,
/// Withheld, Overlap) where the schema has them, for the filters. Throws error_kind::input naming the
/// file: an unknown type in the schema, no X/Y/Z, bytes that are not whole points, damaged
/// zstandard data, a dimension the schema lacks (listing those it has).
[[nodiscard]] std::unique_ptr<point_source> open_ept_node_source(std::string const& path,
                                                                 std::string const& dimension);

}  // namespace heightgrid::io
