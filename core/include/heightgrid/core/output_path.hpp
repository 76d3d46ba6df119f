#pragma once
// Checks shared by every writer before it creates its temporary: what may be replaced, and
// whether the directory takes a new file. Outputs are written beside the target and renamed over
// it, so only a regular file (or a new path) may be the target: renaming over a device node, a
// FIFO or a socket would replace it with a plain file, and a dangling symbolic link would be
// replaced by a file instead of being written through.

#include <filesystem>
#include <string>

namespace heightgrid {

/// Throws error_kind::output unless `path` is free or (with `overwrite`) a regular file, or a
/// symbolic link to one; the message says what is there ("a character device", "a dangling
/// symbolic link to 'x'", "a directory") and that it is refused even with --overwrite.
void check_output_target(std::string const& path, bool overwrite);

/// Throws error_kind::output unless a new file can be created in `dir`, saying why not
/// ("permission denied", "read-only file system"), as the system reports it.
void check_directory_writable(std::string const& path, std::filesystem::path const& dir);

}  // namespace heightgrid
