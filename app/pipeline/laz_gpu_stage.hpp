#pragma once
// laz_gpu_stage: a job's layered LAZ chunks decoded on the GPU (kernels/laz_gpu.hpp), handed to the
// reading threads as records (core/bulk_decoder.hpp). A CPU core decodes one LAZ chunk at a time
// (3.7-5.3 M points/s on the lent hosts); the GPU decodes every chunk of a wave at once, a thread
// each, so a wave of 2000 chunks of 50,000 points takes about as long as one chunk (~0.7 s on an
// H200, 150 M points/s; docs/benchmarks.md).
//
// Flow: the sources register their chunks (part_source::offload_chunks), start() launches one
// thread that brings up the decoder and then, wave after wave (at most a chunk per decoder thread,
// at most half the device's free memory), reads the wave's compressed bytes on several threads
// and uploads them, decodes the wave, and downloads its records group by group into a ring of
// eight 32 MiB page-locked slots as the readers free them (host memory stays at 256 MiB however
// large the wave; the records wait on the device). A reader asking for a chunk waits for its
// group. (Readers that decode chunks themselves while the GPU starts and decodes were tried: the
// CPU they take slows CUDA's start and the reading of the compressed bytes more than they gain;
// docs/benchmarks-history.md.) Anything the GPU cannot do goes back to the
// reader's own decoder (records() returns nullptr): a chunk the GPU decoder rejects (the CPU
// decoder then names the problem), a device that fails to start or fails later, a chunk asked
// for a second time (a later pass), a chunk beyond what the stage can reach before readers that
// have not come yet release theirs (a reading order this stage did not plan for: waiting could
// deadlock), or a chunk larger than a ring slot.

#include "heightgrid/core/bulk_decoder.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace heightgrid::app {

struct laz_gpu_stage_report {
  std::uint64_t chunks{0};          ///< registered
  std::uint64_t points{0};          ///< in the registered chunks
  std::uint64_t gpu_chunks{0};      ///< handed out as GPU records
  std::uint64_t skipped{0};         ///< never given to the GPU: no points, or larger than a ring slot
  std::uint64_t waves{0};           ///< decoded
  double start_s{0.0};              ///< the decoder's start (CUDA context, device memory)
  double read_s{0.0};               ///< reading compressed bytes and uploading them, summed over waves
  double decode_s{0.0};             ///< decode() calls (kernel and statuses), summed
  double download_s{0.0};           ///< record downloads (CUDA events), summed
  double kernel_s{0.0};             ///< the decode kernels alone (CUDA events)
  double close_s{0.0};              ///< freeing the stage (set by its owner)
  std::string failure;              ///< why the GPU decoded nothing, when it did not
};

/// The stage's sizes: the product's defaults; tests shrink them to reach many waves and groups.
struct laz_gpu_limits {
  std::size_t wave_chunks{0};                      ///< chunks a wave at most (0: one a decoder thread)
  std::size_t ring_slots{8};                       ///< page-locked slots between the device and the readers
  std::uint64_t slot_bytes{std::uint64_t{32} << 20};  ///< bytes a slot
};

class laz_gpu_stage final : public bulk_chunk_decoder {
 public:
  /// `device`: the CUDA device (-1: the default). Touches no GPU until start().
  explicit laz_gpu_stage(int device, laz_gpu_limits limits = {});
  laz_gpu_stage(laz_gpu_stage const&) = delete;
  laz_gpu_stage& operator=(laz_gpu_stage const&) = delete;
  /// Stops the decoding thread (after its current wave) and frees everything.
  ~laz_gpu_stage() override;

  std::size_t add_file(file_format const& format, std::vector<chunk> const& chunks, reader read) override;
  [[nodiscard]] std::uint8_t const* records(std::size_t index) override;
  void release(std::size_t index) noexcept override;

  /// Registered chunks and their points.
  [[nodiscard]] std::size_t chunk_count() const;
  [[nodiscard]] std::uint64_t point_count() const;
  [[nodiscard]] std::uint32_t largest_chunk() const;

  /// Starts decoding (call once, after every add_file). Without it, records() returns nullptr.
  void start();

  [[nodiscard]] laz_gpu_stage_report report() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace heightgrid::app
