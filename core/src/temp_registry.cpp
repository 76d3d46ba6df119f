#include "heightgrid/core/temp_registry.hpp"

#include "heightgrid/core/error.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>

namespace heightgrid {
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

}  // namespace heightgrid
