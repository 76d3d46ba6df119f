#include "limits_command.hpp"

#include "options.hpp"
#include "pipeline/grid_job.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

namespace heightgrid::app {
namespace {

/// Reads every file once with `threads` threads (8 MiB preads); returns bytes / seconds / 1e9.
double read_files_gbps(std::vector<std::string> const& files, unsigned threads, std::uint64_t& total)
{
  constexpr std::size_t block = std::size_t{8} << 20;
  struct piece {
    std::size_t file;
    std::uint64_t offset;
  };
  std::vector<piece> pieces;
  std::vector<std::uint64_t> sizes;
  total = 0;
  for (std::size_t f = 0; f < files.size(); ++f) {
    std::error_code ec;
    auto const size = std::filesystem::file_size(files[f], ec);
    HG_EXPECTS(!ec, error_kind::input, files[f] + ": cannot read its size: " + ec.message());
    sizes.push_back(size);
    total += size;
    for (std::uint64_t o = 0; o < size; o += block) { pieces.push_back({f, o}); }
  }
  std::vector<int> fds;
  for (auto const& f : files) {
    int const fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      for (int d : fds) { ::close(d); }
      throw error(error_kind::input, f + ": cannot open for reading: " + std::strerror(errno));
    }
    fds.push_back(fd);
  }
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  auto const start = std::chrono::steady_clock::now();
  auto const work = [&] {
    std::vector<char> buffer(block);
    for (std::size_t i = next++; i < pieces.size() && !failed; i = next++) {
      auto const& p = pieces[i];
      std::size_t const want = static_cast<std::size_t>(std::min<std::uint64_t>(block, sizes[p.file] - p.offset));
      if (::pread(fds[p.file], buffer.data(), want, static_cast<off_t>(p.offset)) != static_cast<ssize_t>(want)) {
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) { pool.emplace_back(work); }
  work();
  for (auto& t : pool) { t.join(); }
  double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int d : fds) { ::close(d); }
  HG_EXPECTS(!failed, error_kind::input, "a file shrank while it was read");
  return s > 0.0 ? static_cast<double>(total) / s / 1e9 : 0.0;
}

}  // namespace

CLI::App* add_limits_command(CLI::App& app, limits_options& o)
{
  auto* cmd = app.add_subcommand("limits",
                                 "Measure this machine's limits that grid jobs are judged against: page-cache reads of "
                                 "FILES, host<->device copies and the GPU's read bandwidth");
  cmd->add_option("files", o.files, "Files to read (read once to fill the page cache, then timed)");
  cmd->add_option("--threads", o.threads, "Reading threads for the parallel read (0: one per core)")
    ->default_val(0)
    ->check(CLI::Range(0, 4096));
  cmd->add_option("--copy-size", o.copy_size, "Bytes per timed host<->device copy (e.g. 256M)")->default_val("256M");
  return cmd;
}

int run_limits(limits_options const& o)
{
  std::uint64_t const copy = parse_memory(o.copy_size, "--copy-size");
  HG_EXPECTS(copy > 0, error_kind::usage, "--copy-size must be > 0");
  unsigned const threads = worker_threads(static_cast<unsigned>(o.threads));
  if (!o.files.empty()) {
    std::uint64_t bytes = 0;
    (void)read_files_gbps(o.files, threads, bytes);  // fill the page cache
    double best1 = 0.0, bestn = 0.0;
    for (int r = 0; r < 3; ++r) {
      best1 = std::max(best1, read_files_gbps(o.files, 1, bytes));
      bestn = std::max(bestn, read_files_gbps(o.files, threads, bytes));
    }
    spdlog::info("page-cache read of {} file(s), {:.2f} GB: {:.1f} GB/s on 1 thread, {:.1f} GB/s on {} threads (best of 3)",
                 o.files.size(), static_cast<double>(bytes) / 1e9, best1, bestn, threads);
  }
  // First, before anything else starts CUDA in this process: what a GPU job pays before its first batch.
  std::optional<cuda_start_times> start;
  try {
    start = measure_cuda_start(static_cast<std::size_t>(copy));
  } catch (error const&) {
    // No usable GPU: gpu_available() below says why.
  }
  std::string reason;
  if (!gpu_available(&reason)) {
    spdlog::info("GPU: none ({})", reason);
    return 0;
  }
  auto const dev = query_device();
  spdlog::info("GPU: {}, {} SMs, {:.1f} GiB", dev.name, dev.sm_count, static_cast<double>(dev.total_mem) / (1u << 30));
  auto const c = static_cast<std::size_t>(copy);
  spdlog::info("host->device: {:.1f} GB/s pinned, {:.1f} GB/s pageable; device->host: {:.1f} GB/s pinned "
               "(cudaMemcpyAsync of {} MiB, median of 5)",
               measure_copy_gbps(c, 5, true, true, nullptr), measure_copy_gbps(c, 5, false, true, nullptr),
               measure_copy_gbps(c, 5, true, false, nullptr), copy >> 20);
  spdlog::info("device read bandwidth: {:.0f} GB/s (1 GiB streamed, median of 10)",
               measure_read_bandwidth_gbps(std::size_t{1} << 30, 10, nullptr));
  if (start) {
    auto const ms = [](double s) { return s * 1e3; };
    spdlog::info("CUDA's start in a new process: {:.0f} ms = runtime and driver {:.0f} ms ({:.0f} ms of CPU), context "
                 "{:.0f} ms, first kernel {:.1f} ms, first 64 MiB allocation {:.1f} ms, page-locking {} MiB {:.1f} ms "
                 "({:.1f} GB/s); teardown (as at exit) {:.0f} ms",
                 ms(start->total_s()), ms(start->runtime_s), ms(start->runtime_cpu_s), ms(start->context_s), ms(start->kernel_s),
                 ms(start->allocate_s), start->register_bytes >> 20, ms(start->register_s),
                 start->register_s > 0.0 ? static_cast<double>(start->register_bytes) / start->register_s / 1e9 : 0.0,
                 ms(measure_cuda_teardown()));
  }
  return 0;
}

}  // namespace heightgrid::app
