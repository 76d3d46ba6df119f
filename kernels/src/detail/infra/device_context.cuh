#pragma once
// The entry-point guard shared by every public GPU function.

namespace heightgrid::detail {

/// Throws error(error_kind::device, "no usable GPU: <reason>") unless gpu_available(). On the first
/// call per device it also keeps freed stream-ordered memory in the device's default memory pool
/// (release threshold = unlimited), so repeated runs reuse it instead of remapping it each time.
void require_device();

}  // namespace heightgrid::detail
