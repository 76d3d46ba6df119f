// run_ladder(): THE dispatch from ladder_kernel to a detail/ladder_*.cuh launcher, the multi-pass
// driver, the timing (warm-up, L2 flush, CUDA events, median), and ladder_input.

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/cuda_event.cuh"
#include "detail/infra/device_buffer.cuh"
#include "detail/infra/device_context.cuh"
#include "ladder_common.cuh"
#include "ladder_cub.cuh"
#include "ladder_grid_stride.cuh"
#include "ladder_interleaved.cuh"
#include "ladder_kahan.cuh"
#include "ladder_l2_flush.cuh"
#include "ladder_sequential.cuh"
#include "detail/infra/pinned_staging.cuh"
#include "heightgrid/ladder/reduction_ladder.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace heightgrid {

struct ladder_input::impl {
  detail::device_buffer<std::byte> data;  ///< size * ladder_type_bytes(type) bytes, 256-byte aligned
  ladder_type type{ladder_type::int32};
  std::uint64_t size{0};
};

struct ladder_access {
  static ladder_input::impl const& state(ladder_input const& input)
  {
    HG_EXPECTS(input.impl_ != nullptr, error_kind::internal, "reduction ladder: a moved-from ladder_input");
    return *input.impl_;
  }
};

namespace {

template <typename T>
struct type_tag {
  using type = T;
};

/// f(type_tag<T>{}) with T the element type of `type`.
template <typename F>
decltype(auto) with_type(ladder_type type, F&& f)
{
  switch (type) {
    case ladder_type::int32:
      return f(type_tag<std::int32_t>{});
    case ladder_type::float32:
      return f(type_tag<float>{});
    case ladder_type::float64:
      return f(type_tag<double>{});
  }
  throw error(error_kind::internal, "reduction ladder: unknown ladder_type " + std::to_string(static_cast<int>(type)));
}

/// f(type_tag<Op>{}) with Op the operator of `op`.
template <typename F>
decltype(auto) with_op(ladder_op op, F&& f)
{
  switch (op) {
    case ladder_op::sum:
      return f(type_tag<detail::ladder_sum>{});
    case ladder_op::max:
      return f(type_tag<detail::ladder_max>{});
  }
  throw error(error_kind::internal, "reduction ladder: unknown ladder_op " + std::to_string(static_cast<int>(op)));
}

/// Device scratch of one run_ladder call, grown by the launchers in the warm-up run: ping-pong
/// partial buffers (values, or Kahan pairs) and CUB's temporary storage.
template <typename T, typename Op>
struct ladder_scratch {
  detail::device_buffer<detail::ladder_acc_t<T, Op>> a;
  detail::device_buffer<detail::ladder_acc_t<T, Op>> b;
  detail::device_buffer<detail::kahan_pair<T>> pairs_a;
  detail::device_buffer<detail::kahan_pair<T>> pairs_b;
  detail::device_buffer<std::byte> cub_temp;
};

/// Where a run left its one value on the device: an accumulator, or a Kahan pair.
struct final_value {
  void const* ptr{nullptr};
  bool compensated{false};
  int passes{0};
};

/// Runs `launch` (one pass: in[0, n) -> partials in a buffer, returns how many) on the input, then
/// on its own partials, ping-ponging between `a` and `b`, until one value remains.
template <typename In, typename Acc, typename Launch>
final_value multipass(In const* in, std::uint64_t n, detail::device_buffer<Acc>& a, detail::device_buffer<Acc>& b,
                      bool compensated, Launch const& launch, cudaStream_t stream)
{
  auto* src = &a;
  auto* dst = &b;
  std::uint64_t count = launch(in, n, *src, stream);
  int passes = 1;
  while (count > 1) {
    count = launch(static_cast<Acc const*>(src->data()), count, *dst, stream);
    std::swap(src, dst);
    ++passes;
  }
  return {src->data(), compensated, passes};
}

/// THE dispatch: a new kernel is one case here (and its detail/ladder_*.cuh). Each case hands the
/// multi-pass driver the kernel's launcher, which it calls on the input and then on the partials.
template <typename T, typename Op>
final_value dispatch(ladder_kernel kernel, T const* in, std::uint64_t n, ladder_scratch<T, Op>& s,
                     detail::ladder_device const& device, cudaStream_t stream)
{
  namespace d = detail;
  auto const passes = [&](auto const& launch) { return multipass(in, n, s.a, s.b, false, launch, stream); };
  switch (kernel) {
    case ladder_kernel::interleaved_divergent:
      return passes([](auto const* p, std::uint64_t m, auto& out, cudaStream_t st) {
        return d::launch_interleaved_divergent<Op>(p, m, out, st);
      });
    case ladder_kernel::interleaved_strided:
      return passes([](auto const* p, std::uint64_t m, auto& out, cudaStream_t st) {
        return d::launch_interleaved_strided<Op>(p, m, out, st);
      });
    case ladder_kernel::sequential:
      return passes([](auto const* p, std::uint64_t m, auto& out, cudaStream_t st) {
        return d::launch_sequential<Op>(p, m, out, st);
      });
    case ladder_kernel::first_add:
      return passes([](auto const* p, std::uint64_t m, auto& out, cudaStream_t st) {
        return d::launch_first_add<Op>(p, m, out, st);
      });
    case ladder_kernel::unroll_last_warp:
      return passes([](auto const* p, std::uint64_t m, auto& out, cudaStream_t st) {
        return d::launch_unroll_last_warp<Op>(p, m, out, st);
      });
    case ladder_kernel::complete_unroll:
      return passes([](auto const* p, std::uint64_t m, auto& out, cudaStream_t st) {
        return d::launch_complete_unroll<Op>(p, m, out, st);
      });
    case ladder_kernel::multiple_elements:
      return passes([&device](auto const* p, std::uint64_t m, auto& out, cudaStream_t st) {
        return d::launch_multiple_elements<Op>(p, m, out, device, st);
      });
    case ladder_kernel::warp_shuffle:
      return passes([&device](auto const* p, std::uint64_t m, auto& out, cudaStream_t st) {
        return d::launch_warp_shuffle<Op>(p, m, out, device, st);
      });
    case ladder_kernel::cub:
      d::launch_cub_device_reduce<Op>(in, n, s.a, s.cub_temp, stream);
      return {s.a.data(), false, 1};
    case ladder_kernel::kahan:
      if constexpr (std::is_floating_point_v<T> && std::is_same_v<Op, d::ladder_sum>) {
        return multipass(
          in, n, s.pairs_a, s.pairs_b, true,
          [&device](auto const* p, std::uint64_t m, auto& out, cudaStream_t st) {
            return d::launch_kahan_grid_stride<T>(p, m, out, device, st);
          },
          stream);
      }
      break;  // run_ladder refuses the unsupported combinations before getting here
  }
  throw error(error_kind::internal,
              "reduction ladder: no launcher for kernel " + std::to_string(static_cast<int>(kernel)));
}

double median_of(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  auto const k = v.size();
  return k % 2 == 1 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

/// The value a run left on the device, into `r` (integer for int32 input, real otherwise).
template <typename T, typename Op>
void read_value(final_value const& where, ladder_result& r, cudaStream_t stream)
{
  using acc = detail::ladder_acc_t<T, Op>;
  if (where.compensated) {
    if constexpr (std::is_floating_point_v<T>) {
      detail::kahan_pair<T> p{};
      HG_CUDA_TRY(cudaMemcpyAsync(&p, where.ptr, sizeof p, cudaMemcpyDeviceToHost, stream));
      HG_CUDA_TRY(cudaStreamSynchronize(stream));
      r.real = static_cast<double>(static_cast<T>(p.sum + p.err));  // the pair rounded to T once
      return;
    }
  }
  acc v{};
  HG_CUDA_TRY(cudaMemcpyAsync(&v, where.ptr, sizeof v, cudaMemcpyDeviceToHost, stream));
  HG_CUDA_TRY(cudaStreamSynchronize(stream));
  if constexpr (std::is_integral_v<acc>) {
    r.integer = static_cast<std::int64_t>(v);
  } else {
    r.real = static_cast<double>(v);
  }
}

template <typename T, typename Op>
ladder_result run_typed(ladder_kernel kernel, T const* in, std::uint64_t n, ladder_options const& options,
                        cudaStream_t stream)
{
  detail::ladder_device device;
  int ordinal = 0;
  HG_CUDA_TRY(cudaGetDevice(&ordinal));
  HG_CUDA_TRY(cudaDeviceGetAttribute(&device.sm_count, cudaDevAttrMultiProcessorCount, ordinal));

  ladder_scratch<T, Op> scratch;
  std::optional<detail::l2_flusher> flusher;
  if (options.flush_l2) { flusher.emplace(stream); }
  auto const run_once = [&] { return dispatch<T, Op>(kernel, in, n, scratch, device, stream); };

  ladder_result r;
  // Warm-up: grows the scratch buffers, loads the modules, and gives the value.
  if (flusher) { flusher->flush(stream); }
  auto const where = run_once();
  r.passes = where.passes;
  read_value<T, Op>(where, r, stream);

  detail::cuda_event start;
  detail::cuda_event stop;
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(options.repeats));
  for (int k = 0; k < options.repeats; ++k) {
    if (flusher) { flusher->flush(stream); }
    start.record(stream);
    (void)run_once();
    stop.record(stream);
    ms.push_back(static_cast<double>(detail::elapsed_ms(start, stop)));
  }
  r.median_ms = median_of(ms);
  r.min_ms = *std::min_element(ms.begin(), ms.end());
  r.max_ms = *std::max_element(ms.begin(), ms.end());
  r.repeats = options.repeats;
  return r;
}

template <typename T>
ladder_input upload_typed(T const* host, std::uint64_t n, ladder_type type, cudaStream_t stream)
{
  HG_EXPECTS(host != nullptr || n == 0, error_kind::usage,
          "ladder_input::upload: null data for " + std::to_string(n) + " elements");
  HG_EXPECTS(n <= std::numeric_limits<std::size_t>::max() / sizeof(T), error_kind::resource,
          "ladder_input::upload: " + std::to_string(n) + " elements is too large");
  detail::require_device();
  auto const bytes = static_cast<std::size_t>(n) * sizeof(T);
  auto state = std::make_unique<ladder_input::impl>();
  state->data = detail::device_buffer<std::byte>(bytes, stream);
  state->type = type;
  state->size = n;
  {
    detail::pinned_staging staging(bytes);
    staging.to_device(state->data.data(), host, bytes, stream);
  }  // the staging waits for its copies
  HG_CUDA_TRY(cudaStreamSynchronize(stream));
  return ladder_input(std::move(state));
}

}  // namespace

