#pragma once
// Catalogue files: many point cloud files named in one input, with their bounds, so that a job
// opens only those its grid needs. Read: a virtual point cloud (`.vpc`, QGIS and PDAL wrench: a
// STAC ItemCollection), a STAC Item or ItemCollection / GeoJSON FeatureCollection whose features
// have point cloud assets (`.json`), and a list of paths or URLs, one a line (`.lst`, `.list`, or
// `.txt` when its lines all name .las/.laz files or ept.json files; `#` starts a comment).
// Relative names resolve against the catalogue's own folder (or URL).

#include "heightgrid/core/grid_spec.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace heightgrid::io {

struct catalogue_entry {
  std::string path;               ///< a local path or a URL, as any input
  std::optional<bounds> extent;   ///< x/y bounds in the data's CRS (STAC proj:bbox), when given
  std::optional<std::uint64_t> points;  ///< STAC pc:count, when given
};

/// Whether `path` is a catalogue file (by its name and, for .json and text lists, its content).
[[nodiscard]] bool is_catalogue(std::string const& path);

/// The entries of a catalogue file. Throws error_kind::input naming the file for one that cannot be
/// read or holds no point cloud (an item without a .las/.laz/.copc.laz or ept.json asset, a line
/// that names no such file).
[[nodiscard]] std::vector<catalogue_entry> read_catalogue(std::string const& path);

}  // namespace heightgrid::io
