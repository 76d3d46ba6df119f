#pragma once
// HG_CUDA_TRY: CUDA failures become heightgrid::error exceptions that carry the call, the CUDA
// error and the source location (preconditions: HG_EXPECTS of core/error.hpp). Nothing here exits
// or logs.
//
//   HG_CUDA_TRY(cudaMemsetAsync(p, 0, bytes, stream));
//     -> error(device, "cudaMemsetAsync(p, 0, bytes, stream) failed: invalid argument
//                       (cudaErrorInvalidValue) at kernels/src/device_csr.cu:42")
//   out of memory -> error(resource, "... needed 512 MiB, 130 MiB free of 81079 MiB on NVIDIA H100
//                          80GB HBM3; try --device cpu or a coarser grid")

#include "heightgrid/core/error.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace heightgrid::detail {

/// Where a failed allocation was to live, for the out-of-memory message.
enum class memory_space { device, pinned_host };

inline std::string mebibytes(std::size_t bytes)
{
  constexpr std::size_t mib = std::size_t{1} << 20;
  return std::to_string((bytes + mib - 1) / mib) + " MiB";
}

/// The out-of-memory error: how much was asked for, and how much the device has.
[[noreturn]] inline void throw_out_of_memory(char const* call, std::size_t bytes, memory_space space,
                                             char const* file, int line)
{
  cudaGetLastError();  // allocation failures are not sticky: clear them for the next check
  std::string msg = std::string(call) + " failed: out of " +
                    (space == memory_space::device ? "device" : "pinned host") + " memory";
  if (bytes > 0) { msg += ": needed " + mebibytes(bytes); }
  if (space == memory_space::device) {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && cudaGetDevice(&device) == cudaSuccess &&
        cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
      msg += (bytes > 0 ? ", " : ": ") + mebibytes(free_bytes) + " free of " + mebibytes(total_bytes) + " on " + prop.name;
    }
    cudaGetLastError();
  }
  msg += "; try --device cpu or a coarser grid (at " + source_location(file, line) + ")";
  if (space == memory_space::device) { throw device_memory_error(msg); }
  throw error(error_kind::resource, msg);
}

/// Any other CUDA failure.
[[noreturn]] inline void throw_cuda_error(cudaError_t status, char const* call, char const* file, int line)
{
  if (status == cudaErrorMemoryAllocation) { throw_out_of_memory(call, 0, memory_space::device, file, line); }
  cudaGetLastError();  // leave no stale non-sticky error behind for the next launch check
  throw error(error_kind::device, std::string(call) + " failed: " + cudaGetErrorString(status) + " (" +
                                    cudaGetErrorName(status) + ") at " + source_location(file, line));
}

inline void check_cuda(cudaError_t status, char const* call, char const* file, int line)
{
  if (status != cudaSuccess) { throw_cuda_error(status, call, file, line); }
}

inline void check_alloc(cudaError_t status, char const* call, std::size_t bytes, memory_space space,
                        char const* file, int line)
{
  if (status == cudaErrorMemoryAllocation) { throw_out_of_memory(call, bytes, space, file, line); }
  check_cuda(status, call, file, line);
}

}  // namespace heightgrid::detail

/// Throws heightgrid::error(error_kind::device, ...) (error_kind::resource for out of memory)
/// unless `call` returns cudaSuccess.
#define HG_CUDA_TRY(call) ::heightgrid::detail::check_cuda((call), #call, __FILE__, __LINE__)

/// HG_CUDA_TRY for an allocation of `bytes` bytes in `space`: out of memory reports sizes.
#define HG_CUDA_TRY_ALLOC(call, bytes, space) \
  ::heightgrid::detail::check_alloc((call), #call, (bytes), (space), __FILE__, __LINE__)
