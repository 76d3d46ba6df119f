#pragma once
// Files the app writes besides GeoTIFFs (LAS from `synth`, JSON and PNG from `compare`): checked
// before any work, written beside the target under a temporary name and renamed into place, so a
// failed run leaves nothing behind and never a partial file.

#include "heightgrid/core/temp_registry.hpp"

#include <filesystem>
#include <string>

namespace heightgrid::app {

/// Throws error_kind::output when `path` is a directory, exists without `overwrite` ("out.las:
/// output exists; use --overwrite to replace it"), or its directory is missing or not writable.
/// `what` names the option in messages (e.g. "--json").
void check_output_file(std::string const& path, bool overwrite, std::string const& what);

/// The ".<name>.tmp-<pid>" file next to a target: removed on destruction unless commit() renamed
/// it over the target.
class temporary_file {
 public:
  explicit temporary_file(std::filesystem::path target);
  temporary_file(temporary_file const&) = delete;
  temporary_file& operator=(temporary_file const&) = delete;
  ~temporary_file();

  [[nodiscard]] std::filesystem::path const& path() const noexcept { return path_; }
  /// Renames the temporary over the target. Throws error_kind::output on failure.
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path path_;
  temporary_registration registration_;  ///< removed by the signal handler if the run is stopped
  bool committed_{false};
};

/// Writes `text` to `path` atomically (temporary + rename). Throws error_kind::output.
void write_text_file(std::string const& path, std::string const& text);

}  // namespace heightgrid::app
