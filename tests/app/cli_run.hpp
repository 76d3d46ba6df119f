#pragma once
// Running the heightgrid executable from a test (HEIGHTGRID_EXE, else the one just built).

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace heightgrid::test {

inline std::string exe()
{
  char const* p = std::getenv("HEIGHTGRID_EXE");
  return p ? p : HEIGHTGRID_EXE_DEFAULT;
}

/// Every byte of a file (empty when it cannot be read): outputs compared byte for byte.
inline std::string file_bytes(std::filesystem::path const& p)
{
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct cli_result {
  int code{-1};
  std::string output;  ///< stdout and stderr together
};

inline std::string shell_quote(std::string const& s)
{
  std::string out = "'";
  for (char c : s) { out += c == '\'' ? std::string("'\\''") : std::string(1, c); }
  return out + "'";
}

/// Runs `heightgrid args` through the shell; `env` (e.g. "PATH=/nowhere") is put in front.
inline cli_result run_cli(std::string const& args, std::string const& env = "")
{
  std::string const cmd = (env.empty() ? "" : env + " ") + shell_quote(exe()) + " " + args + " 2>&1";
  cli_result r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) { return r; }
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) { r.output += buf.data(); }
  int const status = ::pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Runs `heightgrid args` (no shell) in a child that may not write a file past `max_file_bytes`
/// (RLIMIT_FSIZE), with SIGXFSZ ignored: a write crossing the limit is cut short and the next one
/// fails with EFBIG, as on a full disk, instead of the signal killing the run. Pipes and terminals
/// are not limited, so the messages all arrive. `code` is the exit status, or 128 + N when signal
/// N ended the run (a crash).
inline cli_result run_cli_file_limited(std::vector<std::string> const& args, std::uint64_t max_file_bytes)
{
  cli_result r;
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::string const path = exe();
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (auto& a : copy) { argv.push_back(a.data()); }
  argv.push_back(nullptr);
  rlimit const limit{static_cast<rlim_t>(max_file_bytes), static_cast<rlim_t>(max_file_bytes)};
  int fds[2];
  if (::pipe(fds) != 0) { return r; }
  pid_t const pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
  }
  if (pid == 0) {
    // An ignored signal stays ignored across exec.
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0 || ::signal(SIGXFSZ, SIG_IGN) == SIG_ERR) { ::_exit(126); }
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execvp(path.c_str(), argv.data());  // HEIGHTGRID_EXE may be a name on PATH (device packs)
    ::_exit(127);
  }
  ::close(fds[1]);
  std::array<char, 4096> buf{};
  for (;;) {
    ssize_t const n = ::read(fds[0], buf.data(), buf.size());
    if (n > 0) {
      r.output.append(buf.data(), static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return r;
}

}  // namespace heightgrid::test
