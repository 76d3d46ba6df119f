#pragma once
// The entry-point guard shared by every public GPU function.

#include <string>

namespace heightgrid::detail {

/// Throws error(error_kind::device, "no usable GPU: <reason>") unless gpu_available(). On the first
/// call per device it also keeps freed stream-ordered memory in the device's default memory pool
/// (release threshold = unlimited), so repeated runs reuse it instead of remapping it each time.
void require_device();

/// gpu_available() from one probe, and whether it failed for want of device memory (CUDA's context
/// could not be made: other processes hold the memory; probed again on the next call).
bool probe_device(std::string* reason, bool* memory_short) noexcept;

}  // namespace heightgrid::detail
