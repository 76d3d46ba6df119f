#include "heightgrid/core/synthetic.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/name_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <sstream>

namespace heightgrid {
namespace {

// splitmix64: a well-mixed 64-bit hash of a counter, the standard seeding function for the
// xoshiro family. One call per random number keeps points independent of chunking.
std::uint64_t mix(std::uint64_t v) noexcept
{
  v += 0x9e3779b97f4a7c15ULL;
  v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
  v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
  return v ^ (v >> 31);
}

/// Uniform double in [0, 1) from the top 53 bits.
double unit(std::uint64_t bits) noexcept { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

constexpr double two_pi = 6.283185307179586;

/// The ground every kind stands on: gentle hills, tens of metres over kilometres.
double terrain(double x, double y) noexcept { return 100.0 + 20.0 * std::sin(x * 2e-3) * std::cos(y * 3e-3); }

/// Per-kind counter streams, so that kinds with the same seed do not share random numbers.
/// (uniform keeps the stream it always had: its clouds are unchanged.)
std::uint64_t stream_of(synth_kind kind, std::uint64_t seed) noexcept
{
  switch (kind) {
    case synth_kind::uniform: return mix(seed);
    case synth_kind::lidar: return mix(seed ^ 0x6c69646172000000ULL);
    case synth_kind::skewed: return mix(seed ^ 0x736b657765640000ULL);
    case synth_kind::clustered: return mix(seed ^ 0x636c757374657200ULL);
  }
  return mix(seed);
}

/// Number of whole cells of size `cell` in `span`, tolerating a quotient a rounding error short
/// of an integer (3162 / 0.1 must give 31620 cells, not 31619).
std::uint64_t whole_cells(double span, double cell) noexcept
{
  double const q = span / cell;
  double const r = std::round(q);
  return static_cast<std::uint64_t>(std::abs(q - r) <= 1e-9 * std::max(1.0, r) ? r : std::floor(q));
}

/// v wrapped into [lo, lo + span).
double wrap(double v, double lo, double span) noexcept
{
  double t = std::fmod(v - lo, span);
  if (t < 0.0) { t += span; }
  if (!(t < span)) { t = 0.0; }
  return lo + t;
}

// ---- lidar model constants (see the header for what they model)
constexpr int lidar_strips = 5;
constexpr double lidar_overlap = 0.3;  ///< share of a strip's width covered by its neighbour
constexpr double lidar_lot = 50.0;     ///< side of a lot (building / trees / open ground), units
constexpr int lidar_group = 16;        ///< point slots filled by consecutive pulses; a unit of work
constexpr double lidar_noise_rate = 1e-4;

struct lidar_point {
  double x, y, z;
  std::uint8_t cls, ret, nret, flags;
};

namespace asprs {
constexpr std::uint8_t ground = 2, low_veg = 3, medium_veg = 4, high_veg = 5, building = 6, low_noise = 7;
}

struct lidar_geometry {
  double xmin, ymin, w, h;
  double strip_width;  ///< so that 5 strips, each overlapping the next by 30 %, span w exactly
  double strip_step;
  double x_last;  ///< the largest x below xmin + w
  std::uint64_t stream;

  lidar_geometry(synth_options const& o, std::uint64_t s)
    : xmin(o.xmin), ymin(o.ymin), w(o.xmax - o.xmin), h(o.ymax - o.ymin),
      strip_width(w / (1.0 + (lidar_strips - 1) * (1.0 - lidar_overlap))),
      strip_step(strip_width * (1.0 - lidar_overlap)), x_last(std::nextafter(o.xmax, o.xmin)), stream(s)
  {
  }

  /// Emits the returns of pulse `pulse` into out[0 .. returned), at most `room` of them (a pulse
  /// cut short by the end of its group keeps its first returns, renumbered "of `room`").
  int pulse(std::uint64_t pulse_id, int room, lidar_point* out) const noexcept
  {
    std::uint64_t const key = pulse_id * 8 + stream;
    std::uint64_t const r0 = mix(key);
    auto const strip = static_cast<int>((r0 >> 32) % lidar_strips);
    double const across = unit(mix(key + 1)) * strip_width;
    double const x = std::min(xmin + strip * strip_step + across, x_last);
    double const y = ymin + unit(mix(key + 2)) * h;
    std::uint64_t const r3 = mix(key + 3);
    double const overlap_half = 0.5 * (strip_width - strip_step);
    bool const nearer_neighbour =
      (strip > 0 && across < overlap_half) || (strip < lidar_strips - 1 && across > strip_width - overlap_half);
    std::uint8_t const flags = nearer_neighbour ? point_flag::overlap : std::uint8_t{0};
    double const ground = terrain(x, y) + 0.05 * (unit(r3) - 0.5);
    auto const single = [&](double z, std::uint8_t cls) {
      out[0] = {x, y, z, cls, 1, 1, flags};
      return 1;
    };
    if (static_cast<double>(r0 & 0xffffffffU) < lidar_noise_rate * 0x1.0p32) {  // low half: not the strip's bits
      return single(ground - 1.0 - 19.0 * unit(mix(key + 4)), asprs::low_noise);
    }

    auto const lx = static_cast<std::int64_t>(std::floor((x - xmin) / lidar_lot));
    auto const ly = static_cast<std::int64_t>(std::floor((y - ymin) / lidar_lot));
    std::uint64_t const lot = mix(mix(static_cast<std::uint64_t>(lx) + stream) + static_cast<std::uint64_t>(ly));
    double const lot_type = unit(lot);
    if (lot_type < 0.30) {  // building: a flat roof over a rectangle centred in the lot
      double const cx = xmin + (static_cast<double>(lx) + 0.5) * lidar_lot;
      double const cy = ymin + (static_cast<double>(ly) + 0.5) * lidar_lot;
      double const half_x = 6.0 + 14.0 * unit(mix(lot + 1));
      double const half_y = 6.0 + 14.0 * unit(mix(lot + 2));
      if (std::abs(x - cx) < half_x && std::abs(y - cy) < half_y) {
        double const roof = terrain(cx, cy) + 4.0 + 26.0 * unit(mix(lot + 3));
        return single(roof + 0.03 * (unit(r3 << 20) - 0.5), asprs::building);
      }
      return single(ground, asprs::ground);
    }
    if (lot_type >= 0.65) { return single(ground, asprs::ground); }

    // trees: an undulating canopy 8-25 m tall; 2-4 returns, descending, the last near the ground
    double const phase = two_pi * unit(mix(lot + 4));
    double const top = (8.0 + 17.0 * unit(mix(lot + 5))) * (0.8 + 0.2 * std::sin(x * 0.7 + phase) * std::cos(y * 0.6 - phase));
    int const n = 2 + static_cast<int>((r3 & 0xffffU) % 3);
    int const emitted = std::min(n, room);
    for (int r = 1; r <= emitted; ++r) {
      double const u = unit(mix(key + 3 + static_cast<std::uint64_t>(r)));
      double z = 0.0;
      std::uint8_t cls = 0;
      if (r == 1) {
        z = ground + top * (0.9 + 0.1 * u);
        cls = asprs::high_veg;
      } else if (r < n) {
        // in the r-th of n height bands from the top, so a pulse's returns descend
        double const above = top * (static_cast<double>(n - r) + 0.9 * u) / n;
        z = ground + above;
        cls = above > 2.0 ? asprs::high_veg : above > 0.5 ? asprs::medium_veg : asprs::low_veg;
      } else if (u < 0.7) {
        z = ground;
        cls = asprs::ground;
      } else {
        z = ground + 0.1 + 0.4 * (u - 0.7) / 0.3;
        cls = asprs::low_veg;
      }
      out[r - 1] = {x, y, z, cls, static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(emitted), flags};
    }
    return emitted;
  }
};

}  // namespace

namespace {

constexpr std::array<name_row<synth_kind>, 4> synth_kinds{{
  {synth_kind::uniform, "uniform"},
  {synth_kind::lidar, "lidar"},
  {synth_kind::skewed, "skewed"},
  {synth_kind::clustered, "clustered"},
}};

}  // namespace

std::string_view synth_kind_name(synth_kind k) noexcept { return name_in(synth_kinds, k); }

std::optional<synth_kind> parse_synth_kind(std::string_view name) noexcept { return parse_in(synth_kinds, name); }

std::vector<synth_kind> all_synth_kinds() { return values_in(synth_kinds); }

std::string synth_kind_list() { return names_in(synth_kinds, ", "); }

double default_points_per_cell(synth_kind k) noexcept { return k == synth_kind::skewed ? 2.0 : 10.0; }

void set_extent_from_density(synth_options& options, double density)
{
  HG_EXPECTS(std::isfinite(density) && density > 0.0, error_kind::usage,
          "--density: " + std::to_string(density) + " is not a positive number of points per square unit");
  double const cell = options.cell_size;
  HG_EXPECTS(std::isfinite(cell) && cell > 0.0, error_kind::usage,
          "--cell-size: " + std::to_string(cell) + " is not a positive cell size");
  double const side = std::sqrt(static_cast<double>(options.points) / density);
  double const cells = std::max(1.0, std::ceil(side / cell - 1e-9));
  options.xmin = 0.0;
  options.ymin = 0.0;
  options.xmax = cells * cell;
  options.ymax = cells * cell;
}

synthetic_source::synthetic_source(synth_options const& options) : options_(options)
{
  auto const& o = options;
  HG_EXPECTS(std::isfinite(o.xmin) && std::isfinite(o.ymin) && std::isfinite(o.xmax) && std::isfinite(o.ymax) &&
            o.xmin < o.xmax && o.ymin < o.ymax,
          error_kind::usage, "synthetic extent must be finite with xmin < xmax and ymin < ymax");
  std::ostringstream what;
  what << "synthetic " << synth_kind_name(o.kind) << " (seed " << o.seed;
  if (o.kind == synth_kind::skewed) {
    HG_EXPECTS(std::isfinite(o.cell_size) && o.cell_size > 0.0, error_kind::usage,
            "--cell-size: " + std::to_string(o.cell_size) + " is not a positive cell size");
    HG_EXPECTS(std::isfinite(o.zipf_s) && o.zipf_s >= 0.0 && o.zipf_s <= 10.0, error_kind::usage,
            "--zipf-s: " + std::to_string(o.zipf_s) + " is not in [0, 10]");
    cols_ = whole_cells(o.xmax - o.xmin, o.cell_size);
    rows_ = whole_cells(o.ymax - o.ymin, o.cell_size);
    HG_EXPECTS(cols_ >= 1 && rows_ >= 1, error_kind::usage,
            "synthetic skewed: the extent is smaller than one cell of --cell-size " + std::to_string(o.cell_size));
    HG_EXPECTS(static_cast<double>(cols_) * static_cast<double>(rows_) < 0x1.0p62, error_kind::usage,
            "synthetic skewed: too many cells of --cell-size " + std::to_string(o.cell_size));
    double const cells = static_cast<double>(cols_ * rows_);
    zipf_base_ = o.zipf_s == 1.0 ? std::log(cells + 1.0) : std::pow(cells + 1.0, 1.0 - o.zipf_s) - 1.0;
    while (scramble_bits_ < 62 && (std::uint64_t{1} << scramble_bits_) < cols_ * rows_) { ++scramble_bits_; }
    what << ", Zipf s " << o.zipf_s << " over " << cols_ << " x " << rows_ << " cells of " << o.cell_size;
  }
  if (o.kind == synth_kind::clustered) {
    HG_EXPECTS(o.hotspots >= 1 && o.hotspots <= 10000, error_kind::usage,
            "--hotspots: " + std::to_string(o.hotspots) + " is not in 1..10000");
    std::uint64_t const stream = stream_of(o.kind, o.seed);
    double const w = o.xmax - o.xmin;
    double const h = o.ymax - o.ymin;
    double const shorter = std::min(w, h);
    for (int j = 0; j < o.hotspots; ++j) {
      std::uint64_t const key = stream ^ (0x686f7473706f7400ULL + static_cast<std::uint64_t>(j) * 4);
      hotspots_.push_back({o.xmin + w * (0.1 + 0.8 * unit(mix(key))), o.ymin + h * (0.1 + 0.8 * unit(mix(key + 1))),
                           shorter * (0.003 + 0.007 * unit(mix(key + 2))), 5.0 + 25.0 * unit(mix(key + 3))});
    }
    what << ", " << o.hotspots << " hotspots";
  }
  what << ")";
  info_.path = "synthetic:" + std::string(synth_kind_name(o.kind));
  info_.format = what.str();
  info_.point_count = o.points;
}

bool synthetic_source::read(point_chunk& chunk, std::size_t max_points)
{
  auto const n = static_cast<std::size_t>(std::min<std::uint64_t>(max_points, options_.points - next_));
  if (n == 0) {
    chunk.clear();
    return false;
  }
  generate(next_, n, chunk);
  next_ += n;
  return true;
}

void synthetic_source::generate(std::uint64_t first, std::size_t n, point_chunk& chunk) const
{
  chunk.clear();
  chunk.x.resize(n);
  chunk.y.resize(n);
  chunk.z.resize(n);
  switch (options_.kind) {
    case synth_kind::uniform: generate_uniform(chunk, first, n); break;
    case synth_kind::lidar: generate_lidar(chunk, first, n); break;
    case synth_kind::skewed: generate_skewed(chunk, first, n); break;
    case synth_kind::clustered: generate_clustered(chunk, first, n); break;
  }
}

namespace {

class synthetic_part_source final : public part_source {
 public:
  synthetic_part_source(synth_options const& options, std::size_t part_points)
    : source_(options), points_(options.points), part_(part_points)
  {
    HG_EXPECTS(part_points > 0, error_kind::usage, "synthetic parts: the part size must be > 0");
    declared_.extend(options.xmin, options.ymin);
    declared_.extend(options.xmax, options.ymax);
  }

