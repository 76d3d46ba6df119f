#pragma once
// Constant tables of the LAZ point14 and point10 formats that the CPU decoder (io/src/laz) and the
// GPU decoder (kernels/src/laz_decode*.cu) read. Host-only data (kernels copy it into constant
// memory at compile time).

#include <cstdint>

namespace heightgrid {

/// Which of six X/Y step predictors a point uses, by [number of returns][return number]:
/// single returns, first/last of few returns and the middle of many returns move differently.
struct laz_xy_predictor_table {
  std::uint8_t of_return[16][16];
};

// clang-format off
inline constexpr laz_xy_predictor_table laz_xy_predictor = {{
  {0, 1, 2, 3, 4, 5, 3, 4, 4, 5, 5, 5, 5, 5, 5, 5},
  {1, 0, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
  {2, 1, 2, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3},
  {3, 3, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
  {4, 3, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
  {5, 3, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
  {3, 3, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4},
  {4, 3, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4},
  {4, 3, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4},
  {5, 3, 4, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4},
  {5, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4},
  {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 4, 4, 4},
  {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 4, 4},
  {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 4},
  {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5},
  {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5},
}};
// clang-format on

/// point10 v2's context of a point, by [number of returns][return number] (3 bits each): single
/// returns, first/last of few returns and so on get their own intensity and X/Y predictions; 15
/// collects the combinations valid files do not produce. (io/src/laz/laz_pointwise_point10.hpp's
/// return_context, the same values.)
struct laz_point10_context_table {
  std::uint8_t of_return[8][8];
};

// clang-format off
inline constexpr laz_point10_context_table laz_point10_context = {{
  {15, 14, 13, 12, 11, 10,  9,  8},
  {14,  0,  1,  3,  6, 10, 10,  9},
  {13,  1,  2,  4,  7, 11, 11, 10},
  {12,  3,  4,  5,  8, 12, 12, 11},
  {11,  6,  7,  8,  9, 13, 13, 12},
  {10, 10, 11, 12, 13, 14, 14, 13},
  { 9, 10, 11, 12, 13, 14, 15, 14},
  { 8,  9, 10, 11, 12, 13, 14, 15},
}};
// clang-format on

}  // namespace heightgrid
