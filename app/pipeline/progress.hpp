#pragma once
// A progress display over a whole job: points done of the total (when headers know it), rate and
// time left, redrawn in place on a terminal, or a line every tenth of the job when stderr is a file
// and --progress asked for it. It runs on its own thread and reads the pipeline's counters.

#include "pipeline/scheduler.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace heightgrid::app {

class progress_display {
 public:
  /// `total` points over every pass (0: unknown). Shows nothing unless `enabled`.
  progress_display(bool enabled, bool terminal, std::uint64_t total);
  progress_display(progress_display const&) = delete;
  progress_display& operator=(progress_display const&) = delete;
  ~progress_display();

  /// The counter of the pass now running; `done_before` points were read in earlier passes.
  void follow(read_progress const* counter, std::uint64_t done_before, std::string stage);
  /// Final line (terminal: ends the in-place line).
  void finish();

 private:
  void run();
  void draw(bool last);

  bool enabled_;
  bool terminal_;
  std::uint64_t total_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_{false};
  read_progress const* counter_{nullptr};
  std::uint64_t before_{0};
  std::string stage_;
  int next_tenth_{1};
  std::chrono::steady_clock::time_point start_{std::chrono::steady_clock::now()};
  std::thread thread_;
};

}  // namespace heightgrid::app
