#pragma once
// GDAL process setup and the small RAII helpers every GDAL-backed stage of io/ shares.
//
// GDAL reports problems through CPLError: a global (or per-thread pushed) handler receives every
// debug message, warning and failure. heightgrid routes them two ways:
//  - warnings and debug messages go to the sink installed by init_gdal() (the app logs them);
//  - failures raised inside a gdal_error_scope are collected by the scope and end up in the
//    message of the heightgrid::error the library throws, so they are not logged a second time.

#include <gdal_priv.h>

#include <functional>
#include <string>
#include <vector>

namespace heightgrid::io {

enum class gdal_message_level { debug, warning, error };

/// Receives GDAL messages; may be called from any thread that uses GDAL.
using gdal_message_sink = std::function<void(gdal_message_level, std::string const&)>;

/// Registers the GDAL drivers (once per process) and routes GDAL messages raised outside a
/// gdal_error_scope into `sink`. Calling it again replaces the sink; an empty sink restores
/// GDAL's default handler (stderr). The io functions register the drivers themselves when
/// init_gdal() was never called, so tests and tools may skip it.
void init_gdal(gdal_message_sink sink);

/// The message of the last GDAL error on this thread, or "no details from GDAL" when empty.
[[nodiscard]] std::string gdal_last_error();

/// Owning pointer to a GDAL dataset; the deleter closes the dataset (flushing pending writes).
using gdal_dataset_ptr = GDALDatasetUniquePtr;

/// Collects the GDAL failures (CE_Failure, CE_Fatal) raised on this thread while it lives, so
/// that they can be quoted in an exception. Warnings and debug messages pass through to the
/// sink installed by init_gdal(). Scopes nest; the innermost one collects.
///
///   gdal_error_scope errors;
///   auto* ds = driver->Create(...);
///   if (ds == nullptr) { throw error(error_kind::output, path + ": " + errors.message()); }
class gdal_error_scope {
 public:
  gdal_error_scope();
  ~gdal_error_scope();
  gdal_error_scope(gdal_error_scope const&) = delete;
  gdal_error_scope& operator=(gdal_error_scope const&) = delete;

  /// True once GDAL has reported a failure inside this scope.
  [[nodiscard]] bool failed() const noexcept { return !failures_.empty(); }
  /// The failures joined by "; ", each said once, or gdal_last_error() when GDAL reported none
  /// here (some drivers return an error code without raising a CPLError).
  [[nodiscard]] std::string message() const;

 private:
  static void CPL_STDCALL handler(CPLErr level, CPLErrorNum number, char const* message);
  std::vector<std::string> failures_;
};

}  // namespace heightgrid::io
