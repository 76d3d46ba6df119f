#pragma once
// Reading many sources on many threads: workers claim parts (part_source) in source order, read
// each into a batch the sink provides, and hand it to the sink. Optionally the sink's deliver()
// sees the parts in (source, part) order, whatever the order they were read in, so that results
// that depend on the order of batches (sums) are the same for any thread count.
//
// Bounded: a worker asks the sink for batch memory *before* it claims a part, so the earliest
// undelivered part always has its memory and in-order delivery cannot deadlock on a full ring.

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace heightgrid::app {

/// An input error raised while reading a part, with the index of the source it came from (a
/// catalogue job may skip that file and go on: --skip-bad).
class source_error : public error {
 public:
  source_error(error const& e, std::size_t source) : error(e.kind(), e.what()), source_(source) {}
  [[nodiscard]] std::size_t source() const noexcept { return source_; }

 private:
  std::size_t source_;
};

/// The part a worker claimed: part `part` of source `source`.
struct part_ticket {
  std::size_t source{0};
  std::uint64_t part{0};
};

/// Where batches go after reading. Implementations are called from several workers at once.
class part_sink {
 public:
  virtual ~part_sink() = default;
  /// Memory for worker `worker`'s next batch (capacity >= the largest max_part_points()). May block
  /// until memory is free; must return promptly once `stopping` is set (then its batch is unused).
  virtual point_batch acquire(unsigned worker, std::atomic<bool> const& stopping) = 0;
  /// Right after reading, on the reading worker, in any order (CPU binning, per-cell partials).
  virtual void process(unsigned /*worker*/, point_batch& /*batch*/) {}
  /// After process(); in (source, part) order when the scheduler runs ordered, else in any order.
  /// Ownership of the batch memory passes here: the sink recycles it (now or when a copy is done).
  virtual void deliver(unsigned worker, part_ticket const& ticket, point_batch& batch) = 0;
  /// Right after deliver() and, when ordered, after the turn has passed to the next part: work that
  /// keeps this part's place in the order but may overlap the next parts' deliveries. Must return
  /// promptly once `stopping` is set.
  virtual void after_turn(unsigned /*worker*/, std::atomic<bool> const& /*stopping*/) {}
  /// A batch acquired but not read into (no part was left, or the job stops).
  virtual void give_back(unsigned worker, point_batch& batch) = 0;
  /// Called by each worker once no part is left for it (not when the job stops): work the sink
  /// kept back (batches parked while the GPU started) is finished here, on every worker.
  virtual void finish(unsigned /*worker*/, std::atomic<bool> const& /*stopping*/) {}
  /// The job stops (an error): wake every acquire() that waits for memory.
  virtual void stop() {}
};

struct schedule_options {
  unsigned threads{1};
  bool ordered{false};
};

/// What reading found, per source and in total.
struct read_report {
  std::vector<part_result> per_source;
  part_result total;
  double seconds{0.0};       ///< wall time of the whole read
  double read_seconds{0.0};  ///< worker time inside read_part, summed over workers
  double sink_seconds{0.0};  ///< worker time inside process() and deliver(), summed
  double wait_seconds{0.0};  ///< worker time waiting for batch memory or their delivery turn
  unsigned threads{0};
};

/// Live counters for a progress display (records read so far).
struct read_progress {
  std::atomic<std::uint64_t> records{0};
};

/// Reads every part of every source with `options.threads` workers, filtering with `rules`, into
/// `sink`. Calls part_source::release() on each source once all its parts are read. The first
/// exception of any worker (or of the sink) stops every worker and is rethrown here, after all
/// workers have stopped; batch memory is given back either way.
read_report read_parts(std::vector<part_source*> const& sources, filter_rules const& rules,
                       schedule_options const& options, part_sink& sink, read_progress* progress = nullptr);

/// The sources of `owned`, as read_parts takes them.
[[nodiscard]] std::vector<part_source*> source_pointers(std::vector<std::unique_ptr<part_source>> const& owned);

}  // namespace heightgrid::app
