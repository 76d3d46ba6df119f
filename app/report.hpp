#pragma once
// What the app says: number formatting, progress, and phase timing.

#include <chrono>
#include <cstdint>
#include <string>

namespace heightgrid::app {

/// 1234567 -> "1,234,567".
[[nodiscard]] std::string with_commas(std::uint64_t n);
/// Bytes as "1.5 GiB".
[[nodiscard]] std::string human_bytes(double bytes);
/// Seconds as "0.123 s" or "12.3 ms".
[[nodiscard]] std::string human_seconds(double seconds);

/// Wall-clock stopwatch for phases that run on the host.
class stopwatch {
 public:
  stopwatch() : start_(std::chrono::steady_clock::now()) {}
  [[nodiscard]] double seconds() const
  {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// -vv (trace level): "at 1.234 s: WHAT", seconds since the program's start (its static
/// initialization), so that the stages of a job, which run on several threads, can be laid on one
/// time line: what waits for what (docs/benchmarks.md uses it). Thread-safe; nothing below -vv.
void trace_moment(char const* what);

/// GDAL-style progress on stderr ("0...10...20...30...40...50...60...70...80...90...100 - done.").
class progress_bar {
 public:
  explicit progress_bar(bool enabled) : enabled_(enabled) {}
  void update(double fraction);
  void done();

 private:
  bool enabled_;
  int printed_{-1};  ///< last 2.5% step printed
};

/// True when stderr is a terminal: progress is shown there by default, never in logs or pipes.
[[nodiscard]] bool stderr_is_terminal();

/// Bytes of memory available to this process now (MemAvailable), or 0 if unknown.
[[nodiscard]] std::uint64_t available_memory_bytes();

}  // namespace heightgrid::app
