#include "pipeline/progress.hpp"

#include "report.hpp"

#include <cmath>
#include <cstdio>

namespace heightgrid::app {

progress_display::progress_display(bool enabled, bool terminal, std::uint64_t total)
  : enabled_(enabled), terminal_(terminal), total_(total)
{
  if (enabled_) { thread_ = std::thread([this] { run(); }); }
}

progress_display::~progress_display()
{
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
}

void progress_display::follow(read_progress const* counter, std::uint64_t done_before, std::string stage)
{
  std::lock_guard<std::mutex> lock(mutex_);
  counter_ = counter;
  before_ = done_before;
  stage_ = std::move(stage);
}

void progress_display::finish()
{
  if (!thread_.joinable()) { return; }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  draw(true);
}

void progress_display::run()
{
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(terminal_ ? 200 : 500));
    if (!stopping_) { draw(false); }
  }
}

void progress_display::draw(bool last)
{
  std::uint64_t const done = before_ + (counter_ != nullptr ? counter_->records.load(std::memory_order_relaxed) : 0);
  double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double const rate = seconds > 0.0 ? static_cast<double>(done) / seconds : 0.0;
  std::string line = stage_.empty() ? std::string() : stage_ + ": ";
  if (total_ > 0) {
    double const fraction = std::min(1.0, static_cast<double>(done) / static_cast<double>(total_));
    if (!terminal_ && !last && fraction * 10.0 < next_tenth_) { return; }
    while (next_tenth_ <= static_cast<int>(fraction * 10.0)) { ++next_tenth_; }
    int const width = 30;
    auto const filled = static_cast<int>(std::lround(fraction * width));
    line += "[" + std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(width - filled), '.') +
            "] ";
    char pct[16];
    std::snprintf(pct, sizeof pct, "%3.0f%% ", 100.0 * fraction);
    line += pct + with_commas(done) + " / " + with_commas(total_) + " points";
    if (rate > 0.0 && !last && done < total_) {
      line += ", " + std::to_string(static_cast<long long>(rate / 1e6)) + " M points/s, " +
              human_seconds(static_cast<double>(total_ - done) / rate) + " left";
    } else if (rate > 0.0) {
      line += ", " + std::to_string(static_cast<long long>(rate / 1e6)) + " M points/s";
    }
  } else {
    if (!terminal_ && !last) { return; }
    line += with_commas(done) + " points, " + std::to_string(static_cast<long long>(rate / 1e6)) + " M points/s";
  }
  if (terminal_) {
    std::fprintf(stderr, "\r%-100s%s", line.c_str(), last ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace heightgrid::app
