// The reduction ladder in a build without CUDA (HEIGHTGRID_HAVE_CUDA off): the same API, every
// entry point throws error_kind::device (gpu_available() says why).

#include "heightgrid/core/error.hpp"
#include "heightgrid/ladder/reduction_ladder.hpp"

#include <string>

namespace heightgrid {
namespace {

[[noreturn]] void unavailable(char const* what)
{
  throw error(error_kind::device, std::string(what) + ": no usable GPU: heightgrid was built without CUDA");
}

}  // namespace

// Never constructed in this build; defined so that the class's special members link.
struct ladder_input::impl {};

ladder_input ladder_input::upload(std::int32_t const*, std::uint64_t, cudaStream_t)
{
  unavailable("ladder_input::upload");
}
ladder_input ladder_input::upload(float const*, std::uint64_t, cudaStream_t) { unavailable("ladder_input::upload"); }
ladder_input ladder_input::upload(double const*, std::uint64_t, cudaStream_t) { unavailable("ladder_input::upload"); }
ladder_type ladder_input::type() const noexcept { return ladder_type::int32; }
std::uint64_t ladder_input::size() const noexcept { return 0; }
ladder_input::ladder_input(std::unique_ptr<impl> state) noexcept : impl_(std::move(state)) {}
ladder_input::ladder_input(ladder_input&&) noexcept = default;
ladder_input& ladder_input::operator=(ladder_input&&) noexcept = default;
ladder_input::~ladder_input() = default;

ladder_result run_ladder(ladder_kernel, ladder_op, ladder_input const&, ladder_range, ladder_options const&,
                         cudaStream_t)
{
  unavailable("run_ladder");
}

}  // namespace heightgrid
