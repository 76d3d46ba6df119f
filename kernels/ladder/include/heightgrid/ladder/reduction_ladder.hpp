#pragma once
// The parallel-reduction ladder: the classic kernels 1-7 (interleaved addressing with divergent
// branches ... multiple elements per thread), a warp-shuffle kernel, cub::DeviceReduce as the
// reference and a compensated (Kahan) GPU sum, each reducing one device-resident array to one value.
// `heightgrid bench-reduce` times them against the measured read bandwidth; the tests check every
// kernel x type x op against the CPU (reduction_cpu.hpp, beside this file).
// Host-clean: no CUDA header is needed to include this file.
//
// Conventions every kernel shares:
// - int32 sums accumulate in int64 (exact for any n this memory can hold: |sum| < 2^31 * n); the
//   CPU reference sum_sequential does the same. int32 max, float and double reduce in their type.
// - n = 0 gives the identity: 0 for sum, INT32_MIN / -inf for max.
// - Kernels 1-8 write one partial per block and are run again on the partials until one value
//   remains ("passes"); CUB does its own passes; all of them are inside the timed region. Scratch
//   buffers are allocated in the warm-up run, outside it.

#include "heightgrid/kernels/gpu.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace heightgrid {

/// The rungs of the ladder, numbered as in the issue (and, for 1-7, as in the classic talk).
enum class ladder_kernel {
  interleaved_divergent = 1,  ///< tid % (2*s) == 0: divergent branches in every warp
  interleaved_strided = 2,    ///< index = 2*s*tid: no divergence, shared-memory bank conflicts
  sequential = 3,             ///< s = blockDim/2 ... 1, tid < s: conflict-free, half the threads idle at once
  first_add = 4,              ///< each thread adds two elements while loading: half the blocks
  unroll_last_warp = 5,       ///< the last warp's steps unrolled (with __syncwarp: see its comment)
  complete_unroll = 6,        ///< every step unrolled for the compile-time block size
  multiple_elements = 7,      ///< grid sized from the SM count, grid-stride, 16-byte loads
  warp_shuffle = 8,           ///< as 7, then __shfl_down_sync and one shared slot per warp
  cub = 9,                    ///< cub::DeviceReduce::Reduce: the reference
  kahan = 10,                 ///< compensated sum: per-thread Kahan, partials combined with TwoSum
};

enum class ladder_op { sum, max };

/// Element type of the input.
enum class ladder_type { int32, float32, float64 };

/// "interleaved_divergent", ..., "cub", "kahan".
[[nodiscard]] std::string_view ladder_kernel_name(ladder_kernel kernel) noexcept;
/// A kernel by name or by number ("8" or "warp_shuffle").
[[nodiscard]] std::optional<ladder_kernel> parse_ladder_kernel(std::string_view text) noexcept;
/// Every kernel, in ladder order: tests and the benchmark iterate over this list.
[[nodiscard]] std::vector<ladder_kernel> all_ladder_kernels();

[[nodiscard]] std::string_view ladder_op_name(ladder_op op) noexcept;  ///< "sum", "max"
[[nodiscard]] std::optional<ladder_op> parse_ladder_op(std::string_view text) noexcept;
[[nodiscard]] std::string_view ladder_type_name(ladder_type type) noexcept;  ///< "int32", "float", "double"
[[nodiscard]] std::optional<ladder_type> parse_ladder_type(std::string_view text) noexcept;
/// Bytes per element: 4, 4, 8.
[[nodiscard]] std::size_t ladder_type_bytes(ladder_type type) noexcept;

/// Whether `kernel` computes `op` on `type`: every kernel does, except kahan, which is a sum of
/// float or double only (compensation has nothing to do for max or for exact int64 sums).
[[nodiscard]] bool ladder_supports(ladder_kernel kernel, ladder_op op, ladder_type type) noexcept;

/// An input array in device memory (RAII, move-only), uploaded once and reduced by every kernel.
/// Owns stream-ordered memory allocated on the upload stream; use it on that stream.
class ladder_input {
 public:
  /// Copies n host elements to the device (through pinned staging) and waits for the copy.
  /// Throws error_kind::device without a usable GPU, error_kind::resource when it does not fit.
  [[nodiscard]] static ladder_input upload(std::int32_t const* host, std::uint64_t n, cudaStream_t stream);
  [[nodiscard]] static ladder_input upload(float const* host, std::uint64_t n, cudaStream_t stream);
  [[nodiscard]] static ladder_input upload(double const* host, std::uint64_t n, cudaStream_t stream);

  [[nodiscard]] ladder_type type() const noexcept;
  [[nodiscard]] std::uint64_t size() const noexcept;

  struct impl;  ///< defined in kernels/src/reduction_ladder.cu (the device buffer)
  explicit ladder_input(std::unique_ptr<impl> state) noexcept;
  ladder_input(ladder_input&&) noexcept;
  ladder_input& operator=(ladder_input&&) noexcept;
  ladder_input(ladder_input const&) = delete;
  ladder_input& operator=(ladder_input const&) = delete;
  ~ladder_input();

 private:
  friend struct ladder_access;  ///< kernels/src: reads the device pointer
  std::unique_ptr<impl> impl_;
};

/// Which elements of a ladder_input to reduce: [first, first + count).
struct ladder_range {
  std::uint64_t first{0};
  std::uint64_t count{0};
};

struct ladder_options {
  int repeats{1};        ///< timed runs (>= 1), after one untimed warm-up run
  bool flush_l2{false};  ///< before each run (warm-up included), read a buffer of 4x the L2 size so the
                         ///< input starts in DRAM only; the flush is outside the timed region
};

/// One kernel on one range: its value and its times.
struct ladder_result {
  ladder_kernel kernel{ladder_kernel::interleaved_divergent};
  ladder_op op{ladder_op::sum};
  ladder_type type{ladder_type::int32};
  std::uint64_t n{0};
  std::int64_t integer{0};  ///< int32 input: the sum (int64 accumulation) or the max
  double real{0.0};         ///< float/double input: the result (a float result converted exactly)
  double median_ms{0.0};    ///< CUDA events around every pass of one run; median of the repeats
  double min_ms{0.0};
  double max_ms{0.0};
  int repeats{0};
  int passes{0};  ///< kernel launches per run (CUB: 1 call, whatever it launches inside)
  bool l2_flushed{false};

  /// The value as long double: exact for every type (int64 sums have fewer than 64 bits).
  [[nodiscard]] long double value() const noexcept
  {
    return type == ladder_type::int32 ? static_cast<long double>(integer) : static_cast<long double>(real);
  }
};

/// Reduces input[range.first, range.first + range.count) with `kernel`: one warm-up run, then
/// options.repeats timed runs. The value is the warm-up run's (every kernel is deterministic for a
/// given device and range). Synchronizes `stream`.
/// Throws error_kind::usage for an unsupported kernel/op/type, a range outside the input or
/// repeats < 1; error_kind::resource when scratch memory does not fit; error_kind::device on a CUDA
/// failure or without a usable GPU.
[[nodiscard]] ladder_result run_ladder(ladder_kernel kernel, ladder_op op, ladder_input const& input,
                                       ladder_range range, ladder_options const& options, cudaStream_t stream);

}  // namespace heightgrid
