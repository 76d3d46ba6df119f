#pragma once
// Quoting untrusted bytes (a line of a text file, a LAS string field, a file name) for an error
// message: printable ASCII passes, everything else (NUL, control characters, bytes >= 0x80)
// becomes \xNN, and long text is cut, so that no raw binary ever reaches the terminal and no
// message is cut short at a NUL.

#include <cstddef>
#include <string>
#include <string_view>

namespace heightgrid {

/// Most characters of the original text kept by quote_for_message by default.
inline constexpr std::size_t default_quoted_chars = 80;

/// `text` between single quotes, non-printable bytes as \xNN (and \\ for a backslash), cut after
/// `max_chars` characters of the original with "..." before the closing quote.
/// quote_for_message("a\0b") == "'a\\x00b'".
[[nodiscard]] std::string quote_for_message(std::string_view text, std::size_t max_chars = default_quoted_chars);

/// The same escaping without quotes or cutting: for whole messages on their way to the terminal.
[[nodiscard]] std::string printable(std::string_view text);

}  // namespace heightgrid
