#pragma once
// Test inputs are located through environment variables (set by CTest, or by hand on the GPU
// machine), so the same test executables run from the build tree and from a device pack.

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace heightgrid::test {

/// The project's data/ directory (HEIGHTGRID_DATA_DIR), or "" if unset.
inline std::filesystem::path data_dir()
{
  char const* p = std::getenv("HEIGHTGRID_DATA_DIR");
  return p ? std::filesystem::path(p) : std::filesystem::path();
}

/// ../shared/data/real (HEIGHTGRID_REAL_DATA_DIR), or "" when unset or absent: tests that need
/// it GTEST_SKIP with a message.
inline std::filesystem::path real_data_dir()
{
  char const* p = std::getenv("HEIGHTGRID_REAL_DATA_DIR");
  if (p == nullptr) { return {}; }
  std::filesystem::path dir(p);
  std::error_code ec;
  return std::filesystem::is_directory(dir, ec) ? dir : std::filesystem::path();
}

/// A fresh, empty scratch directory for one test. The process id keeps tests that CTest runs in
/// parallel (one process each) out of each other's way.
inline std::filesystem::path scratch_dir(std::string const& name)
{
  auto dir = std::filesystem::temp_directory_path() /
             ("heightgrid-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace heightgrid::test
