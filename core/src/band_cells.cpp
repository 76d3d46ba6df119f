#include "heightgrid/core/band_cells.hpp"

#include "heightgrid/core/error.hpp"

namespace heightgrid {
namespace {

template <coord_encoding E>
[[gnu::always_inline]] inline std::uint32_t local_cell(grid_band const& band, point_batch const& b, std::size_t i) noexcept
{
  double x = 0.0, y = 0.0;
  if constexpr (E == coord_encoding::float64) {
    x = b.x()[i];
    y = b.y()[i];
  } else {
    x = scaled_coords::apply(b.xi()[i], b.transform.scale[0], b.transform.offset[0]);
    y = scaled_coords::apply(b.yi()[i], b.transform.scale[1], b.transform.offset[1]);
  }
  cell_id const c = band.grid.cell_of(x, y);
  if (c == no_cell) { return cell_outside; }
  std::uint64_t const local = static_cast<std::uint64_t>(c) - band.first_cell();  // wraps below the band
  return local < band.cells() ? static_cast<std::uint32_t>(local) : cell_skipped;
}

/// The loop, inlined into each target's function below and compiled for that target there.
[[gnu::always_inline]] inline void cells_of(grid_band const& band, point_batch const& batch, std::size_t first,
                                            std::size_t n, std::uint32_t* out) noexcept
{
  if (batch.encoding == coord_encoding::float64) {
    for (std::size_t k = 0; k < n; ++k) { out[k] = local_cell<coord_encoding::float64>(band, batch, first + k); }
  } else {
    for (std::size_t k = 0; k < n; ++k) { out[k] = local_cell<coord_encoding::scaled_int32>(band, batch, first + k); }
  }
}

void cells_baseline(grid_band const& band, point_batch const& batch, std::size_t first, std::size_t n,
                    std::uint32_t* out) noexcept
{
  cells_of(band, batch, first, n, out);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HG_HAVE_AVX2_CELLS 1
__attribute__((target("avx2"))) void cells_avx2(grid_band const& band, point_batch const& batch, std::size_t first,
                                                std::size_t n, std::uint32_t* out) noexcept
{
  cells_of(band, batch, first, n, out);
}
#endif

}  // namespace

bool cell_code_available(cell_code code) noexcept
{
  switch (code) {
    case cell_code::baseline: return true;
    case cell_code::avx2:
#if defined(HG_HAVE_AVX2_CELLS)
      return __builtin_cpu_supports("avx2") != 0;
#else
      return false;
#endif
  }
  return false;
}

cell_code best_cell_code() noexcept
{
  static cell_code const best = cell_code_available(cell_code::avx2) ? cell_code::avx2 : cell_code::baseline;
  return best;
}

void band_cells(grid_band const& band, point_batch const& batch, std::size_t first, std::size_t n, std::uint32_t* out,
                cell_code code)
{
  HG_EXPECTS(cell_code_available(code), error_kind::internal, "band_cells: the CPU cannot run the code asked for");
#if defined(HG_HAVE_AVX2_CELLS)
  if (code == cell_code::avx2) {
    cells_avx2(band, batch, first, n, out);
    return;
  }
#endif
  cells_baseline(band, batch, first, n, out);
}

}  // namespace heightgrid
