// pinned_staging (kernels/src/detail/infra): device -> host copies through two small pinned
// buffers come back byte for byte: a copy of many chunks, windows of a wider grid (the finalized
// columns of a cropped grid) into packed and into pitched memory, rows wider than a chunk, nothing.
// Skips without a GPU. (Built only with CUDA: it puts the bytes on the device itself.)

#include "detail/infra/pinned_staging.cuh"
#include "heightgrid/kernels/gpu.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace heightgrid {
namespace {

/// Device memory holding `values`, freed with the object.
class device_words {
 public:
  explicit device_words(std::vector<std::uint32_t> const& values)
  {
    EXPECT_EQ(cudaMalloc(&data_, values.size() * sizeof(std::uint32_t)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(data_, values.data(), values.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  device_words(device_words const&) = delete;
  device_words& operator=(device_words const&) = delete;
  ~device_words() { (void)cudaFree(data_); }
  [[nodiscard]] std::uint32_t const* get() const noexcept { return static_cast<std::uint32_t const*>(data_); }

 private:
  void* data_{nullptr};
};

std::vector<std::uint32_t> numbered(std::size_t n)
{
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) { v[i] = static_cast<std::uint32_t>(i * 2654435761U + 17U); }
  return v;
}

TEST(PinnedStaging, WindowsAndChunksComeBackExact)
{
  std::string why;
  if (!gpu_available(&why)) { GTEST_SKIP() << why; }
  std::size_t const cols = 3001, rows = 517;  // a grid of words: rows of 12,004 bytes
  auto const grid = numbered(cols * rows);
  device_words const d(grid);
  // Chunks of 64 KiB: 5 rows of the grid a chunk, a 1.2 MiB window in dozens of pieces.
  detail::pinned_staging staging(std::size_t{64} << 10, std::size_t{64} << 10);
  constexpr std::size_t w = sizeof(std::uint32_t);

  // The whole grid, one row of bytes in 95 chunks (the last one short).
  std::vector<std::uint32_t> all(grid.size(), 0);
  staging.to_host(all.data(), d.get(), grid.size() * w, nullptr);
  EXPECT_EQ(all, grid);

  // A window: columns [7, 7 + 1500), rows [3, 3 + 400), packed and into rows 2,000 words apart.
  std::size_t const c0 = 7, r0 = 3, wc = 1500, wr = 400, pitch = 2000;
  std::vector<std::uint32_t> packed(wc * wr, 0), pitched(pitch * wr, 0xFFFFFFFFU);
  staging.to_host_2d(packed.data(), wc * w, d.get() + r0 * cols + c0, cols * w, wc * w, wr, nullptr);
  staging.to_host_2d(pitched.data(), pitch * w, d.get() + r0 * cols + c0, cols * w, wc * w, wr, nullptr);
  for (std::size_t r = 0; r < wr; ++r) {
    for (std::size_t c = 0; c < wc; ++c) {
      ASSERT_EQ(packed[r * wc + c], grid[(r0 + r) * cols + c0 + c]) << "packed, row " << r << ", column " << c;
      ASSERT_EQ(pitched[r * pitch + c], grid[(r0 + r) * cols + c0 + c]) << "pitched, row " << r << ", column " << c;
    }
    for (std::size_t c = wc; c < pitch; ++c) {
      ASSERT_EQ(pitched[r * pitch + c], 0xFFFFFFFFU) << "written between rows: row " << r << ", column " << c;
    }
  }

  // Rows wider than a chunk (a staging of 4 KiB: 1,024 words, the window's rows 1,500): row by row.
  detail::pinned_staging small(std::size_t{4} << 10, std::size_t{4} << 10);
  std::vector<std::uint32_t> wide(wc * wr, 0);
  small.to_host_2d(wide.data(), wc * w, d.get() + r0 * cols + c0, cols * w, wc * w, wr, nullptr);
  EXPECT_EQ(wide, packed);

  // Nothing to copy: nothing written, no failure.
  std::vector<std::uint32_t> untouched(4, 5U);
  staging.to_host_2d(untouched.data(), 4 * w, d.get(), cols * w, 4 * w, 0, nullptr);
  staging.to_host(untouched.data(), d.get(), 0, nullptr);
  EXPECT_EQ(untouched, std::vector<std::uint32_t>(4, 5U));
}

}  // namespace
}  // namespace heightgrid
