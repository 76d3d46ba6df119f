#pragma once
// Helpers shared by the LAS reader/writer tests (tests/io/las_*_test.cpp).

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace heightgrid::test {

/// scratch_dir() named after the running test (suite, name, parameter index), so that tests
/// run in parallel by CTest never share, and wipe, each other's directory.
inline std::filesystem::path las_scratch_dir()
{
  auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string("las-") + info->test_suite_name() + "-" + info->name();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') { c = '_'; }
  }
  return scratch_dir(name);
}

/// Every point of a LAS or LAZ file through open_las_source with `options`, all columns, read
/// `max_points` at a time, checking the point_source contract on the way.
inline point_chunk read_all_points(std::string const& path, io::las_read_options const& options,
                                   std::size_t max_points = std::size_t{1} << 20)
{
  auto source = io::open_las_source(path, options);
  point_chunk all;
  point_chunk chunk;
  while (source->read(chunk, max_points)) {
    EXPECT_FALSE(chunk.empty()) << "read() returned true with no points";
    EXPECT_LE(chunk.size(), max_points);
    EXPECT_EQ(chunk.y.size(), chunk.size());
    EXPECT_EQ(chunk.z.size(), chunk.size());
    EXPECT_EQ(chunk.classification.size(), chunk.size());
    EXPECT_EQ(chunk.return_number.size(), chunk.size());
    EXPECT_EQ(chunk.number_of_returns.size(), chunk.size());
    EXPECT_EQ(chunk.flags.size(), chunk.size());
    all.append_xyz(chunk);
    all.classification.insert(all.classification.end(), chunk.classification.begin(), chunk.classification.end());
    all.return_number.insert(all.return_number.end(), chunk.return_number.begin(), chunk.return_number.end());
    all.number_of_returns.insert(all.number_of_returns.end(), chunk.number_of_returns.begin(),
                                 chunk.number_of_returns.end());
    all.flags.insert(all.flags.end(), chunk.flags.begin(), chunk.flags.end());
  }
  EXPECT_TRUE(chunk.empty());
  EXPECT_FALSE(source->read(chunk, max_points)) << "an exhausted source must stay exhausted";
  return all;
}

/// Every point of a LAS file through open_las_source, read `max_points` at a time.
inline point_chunk read_all_las(std::string const& path, std::size_t max_points = 1 << 20,
                                std::size_t chunk_points = default_chunk_points)
{
  io::las_read_options options;
  options.chunk_points = chunk_points;
  return read_all_points(path, options, max_points);
}

inline std::vector<std::uint8_t> file_bytes(std::filesystem::path const& path)
{
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(std::filesystem::path const& path, std::vector<std::uint8_t> const& bytes)
{
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<char const*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

template <class T>
void put(std::vector<std::uint8_t>& bytes, std::size_t at, T value)
{
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

template <class T>
T get(std::vector<std::uint8_t> const& bytes, std::size_t at)
{
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

/// Runs `f`, which must throw error_kind::input naming `path` and a byte offset; returns the
/// message for further checks.
inline std::string expect_input_error(std::function<void()> const& f, std::string const& path)
{
  try {
    f();
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::input) << e.what();
    std::string const message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("byte "), std::string::npos) << message;
    return message;
  }
  ADD_FAILURE() << "no error for " << path;
  return {};
}

}  // namespace heightgrid::test
