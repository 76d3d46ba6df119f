#pragma once
// The device as a whole: is there one, what is it, how fast does it read.
// Host-clean: no CUDA header is needed to include this file.

#include <cstddef>
#include <string>

// The CUDA runtime declares exactly this (driver_types.h); repeating it lets host-only code name a
// stream without including CUDA headers. A null stream is the legacy default stream.
struct CUstream_st;
using cudaStream_t = CUstream_st*;

namespace heightgrid {

/// True when a CUDA device is present, the driver works and heightgrid's kernels can run on it.
/// Otherwise false, with the reason in `*reason` (when given): no device, no or too old a
/// driver, a GPU architecture the binary has no code for, or "heightgrid was built without CUDA".
/// Never throws. The answer is computed once per process.
[[nodiscard]] bool gpu_available(std::string* reason = nullptr) noexcept;

/// Whether CUDA device `device` (-1: the calling thread's current one) is there for heightgrid
/// without making its context: the driver starts, the device answers, it supports stream-ordered
/// memory and is not older than the oldest architecture the binary was built for. This is the
/// driver's part of CUDA's start; the context (the rest, and its teardown at exit: docs/benchmarks.md,
/// "LAS on the device") is left to gpu_available() / start_gpu(), which also load the kernels and can
/// still fail (device memory taken by other processes, a binary of real architectures only). Not
/// cached. Never throws.
[[nodiscard]] bool find_gpu(std::string* reason = nullptr, int device = -1) noexcept;

/// How many CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies); 0 when gpu_available()
/// is false, except where it is false because other processes hold the device's memory (the
/// devices are there; a job waits for the memory). Never throws.
[[nodiscard]] int gpu_count() noexcept;

/// The current CUDA device.
struct gpu_device_info {
  std::string name;
  int sm_count{0};
  std::size_t total_mem{0};  ///< bytes
  std::size_t free_mem{0};   ///< bytes, at the time of the query
  int cc_major{0};
  int cc_minor{0};
  std::size_t l2_bytes{0};
};

/// Properties of the current device. Throws error(error_kind::device) without a usable GPU.
[[nodiscard]] gpu_device_info query_device();

/// Device memory free now on CUDA device `device` (-1: the calling thread's current one; >= 0 also
/// makes it current), in bytes. Throws heightgrid::error without a usable GPU.
[[nodiscard]] std::size_t free_device_memory(int device = -1);

/// Device read bandwidth in GB/s (1e9 bytes/s): a streaming read kernel over a `bytes`-sized
/// buffer (rounded down to 16 bytes), median of `repeats` timed runs after one warm-up run.
/// `bytes` should be well above the L2 size (e.g. 1 GiB) to measure DRAM rather than cache.
/// Throws error_kind::usage for bytes < 16 or repeats < 1, error_kind::resource when the buffer
/// does not fit, error_kind::device without a usable GPU.
[[nodiscard]] double measure_read_bandwidth_gbps(std::size_t bytes, int repeats, cudaStream_t stream);

/// Host<->device copy bandwidth in GB/s: cudaMemcpyAsync of `bytes` between a device buffer and
/// page-locked (`pinned`) or ordinary pageable host memory, towards the device when `to_device`;
/// median of `repeats` timed copies after one warm-up. Throws as measure_read_bandwidth_gbps.
[[nodiscard]] double measure_copy_gbps(std::size_t bytes, int repeats, bool pinned, bool to_device, cudaStream_t stream);

/// What CUDA costs a process before its first batch, step by step, in seconds (wall clock): the
/// fixed cost that a GPU job pays and a CPU job does not (heightgrid limits reports it).
struct cuda_start_times {
  double runtime_s{0.0};   ///< the driver and runtime (cudaGetDeviceCount: cuInit)
  double runtime_cpu_s{0.0};  ///< the process's CPU time meanwhile (every thread): a core's share of it
  double context_s{0.0};   ///< the device's primary context (cudaFree(nullptr) after cudaSetDevice)
  double kernel_s{0.0};    ///< loading one kernel (lazy module loading)
  double allocate_s{0.0};  ///< the first stream-ordered allocation of 64 MiB (the memory pool)
  double register_s{0.0};  ///< page-locking `register_bytes` of host memory already touched
  std::size_t register_bytes{0};
  double total_s() const noexcept { return runtime_s + context_s + kernel_s + allocate_s + register_s; }
};

/// Measures CUDA's start in this process. Meaningful only as the process's first CUDA call (later
/// calls find the runtime and context up and measure little). Throws error(error_kind::device)
/// where CUDA cannot start, with the reason.
[[nodiscard]] cuda_start_times measure_cuda_start(std::size_t register_bytes);

/// Seconds cudaDeviceReset() takes: the teardown that the runtime otherwise does at process exit.
/// Ends every use of the device in this process.
[[nodiscard]] double measure_cuda_teardown();

/// Ends this process's use of CUDA device `device` (-1: the calling thread's current one): every
/// allocation, stream and the primary context go (cudaDeviceReset). False where the reset failed.
bool release_device(int device) noexcept;

/// Holds a stream back until open() is called, so that work the host enqueues behind it runs on the
/// device back to back, without the host's launch latency between its operations. CUDA events
/// around that work then time the device alone: the gaps of a few microseconds in which the device
/// waits for the host's next launch would otherwise count, and on 5-10 us kernels they vary from run
/// to run by more than the kernels do (docs/benchmarks-history.md, "Timing small kernels").
/// The constructor enqueues a one-thread kernel that polls a flag in mapped host memory (and sleeps
/// between polls); open() sets the flag. If the flag is not set within `timeout_ms` the kernel
/// returns anyway and timed_out() says so once the stream has passed it: a stream must never hang
/// on a host that threw or that waits for the stream itself (a synchronizing call behind the gate).
/// The destructor opens the gate. Enqueue nothing that synchronizes with the host behind a gate,
/// and only kernels that have run before: on an H100 a gated run whose kernels had not run yet
/// waited for the gate's timeout, most likely because CUDA's lazy module loading (the default)
/// loads a kernel at its first launch and that waited for the gated stream.
/// Throws error(error_kind::device) without a usable GPU.
/// Example: stream_gate gate(s); launch(s); record(stop, s); gate.open(); sync(stop).
class stream_gate {
 public:
  explicit stream_gate(cudaStream_t stream, double timeout_ms = 1000.0);
  stream_gate(stream_gate const&) = delete;
  stream_gate& operator=(stream_gate const&) = delete;
  ~stream_gate();

  /// Lets the stream go on. Idempotent.
  void open() noexcept;
  /// Whether the gate gave up waiting for open(); meaningful once the stream has passed the gate.
  [[nodiscard]] bool timed_out() const noexcept;

 private:
  cudaStream_t stream_{nullptr};
  unsigned int volatile* flags_{nullptr};  ///< [0] open (host writes), [1] timed out (device writes)
};

/// Where the time of a device pipeline went, in milliseconds, measured with CUDA events on the
/// stream (so host work that stalls the stream is included in the phase that waits for it).
struct gpu_phase_times {
  double h2d_ms{0.0};       ///< x, y, z host -> device (pinned staging)
  double cell_ids_ms{0.0};  ///< grid_spec::cell_of for every point
  double csr_ms{0.0};       ///< cell ids -> CSR (radix sort)
  double reduce_ms{0.0};    ///< the reduce mode, output bands included
  double d2h_ms{0.0};       ///< requested bands device -> host
  double total_ms{0.0};     ///< the whole call, staging allocations and host waits included
};

}  // namespace heightgrid
