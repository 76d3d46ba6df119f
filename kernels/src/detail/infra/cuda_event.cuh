#pragma once
// cuda_event: RAII CUDA event, and the elapsed time between two of them.

#include "detail/infra/cuda_check.cuh"

#include <cuda_runtime_api.h>

#include <utility>

namespace heightgrid::detail {

class cuda_event {
 public:
  /// cudaEventDefault records timestamps; cudaEventDisableTiming is cheaper for pure ordering.
  explicit cuda_event(unsigned int flags = cudaEventDefault) { HG_CUDA_TRY(cudaEventCreateWithFlags(&event_, flags)); }
  cuda_event(cuda_event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  cuda_event& operator=(cuda_event&& other) noexcept
  {
    std::swap(event_, other.event_);
    return *this;
  }
  cuda_event(cuda_event const&) = delete;
  cuda_event& operator=(cuda_event const&) = delete;
  ~cuda_event()
  {
    if (event_ != nullptr && cudaEventDestroy(event_) != cudaSuccess) { cudaGetLastError(); }
  }

  void record(cudaStream_t stream) { HG_CUDA_TRY(cudaEventRecord(event_, stream)); }
  /// Waits for the work before the last record(); returns at once if never recorded.
  void synchronize() const { HG_CUDA_TRY(cudaEventSynchronize(event_)); }
  [[nodiscard]] cudaEvent_t get() const noexcept { return event_; }

 private:
  cudaEvent_t event_{nullptr};
};

/// Milliseconds between two recorded timing events; waits for `stop`.
inline float elapsed_ms(cuda_event const& start, cuda_event const& stop)
{
  stop.synchronize();
  float ms = 0.0F;
  HG_CUDA_TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

}  // namespace heightgrid::detail
