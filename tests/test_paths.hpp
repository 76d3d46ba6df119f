#pragma once
// Test inputs are located through environment variables (set by CTest, or by hand on the GPU
// machine), so the same test executables run from the build tree and from a device pack.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace heightgrid::test {

/// The project's data/ directory (HEIGHTGRID_DATA_DIR), or "" if unset.
inline std::filesystem::path data_dir()
{
  char const* p = std::getenv("HEIGHTGRID_DATA_DIR");
  return p ? std::filesystem::path(p) : std::filesystem::path();
}

/// HEIGHTGRID_REQUIRE_REAL_DATA=1 (set by .ci/run): the real data must be there.
inline bool real_data_required()
{
  char const* p = std::getenv("HEIGHTGRID_REQUIRE_REAL_DATA");
  return p != nullptr && std::string(p) != "" && std::string(p) != "0";
}

/// ../shared/data/real (HEIGHTGRID_REAL_DATA_DIR), or "" when unset or absent: tests that need
/// it GTEST_SKIP with a message. With HEIGHTGRID_REQUIRE_REAL_DATA=1 an absent directory throws
/// instead, which GoogleTest reports as a failure of the test that asked: in CI a missing data
/// set must not pass as a row of skips.
inline std::filesystem::path real_data_dir()
{
  char const* p = std::getenv("HEIGHTGRID_REAL_DATA_DIR");
  std::filesystem::path dir(p == nullptr ? "" : p);
  std::error_code ec;
  if (p != nullptr && std::filesystem::is_directory(dir, ec)) { return dir; }
  if (real_data_required()) {
    throw std::runtime_error("HEIGHTGRID_REQUIRE_REAL_DATA is set, but HEIGHTGRID_REAL_DATA_DIR ('" + dir.string() +
                             "') is not a directory");
  }
  return {};
}

/// The scratch directories this process made; the registry's destructor (at normal process exit,
/// after every test has closed its files) removes them, unless HEIGHTGRID_KEEP_TEST_DIRS is set
/// (to look at what a failing test wrote).
class scratch_registry {
public:
  scratch_registry() = default;
  scratch_registry(scratch_registry const&) = delete;
  scratch_registry& operator=(scratch_registry const&) = delete;
  ~scratch_registry()
  {
    if (std::getenv("HEIGHTGRID_KEEP_TEST_DIRS") != nullptr) { return; }
    for (auto const& dir : dirs_) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
  void add(std::filesystem::path const& dir)
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) { dirs_.push_back(dir); }
  }

private:
  std::mutex mutex_;
  std::vector<std::filesystem::path> dirs_;
};

inline scratch_registry& scratch_directories()
{
  static scratch_registry registry;
  return registry;
}

/// A fresh, empty scratch directory for one test, removed when the test process exits. The process
/// id keeps tests that CTest runs in parallel (one process each) out of each other's way.
inline std::filesystem::path scratch_dir(std::string const& name)
{
  auto dir = std::filesystem::temp_directory_path() /
             ("heightgrid-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  scratch_directories().add(dir);
  return dir;
}

}  // namespace heightgrid::test
