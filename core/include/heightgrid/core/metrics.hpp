#pragma once
// Per-cell statistics computed from the CSR, and their output convention.

#include "heightgrid/core/binning.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__CUDACC__)
#define HG_METRICS_HOST_DEVICE __host__ __device__
#else
#define HG_METRICS_HOST_DEVICE
#endif

namespace heightgrid {

enum class metric_kind : std::uint8_t {
  range, min, max, count, mean, stddev, percentile, median, prange,
  // The shape of a cell's z distribution (shape_metrics.hpp), read off its sorted values.
  skewness, kurtosis, cover, above, zbin, entropy,
  density,  ///< points per square unit of the cell's area
  // Counts of a kind of point (a tag each point carries from its reader: point_filter.hpp's tag_table).
  class_count,  ///< count:CLASSES, points of the listed ASPRS classes
  first,        ///< first returns (return number 1; 0 too, as --returns first)
  last,         ///< last returns (return number >= number of returns, as --returns last)
};

/// The most tagged count bands (count:CLASSES, first, last) of one job: a point's tag is one byte.
inline constexpr std::size_t max_tag_bands = 8;

/// One output band: a kind, and its numbers where it has some.
struct metric {
  metric_kind kind{metric_kind::range};
  double p{0.0};  ///< percentile: the percentile (0-100); above and cover: the height H; zbin: its low end
  double q{0.0};  ///< zbin: its high end (excluded)
  std::uint64_t classes[4]{0, 0, 0, 0};  ///< class_count: bit c of word c / 64 for class c

  /// count:CLASSES of the classes in [first, last).
  template <class It>
  [[nodiscard]] static metric class_count(It first, It last) noexcept
  {
    metric m{metric_kind::class_count};
    for (; first != last; ++first) {
      auto const c = static_cast<unsigned>(*first) & 0xffU;
      m.classes[c / 64] |= std::uint64_t{1} << (c % 64);
    }
    return m;
  }
  [[nodiscard]] constexpr bool has_class(unsigned c) const noexcept
  {
    return c < 256 && ((classes[c / 64] >> (c % 64)) & 1U) != 0;
  }
  /// Whether the band counts a kind of point (count:CLASSES, first, last): a tagged count band.
  [[nodiscard]] constexpr bool is_tag_count() const noexcept
  {
    return kind == metric_kind::class_count || kind == metric_kind::first || kind == metric_kind::last;
  }
  /// Whether the band holds whole numbers of points (count and the tagged counts).
  [[nodiscard]] constexpr bool is_count_like() const noexcept { return kind == metric_kind::count || is_tag_count(); }

