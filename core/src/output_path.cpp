#include "heightgrid/core/output_path.hpp"

#include "heightgrid/core/error.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace heightgrid {
namespace fs = std::filesystem;
namespace {

std::string kind_of(mode_t mode)
{
  if (S_ISDIR(mode)) { return "a directory"; }
  if (S_ISCHR(mode)) { return "a character device"; }
  if (S_ISBLK(mode)) { return "a block device"; }
  if (S_ISFIFO(mode)) { return "a FIFO (named pipe)"; }
  if (S_ISSOCK(mode)) { return "a socket"; }
  return "not a regular file";
}

}  // namespace

void check_output_target(std::string const& path, bool overwrite)
{
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) { return; }  // a new path
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0) {
    std::error_code ec;
    auto const to = fs::read_symlink(path, ec);
    throw error(error_kind::output, path + ": output is a dangling symbolic link" +
                                      (ec ? std::string() : " to '" + to.string() + "'") +
                                      "; refusing to write through it (remove it or name another output)");
  }
  HG_EXPECTS(S_ISREG(target.st_mode), error_kind::output,
          path + ": output is " + kind_of(target.st_mode) +
            "; only a regular file or a new path can be written, even with --overwrite");
  HG_EXPECTS(overwrite, error_kind::output, path + ": output exists; use --overwrite to replace it");
}

void check_directory_writable(std::string const& path, fs::path const& dir)
{
  // errno read right after the call: nothing in between may change it.
  if (::access(dir.c_str(), W_OK | X_OK) == 0) { return; }
  int const err = errno;
  throw error(error_kind::output, path + ": cannot create a file in directory '" + dir.string() +
                                    "': " + std::generic_category().message(err));
}

}  // namespace heightgrid
