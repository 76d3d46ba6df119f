#pragma once
// device_hold: another holder of the device's memory inside a test (as a process next to the job
// would be): cudaMalloc until at most `leave` bytes stay free. The pool of stream-ordered
// allocations (cudaMallocAsync, which the binner and the job use) is trimmed first, so that it
// holds nothing they could reuse, and cannot borrow from the held memory. Tests built with CUDA.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

namespace heightgrid::test {

inline std::size_t free_device_bytes()
{
  std::size_t free_bytes = 0, total_bytes = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  return free_bytes;
}

class device_hold {
 public:
  explicit device_hold(std::size_t leave)
  {
    constexpr std::size_t mib = std::size_t{1} << 20;
    int device = 0;
    cudaMemPool_t pool = nullptr;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
    EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, device), cudaSuccess);
    EXPECT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    std::size_t piece = std::size_t{4} << 30;
    for (;;) {
      std::size_t const now = free_device_bytes();
      if (now <= leave + 2 * mib || piece < 2 * mib) { break; }
      void* p = nullptr;
      std::size_t const want = std::min(piece, now - leave);
      if (cudaMalloc(&p, want) != cudaSuccess) {
        (void)cudaGetLastError();
        piece /= 2;
        continue;
      }
      held_.push_back(p);
    }
  }
  device_hold(device_hold const&) = delete;
  device_hold& operator=(device_hold const&) = delete;
  ~device_hold()
  {
    join();
    release();
  }

  void release()
  {
    for (void* p : held_) { (void)cudaFree(p); }
    held_.clear();
  }
  /// release() after `ms` milliseconds, on a thread of its own (joined by the destructor).
  void release_after(int ms)
  {
    releaser_ = std::thread([this, ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      release();
    });
  }
  void join()
  {
    if (releaser_.joinable()) { releaser_.join(); }
  }

 private:
  std::vector<void*> held_;
  std::thread releaser_;
};

}  // namespace heightgrid::test
