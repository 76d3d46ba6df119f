// The device as a whole: availability (once per process), properties, the memory-pool setup, and
// the streaming read kernel that measures bandwidth (and doubles as the CUDA smoke test).

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/device_context.cuh"
#include "detail/infra/launch.cuh"
#include "detail/infra/pinned_staging.cuh"
#include "heightgrid/kernels/gpu.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <cstdint>
#include <ctime>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid {
namespace detail {

struct read_policy {
  static constexpr int block_threads = 256;
  static constexpr int loads_per_iteration = 4;  ///< independent 16-byte loads in flight per thread
};

/// Mapping: grid-stride over 16-byte words, read_policy::loads_per_iteration independent loads per
///   thread per iteration (then a tail loop), folded into an XOR.
/// Preconditions: in has n entries; sink has 1 entry.
/// Result: nothing useful; sink[0] is written only if the XOR of everything a thread read equals a
///   constant the caller never stores, which keeps the loads alive without a store per thread.
/// Example: n = 4, every word 0 -> the XORs are 0, sink untouched.
static __global__ void __launch_bounds__(read_policy::block_threads)
  read_bandwidth_grid_stride_kernel(uint4 const* __restrict__ in, std::uint64_t n, unsigned int* sink)
{
  constexpr unsigned int never = 0x9e3779b9U;
  unsigned int acc = 0;
  std::uint64_t const stride = grid_threads();
  std::uint64_t i = global_thread_index();
  for (; i + (read_policy::loads_per_iteration - 1) * stride < n; i += read_policy::loads_per_iteration * stride) {
    uint4 v[read_policy::loads_per_iteration];
#pragma unroll
    for (int k = 0; k < read_policy::loads_per_iteration; ++k) { v[k] = in[i + static_cast<std::uint64_t>(k) * stride]; }
#pragma unroll
    for (int k = 0; k < read_policy::loads_per_iteration; ++k) { acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w; }
  }
  for (; i < n; i += stride) {
    uint4 const v = in[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == never) { sink[0] = acc; }
}

/// Mapping: one thread.
/// Preconditions: flags is mapped host memory of 2 entries, flags[1] == 0.
/// Result: returns once flags[0] != 0, or after timeout_ns of the device's global timer with
///   flags[1] = 1. Polls every ~2 us (__nanosleep), so a closed gate costs the device nothing else.
/// Example: the host sets flags[0] = 1 after 30 us: the kernel returns ~30 us after it started.
static __global__ void stream_gate_kernel(unsigned int volatile* flags, unsigned long long timeout_ns)
{
  auto const now = [] {
    unsigned long long t = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  };
  unsigned long long const start = now();
  while (flags[0] == 0U) {
    if (now() - start > timeout_ns) {
      flags[1] = 1U;
      return;
    }
    __nanosleep(2000);
  }
}

namespace {

struct availability {
  bool ok{false};
  std::string reason;
  bool memory{false};  ///< CUDA could not start for want of device memory (others may free it)
};

std::string describe(cudaError_t status)
{
  return std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
}

/// The device without its context: driver, device, its properties, the oldest architecture the
/// binary targets (__CUDA_ARCH_LIST__: the virtual ones, whose PTX a newer device compiles). Costs
/// the driver's start (cuInit), not the context's (docs/benchmarks.md, "LAS on the device").
/// `device` < 0: the calling thread's current device (no context is made for it either way).
/// `found`: where given, the device probed and its properties (valid when the answer is ok).
availability probe_driver(int device, std::pair<int, cudaDeviceProp>* found = nullptr) noexcept
{
  try {
    int count = 0;
    if (auto const status = cudaGetDeviceCount(&count); status != cudaSuccess) {
      cudaGetLastError();
      switch (status) {
        case cudaErrorNoDevice: return {false, std::string("no CUDA device found (") + cudaGetErrorName(status) + ")"};
        case cudaErrorInsufficientDriver:
          return {false, std::string("no NVIDIA driver, or one older than this CUDA runtime needs (") +
                           cudaGetErrorName(status) + ")"};
        default: return {false, "CUDA is not usable: " + describe(status)};
      }
    }
    if (count == 0) { return {false, "no CUDA device found"}; }
    if (device >= count) {
      return {false, "GPU " + std::to_string(device) + " asked for, but this machine has " + std::to_string(count)};
    }
    if (device < 0) {
      if (auto const status = cudaGetDevice(&device); status != cudaSuccess) {
        cudaGetLastError();
        return {false, "cannot select a CUDA device: " + describe(status)};
      }
    }
    cudaDeviceProp prop{};
    if (auto const status = cudaGetDeviceProperties(&prop, device); status != cudaSuccess) {
      cudaGetLastError();
      return {false, "cannot query the CUDA device: " + describe(status)};
    }
    // Every buffer is stream-ordered (cudaMallocAsync), which needs memory-pool support.
    int pools = 0;
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess || pools == 0) {
      cudaGetLastError();
      return {false, std::string(prop.name) + " does not support stream-ordered memory allocation"};
    }
#if defined(__CUDA_ARCH_LIST__)
    constexpr int targets[] = {__CUDA_ARCH_LIST__};  // ascending, e.g. 900 for compute_90
    if (prop.major * 100 + prop.minor * 10 < targets[0]) {
      return {false, "heightgrid's kernels cannot run on " + std::string(prop.name) + " (compute capability " +
                       std::to_string(prop.major) + "." + std::to_string(prop.minor) + "): built for " +
                       std::to_string(targets[0] / 100) + "." + std::to_string(targets[0] / 10 % 10) + " and newer"};
    }
#endif
    if (found != nullptr) { *found = {device, prop}; }
    return {true, {}};
  } catch (...) {  // std::string allocation: the one thing above that throws
    return {false, "probing the CUDA device failed"};
  }
}

availability probe() noexcept
{
  try {
    std::pair<int, cudaDeviceProp> found{};
    if (auto a = probe_driver(-1, &found); !a.ok) { return a; }
    cudaDeviceProp const& prop = found.second;
    // The binary carries code for the architectures it was built for only (CMAKE_CUDA_ARCHITECTURES):
    // asking for a kernel's attributes fails if none of them runs on this device.
    cudaFuncAttributes attributes{};
    if (auto const status = cudaFuncGetAttributes(&attributes, read_bandwidth_grid_stride_kernel);
        status != cudaSuccess) {
      cudaGetLastError();
      if (status == cudaErrorMemoryAllocation) {
        // Loading the module creates the context: the device's memory is taken (by other processes).
        return {false, "out of device memory while starting CUDA on " + std::string(prop.name) + ": " + describe(status),
                true};
      }
      return {false, "heightgrid's kernels cannot run on " + std::string(prop.name) + " (compute capability " +
                       std::to_string(prop.major) + "." + std::to_string(prop.minor) + "): " + describe(status)};
    }
    return {true, {}};
  } catch (...) {  // std::string allocation: the one thing above that throws
    return {false, "probing the CUDA device failed"};
  }
}

/// The probe's answer, once per process — except a start that failed for want of device memory,
/// which is probed again on the next call (other processes may have freed it).
availability cached_availability() noexcept
{
  static std::mutex mutex;
  static std::optional<availability> cached;
  std::lock_guard<std::mutex> const lock(mutex);
  if (!cached || (!cached->ok && cached->memory)) { cached = probe(); }
  try {
    return *cached;
  } catch (...) {  // copying the reason: out of host memory
    return {cached->ok, {}, cached->memory};
  }
}

}  // namespace

void require_device()
{
  auto const a = cached_availability();
  if (!a.ok && a.memory) { throw device_memory_error("no usable GPU: " + a.reason); }
  if (!a.ok) { throw error(error_kind::device, "no usable GPU: " + a.reason); }

  static std::mutex mutex;
  static std::set<int> configured;
  int device = 0;
  HG_CUDA_TRY(cudaGetDevice(&device));
  std::lock_guard<std::mutex> const lock(mutex);
  if (configured.count(device) == 0) {
    cudaMemPool_t pool = nullptr;
    HG_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device));
    std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
    HG_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    configured.insert(device);
  }
}

}  // namespace detail

