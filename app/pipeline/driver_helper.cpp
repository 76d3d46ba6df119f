// The helper process that asks CUDA's driver for the device (driver_helper.hpp).

#include "pipeline/driver_helper.hpp"

#include "heightgrid/kernels/gpu.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace heightgrid::app {
namespace {

/// The answer's line: a status byte ('1' found, '0' not), the reason, '\n'.
constexpr std::size_t answer_bytes = 1024;

std::mutex helper_mutex;
pid_t helper_pid = -1;
int helper_fd = -1;  ///< the job's end of the socket; -1 once asked (or never started)

bool find_with_driver(int device, char* reason, std::size_t size) noexcept
{
  std::string why;
  bool const found = find_gpu(&why, device);
  if (!found && size > 0) {
    std::size_t const n = std::min(why.size(), size - 1);
    std::memcpy(reason, why.data(), n);
    reason[n] = '\0';
  }
  return found;
}

/// Threads of this process (entries of /proc/self/task); 0 when it cannot tell.
int thread_count() noexcept
{
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) { return 0; }
  int n = 0;
  while (dirent const* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') { ++n; }
  }
  ::closedir(dir);
  return n;
}

bool write_all(int fd, char const* p, std::size_t n) noexcept
{
  while (n > 0) {
    ssize_t const w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) { continue; }
    if (w <= 0) { return false; }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

/// The helper: async-signal-safe calls only, up to `find`.
[[noreturn]] void serve(int fd, driver_finder find) noexcept
{
  struct sigaction plain{};
  plain.sa_handler = SIG_DFL;
  sigemptyset(&plain.sa_mask);
  for (int const sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) { ::sigaction(sig, &plain, nullptr); }
  // The socket above the standard streams, which become /dev/null; every other descriptor closed.
  int const high = ::fcntl(fd, F_DUPFD, 10);
  if (high < 0) { ::_exit(0); }
  int const null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd < 0) { ::_exit(0); }
  for (int std_fd = 0; std_fd < 3; ++std_fd) { ::dup2(null_fd, std_fd); }
  ::dup2(high, 3);
  ::close_range(4, UINT_MAX, 0);
  fd = 3;
  std::int32_t device = 0;
  std::size_t got = 0;
  while (got < sizeof device) {
    ssize_t const r = ::read(fd, reinterpret_cast<char*>(&device) + got, sizeof device - got);
    if (r < 0 && errno == EINTR) { continue; }
    if (r <= 0) { ::_exit(0); }  // never asked: the job has ended
    got += static_cast<std::size_t>(r);
  }
  char line[answer_bytes + 2] = {};
  bool const found = find(device, line + 1, answer_bytes);
  line[0] = found ? '1' : '0';
  std::size_t n = found ? 1 : 1 + ::strnlen(line + 1, answer_bytes - 1);
  for (std::size_t i = 1; i < n; ++i) {
    if (line[i] == '\n') { line[i] = ' '; }
  }
  line[n++] = '\n';
  (void)write_all(fd, line, n);
  // The driver's teardown at the end happens here, beside the job.
  ::_exit(0);
}

std::string ended_how(pid_t pid)
{
  int status = 0;
  pid_t r = -1;
  do {
    r = ::waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r != pid) { return "it ended"; }
  if (WIFSIGNALED(status)) {
    char const* name = ::strsignal(WTERMSIG(status));
    return "it was ended by signal " + std::to_string(WTERMSIG(status)) + (name ? std::string(" (") + name + ")" : "");
  }
  return "it exited with status " + std::to_string(WEXITSTATUS(status));
}

/// A helper that answered ends (the driver's teardown) beside the job: reaped on a thread of its
/// own where it ends before the job does (no process left behind where the process's parent never
/// reaps); without a thread to spare the process's end reaps it.
void reap_later(pid_t pid) noexcept
{
  try {
    std::thread([pid] {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    }).detach();
  } catch (std::system_error const&) {
  }
}

}  // namespace

bool start_driver_helper(driver_finder find) noexcept
{
  std::lock_guard<std::mutex> lock(helper_mutex);
  if (helper_fd >= 0) { return false; }
  if (find == nullptr) {
    if (thread_count() != 1) { return false; }
    find = &find_with_driver;
  }
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) { return false; }
  pid_t const pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return false;
  }
  if (pid == 0) { serve(fds[1], find); }
  ::close(fds[1]);
  helper_pid = pid;
  helper_fd = fds[0];
  return true;
}

bool driver_helper_waiting() noexcept
{
  std::lock_guard<std::mutex> lock(helper_mutex);
  return helper_fd >= 0;
}

std::optional<driver_answer> ask_driver_helper(int device, double timeout_s)
{
  int fd = -1;
  pid_t pid = -1;
  {
    std::lock_guard<std::mutex> lock(helper_mutex);
    if (helper_fd < 0) { return std::nullopt; }
    std::swap(fd, helper_fd);
    pid = helper_pid;
  }
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } const close_at_end{fd};
  auto const not_found = [&](std::string why) {
    return driver_answer{false, "the helper process asking CUDA's driver for the device: " + why};
  };
  auto const q = static_cast<std::int32_t>(device);
  if (!write_all(fd, reinterpret_cast<char const*>(&q), sizeof q)) {
    return not_found("it took no question (" + ended_how(pid) + ")");
  }
  using clock = std::chrono::steady_clock;
  auto const deadline = clock::now() + std::chrono::duration_cast<clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, timeout_s)));
  std::string line;
  for (;;) {
    auto const left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      (void)ended_how(pid);
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_s);
      return not_found(std::string("no answer within ") + seconds + " s (the driver hangs?); the helper was stopped");
    }
    pollfd p{fd, POLLIN, 0};
    int const ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (ready < 0 && errno == EINTR) { continue; }
    if (ready <= 0) { continue; }  // the deadline decides
    char buf[256];
    ssize_t const r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) { continue; }
    if (r <= 0) { return not_found("it ended without an answer (" + ended_how(pid) + ")"); }
    line.append(buf, static_cast<std::size_t>(r));
    if (auto const end = line.find('\n'); end != std::string::npos) {
      line.resize(end);
      break;
    }
    if (line.size() > answer_bytes + 1) {
      reap_later(pid);
      return not_found("its answer was not one line");
    }
  }
  reap_later(pid);
  if (line.empty() || (line[0] != '1' && line[0] != '0')) { return not_found("its answer was garbled"); }
  if (line[0] == '1') { return driver_answer{true, {}}; }
  return driver_answer{false, line.substr(1)};
}

}  // namespace heightgrid::app
