#pragma once
// Binary and zstandard EPT datasets for the tests, written from a laszip one: the same ept.json with
// another dataType (X, Y or Z without a scale become float64, which holds a LAZ node's coordinate
// exactly), the same hierarchy, and each node's points as records by the schema, every dimension
// read from the LAZ node by its name (--dimension's reader), zero where LAS has no such dimension.

#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "heightgrid/io/las_reader.hpp"

#include <cpl_json.h>
#include <zstd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace heightgrid::test {

/// Every value of `dimension` ("" : the coordinates x, y, z) in the LAS/LAZ file `path`, in file
/// order, unfiltered; empty when the file has no such dimension.
inline std::vector<double> las_values(std::string const& path, std::string const& dimension, int axis = 2)
{
  std::unique_ptr<part_source> parts;
  try {
    parts = io::open_las_parts(path, std::size_t{1} << 16, dimension);
  } catch (std::exception const&) {
    return {};
  }
  filter_rules const keep(filter_options::keep_all());
  std::vector<double> memory(3 * parts->max_part_points());
  point_batch batch;
  batch.data = memory.data();
  batch.capacity = parts->max_part_points();
  std::vector<double> out;
  for (std::uint64_t k = 0; k < parts->part_count().value_or(0); ++k) {
    parts->read_part(k, keep, batch);
    for (std::size_t i = 0; i < batch.size; ++i) {
      out.push_back(axis == 0 ? batch.x_at(i) : axis == 1 ? batch.y_at(i) : batch.z_at(i));
    }
  }
  return out;
}

template <typename T>
void put(std::vector<unsigned char>& out, T v)
{
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof v);
  out.insert(out.end(), b, b + sizeof v);
}

/// Writes `to` (a folder) as a copy of the laszip EPT dataset `from` with dataType `type` ("binary"
/// or "zstandard").
inline void write_binary_ept(std::filesystem::path const& from, std::filesystem::path const& to, std::string const& type)
{
  namespace fs = std::filesystem;
  fs::create_directories(to / "ept-data");
  fs::copy(from / "ept-hierarchy", to / "ept-hierarchy", fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  CPLJSONDocument doc;
  if (!doc.Load((from / "ept.json").string())) { throw std::runtime_error("cannot read " + (from / "ept.json").string()); }
  CPLJSONObject root = doc.GetRoot();
  root.Set("dataType", type);
  struct dim {
    std::string name, type;
    int size;
    double scale, offset;
    bool scaled;
  };
  std::vector<dim> dims;
  CPLJSONArray const schema = root.GetArray("schema");
  CPLJSONArray rewritten;
  for (int i = 0; i < schema.Size(); ++i) {
    CPLJSONObject d = schema[i];
    dim x{d.GetString("name"), d.GetString("type"), d.GetInteger("size"), d.GetDouble("scale", 1.0),
          d.GetDouble("offset", 0.0), d.GetObj("scale").IsValid()};
    bool const coordinate = x.name == "X" || x.name == "Y" || x.name == "Z";
    if (coordinate && !x.scaled) {
      x.type = "float";
      x.size = 8;
      CPLJSONObject f;
      f.Set("name", x.name);
      f.Set("type", "float");
      f.Set("size", 8);
      rewritten.Add(f);
    } else {
      rewritten.Add(d);
    }
    dims.push_back(x);
  }
  root.Delete("schema");
  root.Add("schema", rewritten);
  if (!doc.Save((to / "ept.json").string())) { throw std::runtime_error("cannot write " + (to / "ept.json").string()); }

  for (auto const& entry : fs::directory_iterator(from / "ept-data")) {
    std::string const node = entry.path().string();
    std::vector<std::vector<double>> values;
    std::size_t points = 0;
    for (auto const& d : dims) {
      int const axis = d.name == "X" ? 0 : d.name == "Y" ? 1 : 2;
      values.push_back(las_values(node, axis == 2 ? d.name : "", axis));
      points = std::max(points, values.back().size());
    }
    std::vector<unsigned char> out;
    for (std::size_t i = 0; i < points; ++i) {
      for (std::size_t j = 0; j < dims.size(); ++j) {
        dim const& d = dims[j];
        double const v = i < values[j].size() ? values[j][i] : 0.0;
        double const raw = (v - d.offset) / d.scale;
        double const stored = std::nearbyint(raw);
        if (d.type == "float") {
          if (d.size == 8) { put(out, raw); } else { put(out, static_cast<float>(raw)); }
        } else if (d.type == "signed") {
          auto const s = static_cast<std::int64_t>(stored);
          if (d.size == 1) { put(out, static_cast<std::int8_t>(s)); }
          if (d.size == 2) { put(out, static_cast<std::int16_t>(s)); }
          if (d.size == 4) { put(out, static_cast<std::int32_t>(s)); }
          if (d.size == 8) { put(out, s); }
        } else {
          auto const u = static_cast<std::uint64_t>(stored < 0 ? 0 : stored);
          if (d.size == 1) { put(out, static_cast<std::uint8_t>(u)); }
          if (d.size == 2) { put(out, static_cast<std::uint16_t>(u)); }
          if (d.size == 4) { put(out, static_cast<std::uint32_t>(u)); }
          if (d.size == 8) { put(out, u); }
        }
      }
    }
    std::string const key = entry.path().stem().string();
    if (type == "zstandard") {
      std::vector<unsigned char> packed(ZSTD_compressBound(out.size()));
      std::size_t const n = ZSTD_compress(packed.data(), packed.size(), out.data(), out.size(), 3);
      if (ZSTD_isError(n)) { throw std::runtime_error("zstandard: " + std::string(ZSTD_getErrorName(n))); }
      packed.resize(n);
      out.swap(packed);
    }
    std::ofstream f(to / "ept-data" / (key + (type == "zstandard" ? ".zst" : ".bin")), std::ios::binary);
    f.write(reinterpret_cast<char const*>(out.data()), static_cast<std::streamsize>(out.size()));
  }
}

}  // namespace heightgrid::test
