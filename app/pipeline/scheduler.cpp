#include "pipeline/scheduler.hpp"

#include "heightgrid/core/error.hpp"

#include <omp.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

namespace heightgrid::app {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t)
{
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

class scheduler {
 public:
  scheduler(std::vector<part_source*> const& sources, filter_rules const& rules,
            schedule_options const& options, part_sink& sink, read_progress* progress)
    : sources_(sources), rules_(rules), options_(options), sink_(sink), progress_(progress), states_(sources.size())
  {
    for (std::size_t s = 0; s < sources.size(); ++s) {
      auto& st = states_[s];
      st.concurrent = sources[s]->concurrent_parts();
      st.count = sources[s]->part_count();
      HG_EXPECTS(st.concurrent ? st.count.has_value() : true, error_kind::internal,
              sources[s]->info().path + ": a concurrent part source must know its part count");
      st.exhausted = st.count.has_value() && *st.count == 0;
    }
    skip_empty_sources();
  }

  read_report run()
  {
    auto const start = clock_type::now();
    unsigned const threads = std::max(1u, options_.threads);
    workers_.resize(threads);
    {
      std::vector<std::thread> pool;
      pool.reserve(threads);
      try {
        for (unsigned w = 0; w < threads; ++w) { pool.emplace_back([this, w] { work(w); }); }
      } catch (...) {
        fail(std::current_exception());
      }
      for (auto& t : pool) { t.join(); }
    }
    // Sources never released (the job stopped early) release now.
    for (std::size_t s = 0; s < sources_.size(); ++s) {
      if (!states_[s].released) { sources_[s]->release(); }
    }
    if (failure_) { std::rethrow_exception(failure_); }
    read_report r;
    r.threads = threads;
    r.seconds = seconds_since(start);
    for (auto const& st : states_) {
      r.per_source.push_back(st.result);
      r.total.add(st.result);
    }
    for (auto const& w : workers_) {
      r.read_seconds += w.read;
      r.sink_seconds += w.sink;
      r.wait_seconds += w.wait;
    }
    return r;
  }

 private:
  struct source_state {
    bool concurrent{true};
    std::optional<std::uint64_t> count;
    std::uint64_t next_part{0};
    std::uint64_t in_flight{0};
    bool busy{false};       // sequential: a part is being read
    bool exhausted{false};  // no part left to claim
    bool released{false};
    part_result result;
  };
  struct worker_times {
    double read{0.0}, sink{0.0}, wait{0.0};
  };

  void work(unsigned w)
  {
    // A worker is one thread of reading; OpenMP regions inside a part (none in the readers, but a
    // sink may have some) must not fan out to every core from every worker.
    omp_set_num_threads(1);
    auto& times = workers_[w];
    bool done = false;
    while (!done && !stopping_.load()) {
      point_batch batch{};
      bool owned = false;
      // No `break` inside the try: an acquired batch must reach give_back below.
      try {
        auto t = clock_type::now();
        batch = sink_.acquire(w, stopping_);
        owned = true;
        times.wait += seconds_since(t);
        if (stopping_.load()) {
          done = true;
        } else {
          t = clock_type::now();
          auto const ticket = claim();
          times.wait += seconds_since(t);
          if (!ticket) {
            done = true;
          } else {
            read_and_deliver(w, *ticket, batch, owned);
          }
        }
      } catch (...) {
        fail(std::current_exception());
      }
      if (owned) {
        try {
          sink_.give_back(w, batch);
        } catch (...) {
          fail(std::current_exception());
        }
      }
    }
    if (!stopping_.load()) {
      auto const t = clock_type::now();
      try {
        sink_.finish(w, stopping_);
      } catch (...) {
        fail(std::current_exception());
      }
      times.sink += seconds_since(t);
    }
  }

  /// Reads the claimed part into `batch` and hands it to the sink; `owned` turns false once the
  /// sink has taken the batch.
  void read_and_deliver(unsigned w, part_ticket const& ticket, point_batch& batch, bool& owned)
  {
    auto& times = workers_[w];
    auto t = clock_type::now();
    part_result r;
    try {
      batch.source = static_cast<std::uint32_t>(ticket.source);
      batch.tagged = false;  // a source that tags says so (a slot's last batch may have been tagged)
      r = sources_[ticket.source]->read_part(ticket.part, rules_, batch);
    } catch (error const& e) {
      if (e.kind() != error_kind::input) { throw; }
      throw source_error(e, ticket.source);
    }
    times.read += seconds_since(t);
    if (progress_ != nullptr) { progress_->records.fetch_add(r.filtered.points_in, std::memory_order_relaxed); }
    complete(ticket, r);
    t = clock_type::now();
    sink_.process(w, batch);
    times.sink += seconds_since(t);
    if (options_.ordered) {
      t = clock_type::now();
      if (!wait_turn(ticket)) { return; }
      times.wait += seconds_since(t);
    }
    t = clock_type::now();
    owned = false;
    sink_.deliver(w, ticket, batch);
    times.sink += seconds_since(t);
    if (options_.ordered) { advance_turn(ticket, r.last); }
    t = clock_type::now();
    sink_.after_turn(w, stopping_);
    times.sink += seconds_since(t);
  }