  static metric const range, min, max, count, mean, stddev, median, prange, skewness, kurtosis, entropy, density,
    first_returns, last_returns;
  [[nodiscard]] static constexpr metric percentile(double p) noexcept { return {metric_kind::percentile, p}; }
  [[nodiscard]] static constexpr metric above(double h) noexcept { return {metric_kind::above, h}; }
  /// cover: the share above `h` (--cover-above).
  [[nodiscard]] static constexpr metric cover(double h = 2.0) noexcept { return {metric_kind::cover, h}; }
  [[nodiscard]] static constexpr metric zbin(double lo, double hi) noexcept { return {metric_kind::zbin, lo, hi}; }
  /// Whether the band is a shape metric (shape_metrics.hpp).
  [[nodiscard]] constexpr bool is_shape() const noexcept
  {
    return kind == metric_kind::skewness || kind == metric_kind::kurtosis || kind == metric_kind::cover ||
           kind == metric_kind::above || kind == metric_kind::zbin || kind == metric_kind::entropy;
  }
  /// Whether the band needs every point of a cell at once (an order statistic or a shape metric).
  [[nodiscard]] constexpr bool is_order_statistic() const noexcept
  {
    return kind == metric_kind::percentile || kind == metric_kind::median || kind == metric_kind::prange || is_shape();
  }
  friend constexpr bool operator==(metric a, metric b) noexcept
  {
    return a.kind == b.kind && a.p == b.p && a.q == b.q && a.classes[0] == b.classes[0] &&
           a.classes[1] == b.classes[1] && a.classes[2] == b.classes[2] && a.classes[3] == b.classes[3];
  }
  friend constexpr bool operator!=(metric a, metric b) noexcept { return !(a == b); }
};
inline constexpr metric metric::range{metric_kind::range};
inline constexpr metric metric::min{metric_kind::min};
inline constexpr metric metric::max{metric_kind::max};
inline constexpr metric metric::count{metric_kind::count};
inline constexpr metric metric::mean{metric_kind::mean};
inline constexpr metric metric::stddev{metric_kind::stddev};
inline constexpr metric metric::median{metric_kind::median};
inline constexpr metric metric::prange{metric_kind::prange};
inline constexpr metric metric::skewness{metric_kind::skewness};
inline constexpr metric metric::kurtosis{metric_kind::kurtosis};
inline constexpr metric metric::entropy{metric_kind::entropy};
inline constexpr metric metric::density{metric_kind::density};
inline constexpr metric metric::first_returns{metric_kind::first};
inline constexpr metric metric::last_returns{metric_kind::last};

/// The robust range's default percentiles (--prange LO,HI).
inline constexpr double default_prange_lo = 5.0;
inline constexpr double default_prange_hi = 95.0;

/// CLI / band-description name of a metric ("range", "min", "p95", "p2.5", "median", "prange",
/// "above:2", "zbin:2..5", "cover", ...).
[[nodiscard]] std::string metric_name(metric m);
/// Human description written into the band metadata (prange's names its percentiles).
[[nodiscard]] std::string metric_description(metric m, double prange_lo = default_prange_lo,
                                             double prange_hi = default_prange_hi);
/// "range", "p95", "p2.5", "median", ...; nullopt for an unknown name or a percentile outside
/// [0, 100] (or not a plain decimal number).
[[nodiscard]] std::optional<metric> parse_metric(std::string_view name) noexcept;
/// Parses "range,min,p95,count,above:5,zbin:0,2,10"; throws error_kind::usage on an unknown or
/// repeated name, naming it. `zbin:H1,H2,...,Hk` (k >= 2 increasing heights; the numbers after
/// `zbin:` up to the next name) is k - 1 bands [H1, H2), ..., [Hk-1, Hk).
[[nodiscard]] std::vector<metric> parse_metric_list(std::string_view list);
/// Parses --prange "LO,HI" (0 <= LO < HI <= 100); throws error_kind::usage naming the value.
[[nodiscard]] std::pair<double, double> parse_prange(std::string_view text);

/// numpy.percentile(z, p) with numpy's default method ('linear') on `n` >= 1 values sorted in
/// increasing order: q = p / 100, h = (n - 1) * q, lo = floor(h), g = h - lo, and
/// a + (b - a) * g (g < 0.5) or b - (b - a) * (1 - g) (g >= 0.5) with a = z[lo], b = z[lo + 1];
/// h >= n - 1 gives z[n - 1]. The same double operations in the same order as numpy (the build
/// forbids FMA contraction), so the result equals numpy's bit for bit.
/// `z` is anything indexable whose z[i] converts to double (a pointer, or a decoding view).
template <class Values>
HG_METRICS_HOST_DEVICE inline double percentile_of_sorted(Values const& z, std::uint64_t n, double p) noexcept
{
  double const q = p / 100.0;
  double const h = static_cast<double>(n - 1) * q;
  if (!(h < static_cast<double>(n - 1))) { return static_cast<double>(z[n - 1]); }
  double const lo = ::floor(h);
  auto const i = static_cast<std::uint64_t>(lo);
  double const g = h - lo;
  double const a = static_cast<double>(z[i]);
  double const b = static_cast<double>(z[i + 1]);
  double const d = b - a;
  return g >= 0.5 ? b - d * (1.0 - g) : a + d * g;
}

/// A tagged count's value in an empty cell (no count reaches it: counts stop at 2^32 - 2, checked).
inline constexpr std::uint32_t tag_empty = 0xffffffffU;

/// Default value written to empty cells of float bands.
inline constexpr float default_nodata = std::numeric_limits<float>::quiet_NaN();

/// Which per-cell outputs a reduction must produce.
struct metric_request {
  bool min{false};
  bool max{false};
  bool range{false};
  bool count{false};
  bool mean{false};
  bool stddev{false};
  /// Order statistics: the distinct percentiles of pNN and median bands (median is 50), in the
  /// order first asked; cell_results::percentile has one column per entry.
  std::vector<double> percentiles;
  bool prange{false};
  double prange_lo{default_prange_lo};
  double prange_hi{default_prange_hi};
  /// Shape metrics (metric::is_shape), in the order first asked; cell_results::shape has one column
  /// per entry.
  std::vector<metric> shapes;
  /// density = count / cell_area (the job sets the area once the grid is known; count is then on).
  bool density{false};
  double cell_area{0.0};
  /// Tagged count bands (count:CLASSES, first, last), in the order first asked (at most
  /// max_tag_bands): band b counts the points whose tag has bit b (point_filter.hpp's tag_table);
  /// cell_results::tag has one column per entry. They need the grid's counts (empty cells).
  std::vector<metric> tags;

