#pragma once
// Host <-> device copies of pageable host memory through two pinned staging buffers, so the host
// memcpy of one chunk overlaps the DMA of the other (cudaMemcpyAsync from pageable memory would
// be synchronous and go through the driver's own, smaller staging).

#include "detail/infra/cuda_check.cuh"
#include "detail/infra/cuda_event.cuh"
#include "heightgrid/core/metrics.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <limits>
#include <utility>

namespace heightgrid::detail {

/// RAII page-locked host memory (cudaMallocHost), move-only.
class pinned_buffer {
 public:
  pinned_buffer() noexcept = default;
  explicit pinned_buffer(std::size_t bytes)
  {
    if (bytes == 0) { return; }
    void* p = nullptr;
    HG_CUDA_TRY_ALLOC(cudaMallocHost(&p, bytes), bytes, memory_space::pinned_host);
    data_ = static_cast<std::byte*>(p);
    bytes_ = bytes;
  }
  pinned_buffer(pinned_buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0))
  {
  }
  pinned_buffer& operator=(pinned_buffer&& other) noexcept
  {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  pinned_buffer(pinned_buffer const&) = delete;
  pinned_buffer& operator=(pinned_buffer const&) = delete;
  ~pinned_buffer()
  {
    if (data_ != nullptr && cudaFreeHost(data_) != cudaSuccess) { cudaGetLastError(); }
  }

  [[nodiscard]] std::byte* data() noexcept { return data_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  std::byte* data_{nullptr};
  std::size_t bytes_{0};
};

/// Double-buffered staging. Copies are enqueued on the given stream; the staging object must stay
/// alive until they have run, which its destructor ensures by waiting for them.
class pinned_staging {
 public:
  /// Chunk size per staging buffer: large enough for full-speed DMA, small enough to pin quickly.
  static constexpr std::size_t default_chunk_bytes = std::size_t{16} << 20;

  /// Staging whose buffers are no larger than `largest_copy` (copies of any size go through them in
  /// chunks; a staging made for 0 bytes allocates nothing and only accepts empty copies).
  explicit pinned_staging(std::size_t largest_copy, std::size_t chunk_bytes = default_chunk_bytes)
    : chunk_(std::max<std::size_t>(1, std::min(largest_copy, chunk_bytes))),
      buffers_{pinned_buffer(largest_copy > 0 ? chunk_ : 0), pinned_buffer(largest_copy > 0 ? chunk_ : 0)},
      done_{cuda_event(cudaEventDisableTiming), cuda_event(cudaEventDisableTiming)}
  {
  }
  pinned_staging(pinned_staging const&) = delete;
  pinned_staging& operator=(pinned_staging const&) = delete;
  pinned_staging(pinned_staging&&) = delete;
  pinned_staging& operator=(pinned_staging&&) = delete;
  ~pinned_staging()
  {
    for (auto const& e : done_) {
      if (cudaEventSynchronize(e.get()) != cudaSuccess) { cudaGetLastError(); }
    }
  }

  /// Enqueues host -> device of `bytes` bytes. Returns once `src` has been read (the last chunk's
  /// DMA may still be running).
  void to_device(void* dst, void const* src, std::size_t bytes, cudaStream_t stream)
  {
    HG_EXPECTS(bytes <= capacity(), error_kind::internal, "pinned_staging: copy larger than the staging was made for");
    auto* const d = static_cast<std::byte*>(dst);
    auto const* const s = static_cast<std::byte const*>(src);
    for (std::size_t pos = 0, k = 0; pos < bytes; pos += chunk_, ++k) {
      auto const len = std::min(chunk_, bytes - pos);
      auto const b = k % 2;
      done_[b].synchronize();  // the DMA that last read this buffer has finished
      std::memcpy(buffers_[b].data(), s + pos, len);
      HG_CUDA_TRY(cudaMemcpyAsync(d + pos, buffers_[b].data(), len, cudaMemcpyHostToDevice, stream));
      done_[b].record(stream);
    }
  }

  /// Device -> host of `bytes` bytes, after the work already queued on `stream`. Returns when
  /// `dst` holds the data. Chunk k+1 is in flight while the host copies chunk k out (on the
  /// OpenMP team: a fresh `dst` takes its page faults there too).
  void to_host(void* dst, void const* src, std::size_t bytes, cudaStream_t stream)
  {
    to_host_2d(dst, bytes, src, bytes, bytes, bytes > 0 ? 1 : 0, stream);
  }

  /// Device -> host of `rows` rows of `width` bytes, `src_pitch` bytes apart on the device and
  /// `dst_pitch` apart at `dst` (a window of a wider grid). As to_host otherwise.
  void to_host_2d(void* dst, std::size_t dst_pitch, void const* src, std::size_t src_pitch, std::size_t width,
                  std::size_t rows, cudaStream_t stream)
  {
    HG_EXPECTS(width * rows == 0 || capacity() > 0, error_kind::internal,
               "pinned_staging: copy larger than the staging was made for");
    HG_EXPECTS(width <= dst_pitch && width <= src_pitch, error_kind::internal, "pinned_staging: rows wider than their pitch");
    if (width == 0 || rows == 0) { return; }
    if (width > chunk_ && rows > 1) {
      // Rows wider than a buffer: one at a time, each in chunks.
      for (std::size_t r = 0; r < rows; ++r) {
        to_host_2d(static_cast<std::byte*>(dst) + r * dst_pitch, width,
                   static_cast<std::byte const*>(src) + r * src_pitch, width, width, 1, stream);
      }
      return;
    }
    // A piece: `rows_per` whole rows, or a chunk of the one row.
    bool const one_row = rows == 1;
    std::size_t const rows_per = one_row ? 1 : chunk_ / width;
    std::size_t const pieces = one_row ? (width + chunk_ - 1) / chunk_ : (rows + rows_per - 1) / rows_per;
    auto* const d = static_cast<std::byte*>(dst);
    auto const* const s = static_cast<std::byte const*>(src);
    struct piece_span {
      std::size_t first_row, rows, offset, bytes;  // rows (2-D) or a byte range of the one row
    };
    auto const span = [&](std::size_t k) {
      if (one_row) {
        std::size_t const offset = k * chunk_;
        return piece_span{0, 1, offset, std::min(chunk_, width - offset)};
      }
      std::size_t const first = k * rows_per;
      return piece_span{first, std::min(rows_per, rows - first), 0, width};
    };
    auto const issue = [&](std::size_t k) {
      piece_span const p = span(k);
      void* const staged = buffers_[k % 2].data();
      if (one_row) {
        HG_CUDA_TRY(cudaMemcpyAsync(staged, s + p.offset, p.bytes, cudaMemcpyDeviceToHost, stream));
      } else {
        HG_CUDA_TRY(cudaMemcpy2DAsync(staged, width, s + p.first_row * src_pitch, src_pitch, width, p.rows,
                                      cudaMemcpyDeviceToHost, stream));
      }
      done_[k % 2].record(stream);
    };
    issue(0);
    for (std::size_t k = 0; k < pieces; ++k) {
      // Buffer (k+1)%2 last held piece k-1, which the previous iteration has copied out.
      if (k + 1 < pieces) { issue(k + 1); }
      done_[k % 2].synchronize();
      piece_span const p = span(k);
      auto const* const staged = buffers_[k % 2].data();
      if (one_row || dst_pitch == width) {
        copy_bytes_parallel(d + p.first_row * dst_pitch + p.offset, staged, p.rows * p.bytes);
      } else {
        for (std::size_t r = 0; r < p.rows; ++r) {
          std::memcpy(d + (p.first_row + r) * dst_pitch, staged + r * width, width);
        }
      }
    }
  }

 private:
  // Any size when the buffers exist; nothing at all when the staging was made for 0 bytes.
  [[nodiscard]] std::size_t capacity() const noexcept
  {
    return buffers_[0].bytes() > 0 ? std::numeric_limits<std::size_t>::max() : 0;
  }

  std::size_t chunk_;
  std::array<pinned_buffer, 2> buffers_;
  std::array<cuda_event, 2> done_;
};

}  // namespace heightgrid::detail
