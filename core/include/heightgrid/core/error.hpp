#pragma once
// Errors are exceptions on the host carrying what went wrong and where.
// `main` maps error_kind to the process exit code; libraries never exit or log.

#include <stdexcept>
#include <string>

namespace heightgrid {

enum class error_kind {
  usage,     ///< bad command line or option value
  input,     ///< an input file is missing, unreadable or malformed
  output,    ///< the output cannot be written
  resource,  ///< not enough host or device memory for the request
  device,    ///< a CUDA runtime failure
  internal,  ///< a broken invariant: a bug in heightgrid
};

/// Process exit code for an error kind (0 is success, 1 is reserved for unknown failures).
int exit_code(error_kind kind) noexcept;

class error : public std::runtime_error {
 public:
  error(error_kind kind, std::string const& message) : std::runtime_error(message), kind_(kind) {}
  [[nodiscard]] error_kind kind() const noexcept { return kind_; }

 private:
  error_kind kind_;
};

/// Out of device memory (error_kind::resource). Another process may hold what is missing: a job may
/// shrink what it asks for, or wait for the memory to come free, before it gives up.
class device_memory_error : public error {
 public:
  explicit device_memory_error(std::string const& message) : error(error_kind::resource, message) {}
};

namespace detail {

/// "kernels/src/x.cu:12" from __FILE__ and __LINE__: the path from the project's top folder (the
/// build's absolute prefix is noise).
[[nodiscard]] std::string source_location(char const* file, int line);

/// Throws error(kind, message): HG_EXPECTS's cold path, out of line.
[[noreturn]] void throw_expects(error_kind kind, std::string const& message);

}  // namespace detail

}  // namespace heightgrid

/// The one precondition check: throws heightgrid::error(kind, message) unless `condition` holds.
/// The condition must be free of side effects (it documents a precondition as much as it checks
/// one); the message is built only when it fails.
///   HG_EXPECTS(repeat >= 1, error_kind::usage, "--repeat must be >= 1");
#define HG_EXPECTS(condition, kind, message)                                                         \
  do {                                                                                               \
    if (!(condition)) { ::heightgrid::detail::throw_expects((kind), (message)); }                    \
  } while (0)
