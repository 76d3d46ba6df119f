#pragma once
// Running heightgrid on hostile input under a time and memory bound, and the checks every hostile
// case shares: exit code, a message naming the culprit, no output, no temporary, inputs unchanged.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace heightgrid::test {

inline std::string hostile_exe()
{
  char const* p = std::getenv("HEIGHTGRID_EXE");
  return p ? p : HEIGHTGRID_EXE_DEFAULT;
}

struct bounded_result {
  int code{-1};          ///< exit status, or 128 + signal when killed by one
  bool timed_out{false};  ///< killed after the time limit
  std::string output;     ///< stdout and stderr together
  double seconds{0.0};
};

/// Most address space a run may take (1 GiB, threads and GDAL included): a lying count must not
/// allocate past what the file holds. CUDA reserves far more address space than that as soon as it
/// starts (unified addressing), so capped runs see no GPU (CUDA_VISIBLE_DEVICES empty): the suite
/// checks the readers, options and outputs, which do not depend on the device; the GPU paths are
/// checked by pipeline_tests and app_tests on the GPU machine.
inline constexpr rlim_t hostile_memory_limit = rlim_t{1} << 30;

/// AddressSanitizer reserves terabytes of shadow address space at start: under it (make sanitize)
/// the cap cannot apply, and ASan's own allocator checks stand in for it.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool hostile_cap_memory = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool hostile_cap_memory = false;
#else
inline constexpr bool hostile_cap_memory = true;
#endif
#else
inline constexpr bool hostile_cap_memory = true;
#endif

/// Runs heightgrid with `args` (no shell), stdin from /dev/null, killed after `limit_s` seconds.
/// `on_start(pid)` (optional) runs in the parent once the child exists (e.g. to send a signal).
template <typename OnStart = void (*)(pid_t)>
bounded_result run_bounded(std::vector<std::string> const& args, double limit_s = 8.0, OnStart on_start = nullptr)
{
  bounded_result r;
  int fds[2];
  if (::pipe(fds) != 0) { return r; }
  auto const t0 = std::chrono::steady_clock::now();
  pid_t const pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    if (hostile_cap_memory) {
      rlimit mem{hostile_memory_limit, hostile_memory_limit};
      ::setrlimit(RLIMIT_AS, &mem);
    }
    ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
    // Every thread pool sizes itself by the cores (workers, OpenMP, GDAL's compression), and each
    // thread reserves its stack (8 MiB) and glibc a 64 MiB malloc arena: on the 32-core GPU host a
    // run's threads alone passed the cap ("cannot start another thread", exit 5). Capped runs see
    // two cores and two arenas, as on the machines the suite was written on, so the cap is about
    // what the input makes the run allocate.
    ::setenv("MALLOC_ARENA_MAX", "2", 1);
    ::setenv("OMP_NUM_THREADS", "2", 1);
    cpu_set_t allowed;
    if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 2) {
      cpu_set_t two;
      CPU_ZERO(&two);
      for (int c = 0, kept = 0; c < CPU_SETSIZE && kept < 2; ++c) {
        if (CPU_ISSET(c, &allowed)) {
          CPU_SET(c, &two);
          ++kept;
        }
      }
      ::sched_setaffinity(0, sizeof two, &two);
    }
    int const in = ::open("/dev/null", O_RDONLY);
    ::dup2(in, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    std::string exe = hostile_exe();
    argv.push_back(exe.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) { argv.push_back(a.data()); }
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  if constexpr (!std::is_same_v<OnStart, void (*)(pid_t)>) {
    on_start(pid);
  } else {
    if (on_start != nullptr) { on_start(pid); }
  }
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  char buf[4096];
  bool open = true;
  while (open) {
    double const left = limit_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left * 1000) + 1) > 0) {
      ssize_t const n = ::read(fds[0], buf, sizeof buf);
      if (n > 0) {
        if (r.output.size() < (1u << 20)) { r.output.append(buf, static_cast<std::size_t>(n)); }
      } else if (n == 0) {
        open = false;
      }
    }
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return r;
}

/// FNV-1a of a file's bytes (its type for what is not a regular file).
inline std::uint64_t file_hash(std::filesystem::path const& p)
{
  std::error_code ec;
  auto const st = std::filesystem::symlink_status(p, ec);
  std::uint64_t h = 1469598103934665603ull ^ static_cast<std::uint64_t>(st.type());
  if (!std::filesystem::is_regular_file(st)) { return h; }
  std::ifstream in(p, std::ios::binary);
  std::string const bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (unsigned char c : bytes) { h = (h ^ c) * 1099511628211ull; }
  return h ^ bytes.size();
}

/// Every entry of `dir` (not recursive) with its hash.
inline std::map<std::string, std::uint64_t> snapshot(std::filesystem::path const& dir)
{
  std::map<std::string, std::uint64_t> out;
  for (auto const& e : std::filesystem::directory_iterator(dir)) { out[e.path().filename().string()] = file_hash(e.path()); }
  return out;
}

/// No NUL, no control character but newline and tab, no byte past ASCII: nothing raw reaches
/// the terminal.
inline bool printable_output(std::string const& s)
{
  for (unsigned char c : s) {
    if (c == '\n' || c == '\t') { continue; }
    if (c < 0x20 || c >= 0x7f) { return false; }
  }
  return true;
}

}  // namespace heightgrid::test