  [[nodiscard]] source_info const& info() const override { return source_.info(); }
  [[nodiscard]] std::optional<bounds> declared_bounds() const override { return declared_; }
  [[nodiscard]] std::optional<std::uint64_t> part_count() const override { return (points_ + part_ - 1) / part_; }
  [[nodiscard]] bool concurrent_parts() const override { return true; }
  [[nodiscard]] std::size_t max_part_points() const override { return part_; }

  part_result read_part(std::uint64_t k, filter_rules const& rules, point_batch& out) override
  {
    HG_EXPECTS(out.capacity >= part_ && k < (points_ + part_ - 1) / part_, error_kind::internal,
            "synthetic parts: part " + std::to_string(k) + " or its batch is out of range");
    thread_local point_chunk chunk;
    std::uint64_t const first = k * part_;
    auto const n = static_cast<std::size_t>(std::min<std::uint64_t>(part_, points_ - first));
    source_.generate(first, n, chunk);
    part_result r;
    r.last = first + n == points_;
    apply_filter(rules, chunk, r.filtered);
    copy_to_batch(chunk, out, r, &rules, info().path);
    return r;
  }

 private:
  synthetic_source source_;
  std::uint64_t points_;
  std::size_t part_;
  bounds declared_;
};

}  // namespace

std::unique_ptr<part_source> synthetic_parts(synth_options const& options, std::size_t part_points)
{
  return std::make_unique<synthetic_part_source>(options, part_points);
}

void synthetic_source::generate_uniform(point_chunk& chunk, std::uint64_t base, std::size_t n) const
{
  double const w = options_.xmax - options_.xmin;
  double const h = options_.ymax - options_.ymin;
  std::uint64_t const stream = stream_of(options_.kind, options_.seed);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) {
    std::uint64_t const id = (base + static_cast<std::uint64_t>(i)) * 3 + stream;
    double const u = unit(mix(id));
    double const v = unit(mix(id + 1));
    double const e = unit(mix(id + 2));
    double const x = options_.xmin + u * w;
    double const y = options_.ymin + v * h;
    chunk.x[static_cast<std::size_t>(i)] = x;
    chunk.y[static_cast<std::size_t>(i)] = y;
    chunk.z[static_cast<std::size_t>(i)] = terrain(x, y) + (e - 0.5);
  }
}

void synthetic_source::generate_lidar(point_chunk& chunk, std::uint64_t base, std::size_t n) const
{
  chunk.classification.resize(n);
  chunk.return_number.resize(n);
  chunk.number_of_returns.resize(n);
  chunk.flags.resize(n);
  lidar_geometry const geo(options_, stream_of(options_.kind, options_.seed));
  // Point slots are filled a group of 16 at a time by consecutive pulses; a chunk that starts or
  // ends inside a group regenerates the whole group and keeps its part, so the cloud does not
  // depend on the chunking.
  std::uint64_t const first_group = base / lidar_group;
  std::uint64_t const end_group = (base + n + lidar_group - 1) / lidar_group;
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t g = 0; g < static_cast<std::ptrdiff_t>(end_group - first_group); ++g) {
    std::uint64_t const group = first_group + static_cast<std::uint64_t>(g);
    std::array<lidar_point, lidar_group> pts{};
    int filled = 0;
    for (std::uint64_t k = 0; filled < lidar_group; ++k) {
      filled += geo.pulse(group * lidar_group + k, lidar_group - filled, pts.data() + filled);
    }
    for (int j = 0; j < lidar_group; ++j) {
      std::uint64_t const index = group * lidar_group + static_cast<std::uint64_t>(j);
      if (index < base || index >= base + n) { continue; }
      auto const i = static_cast<std::size_t>(index - base);
      auto const& p = pts[static_cast<std::size_t>(j)];
      chunk.x[i] = p.x;
      chunk.y[i] = p.y;
      chunk.z[i] = p.z;
      chunk.classification[i] = p.cls;
      chunk.return_number[i] = p.ret;
      chunk.number_of_returns[i] = p.nret;
      chunk.flags[i] = p.flags;
    }
  }
}

