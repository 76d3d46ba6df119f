#include "heightgrid/core/temp_registry.hpp"

#include "heightgrid/core/error.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <mutex>

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

void temporary_file::commit()
{
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::rename(path_, target_, ec);
  HG_EXPECTS(!ec, error_kind::output,
             target_.string() + ": cannot move '" + path_.string() + "' into place: " + ec.message());
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