bool detail::probe_device(std::string* reason, bool* memory_short) noexcept
{
  auto const a = detail::cached_availability();
  if (memory_short != nullptr) { *memory_short = !a.ok && a.memory; }
  if (reason != nullptr && !a.ok) {
    try {
      *reason = a.reason;
    } catch (...) {  // out of memory copying a short string: leave the reason as it was
    }
  }
  return a.ok;
}

bool gpu_available(std::string* reason) noexcept { return detail::probe_device(reason, nullptr); }

bool find_gpu(std::string* reason, int device) noexcept
{
  auto const a = detail::probe_driver(device);
  if (reason != nullptr && !a.ok) {
    try {
      *reason = a.reason;
    } catch (...) {  // out of memory copying a short string: leave the reason as it was
    }
  }
  return a.ok;
}

int gpu_count() noexcept
{
  // Devices whose memory other processes hold are there: a job waits for the memory (--gpus under
  // MPI ranks that share a GPU failed here before its wait began).
  bool memory_short = false;
  if (!detail::probe_device(nullptr, &memory_short) && !memory_short) { return 0; }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

gpu_device_info query_device()
{
  detail::require_device();
  int device = 0;
  HG_CUDA_TRY(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  HG_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  gpu_device_info info;
  HG_CUDA_TRY(cudaMemGetInfo(&info.free_mem, &info.total_mem));
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  return info;
}

std::size_t free_device_memory(int device)
{
  if (device >= 0) { HG_CUDA_TRY(cudaSetDevice(device)); }
  detail::require_device();
  std::size_t free_bytes = 0, total_bytes = 0;
  HG_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

stream_gate::stream_gate(cudaStream_t stream, double timeout_ms) : stream_(stream)
{
  HG_EXPECTS(timeout_ms > 0.0 && timeout_ms <= 60000.0, error_kind::usage,
          "stream_gate: timeout " + std::to_string(timeout_ms) + " ms is not in (0, 60000]");
  detail::require_device();
  void* host = nullptr;
  HG_CUDA_TRY(cudaHostAlloc(&host, 2 * sizeof(unsigned int), cudaHostAllocMapped));
  flags_ = static_cast<unsigned int volatile*>(host);
  flags_[0] = 0U;
  flags_[1] = 0U;
  try {
    void* device = nullptr;
    HG_CUDA_TRY(cudaHostGetDevicePointer(&device, host, 0));
    auto const timeout_ns = static_cast<unsigned long long>(timeout_ms * 1e6);
    detail::stream_gate_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned int volatile*>(device), timeout_ns);
    HG_CUDA_CHECK_LAUNCH();
  } catch (...) {
    (void)cudaFreeHost(host);
    throw;
  }
}

stream_gate::~stream_gate()
{
  open();
  // The kernel must be done with the page before it is freed.
  (void)cudaStreamSynchronize(stream_);
  (void)cudaFreeHost(const_cast<unsigned int*>(flags_));
}

void stream_gate::open() noexcept { flags_[0] = 1U; }

bool stream_gate::timed_out() const noexcept { return flags_[1] != 0U; }

namespace {

/// Median CUDA-event time of `repeats` runs of `run` on `stream`, after one untimed warm-up run
/// (first touch, clocks, instruction cache).
template <typename Run>
double median_ms(Run const& run, int repeats, cudaStream_t stream)
{
  run();
  std::vector<float> ms;
  detail::cuda_event start;
  detail::cuda_event stop;
  for (int r = 0; r < repeats; ++r) {
    start.record(stream);
    run();
    stop.record(stream);
    ms.push_back(detail::elapsed_ms(start, stop));
  }
  std::sort(ms.begin(), ms.end());
  return ms.size() % 2 == 1 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
}

double gigabytes_per_second(double bytes, double ms) { return ms > 0.0 ? bytes / (ms * 1e-3) / 1e9 : 0.0; }

}  // namespace

double measure_copy_gbps(std::size_t bytes, int repeats, bool pinned, bool to_device, cudaStream_t stream)
{
  HG_EXPECTS(bytes >= 1 && repeats >= 1, error_kind::usage, "measure_copy_gbps: bytes and repeats must be at least 1");
  detail::require_device();
  detail::device_buffer<std::byte> device(bytes, stream);
  detail::pinned_buffer locked(pinned ? bytes : 0);
  std::vector<std::byte> pageable(pinned ? 0 : bytes, std::byte{0x5a});
  std::byte* host = pinned ? locked.data() : pageable.data();
  if (pinned) { std::fill(host, host + bytes, std::byte{0x5a}); }  // touched: no first-touch faults in the timing
  auto const run = [&] {
    if (to_device) {
      HG_CUDA_TRY(cudaMemcpyAsync(device.data(), host, bytes, cudaMemcpyHostToDevice, stream));
    } else {
      HG_CUDA_TRY(cudaMemcpyAsync(host, device.data(), bytes, cudaMemcpyDeviceToHost, stream));
    }
  };
  return gigabytes_per_second(static_cast<double>(bytes), median_ms(run, repeats, stream));
}

cuda_start_times measure_cuda_start(std::size_t register_bytes)
{
  using clock = std::chrono::steady_clock;
  auto const seconds = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  // The process's CPU time (every thread's): the driver's start takes a core where it computes.
  auto const cpu_seconds = [] {
    timespec ts{};
    return ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0 ? static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9 : 0.0;
  };
  cuda_start_times times;
  double const cpu0 = cpu_seconds();
  auto t = clock::now();
  int count = 0;
  HG_CUDA_TRY(cudaGetDeviceCount(&count));
  times.runtime_s = seconds(t);
  times.runtime_cpu_s = std::max(0.0, cpu_seconds() - cpu0);
  HG_EXPECTS(count > 0, error_kind::device, "no CUDA device found");
  t = clock::now();
  int device = 0;
  HG_CUDA_TRY(cudaGetDevice(&device));
  HG_CUDA_TRY(cudaSetDevice(device));
  HG_CUDA_TRY(cudaFree(nullptr));
  times.context_s = seconds(t);
  t = clock::now();
  cudaFuncAttributes attributes{};
  HG_CUDA_TRY(cudaFuncGetAttributes(&attributes, detail::read_bandwidth_grid_stride_kernel));
  times.kernel_s = seconds(t);
  t = clock::now();
  {
    detail::device_buffer<std::byte> buffer(std::size_t{64} << 20, nullptr);
    HG_CUDA_TRY(cudaStreamSynchronize(nullptr));
  }
  HG_CUDA_TRY(cudaStreamSynchronize(nullptr));
  times.allocate_s = seconds(t);
  if (register_bytes > 0) {
    std::size_t const bytes = (register_bytes + 4095) / 4096 * 4096;
    std::unique_ptr<std::byte, void (*)(std::byte*)> host(static_cast<std::byte*>(std::aligned_alloc(4096, bytes)),
                                                          [](std::byte* p) { std::free(p); });
    HG_EXPECTS(host != nullptr, error_kind::resource,
               "cannot allocate " + std::to_string(bytes >> 20) + " MiB of host memory to page-lock");
    std::fill(host.get(), host.get() + bytes, std::byte{0});  // touched: the faults are not CUDA's
    t = clock::now();
    HG_CUDA_TRY(cudaHostRegister(host.get(), bytes, cudaHostRegisterDefault));
    times.register_s = seconds(t);
    times.register_bytes = bytes;
    HG_CUDA_TRY(cudaHostUnregister(host.get()));
  }
  return times;
}

double measure_cuda_teardown()
{
  auto const t = std::chrono::steady_clock::now();
  HG_CUDA_TRY(cudaDeviceReset());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool release_device(int device) noexcept
{
  if (device >= 0 && cudaSetDevice(device) != cudaSuccess) { return false; }
  return cudaDeviceReset() == cudaSuccess;
}

double measure_read_bandwidth_gbps(std::size_t bytes, int repeats, cudaStream_t stream)
{
  using policy = detail::read_policy;
  HG_EXPECTS(bytes >= sizeof(uint4), error_kind::usage,
          "measure_read_bandwidth_gbps: " + std::to_string(bytes) + " bytes is less than one 16-byte word");
  HG_EXPECTS(repeats >= 1, error_kind::usage,
          "measure_read_bandwidth_gbps: repeats must be at least 1, not " + std::to_string(repeats));
  detail::require_device();

  std::uint64_t const words = bytes / sizeof(uint4);
  detail::device_buffer<uint4> data(words, stream);
  detail::device_buffer<unsigned int> sink(1, stream);
  data.fill_bytes(0x5a, stream);

  // Enough resident blocks to fill every SM, no more: the kernel loops grid-stride.
  int device = 0;
  int sm_count = 0;
  int blocks_per_sm = 0;
  HG_CUDA_TRY(cudaGetDevice(&device));
  HG_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  HG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, detail::read_bandwidth_grid_stride_kernel,
                                                         policy::block_threads, 0));
  auto const blocks =
    std::min(detail::grid_blocks(words, policy::block_threads),
             static_cast<unsigned int>(std::max(1, sm_count) * std::max(1, blocks_per_sm)));

  auto const run = [&] {
    detail::read_bandwidth_grid_stride_kernel<<<blocks, policy::block_threads, 0, stream>>>(data.data(), words,
                                                                                           sink.data());
    HG_CUDA_CHECK_LAUNCH();
  };
  return gigabytes_per_second(static_cast<double>(words * sizeof(uint4)), median_ms(run, repeats, stream));
}

}  // namespace heightgrid