void synthetic_source::generate_skewed(point_chunk& chunk, std::uint64_t base, std::size_t n) const
{
  std::uint64_t const stream = stream_of(options_.kind, options_.seed);
  std::uint64_t const cells = cols_ * rows_;
  double const s = options_.zipf_s;
  double const inv_a = s == 1.0 ? 0.0 : 1.0 / (1.0 - s);
  double const cell = options_.cell_size;
  // Rank -> cell: a seeded bijection of [0, 2^bits) (odd multipliers and xor-shifts, each
  // invertible mod 2^bits), cycle-walked until it lands below `cells`: a bijection of [0, cells)
  // that scatters the heavy ranks over the grid. Fewer than 2 rounds on average.
  std::uint64_t const mask = (std::uint64_t{1} << scramble_bits_) - 1;
  std::uint64_t const m1 = mix(stream + 1) | 1U, m2 = mix(stream + 2) | 1U, c1 = mix(stream + 3);
  int const shift = scramble_bits_ / 2 + 1;
  auto const scramble = [&](std::uint64_t v) {
    if (cells == 1) { return std::uint64_t{0}; }
    do {
      v = (v * m1 + c1) & mask;
      v ^= v >> shift;
      v = (v * m2) & mask;
      v ^= v >> shift;
    } while (v >= cells);
    return v;
  };
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) {
    std::uint64_t const id = (base + static_cast<std::uint64_t>(i)) * 4 + stream;
    double const u = unit(mix(id));
    // inverse CDF of the density ~ t^-s on [1, cells + 1): rank = floor(t) - 1
    double const t = s == 1.0 ? std::exp(u * zipf_base_) : std::pow(1.0 + u * zipf_base_, inv_a);
    auto const rank = std::min(static_cast<std::uint64_t>(std::max(t, 1.0)), cells) - 1;
    std::uint64_t const c = scramble(rank);
    double const col = static_cast<double>(c % cols_);
    double const row = static_cast<double>(c / cols_);
    double const x = options_.xmin + (col + 0.01 + 0.98 * unit(mix(id + 1))) * cell;
    double const y = options_.ymax - (row + 0.01 + 0.98 * unit(mix(id + 2))) * cell;
    chunk.x[static_cast<std::size_t>(i)] = x;
    chunk.y[static_cast<std::size_t>(i)] = y;
    chunk.z[static_cast<std::size_t>(i)] = terrain(x, y) + 2.0 * (unit(mix(id + 3)) - 0.5);
  }
}

