// gpu_memory_hold LEAVE_MIB SECONDS: takes the current GPU's memory with cudaMalloc until at most
// LEAVE_MIB MiB stay free, prints what it holds, sleeps SECONDS and frees it — another process
// holding the device's memory, for trying several heightgrid jobs on one GPU (docs/benchmarks.md,
// "Several processes on one GPU"). A test tool, built only with CUDA.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv)
{
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpu_memory_hold LEAVE_MIB SECONDS\n");
    return 2;
  }
  constexpr std::size_t mib = std::size_t{1} << 20;
  std::size_t const leave = std::stoull(argv[1]) * mib;
  double const seconds = std::stod(argv[2]);
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    std::fprintf(stderr, "gpu_memory_hold: no usable GPU\n");
    return 1;
  }
  std::vector<void*> held;
  std::size_t holding = 0;
  std::size_t piece = std::size_t{4} << 30;
  while (piece >= 2 * mib && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && free_bytes > leave + 2 * mib) {
    void* p = nullptr;
    std::size_t const want = std::min(piece, free_bytes - leave);
    if (cudaMalloc(&p, want) != cudaSuccess) {
      (void)cudaGetLastError();
      piece /= 2;
      continue;
    }
    held.push_back(p);
    holding += want;
  }
  std::printf("gpu_memory_hold: holding %zu MiB, %zu MiB free of %zu for %.1f s\n", holding / mib, free_bytes / mib,
              total_bytes / mib, seconds);
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  for (void* p : held) { (void)cudaFree(p); }
  std::printf("gpu_memory_hold: released\n");
  return 0;
}
