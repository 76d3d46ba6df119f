#pragma once
// device_buffer<T>: RAII, move-only, stream-ordered device memory (cudaMallocAsync/cudaFreeAsync),
// like rmm::device_uvector without initialization. The memory is freed on the stream it was
// allocated on, after all work already queued there.

#include "detail/infra/cuda_check.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

namespace heightgrid::detail {

template <typename T>
class device_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "device_buffer holds trivially copyable values");

 public:
  device_buffer() noexcept = default;

  /// `size` uninitialized elements on `stream` (no allocation for 0).
  device_buffer(std::size_t size, cudaStream_t stream) : stream_(stream)
  {
    if (size == 0) { return; }
    HG_EXPECTS(size <= std::numeric_limits<std::size_t>::max() / sizeof(T), error_kind::resource,
            "device buffer of " + std::to_string(size) + " elements is too large");
    void* p = nullptr;
    HG_CUDA_TRY_ALLOC(cudaMallocAsync(&p, size * sizeof(T), stream), size * sizeof(T), memory_space::device);
    data_ = static_cast<T*>(p);
    size_ = size;
  }

  device_buffer(device_buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), stream_(other.stream_)
  {
  }

  device_buffer& operator=(device_buffer&& other) noexcept
  {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      stream_ = other.stream_;
    }
    return *this;
  }

  device_buffer(device_buffer const&) = delete;
  device_buffer& operator=(device_buffer const&) = delete;
  ~device_buffer() { reset(); }

  /// Frees the memory now (stream-ordered); the buffer becomes empty.
  void reset() noexcept
  {
    if (data_ != nullptr) {
      // A destructor cannot throw; a failed free leaves nothing to recover, so the error is
      // cleared rather than left for the next unrelated check to report.
      if (cudaFreeAsync(data_, stream_) != cudaSuccess) { cudaGetLastError(); }
    }
    data_ = nullptr;
    size_ = 0;
  }

  /// Sets every byte to `value` (stream-ordered).
  void fill_bytes(int value, cudaStream_t stream)
  {
    if (size_ > 0) { HG_CUDA_TRY(cudaMemsetAsync(data_, value, bytes(), stream)); }
  }

  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] T const* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }

 private:
  T* data_{nullptr};
  std::size_t size_{0};
  cudaStream_t stream_{nullptr};
};

}  // namespace heightgrid::detail
