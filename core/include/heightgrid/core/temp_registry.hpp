#pragma once
// Temporary files that must not outlive the process: outputs are written under a temporary name
// and renamed into place, and a run stopped by a signal must remove what it had started.
//
// Writers register each temporary while it exists; the app's signal handler calls
// remove_registered_temporaries(), which only uses async-signal-safe calls (unlink) on a fixed table.

#include <cstddef>
#include <string>

namespace heightgrid {

/// Most temporaries registered at once; registering more throws error_kind::internal.
inline constexpr std::size_t max_registered_temporaries = 64;

/// Registers `path` (absolute or relative to the working directory at the time of the signal)
/// for removal if the process is stopped by a signal. Returns a handle for unregister_temporary.
/// Thread-safe. Throws error_kind::internal when the table is full or the path is too long.
[[nodiscard]] std::size_t register_temporary(std::string const& path);

/// Forgets a temporary (it was renamed into place or removed). Thread-safe.
void unregister_temporary(std::size_t handle) noexcept;

/// Unlinks every registered temporary. Async-signal-safe: for signal handlers.
void remove_registered_temporaries() noexcept;

/// RAII registration: registered on construction, unregistered on destruction.
class temporary_registration {
 public:
  explicit temporary_registration(std::string const& path) : handle_(register_temporary(path)) {}
  temporary_registration(temporary_registration const&) = delete;
  temporary_registration& operator=(temporary_registration const&) = delete;
  ~temporary_registration() { unregister_temporary(handle_); }

 private:
  std::size_t handle_;
};

}  // namespace heightgrid
