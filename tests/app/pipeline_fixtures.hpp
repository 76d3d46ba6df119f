#pragma once
// What the grid-job tests share (pipeline_test.cpp, grid_job_percentile_test.cpp,
// grid_job_gpu_test.cpp): fake point sources over synthetic clouds, an output that keeps the grid
// in memory, and the whole-cloud reference a job is compared with. In a named namespace, not an
// anonymous one, so every file uses the same definitions.

#include "pipeline/grid_job.hpp"

#include "heightgrid/core/binning.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "heightgrid/core/result_compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::app::pipeline_fixtures {

/// Points for a fake source: a random walk (spatially coherent, as LAS files are), z on a 1 mm grid.
struct cloud {
  std::vector<double> x, y, z;
  [[nodiscard]] std::size_t size() const { return x.size(); }
};

inline cloud walk(std::size_t n, double x0, double y0, double extent, std::uint64_t seed)
{
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> step(0.0, 0.5);
  std::uniform_int_distribution<int> zi(-20000, 20000);
  cloud c;
  double x = x0 + extent / 2, y = y0 + extent / 2;
  for (std::size_t i = 0; i < n; ++i) {
    x = std::clamp(x + step(rng), x0, x0 + extent);
    y = std::clamp(y + step(rng), y0, y0 + extent);
    // LAS-like: coordinates on a 1 mm grid, so the scaled-integer and double paths agree.
    c.x.push_back(std::round(x * 1000.0) / 1000.0);
    c.y.push_back(std::round(y * 1000.0) / 1000.0);
    c.z.push_back(zi(rng) * 0.001);
  }
  return c;
}

/// A part_source over a cloud: concurrent (known part count) or sequential; float64 or LAS-like
/// scaled integers (scale 0.001, offset 0); optional declared bounds; a part that throws.
class fake_source final : public part_source {
 public:
  fake_source(cloud c, std::size_t part_points, bool concurrent, bool integers, std::string name)
    : c_(std::move(c)), part_(part_points), concurrent_(concurrent), integers_(integers)
  {
    info_.path = std::move(name);
    info_.point_count = c_.size();
  }

  std::optional<bounds> declared;
  std::optional<std::uint64_t> fail_at;
  std::atomic<int> releases{0};
  std::atomic<int> reads{0};

  [[nodiscard]] source_info const& info() const override { return info_; }
  [[nodiscard]] std::optional<bounds> declared_bounds() const override { return declared; }
  [[nodiscard]] std::optional<std::uint64_t> part_count() const override
  {
    if (!concurrent_) { return std::nullopt; }
    return (c_.size() + part_ - 1) / part_;
  }
  [[nodiscard]] bool concurrent_parts() const override { return concurrent_; }
  [[nodiscard]] std::size_t max_part_points() const override { return part_; }
  void release() override { ++releases; }
  /// As a text file: the point count is not known before reading.
  void forget_count() { info_.point_count.reset(); }

  part_result read_part(std::uint64_t k, filter_rules const& rules, point_batch& out) override
  {
    ++reads;
    if (fail_at && *fail_at == k) { throw error(error_kind::input, info_.path + ": part " + std::to_string(k) + " is corrupt"); }
    if (!concurrent_) {
      if (k == 0) { next_ = 0; }
      EXPECT_EQ(k, next_) << "sequential parts out of order";
      next_ = k + 1;
    }
    part_result r;
    std::size_t const first = static_cast<std::size_t>(k) * part_;
    std::size_t const end = std::min(c_.size(), first + part_);
    r.last = end >= c_.size();
    out.encoding = integers_ ? coord_encoding::scaled_int32 : coord_encoding::float64;
    out.transform = scaled_coords{};
    out.transform.scale[0] = out.transform.scale[1] = out.transform.scale[2] = 0.001;
    std::size_t n = 0;
    for (std::size_t i = first; i < end; ++i) {
      ++r.filtered.points_in;
      auto const v = rules.judge(c_.x[i], c_.y[i], c_.z[i], false, 0, false, 0, false, 0, 0);
      if (v != filter_verdict::keep) {
        filter_rules::count(v, r.filtered);
        continue;
      }
      if (integers_) {
        out.xi()[n] = static_cast<std::int32_t>(std::llround(c_.x[i] * 1000.0));
        out.yi()[n] = static_cast<std::int32_t>(std::llround(c_.y[i] * 1000.0));
        out.zi()[n] = static_cast<std::int32_t>(std::llround(c_.z[i] * 1000.0));
      } else {
        out.x()[n] = c_.x[i];
        out.y()[n] = c_.y[i];
        out.z()[n] = c_.z[i];
      }
      r.extent.extend(out.x_at(n), out.y_at(n));
      r.z_min = std::min(r.z_min, out.z_at(n));
      r.z_max = std::max(r.z_max, out.z_at(n));
      ++n;
    }
    out.size = n;
    return r;
  }

 private:
  cloud c_;
  std::size_t part_;
  bool concurrent_;
  bool integers_;
  source_info info_;
  std::uint64_t next_{0};
};

