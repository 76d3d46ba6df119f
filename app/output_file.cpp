#include "output_file.hpp"

#include "heightgrid/core/error.hpp"

#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <system_error>
#include <utility>

namespace heightgrid::app {
namespace fs = std::filesystem;

void check_output_file(std::string const& path, bool overwrite, std::string const& what)
{
  expects(!path.empty(), error_kind::usage, what + ": the output path is empty");
  fs::path const target(path);
  std::error_code ec;
  auto const status = fs::status(target, ec);
  if (fs::exists(status)) {
    expects(!fs::is_directory(status), error_kind::output, path + ": output is a directory");
    expects(overwrite, error_kind::output, path + ": output exists; use --overwrite to replace it");
  }
  fs::path const dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  expects(fs::is_directory(dir, ec), error_kind::output, path + ": directory '" + dir.string() + "' does not exist");
  expects(::access(dir.c_str(), W_OK) == 0, error_kind::output,
          path + ": directory '" + dir.string() + "' is not writable: " + std::generic_category().message(errno));
}

temporary_file::temporary_file(fs::path target)
  : target_(std::move(target)),
    path_(target_.parent_path() / ("." + target_.filename().string() + ".tmp-" + std::to_string(::getpid())))
{
}

temporary_file::~temporary_file()
{
  if (committed_) { return; }
  std::error_code ec;
  fs::remove(path_, ec);
}

void temporary_file::commit()
{
  std::error_code ec;
  fs::rename(path_, target_, ec);
  expects(!ec, error_kind::output,
          target_.string() + ": cannot move '" + path_.string() + "' into place: " + ec.message());
  committed_ = true;
}

void write_text_file(std::string const& path, std::string const& text)
{
  temporary_file tmp{fs::path(path)};
  {
    std::ofstream out(tmp.path(), std::ios::binary);
    expects(static_cast<bool>(out), error_kind::output, path + ": cannot create '" + tmp.path().string() + "'");
    out << text;
    out.close();
    expects(static_cast<bool>(out), error_kind::output, path + ": write failed (disk full?)");
  }
  tmp.commit();
}

}  // namespace heightgrid::app
