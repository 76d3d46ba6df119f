#include "heightgrid/core/temp_registry.hpp"

#include "heightgrid/core/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <mutex>
#include <thread>

namespace heightgrid {

std::string hidden_temporary_path(std::string const& target, std::string const& kind, std::string const& suffix)
{
  std::filesystem::path const t(target);
  return (t.parent_path() / ("." + t.filename().string() + "." + kind + "-" + std::to_string(::getpid()) + suffix))
    .string();
}

namespace {

/// One slot: `state` is 0 free, 1 being written, 2 holding a path the signal handler may unlink.
struct slot {
  std::atomic<int> state{0};
  char path[PATH_MAX]{};
};

std::array<slot, max_registered_temporaries> table;
std::mutex writers;  // serialises registration; the signal handler only reads `state` and `path`

}  // namespace

std::size_t register_temporary(std::string const& path)
{
  HG_EXPECTS(!path.empty() && path.size() < PATH_MAX, error_kind::internal,
          "register_temporary: path of " + std::to_string(path.size()) + " bytes");
  std::lock_guard<std::mutex> const lock(writers);
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].state.load(std::memory_order_acquire) == 0) {
      table[i].state.store(1, std::memory_order_relaxed);
      std::memcpy(table[i].path, path.c_str(), path.size() + 1);
      table[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  throw error(error_kind::internal, "register_temporary: more than " + std::to_string(table.size()) +
                                      " temporary files at once");
}

void unregister_temporary(std::size_t handle) noexcept
{
  if (handle < table.size()) { table[handle].state.store(0, std::memory_order_release); }
}

void remove_registered_temporaries() noexcept
{
  for (auto& s : table) {
    if (s.state.load(std::memory_order_acquire) == 2) { ::unlink(s.path); }
  }
}

temporary_file::temporary_file(std::filesystem::path target, std::string const& kind, std::string const& suffix,
                               std::vector<std::string> side_cars)
  : target_(std::move(target)), path_(hidden_temporary_path(target_.string(), kind, suffix)),
    side_cars_(std::move(side_cars))
{
  // Absolute: the signal handler may run after a change of working directory.
  std::string const absolute = std::filesystem::absolute(path_).string();
  registrations_.push_back(std::make_unique<temporary_registration>(absolute));
  for (auto const& s : side_cars_) { registrations_.push_back(std::make_unique<temporary_registration>(absolute + s)); }
}

temporary_file::~temporary_file()
{
  if (!committed_) { remove(); }
}

void temporary_file::remove() noexcept
{
  std::error_code ec;
  std::filesystem::remove(path_, ec);
  for (auto const& s : side_cars_) { std::filesystem::remove(path_.string() + s, ec); }
}

namespace {

/// The regular file at `path`, opened to be released later, or -1 (none there, not a regular file,
/// not readable). O_NONBLOCK: a FIFO at the path must not block the open; O_NOFOLLOW: a symbolic
/// link is replaced, not the file it names.
int open_replaced(std::filesystem::path const& path) noexcept
{
  int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) { return -1; }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Closes the last descriptor of a file that a rename has unlinked on a thread of its own: the
/// kernel frees its pages and blocks then (0.04-0.06 s for a 100 MB GeoTIFF in the page cache),
/// beside what the process does next (its report, CUDA's teardown at exit) instead of inside the
/// rename. At exit the process waits for the close to end, so nothing is left behind.
void release_later(int fd) noexcept
{
  if (fd < 0) { return; }
  try {
    std::thread([fd] { ::close(fd); }).detach();
  } catch (...) {
    ::close(fd);  // no thread to be had: here and now
  }
}

}  // namespace

void temporary_file::commit()
{
  namespace fs = std::filesystem;
  std::error_code ec;
  int const replaced = open_replaced(target_);
  fs::rename(path_, target_, ec);
  if (ec) {
    if (replaced >= 0) { ::close(replaced); }
    throw error(error_kind::output, target_.string() + ": cannot move '" + path_.string() + "' into place: " + ec.message());
  }
  release_later(replaced);
  committed_ = true;
  for (auto const& s : side_cars_) {
    fs::path const from = path_.string() + s, to = target_.string() + s;
    if (fs::exists(from, ec)) {
      fs::rename(from, to, ec);
      HG_EXPECTS(!ec, error_kind::output,
                 target_.string() + ": cannot move '" + from.string() + "' into place: " + ec.message());
    } else {
      fs::remove(to, ec);
    }
  }
}

}  // namespace heightgrid
