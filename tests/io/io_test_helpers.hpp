#pragma once
// Helpers shared by the io tests.

#include "heightgrid/core/point_source.hpp"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace heightgrid::test {

/// x/y bounds from their four numbers.
inline bounds window(double xmin, double ymin, double xmax, double ymax)
{
  bounds b;
  b.xmin = xmin;
  b.ymin = ymin;
  b.xmax = xmax;
  b.ymax = ymax;
  return b;
}

using xyz = std::array<double, 3>;

/// Every point of `source`, read `chunk_points` at a time; checks the chunk contract on the way.
inline std::vector<xyz> read_all(point_source& source, std::size_t chunk_points = default_chunk_points)
{
  std::vector<xyz> out;
  point_chunk chunk;
  while (source.read(chunk, chunk_points)) {
    EXPECT_LE(chunk.size(), chunk_points);
    EXPECT_GT(chunk.size(), 0U);
    EXPECT_EQ(chunk.y.size(), chunk.size());
    EXPECT_EQ(chunk.z.size(), chunk.size());
    for (std::size_t i = 0; i < chunk.size(); ++i) { out.push_back({chunk.x[i], chunk.y[i], chunk.z[i]}); }
  }
  EXPECT_TRUE(chunk.empty());
  return out;
}

inline std::filesystem::path write_text(std::filesystem::path const& path, std::string const& content)
{
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

/// The names in `dir`, to check that no temporary file was left behind.
inline std::vector<std::string> list_dir(std::filesystem::path const& dir)
{
  std::vector<std::string> names;
  for (auto const& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

}  // namespace heightgrid::test
