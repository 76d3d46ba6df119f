#pragma once
// Helpers shared by the LAS reader/writer tests (tests/io/las_*_test.cpp).

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
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

/// One record's fields as stored, for build_las.
struct raw_point {
  std::int32_t x, y, z;
  std::uint8_t return_number, number_of_returns, classification;
  std::uint8_t flags;  ///< synthetic, key-point, withheld, overlap in bits 0-3
  std::uint8_t channel;
  bool scan_direction, edge;
};

inline constexpr std::array<std::uint16_t, 11> base_size{20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};

/// The header of a file build_las assembles.
struct las_spec {
  int minor = 2;
  int format = 0;
  std::uint16_t extra = 0;
  std::array<double, 3> scale{0.01, 0.001, 0.25};
  std::array<double, 3> offset{1000.0, -2000.5, 7.0};
  bool legacy_count = true;  ///< 1.4: also fill the 32-bit count
  bool count64 = true;       ///< 1.4: fill the 64-bit count
};

/// A LAS file of `points`, assembled byte by byte from the ASPRS tables (offsets written out as
/// numbers, independent of the reader's layout constants).
inline std::vector<std::uint8_t> build_las(las_spec const& s, std::vector<raw_point> const& points)
{
  std::size_t const header = s.minor <= 2 ? 227 : (s.minor == 3 ? 235 : 375);
  std::size_t const record = base_size[static_cast<std::size_t>(s.format)] + s.extra;
  std::vector<std::uint8_t> b(header + record * points.size(), 0);
  std::memcpy(b.data(), "LASF", 4);
  b[24] = 1;
  b[25] = static_cast<std::uint8_t>(s.minor);
  put(b, 94, static_cast<std::uint16_t>(header));
  put(b, 96, static_cast<std::uint32_t>(header));
  b[104] = static_cast<std::uint8_t>(s.format);
  put(b, 105, static_cast<std::uint16_t>(record));
  if (s.minor < 4 || s.legacy_count) { put(b, 107, static_cast<std::uint32_t>(points.size())); }
  for (int a = 0; a < 3; ++a) {
    put(b, 131 + 8 * a, s.scale[a]);
    put(b, 155 + 8 * a, s.offset[a]);
    // Header bounds that are deliberately wrong: the reader must not use them.
    put(b, 179 + 16 * a, -1.0);
    put(b, 187 + 16 * a, 1.0);
  }
  if (s.minor >= 4 && s.count64) { put(b, 247, static_cast<std::uint64_t>(points.size())); }
  bool const extended = s.format >= 6;
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::size_t const r = header + i * record;
    // Everything the reader ignores (GPS time, colour, waveform, extra bytes) is noise.
    std::fill(b.begin() + static_cast<std::ptrdiff_t>(r), b.begin() + static_cast<std::ptrdiff_t>(r + record), 0xA5);
    raw_point const& p = points[i];
    put(b, r + 0, p.x);
    put(b, r + 4, p.y);
    put(b, r + 8, p.z);
    if (extended) {
      b[r + 14] = static_cast<std::uint8_t>(p.return_number | (p.number_of_returns << 4));
      b[r + 15] = static_cast<std::uint8_t>(p.flags | (p.channel << 4) | (p.scan_direction << 6) | (p.edge << 7));
      b[r + 16] = p.classification;
    } else {
      b[r + 14] = static_cast<std::uint8_t>(p.return_number | (p.number_of_returns << 3) | (p.scan_direction << 6) |
                                            (p.edge << 7));
      b[r + 15] = static_cast<std::uint8_t>(p.classification | ((p.flags & 7) << 5));
    }
  }
  return b;
}

/// Random records with every attribute the filters look at (and some int32 extremes).
inline std::vector<raw_point> random_points(std::size_t n, bool extended, std::uint32_t seed)
{
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> xy(-2000000, 2000000);
  std::uniform_int_distribution<std::int32_t> z(-1000, 2000);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<raw_point> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    raw_point& p = out[i];
    p.x = xy(rng);
    p.y = xy(rng);
    p.z = z(rng);
    if (i % 97 == 5) { p.x = std::numeric_limits<std::int32_t>::min(); }
    if (i % 89 == 7) { p.y = std::numeric_limits<std::int32_t>::max(); }
    int const max_returns = extended ? 15 : 7;
    p.number_of_returns = static_cast<std::uint8_t>(byte(rng) % (max_returns + 1));
    p.return_number = static_cast<std::uint8_t>(byte(rng) % (max_returns + 1));
    int const c = byte(rng);
    // Mostly classes the filters name, the rest anything the format holds.
    p.classification = static_cast<std::uint8_t>(c < 160 ? c % 10 : (extended ? c : c % 32));
    p.flags = static_cast<std::uint8_t>(byte(rng) % (extended ? 16 : 8));
    p.channel = static_cast<std::uint8_t>(byte(rng) % 4);
    p.scan_direction = (byte(rng) & 1) != 0;
    p.edge = (byte(rng) & 1) != 0;
  }
  return out;
}

}  // namespace heightgrid::test
