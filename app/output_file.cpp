#include "output_file.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/output_path.hpp"

#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <system_error>
#include <utility>

namespace heightgrid::app {
namespace fs = std::filesystem;

void check_output_file(std::string const& path, bool overwrite, std::string const& what)
{
  HG_EXPECTS(!path.empty(), error_kind::usage, what + ": the output path is empty");
  fs::path const target(path);
  std::error_code ec;
  check_output_target(path, overwrite);
  fs::path const dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  HG_EXPECTS(fs::is_directory(dir, ec), error_kind::output,
          path + ": directory '" + dir.string() + "' does not exist");
  check_directory_writable(path, dir);
}

void write_text_file(std::string const& path, std::string const& text)
{
  temporary_file tmp{fs::path(path)};
  {
    std::ofstream out(tmp.path(), std::ios::binary);
    HG_EXPECTS(static_cast<bool>(out), error_kind::output, path + ": cannot create '" + tmp.path().string() + "'");
    out << text;
    out.close();
    HG_EXPECTS(static_cast<bool>(out), error_kind::output, path + ": write failed (disk full?)");
  }
  tmp.commit();
}

}  // namespace heightgrid::app
