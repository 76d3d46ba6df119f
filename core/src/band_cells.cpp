#include "heightgrid/core/band_cells.hpp"

#include "heightgrid/core/error.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

/// A mask of four 64-bit lanes as four 32-bit lanes (their low halves).
__attribute__((target("avx2"))) inline __m128i narrow(__m256d mask) noexcept
{
  return _mm256_castsi256_si128(
    _mm256_permutevar8x32_epi32(_mm256_castpd_si256(mask), _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
}

/// Stored integers (LAS, LAZ), four points at a time: cell_of's operations on four lanes (a multiply
/// then an add, a subtract, a divide, floor or ceil, in the same order), then row * cols + col and
/// the band's offset in double, exact for every grid (fewer than 2^53 cells), and the verdicts as
/// lane masks. The rest of the block (fewer than four points) goes through the scalar loop.
__attribute__((target("avx2"))) std::size_t scaled_cells_avx2(grid_band const& band, point_batch const& batch,
                                                              std::size_t first, std::size_t n,
                                                              std::uint32_t* out) noexcept
{
  grid_spec const& g = band.grid;
  scaled_coords const& t = batch.transform;
  __m256d const sx = _mm256_set1_pd(t.scale[0]), ox = _mm256_set1_pd(t.offset[0]);
  __m256d const sy = _mm256_set1_pd(t.scale[1]), oy = _mm256_set1_pd(t.offset[1]);
  __m256d const x0 = _mm256_set1_pd(g.x0), y0 = _mm256_set1_pd(g.y0);
  __m256d const xres = _mm256_set1_pd(g.xres), yres = _mm256_set1_pd(g.yres);
  __m256d const col0 = _mm256_set1_pd(static_cast<double>(g.col0)), row0 = _mm256_set1_pd(static_cast<double>(g.row0));
  __m256d const cols = _mm256_set1_pd(static_cast<double>(g.cols)), rows = _mm256_set1_pd(static_cast<double>(g.rows));
  __m256d const zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
  __m256d const band_first = _mm256_set1_pd(static_cast<double>(band.first_cell()));
  __m256d const band_cells = _mm256_set1_pd(static_cast<double>(band.cells()));
  __m256d const two31 = _mm256_set1_pd(2147483648.0);
  bool const gdal = g.edge == edge_rule::gdal;
  std::int32_t const* xi = batch.xi() + first;
  std::int32_t const* yi = batch.yi() + first;
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) {
    __m256d const x = _mm256_add_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<__m128i const*>(xi + k))), sx), ox);
    __m256d const y = _mm256_add_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<__m128i const*>(yi + k))), sy), oy);
    __m256d const c = _mm256_sub_pd(_mm256_round_pd(_mm256_div_pd(_mm256_sub_pd(x, x0), xres), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC), col0);
    __m256d const ty = _mm256_div_pd(_mm256_sub_pd(y0, y), yres);
    __m256d const below = gdal ? _mm256_round_pd(ty, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
                               : _mm256_sub_pd(_mm256_round_pd(ty, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC), one);
    __m256d const r = _mm256_sub_pd(below, row0);
    // Ordered compares: NaN is false everywhere, as in cell_of.
    __m256d const inside = _mm256_and_pd(_mm256_and_pd(_mm256_cmp_pd(c, zero, _CMP_GE_OQ), _mm256_cmp_pd(c, cols, _CMP_LT_OQ)),
                                         _mm256_and_pd(_mm256_cmp_pd(r, zero, _CMP_GE_OQ), _mm256_cmp_pd(r, rows, _CMP_LT_OQ)));
    // Lanes outside give garbage here; the masks below replace it.
    __m256d const local = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(r, cols), c), band_first);
    __m256d const in_band = _mm256_and_pd(_mm256_cmp_pd(local, zero, _CMP_GE_OQ), _mm256_cmp_pd(local, band_cells, _CMP_LT_OQ));
    // [0, 2^32) to uint32 through the signed conversion: lanes from 2^31 up are shifted down first.
    __m256d const high = _mm256_cmp_pd(local, two31, _CMP_GE_OQ);
    __m128i cell = _mm256_cvttpd_epi32(_mm256_sub_pd(local, _mm256_and_pd(high, two31)));
    cell = _mm_xor_si128(cell, _mm_and_si128(narrow(high), _mm_set1_epi32(static_cast<int>(0x80000000U))));
    cell = _mm_blendv_epi8(_mm_set1_epi32(static_cast<int>(cell_skipped)), cell, narrow(in_band));
    cell = _mm_blendv_epi8(_mm_set1_epi32(static_cast<int>(cell_outside)), cell, narrow(inside));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k), cell);
  }
  return k;
}

__attribute__((target("avx2"))) void cells_avx2(grid_band const& band, point_batch const& batch, std::size_t first,
                                                std::size_t n, std::uint32_t* out) noexcept
{
  std::size_t done = 0;
  if (batch.encoding == coord_encoding::scaled_int32) { done = scaled_cells_avx2(band, batch, first, n, out); }
  cells_of(band, batch, first + done, n - done, out + done);
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