/// Collects the output grid whole.
class memory_output final : public grid_output {
 public:
  void begin(grid_spec const& g, std::uint64_t max_count) override
  {
    grid = g;
    this->max_count = max_count;
    begun = true;
  }
  void write_rows(std::uint32_t row0, std::uint32_t rows, cell_results const& w) override
  {
    EXPECT_EQ(row0, next_row);
    next_row = row0 + rows;
    windows.push_back(row0);
    auto const append = [](auto& all, auto const& part) { all.insert(all.end(), part.begin(), part.end()); };
    append(bands.min, w.min);
    append(bands.max, w.max);
    append(bands.range, w.range);
    append(bands.count, w.count);
    append(bands.mean, w.mean);
    append(bands.stddev, w.stddev);
    bands.percentile.resize(w.percentile.size());
    bands.percentile_of = w.percentile_of;
    for (std::size_t k = 0; k < w.percentile.size(); ++k) { append(bands.percentile[k], w.percentile[k]); }
    append(bands.prange, w.prange);
    bands.shape.resize(w.shape.size());
    bands.shape_of = w.shape_of;
    for (std::size_t k = 0; k < w.shape.size(); ++k) { append(bands.shape[k], w.shape[k]); }
    append(bands.density, w.density);
  }
  void commit(std::uint64_t) override { committed = true; }
  [[nodiscard]] std::uint32_t block_rows() const override { return blocks; }

  std::uint32_t blocks{0};             ///< the file's block rows to claim (0: none)
  std::vector<std::uint32_t> windows;  ///< the first row of each window written
  grid_spec grid{};
  cell_results bands;
  std::uint64_t max_count{0};
  std::uint32_t next_row{0};
  bool begun{false};
  bool committed{false};
};

struct job_case {
  std::vector<cloud> clouds;
  std::size_t part{1000};
  bool integers{false};
};

inline std::vector<std::unique_ptr<part_source>> sources_of(job_case const& c, std::vector<fake_source*>* raw = nullptr,
                                                            bool declare = true)
{
  std::vector<std::unique_ptr<part_source>> s;
  int i = 0;
  for (auto const& cl : c.clouds) {
    auto p = std::make_unique<fake_source>(cl, c.part, i % 2 == 0, c.integers, "cloud" + std::to_string(i) + ".las");
    if (declare) {
      bounds b;
      for (std::size_t k = 0; k < cl.size(); ++k) { b.extend(cl.x[k], cl.y[k]); }
      p->declared = b;
    }
    if (raw != nullptr) { raw->push_back(p.get()); }
    s.push_back(std::move(p));
    ++i;
  }
  return s;
}

/// The whole-cloud reference: every point in input order, the grid of their bounds (or `fixed`).
inline cell_results reference(job_case const& c, metric_request const& r, double res, grid_spec& grid,
                              std::optional<grid_spec> fixed = std::nullopt)
{
  point_chunk all;
  bounds b;
  for (auto const& cl : c.clouds) {
    all.x.insert(all.x.end(), cl.x.begin(), cl.x.end());
    all.y.insert(all.y.end(), cl.y.begin(), cl.y.end());
    all.z.insert(all.z.end(), cl.z.begin(), cl.z.end());
    for (std::size_t k = 0; k < cl.size(); ++k) { b.extend(cl.x[k], cl.y[k]); }
  }
  grid = fixed ? *fixed : grid_from_bounds(b, res, res);
  binning_stats stats;
  return reduce_cells_cpu(bin_points_cpu(grid, all, stats), r, default_nodata);
}

inline metric_request extremes()
{
  metric_request r;
  r.min = r.max = r.range = r.count = true;
  return r;
}

/// The options of a job of `request` at resolution `res` on `device`, with `threads` workers (0:
/// every core); the rest as a command line leaves it.
inline grid_job_options job_options(metric_request const& request, double res, device_choice device,
                                    unsigned threads = 0)
{
  grid_job_options o;
  o.xres = o.yres = res;
  o.request = request;
  o.device = device;
  o.threads = threads;
  return o;
}

inline void expect_bands(cell_results const& got, cell_results const& want, metric_request const& r,
                         std::uint64_t mean_ulps = 0)
{
  auto const d = first_difference(got, want, r, mean_ulps);
  EXPECT_FALSE(d.has_value()) << d->describe();
}

inline job_case three_clouds(std::size_t part, bool integers)
{
  job_case c;
  c.clouds = {walk(20000, 0, 0, 60, 1), walk(15000, 40, 30, 50, 2), walk(5000, 10, 50, 20, 3)};
  c.part = part;
  c.integers = integers;
  return c;
}

/// A GPU stage's start held back (gpu_stage's before_start hook) until release(), then going on
/// (`succeed`) or failing: the readers of a job on such a stage read ahead while it "starts".
class held_start {
 public:
  explicit held_start(bool succeed = true) : succeed_(succeed) {}
  held_start(held_start const&) = delete;
  held_start& operator=(held_start const&) = delete;
  ~held_start()
  {
    release();
    if (releaser_.joinable()) { releaser_.join(); }
  }
  [[nodiscard]] std::function<bool()> hook()
  {
    return [this] {
      std::unique_lock<std::mutex> lock(mutex_);
      released_cv_.wait(lock, [this] { return released_; });
      return succeed_;
    };
  }
  void release()
  {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    released_cv_.notify_all();
  }
  /// release() after `ms` milliseconds, on a thread of its own.
  void release_after(int ms)
  {
    releaser_ = std::thread([this, ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      release();
    });
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_cv_;
  bool released_{false};
  bool succeed_;
  std::thread releaser_;
};

}  // namespace heightgrid::app::pipeline_fixtures
