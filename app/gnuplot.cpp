#include "gnuplot.hpp"

#include "output_file.hpp"

#include "heightgrid/core/error.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

extern char** environ;

namespace heightgrid::app {
namespace fs = std::filesystem;
namespace {

/// The first executable `name` on PATH, or empty.
fs::path find_on_path(std::string const& name)
{
  char const* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path const candidate = fs::path(dir.empty() ? "." : dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) { return candidate; }
  }
  return {};
}

/// Runs `program script` with stdout and stderr into `log`; returns its exit status (-1 when it
/// could not be started or did not exit normally).
int run_program(fs::path const& program, fs::path const& script, fs::path const& log)
{
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::string prog = program.string();
  std::string arg = script.string();
  char* argv[] = {prog.data(), arg.data(), nullptr};
  pid_t pid = 0;
  int const rc = posix_spawn(&pid, prog.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) { return -1; }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) { return -1; }
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_all(fs::path const& p)
{
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string gnuplot_quote(std::string const& s)
{
  std::string out = "'";
  for (char c : s) { out += c == '\'' ? std::string("''") : std::string(1, c); }
  return out + "'";
}

plot_scratch::plot_scratch()
{
  std::string buf = (fs::temp_directory_path() / "heightgrid-plot-XXXXXX").string();
  HG_EXPECTS(::mkdtemp(buf.data()) != nullptr, error_kind::output,
             "--plot: cannot create a temporary directory in " + fs::temp_directory_path().string());
  path_ = buf;
}

plot_scratch::~plot_scratch()
{
  std::error_code ec;
  fs::remove_all(path_, ec);
}

bool run_gnuplot(plot_scratch const& scratch, std::string const& script, std::string const& path,
                 std::string const& unaffected)
{
  auto const gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty()) {
    spdlog::warn("--plot: gnuplot not found on PATH, so {} was not drawn; install gnuplot-nox "
                 "(apt-get install gnuplot-nox) for plots; {}",
                 path, unaffected);
    return false;
  }
  fs::path const script_path = scratch.path() / "plot.gp";
  fs::path const log = scratch.path() / "gnuplot.log";
  {
    std::ofstream out(script_path);
    out << script;
  }
  int const rc = run_program(gnuplot, script_path, log);
  fs::path const png = scratch.png();
  std::error_code ec;
  if (rc != 0 || !fs::is_regular_file(png, ec) || fs::file_size(png, ec) == 0) {
    spdlog::warn("--plot: gnuplot ({}) failed{}, so {} was not drawn; {}. gnuplot said: {}",
                 gnuplot.string(), rc > 0 ? " with exit code " + std::to_string(rc) : std::string(), path,
                 unaffected, read_all(log));
    return false;
  }
  temporary_file out{fs::path(path)};
  fs::copy_file(png, out.path(), fs::copy_options::overwrite_existing, ec);
  HG_EXPECTS(!ec, error_kind::output, path + ": cannot write the plot: " + ec.message());
  out.commit();
  return true;
}

}  // namespace heightgrid::app