void synthetic_source::generate_clustered(point_chunk& chunk, std::uint64_t base, std::size_t n) const
{
  std::uint64_t const stream = stream_of(options_.kind, options_.seed);
  double const w = options_.xmax - options_.xmin;
  double const h = options_.ymax - options_.ymin;
  auto const k = static_cast<double>(hotspots_.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) {
    std::uint64_t const id = (base + static_cast<std::uint64_t>(i)) * 4 + stream;
    double const pick = unit(mix(id));
    double const u = unit(mix(id + 1));
    double const v = unit(mix(id + 2));
    double const e = unit(mix(id + 3));
    double x = 0.0, y = 0.0, z = 0.0;
    if (pick < 0.5) {  // background
      x = options_.xmin + u * w;
      y = options_.ymin + v * h;
      z = terrain(x, y) + (e - 0.5);
    } else {  // hotspot j: a Gaussian blob (Box-Muller), wrapped around the extent
      auto const j = std::min(static_cast<std::size_t>((pick - 0.5) * 2.0 * k), hotspots_.size() - 1);
      auto const& spot = hotspots_[j];
      double const r = spot.sigma * std::sqrt(-2.0 * std::log(1.0 - u));
      x = wrap(spot.cx + r * std::cos(two_pi * v), options_.xmin, w);
      y = wrap(spot.cy + r * std::sin(two_pi * v), options_.ymin, h);
      z = terrain(x, y) + spot.height * e;
    }
    chunk.x[static_cast<std::size_t>(i)] = x;
    chunk.y[static_cast<std::size_t>(i)] = y;
    chunk.z[static_cast<std::size_t>(i)] = z;
  }
}

}  // namespace heightgrid
