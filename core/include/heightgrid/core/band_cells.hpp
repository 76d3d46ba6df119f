#pragma once
// The cells of a batch's points in a grid band: the arithmetic of CPU binning (two divisions and
// two floors a point, grid_spec::cell_of), a block of points at a time.
//
// On x86-64 it is compiled twice: for the baseline ISA, and for AVX2 (x86-64-v3), picked at run time
// where the CPU has it. There a floor is one SSE4.1 instruction instead of a conversion and fix-up
// sequence, and the loop vectorises. Both evaluate the same IEEE operations in the same order without
// contraction, so they give the same cells bit for bit (tests compare them).

#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/point_batch.hpp"

#include <cstddef>
#include <cstdint>

namespace heightgrid {

/// A point in no cell of the whole grid.
inline constexpr std::uint32_t cell_outside = 0xffffffffU;
/// A point in a cell of the grid outside the band.
inline constexpr std::uint32_t cell_skipped = 0xfffffffeU;

/// Which compiled code computes cells.
enum class cell_code : std::uint8_t {
  baseline,  ///< the build's baseline ISA
  avx2,      ///< x86-64-v3 (AVX2 with SSE4.1's rounding); only where the CPU has it
};

/// The fastest code this CPU runs (checked once).
[[nodiscard]] cell_code best_cell_code() noexcept;
/// Whether `code` runs on this CPU.
[[nodiscard]] bool cell_code_available(cell_code code) noexcept;

/// out[k] = the band-local cell of point first + k of `batch` (grid_spec::cell_of on the band's whole
/// grid), cell_skipped outside the band, cell_outside outside the grid, for k < n. `code` must be
/// available (default: the best).
void band_cells(grid_band const& band, point_batch const& batch, std::size_t first, std::size_t n, std::uint32_t* out,
                cell_code code);
inline void band_cells(grid_band const& band, point_batch const& batch, std::size_t first, std::size_t n,
                       std::uint32_t* out)
{
  band_cells(band, batch, first, n, out, best_cell_code());
}

}  // namespace heightgrid
