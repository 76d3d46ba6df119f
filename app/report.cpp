#include "report.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace heightgrid::app {
namespace {

std::chrono::steady_clock::time_point const program_start = std::chrono::steady_clock::now();

}  // namespace

void trace_moment(char const* what)
{
  if (!spdlog::should_log(spdlog::level::trace)) { return; }
  // One fprintf (stdio locks the stream for it): the default logger is single-threaded, and the
  // moments come from the job's threads.
  std::fprintf(stderr, "heightgrid: trace: at %.3f s: %s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - program_start).count(), what);
}

std::string with_commas(std::uint64_t n)
{
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) { out += ','; }
    out += digits[i];
  }
  return out;
}

std::string human_bytes(double bytes)
{
  char const* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  std::ostringstream s;
  s.precision(u == 0 ? 0 : 1);
  s << std::fixed << bytes << ' ' << units[u];
  return s.str();
}

std::string human_seconds(double seconds)
{
  std::ostringstream s;
  s.precision(seconds < 1.0 ? 1 : 2);
  if (seconds < 1.0) {
    s << std::fixed << seconds * 1e3 << " ms";
  } else {
    s << std::fixed << seconds << " s";
  }
  return s.str();
}

void progress_bar::update(double fraction)
{
  if (!enabled_) { return; }
  int const step = static_cast<int>(fraction * 40.0);  // GDALTermProgress prints every 2.5 %
  while (printed_ < step && printed_ < 40) {
    ++printed_;
    if (printed_ % 4 == 0) {
      std::fprintf(stderr, "%d", printed_ / 4 * 10);
    } else {
      std::fputc('.', stderr);
    }
  }
  std::fflush(stderr);
}

void progress_bar::done()
{
  if (!enabled_) { return; }
  update(1.0);
  std::fputs(" - done.\n", stderr);
  enabled_ = false;
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

std::uint64_t available_memory_bytes()
{
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t value = 0;
  std::string unit;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemAvailable:") { return value * 1024; }
  }
  return 0;
}

}  // namespace heightgrid::app