  std::optional<part_ticket> claim()
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (stopping_.load()) { return std::nullopt; }
      bool waiting_for_sequential = false;
      for (std::size_t s = first_open_; s < states_.size(); ++s) {
        auto& st = states_[s];
        if (st.exhausted) { continue; }
        if (st.concurrent) {
          std::uint64_t const k = st.next_part++;
          if (st.next_part == *st.count) { st.exhausted = true; }
          ++st.in_flight;
          return part_ticket{s, k};
        }
        if (st.busy) {
          waiting_for_sequential = true;
          continue;
        }
        st.busy = true;
        ++st.in_flight;
        return part_ticket{s, st.next_part};
      }
      if (!waiting_for_sequential) { return std::nullopt; }
      changed_.wait(lock);
    }
  }

  void complete(part_ticket const& t, part_result const& r)
  {
    bool release = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& st = states_[t.source];
      st.result.add(r);
      --st.in_flight;
      if (!st.concurrent) {
        st.busy = false;
        ++st.next_part;
        if (r.last) { st.exhausted = true; }
      }
      if (st.exhausted && st.in_flight == 0 && !st.released) {
        st.released = true;
        release = true;
      }
      while (first_open_ < states_.size() && states_[first_open_].exhausted) { ++first_open_; }
    }
    changed_.notify_all();
    if (release) { sources_[t.source]->release(); }
  }

  bool wait_turn(part_ticket const& t)
  {
    std::unique_lock<std::mutex> lock(turn_mutex_);
    turn_changed_.wait(lock, [&] { return stopping_.load() || (turn_.source == t.source && turn_.part == t.part); });
    return !stopping_.load();
  }

  void advance_turn(part_ticket const& t, bool last)
  {
    {
      std::lock_guard<std::mutex> lock(turn_mutex_);
      auto const& st = states_[t.source];
      bool const source_done = st.concurrent ? t.part + 1 == *st.count : last;
      if (source_done) {
        turn_ = part_ticket{t.source + 1, 0};
        skip_empty_sources();
      } else {
        turn_.part = t.part + 1;
      }
    }
    turn_changed_.notify_all();
  }

  /// Moves the turn past sources without parts (only concurrent sources can know they have none).
  void skip_empty_sources()
  {
    while (turn_.source < states_.size() && states_[turn_.source].concurrent && *states_[turn_.source].count == 0) {
      ++turn_.source;
    }
  }

  void fail(std::exception_ptr e)
  {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure_) { failure_ = e; }
      stopping_.store(true);
    }
    changed_.notify_all();
    {
      std::lock_guard<std::mutex> lock(turn_mutex_);
    }
    turn_changed_.notify_all();
    sink_.stop();
  }

  std::vector<part_source*> const& sources_;
  filter_rules const& rules_;
  schedule_options options_;
  part_sink& sink_;
  read_progress* progress_;

  std::mutex mutex_;
  std::condition_variable changed_;  // a sequential source became free, or the job stops
  std::vector<source_state> states_;
  std::size_t first_open_{0};

  std::mutex turn_mutex_;
  std::condition_variable turn_changed_;
  part_ticket turn_{};

  std::atomic<bool> stopping_{false};
  std::exception_ptr failure_;
  std::vector<worker_times> workers_;
};

}  // namespace

read_report read_parts(std::vector<part_source*> const& sources, filter_rules const& rules,
                       schedule_options const& options, part_sink& sink, read_progress* progress)
{
  scheduler s(sources, rules, options, sink, progress);
  return s.run();
}

std::vector<part_source*> source_pointers(std::vector<std::unique_ptr<part_source>> const& owned)
{
  std::vector<part_source*> out;
  out.reserve(owned.size());
  for (auto const& s : owned) { out.push_back(s.get()); }
  return out;
}

}  // namespace heightgrid::app
