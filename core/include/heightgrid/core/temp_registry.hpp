#pragma once
// Temporary files that must not outlive the process: outputs are written under a temporary name
// and renamed into place, and a run stopped by a signal must remove what it had started.
//
// Writers register each temporary while it exists; the app's signal handler calls
// remove_registered_temporaries(), which only uses async-signal-safe calls (unlink) on a fixed table.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace heightgrid {

/// The hidden temporary of `target` that this process writes before renaming it into place:
/// "DIR/.NAME.KIND-PID" + `suffix` (KIND "tmp" for outputs, "fill" for filled tiles, "ground.tmp"
/// for --ground auto's DTM). One rule for every writer, so that --resume and --overwrite can find
/// and remove what a killed process left (app/pipeline/tiles.cpp).
[[nodiscard]] std::string hidden_temporary_path(std::string const& target, std::string const& kind = "tmp",
                                                std::string const& suffix = {});

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

/// A file written under hidden_temporary_path(target, kind, suffix) and renamed over `target` by
/// commit(); removed on destruction otherwise, and by the signal handler if the process is
/// stopped. `side_cars` are suffixes of files a writer may leave beside it (GDAL's ".aux.xml"):
/// registered and removed with it, moved with it by commit() — where none was made, a stale one
/// beside the target is removed (it described the replaced file).
class temporary_file {
 public:
  explicit temporary_file(std::filesystem::path target, std::string const& kind = "tmp",
                          std::string const& suffix = {}, std::vector<std::string> side_cars = {});
  temporary_file(temporary_file const&) = delete;
  temporary_file& operator=(temporary_file const&) = delete;
  ~temporary_file();

  [[nodiscard]] std::filesystem::path const& path() const noexcept { return path_; }
  /// Removes the file and its side-cars now (the destructor would); for one that is not renamed.
  void remove() noexcept;
  /// Renames the temporary (and its side-cars) over the target. Throws error_kind::output.
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path path_;
  std::vector<std::string> side_cars_;
  std::vector<std::unique_ptr<temporary_registration>> registrations_;  ///< absolute paths
  bool committed_{false};
};

}  // namespace heightgrid
