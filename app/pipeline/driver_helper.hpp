#pragma once
// Asking CUDA's driver for the device from a helper process.
//
// `--device gpu` must fail on a host without a usable GPU, so a job that the CPU bins before a GPU
// context would pay (the cooperative route of a small LAS job) still asks CUDA's driver for the
// device. Asked in the job's own process, the driver's start is followed by its teardown when the
// process ends (tens of milliseconds after the output is complete: docs/benchmarks.md, "LAS on the
// device", no context where the CPU finishes first). Asked by a helper, both happen in the helper,
// beside the job: the job waits only for the answer.
//
// The helper is forked by main before the process starts any thread (a fork of a process with
// threads may only make async-signal-safe calls), waits for its one question on a socket, answers it
// in one line and ends; one that is never asked ends when the job's process does (end of file).

#include <cstddef>
#include <optional>
#include <string>

namespace heightgrid::app {

/// How the helper finds the device: true when found, else false with a reason in `reason` (at most
/// `size` bytes, NUL-terminated). Runs in the helper.
using driver_finder = bool (*)(int device, char* reason, std::size_t size) noexcept;

/// Forks the helper. With the default finder (CUDA's driver: find_gpu) only while the process has
/// one thread, else it starts none and returns false (the job asks the driver itself); a finder
/// given here must keep to async-signal-safe calls (tests). The helper's standard streams are
/// /dev/null and it holds no other descriptor of the process: a reader of the job's output meets
/// end of file when the job ends, whatever the helper still does. False too when fork fails.
bool start_driver_helper(driver_finder find = nullptr) noexcept;

/// Whether a helper is waiting for its question (started and not yet asked).
[[nodiscard]] bool driver_helper_waiting() noexcept;

struct driver_answer {
  bool found{false};
  std::string reason;  ///< why not, when not found
};

/// Asks the waiting helper whether CUDA's driver finds `device` (-1: the default), waiting up to
/// `timeout_s` for its answer: nullopt when no helper is waiting (the caller asks the driver
/// itself). A helper that ends without answering (a crash in the driver) or does not answer in
/// time (it is killed) is an answer of not found, saying which. A helper answers one question.
[[nodiscard]] std::optional<driver_answer> ask_driver_helper(int device, double timeout_s);

}  // namespace heightgrid::app
