#pragma once
// The one rule by which a job waits for device memory that other processes hold (issue #36): try,
// and while the attempt fails for want of device memory, try again every device_memory_poll_s for
// up to the job's wait (--gpu-memory-wait), saying so in the job's memory notes.

#include "report.hpp"
#include "heightgrid/core/error.hpp"

#include <chrono>
#include <functional>
#include <string>

namespace heightgrid::app {

/// How often a job short of device memory (other processes hold it) tries again: the allocation
/// itself is the test (cudaMemGetInfo would not say whether the free memory is in one piece).
inline constexpr double device_memory_poll_s = 0.2;

/// What a wait for device memory reports to and asks of its stage.
struct memory_wait_hooks {
  std::function<bool(double)> pause;         ///< sleeps that long; false when the job ended meanwhile
  std::function<void(std::string)> note;     ///< a line for -v ("GPU memory: ...")
  std::function<void(bool)> waiting;         ///< true while it waits (may be empty)
};

/// `attempt()`'s result, once it did not throw device_memory_error (an attempt returns a value);
/// `what` names it in the notes. Gives up after `wait_s` seconds (0: at once, rethrowing the
/// failure as it was) or when the job ends, rethrowing the last failure with the time waited. Any
/// other exception passes through at once (no longer waiting, nothing said to have come free).
template <class Attempt>
auto within_device_memory(char const* what, double wait_s, memory_wait_hooks const& hooks, Attempt&& attempt)
{
  using clock_type = std::chrono::steady_clock;
  auto const t0 = clock_type::now();
  auto const waited = [&] { return std::chrono::duration<double>(clock_type::now() - t0).count(); };
  bool waiting = false;
  auto const set_waiting = [&](bool on) {
    waiting = on;
    if (hooks.waiting) { hooks.waiting(on); }
  };
  for (;;) {
    try {
      auto result = attempt();
      if (waiting) {
        hooks.note(std::string(what) + ": device memory came free after " + human_seconds(waited()));
        set_waiting(false);
      }
      return result;
    } catch (device_memory_error const& e) {
      bool const out_of_time = waited() >= wait_s;
      if (!out_of_time && !waiting) {
        hooks.note(std::string(what) + ": waiting up to " + human_seconds(wait_s) +
                   " for device memory other processes hold: " + e.what());
        set_waiting(true);
      }
      if (out_of_time || !hooks.pause(device_memory_poll_s)) {
        if (!waiting) { throw; }
        set_waiting(false);
        throw device_memory_error(std::string(e.what()) + " (" + what + ": " +
                                  (out_of_time ? "waited " + human_seconds(wait_s) + " for device memory"
                                               : "the job ended while it waited for device memory") +
                                  ")");
      }
    } catch (...) {
      if (waiting) { set_waiting(false); }
      throw;
    }
  }
}

}  // namespace heightgrid::app
