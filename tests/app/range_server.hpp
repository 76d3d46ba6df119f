#pragma once
// range_server.py (byte ranges, HEAD, and failures picked by the path's first component) started
// from a test on 127.0.0.1 and stopped when the test ends: the remote-input tests
// (remote_cli_test.cpp, remote_bad_input_test.cpp). Nothing leaves the machine.

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace heightgrid::test {

/// range_server.py serving `dir` until destroyed (its stdin closed).
class range_server {
 public:
  /// `stats`: the file the server keeps the bytes it sent in.
  range_server(std::filesystem::path const& dir, std::filesystem::path const& stats)
  {
    int to_child[2], from_child[2];
    if (::pipe(to_child) != 0 || ::pipe(from_child) != 0) { return; }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(to_child[0], 0);
      ::dup2(from_child[1], 1);
      ::close(to_child[1]);
      ::close(from_child[0]);
      ::execlp("python3", "python3", HEIGHTGRID_RANGE_SERVER, dir.c_str(), "0", stats.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    stdin_ = to_child[1];
    FILE* out = ::fdopen(from_child[0], "r");
    char line[64] = {};
    if (out != nullptr && std::fgets(line, sizeof line, out) != nullptr) { std::sscanf(line, "PORT %d", &port_); }
    if (out != nullptr) { std::fclose(out); }
  }
  ~range_server()
  {
    if (stdin_ >= 0) { ::close(stdin_); }
    if (pid_ > 0) { ::waitpid(pid_, nullptr, 0); }
  }
  range_server(range_server const&) = delete;
  range_server& operator=(range_server const&) = delete;

  [[nodiscard]] int port() const { return port_; }
  /// "http://127.0.0.1:PORT/name"; a name starting "norange/", "reset/", "loop/" or "denied/" asks
  /// for that failure (range_server.py).
  [[nodiscard]] std::string url(std::string const& name) const
  {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + name;
  }

 private:
  pid_t pid_{-1};
  int stdin_{-1};
  int port_{0};
};

/// The bytes the server has sent so far (its stats file).
inline std::uint64_t served(std::filesystem::path const& stats)
{
  std::ifstream in(stats);
  std::uint64_t n = 0;
  in >> n;
  return n;
}

}  // namespace heightgrid::test
