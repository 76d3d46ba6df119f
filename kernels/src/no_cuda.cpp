// The GPU entry points of a build without CUDA (HEIGHTGRID_HAVE_CUDA off): the CPU product links
// against them, gpu_available() says why there is no GPU, everything else throws.

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/device_csr.hpp"
#include "heightgrid/kernels/gpu.hpp"
#include "heightgrid/kernels/gpu_binner.hpp"
#include "heightgrid/kernels/grid_gpu.hpp"
#include "heightgrid/kernels/hybrid_tuning.hpp"
#include "heightgrid/kernels/laz_gpu.hpp"
#include "heightgrid/kernels/order_stats.hpp"

#include <cstdlib>
#include <string>

namespace heightgrid {
namespace {

constexpr char const* why = "heightgrid was built without CUDA";

[[noreturn]] void unavailable(char const* what)
{
  throw error(error_kind::device, std::string(what) + ": no usable GPU: " + why);
}

}  // namespace

// Never constructed in this build; defined so that the classes' special members link.
struct device_csr::impl {};
struct device_cell_results::impl {};
struct laz_gpu_decoder::impl {};

bool gpu_available(std::string* reason) noexcept
{
  if (reason != nullptr) {
    try {
      *reason = why;
    } catch (...) {  // out of memory copying a short string: leave the reason as it was
    }
  }
  return false;
}

gpu_device_info query_device() { unavailable("query_device"); }
std::size_t free_device_memory(int) { unavailable("free_device_memory"); }

double measure_read_bandwidth_gbps(std::size_t, int, cudaStream_t) { unavailable("measure_read_bandwidth_gbps"); }
double measure_copy_gbps(std::size_t, int, bool, bool, cudaStream_t) { unavailable("measure_copy_gbps"); }
cuda_start_times measure_cuda_start(std::size_t) { unavailable("measure_cuda_start"); }
double measure_cuda_teardown() { unavailable("measure_cuda_teardown"); }
bool release_device(int) noexcept { return false; }

stream_gate::stream_gate(cudaStream_t stream, double) : stream_(stream) { unavailable("stream_gate"); }
// Never constructed here (the constructor throws); the members keep the CUDA build's meaning, and
// using them keeps clang's -Wunused-private-field quiet.
stream_gate::~stream_gate() { (void)stream_; }
void stream_gate::open() noexcept
{
  if (flags_ != nullptr) { flags_[0] = 1; }
}
bool stream_gate::timed_out() const noexcept { return flags_ != nullptr && flags_[1] != 0; }

device_csr device_csr::from_points(grid_spec const&, point_chunk const&, csr_method, binning_stats&, gpu_phase_times&,
                                   cudaStream_t)
{
  unavailable("device_csr::from_points");
}
device_csr device_csr::from_host(csr_grid const&, cudaStream_t) { unavailable("device_csr::from_host"); }
csr_grid device_csr::to_host(cudaStream_t) const { unavailable("device_csr::to_host"); }
device_csr_view device_csr::view() const noexcept { return {}; }
std::uint64_t device_csr::num_cells() const noexcept { return 0; }
std::uint64_t device_csr::num_points() const noexcept { return 0; }
std::uint64_t device_csr::max_cell_points() const noexcept { return 0; }
device_csr::device_csr(std::unique_ptr<impl> state) noexcept : impl_(std::move(state)) {}
device_csr::device_csr(device_csr&&) noexcept = default;
device_csr& device_csr::operator=(device_csr&&) noexcept = default;
device_csr::~device_csr() = default;

cell_results device_cell_results::to_host(cudaStream_t) const { unavailable("device_cell_results::to_host"); }
float device_cell_results::kernel_ms() const { unavailable("device_cell_results::kernel_ms"); }
std::uint64_t device_cell_results::num_cells() const noexcept { return 0; }
reduce_mode device_cell_results::mode() const noexcept { return reduce_mode::thread; }
device_cell_results::device_cell_results(std::unique_ptr<impl> state) noexcept : impl_(std::move(state)) {}
device_cell_results::device_cell_results(device_cell_results&&) noexcept = default;
device_cell_results& device_cell_results::operator=(device_cell_results&&) noexcept = default;
device_cell_results::~device_cell_results() = default;

device_cell_results reduce(device_csr const&, metric_request const&, float, reduce_mode, cudaStream_t)
{
  unavailable("reduce");
}

hybrid_thresholds default_hybrid_thresholds() { unavailable("default_hybrid_thresholds"); }
hybrid_thresholds hybrid_thresholds_on_device(metric_request const&) { unavailable("hybrid_thresholds_on_device"); }

device_cell_results reduce_hybrid(device_csr const&, metric_request const&, float, hybrid_thresholds const&,
                                  cudaStream_t)
{
  unavailable("reduce_hybrid");
}

gpu_grid_result grid_points_gpu(grid_spec const&, point_chunk const&, metric_request const&, float, reduce_mode,
                                csr_method, cudaStream_t)
{
  unavailable("grid_points_gpu");
}

gpu_grid_result grid_points_gpu(grid_spec const&, point_chunk const&, metric_request const&, float, reduce_mode,
                                cudaStream_t)
{
  unavailable("grid_points_gpu");
}

cell_results reduce_csr_gpu(csr_grid const&, metric_request const&, float, reduce_mode, cudaStream_t, float*)
{
  unavailable("reduce_csr_gpu");
}

struct gpu_binner::impl {};

std::size_t gpu_binner::device_bytes(grid_band const&, gpu_binner_options const&) { return 0; }
gpu_binner::gpu_binner(grid_band const&, gpu_binner_options const&) { unavailable("gpu_binner"); }
gpu_binner::~gpu_binner() = default;
void gpu_binner::register_host_memory(void*, std::size_t) { unavailable("gpu_binner::register_host_memory"); }
void gpu_binner::submit(point_batch const&, std::function<void()> released)
{
  if (released) { released(); }
  unavailable("gpu_binner::submit");
}
void gpu_binner::reserve_kept_points(std::uint64_t) { unavailable("gpu_binner::reserve_kept_points"); }
void gpu_binner::synchronize() { unavailable("gpu_binner::synchronize"); }
std::size_t gpu_binner::reclaim(bool) { unavailable("gpu_binner::reclaim"); }
std::size_t gpu_binner::in_flight() const { return 0; }
std::vector<las_record_stats> gpu_binner::take_record_stats() { unavailable("gpu_binner::take_record_stats"); }
void gpu_binner::fold_device_records(void const*, std::uint32_t, bool, std::vector<device_record_run> const&)
{
  unavailable("gpu_binner::fold_device_records");
}
void gpu_binner::wait_folds() { unavailable("gpu_binner::wait_folds"); }
std::uint64_t gpu_binner::points_outside() { unavailable("gpu_binner::points_outside"); }
std::uint64_t gpu_binner::points_binned() { unavailable("gpu_binner::points_binned"); }
cell_results gpu_binner::finalize_rows(std::uint32_t, std::uint32_t, std::uint32_t, metric_request const&, float, std::uint32_t)
{
  unavailable("gpu_binner::finalize_rows");
}
void gpu_binner::download_extremes(std::uint32_t, std::uint32_t, std::uint64_t*, std::uint64_t*, std::uint32_t*)
{
  unavailable("gpu_binner::download_extremes");
}
void gpu_binner::download_tags(std::uint32_t, std::uint32_t, std::uint32_t*) { unavailable("gpu_binner::download_tags"); }
std::uint64_t gpu_binner::total_count() { unavailable("gpu_binner::total_count"); }
std::uint32_t gpu_binner::max_count() { unavailable("gpu_binner::max_count"); }
void gpu_binner::reset(grid_band const&, std::uint64_t) { unavailable("gpu_binner::reset"); }
std::size_t gpu_binner::order_bytes_per_point() noexcept { return 28; }
gpu_binner_times gpu_binner::times() { unavailable("gpu_binner::times"); }
grid_band const& gpu_binner::band() const noexcept
{
  static grid_band const none{};
  return none;
}

int gpu_count() noexcept { return 0; }

bool find_gpu(std::string* reason, int) noexcept { return gpu_available(reason); }

bool start_gpu(std::string* reason, int, bool* memory_short) noexcept
{
  if (memory_short != nullptr) { *memory_short = false; }
  return gpu_available(reason);
}

order_stats_run order_stats_of_csr(device_csr const&, metric_request const&, float, order_sort)
{
  unavailable("order_stats_of_csr");
}

laz_gpu_decoder::laz_gpu_decoder(std::size_t, laz_gpu_mapping) { unavailable("laz_gpu_decoder"); }
laz_gpu_decoder::~laz_gpu_decoder() = default;
std::size_t laz_gpu_decoder::threads() const noexcept { return 0; }
std::size_t laz_gpu_decoder::last_chunks_at_once() const noexcept { return 0; }
unsigned laz_gpu_decoder::last_pointwise_lanes() const noexcept { return 0; }
void laz_gpu_decoder::set_pointwise_lanes(unsigned) { unavailable("laz_gpu_decoder::set_pointwise_lanes"); }
std::uint8_t* laz_gpu_decoder::pinned(std::size_t) { unavailable("laz_gpu_decoder::pinned"); }
std::uint8_t* laz_gpu_decoder::adopt_pinned(void* host, std::size_t)
{
  std::free(host);
  unavailable("laz_gpu_decoder::adopt_pinned");
}
void laz_gpu_decoder::reserve(std::size_t, std::size_t) { unavailable("laz_gpu_decoder::reserve"); }
std::size_t laz_gpu_decoder::free_device_bytes() const { unavailable("laz_gpu_decoder::free_device_bytes"); }
void laz_gpu_decoder::upload(std::uint8_t const*, std::size_t, std::size_t) { unavailable("laz_gpu_decoder::upload"); }
std::vector<laz_gpu_status> laz_gpu_decoder::decode(laz_gpu_format const&, std::vector<laz_gpu_chunk> const&,
                                                    laz_gpu_times*)
{
  unavailable("laz_gpu_decoder::decode");
}
void laz_gpu_decoder::download(std::size_t, std::size_t, std::uint8_t*, laz_gpu_times*)
{
  unavailable("laz_gpu_decoder::download");
}

void const* laz_gpu_decoder::device_records() const noexcept { return nullptr; }
laz_gpu_layout laz_gpu_decoder::layout() const noexcept { return laz_gpu_layout::layered_point14; }

}  // namespace heightgrid
