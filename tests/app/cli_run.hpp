#pragma once
// Running the heightgrid executable from a test (HEIGHTGRID_EXE, else the one just built).

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

namespace heightgrid::test {

inline std::string exe()
{
  char const* p = std::getenv("HEIGHTGRID_EXE");
  return p ? p : HEIGHTGRID_EXE_DEFAULT;
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

}  // namespace heightgrid::test