  [[nodiscard]] static metric_request from(std::vector<metric> const& metrics, double prange_lo = default_prange_lo,
                                           double prange_hi = default_prange_hi);
  [[nodiscard]] bool needs_sums() const noexcept { return mean || stddev; }
  /// Whether any band needs every point of a cell at once (percentiles, median, prange, shapes).
  [[nodiscard]] bool needs_order() const noexcept { return !percentiles.empty() || prange || !shapes.empty(); }
  [[nodiscard]] bool needs_tags() const noexcept { return !tags.empty(); }
  /// Whether the grid must count points (a count band, or a band that needs the counts).
  [[nodiscard]] bool needs_counts() const noexcept { return count || needs_sums() || needs_order() || needs_tags(); }
  /// Index of percentile `p` in `percentiles` (p must be there).
  [[nodiscard]] std::size_t percentile_slot(double p) const noexcept;
};

/// Columns from this size on are mapped on 2 MiB pages where the kernel allows it (transparent huge
/// pages, madvise): a fresh column, like the bands downloaded from the device, then takes one fault
/// per 2 MiB, not per 4 KiB (measured: docs/benchmarks.md, "Shape metrics").
constexpr std::size_t huge_column_bytes = std::size_t{8} << 20;

/// `bytes` (>= huge_column_bytes) on 2 MiB-aligned memory, advised to the kernel for huge pages;
/// std::bad_alloc where there is none. Freed by free_huge_column.
[[nodiscard]] void* allocate_huge_column(std::size_t bytes);
void free_huge_column(void* p) noexcept;

/// std::allocator, except that resize() and the size constructor leave new elements
/// default-initialised (uninitialised, for float and integers): a column of 10^7 cells is then
/// first touched by the threads that fill it, in parallel, rather than zeroed by one thread first;
/// and that columns of huge_column_bytes or more live on huge pages.
template <typename T>
struct uninitialized_allocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = uninitialized_allocator<U>;
  };
  uninitialized_allocator() noexcept = default;
  template <typename U>
  uninitialized_allocator(uninitialized_allocator<U> const&) noexcept  // NOLINT: converting, as std::allocator
  {
  }
  [[nodiscard]] T* allocate(std::size_t n)
  {
    if (n >= huge_column_bytes / sizeof(T)) {
      if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) { throw std::bad_array_new_length(); }
      return static_cast<T*>(allocate_huge_column(n * sizeof(T)));
    }
    return std::allocator<T>::allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept
  {
    if (n >= huge_column_bytes / sizeof(T)) {
      free_huge_column(p);
    } else {
      std::allocator<T>::deallocate(p, n);
    }
  }
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>)
  {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args)
  {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// A band's cells: resize() leaves them for the caller to fill.
template <typename T>
using column = std::vector<T, uninitialized_allocator<T>>;

/// Maps the pages of [data, data + bytes) on the OpenMP team (one store of the zero a fresh page
/// holds, a page each): memory that one thread is about to fill, like a column a copy from the
/// device lands in, then takes no page fault on that thread. Only for memory whose bytes are
/// still to be written: it stores zero at every page start.
void touch_pages(void* data, std::size_t bytes) noexcept;

/// Maps the pages of [data, data + bytes) for writing without changing a byte (madvise
/// MADV_POPULATE_WRITE, Linux 5.14 and later), in pieces on the OpenMP team: memory that others may
/// be filling already, which page-locking (cudaHostRegister) would otherwise fault in one page at a
/// time on one thread. `data` page-aligned. Returns false where the kernel cannot (nothing done).
bool populate_pages(void* data, std::size_t bytes) noexcept;

/// memcpy of [src, src + bytes) to dst split over the OpenMP team (pieces of at least 256 KiB):
/// copies out of pinned staging buffers into fresh columns, whose page faults the team then
/// takes in parallel. The ranges must not overlap.
void copy_bytes_parallel(void* dst, void const* src, std::size_t bytes) noexcept;

/// Per-cell results, one entry per cell, only the requested columns filled.
///
/// Convention shared by every backend (so outputs are bit-identical):
///  - min/max/range are reduced in double and rounded to float once:
///    min = float(min_z), max = float(max_z), range = float(max_z - min_z);
///  - mean = float(sum_z / n) with sum_z in double;
///  - stddev is the population standard deviation float(sqrt(sum((z - mean_d)^2) / n)), a second
///    pass over the cell with mean_d in double (no sum-of-squares cancellation);
///  - percentile columns (pNN, median = p50) are percentile_of_sorted over the cell's z values in
///    double, rounded to float once; prange = float(P(hi) - P(lo)) with both percentiles in double;
///  - shape columns (skewness, kurtosis, cover, above, zbin, entropy) are shape_of_sorted over the
///    cell's sorted values in double, rounded to float once; nodata where it has none;
///  - density = float(double(count) / cell_area);
///  - tagged counts (count:CLASSES, first, last) are whole numbers, tag_empty in an empty cell (a
///    cell with points but none of the kind holds 0);
///  - empty cells hold `nodata` in every float column and 0 in count; a one-point cell has range 0.
struct cell_results {
  column<float> min;
  column<float> max;
  column<float> range;
  column<std::uint32_t> count;
  column<float> mean;
  column<float> stddev;
  std::vector<column<float>> percentile;  ///< one column per metric_request::percentiles entry
  std::vector<double> percentile_of;      ///< the percentile of each of those columns
  column<float> prange;
  std::vector<column<float>> shape;  ///< one column per metric_request::shapes entry
  std::vector<metric> shape_of;      ///< the metric of each of those columns
  column<float> density;
  std::vector<column<std::uint32_t>> tag;  ///< one column per metric_request::tags entry
  std::vector<metric> tag_of;              ///< the metric of each of those columns

  /// The column of tagged count band `m` (metric::is_tag_count); throws error_kind::internal when absent.
  [[nodiscard]] column<std::uint32_t> const& tag_column(metric m) const;
  /// Sizes one tag column per request.tags entry (`cells` each), tag_of set.
  void size_tag_columns(metric_request const& request, std::size_t cells);

  /// Fills `density` from `count` (request.density): count / cell_area, nodata where empty.
  void add_density(metric_request const& request, float nodata);

  /// The column of a float band (min, max, range, mean, stddev, pNN, median, prange, shapes, density); throws
  /// error_kind::internal for count or a percentile without a column.
  [[nodiscard]] column<float> const& float_column(metric m) const;
};

/// CPU (OpenMP) reduction of every cell. Deterministic whatever the thread count: each cell is
/// reduced sequentially in CSR order.
cell_results reduce_cells_cpu(csr_grid const& csr, metric_request const& request,
                              float nodata = default_nodata);

}  // namespace heightgrid