ladder_input ladder_input::upload(std::int32_t const* host, std::uint64_t n, cudaStream_t stream)
{
  return upload_typed(host, n, ladder_type::int32, stream);
}
ladder_input ladder_input::upload(float const* host, std::uint64_t n, cudaStream_t stream)
{
  return upload_typed(host, n, ladder_type::float32, stream);
}
ladder_input ladder_input::upload(double const* host, std::uint64_t n, cudaStream_t stream)
{
  return upload_typed(host, n, ladder_type::float64, stream);
}

ladder_type ladder_input::type() const noexcept { return impl_ ? impl_->type : ladder_type::int32; }
std::uint64_t ladder_input::size() const noexcept { return impl_ ? impl_->size : 0; }

ladder_input::ladder_input(std::unique_ptr<impl> state) noexcept : impl_(std::move(state)) {}
ladder_input::ladder_input(ladder_input&&) noexcept = default;
ladder_input& ladder_input::operator=(ladder_input&&) noexcept = default;
ladder_input::~ladder_input() = default;

ladder_result run_ladder(ladder_kernel kernel, ladder_op op, ladder_input const& input, ladder_range range,
                         ladder_options const& options, cudaStream_t stream)
{
  auto const& state = ladder_access::state(input);
  HG_EXPECTS(ladder_supports(kernel, op, state.type), error_kind::usage,
          "reduction ladder: kernel " + std::string(ladder_kernel_name(kernel)) + " does not compute the " +
            std::string(ladder_op_name(op)) + " of " + std::string(ladder_type_name(state.type)));
  HG_EXPECTS(options.repeats >= 1, error_kind::usage,
          "reduction ladder: repeats must be at least 1, not " + std::to_string(options.repeats));
  HG_EXPECTS(range.first <= state.size && range.count <= state.size - range.first, error_kind::usage,
          "reduction ladder: elements [" + std::to_string(range.first) + ", " + std::to_string(range.first) + " + " +
            std::to_string(range.count) + ") are outside an input of " + std::to_string(state.size));
  detail::require_device();

  ladder_result r = with_type(state.type, [&](auto type) {
    using T = typename decltype(type)::type;
    T const* const in = reinterpret_cast<T const*>(state.data.data()) + range.first;
    return with_op(op, [&](auto op_type) {
      using Op = typename decltype(op_type)::type;
      return run_typed<T, Op>(kernel, in, range.count, options, stream);
    });
  });
  r.kernel = kernel;
  r.op = op;
  r.type = state.type;
  r.n = range.count;
  r.l2_flushed = options.flush_l2;
  return r;
}

}  // namespace heightgrid
