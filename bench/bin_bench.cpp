// How fast can the CPU fold points into random cells? The CPU route's binning (host_grid::add_batch)
// bounds a 10^8-point job; this measures it in memory, without reading, against variants of the
// accumulator layout and the update, on `--threads` threads:
//
//   cells      compute each point's cell and z key only (no grid): the arithmetic floor
//   cells-baseline, cells-avx2  band_cells alone (the product's cell arithmetic) with that code
//   host       host_grid::add_batch, the product's code (range alone: the integer words, one CAS)
//   host-prefault  the same after host_grid::prefault (timed apart)
//   host-doubles   the same with a negative z scale: the {lo, hi} pairs of doubles, atomic maxima
//   host-count the same with a count band asked for (a count array, a locked add a point)
//   soa-plain  the same layout and loop with plain loads and stores (wrong with > 1 thread: a bound)
//   aos        one 16-byte {lo, hi} record a cell + a separate count array, atomics
//   aos-nocount one 16-byte {lo, hi} record a cell, no count (empty = hi 0), atomics
//   int-pairs  one 8-byte word a cell: 32-bit keys of the stored integer z (lo, hi), one CAS
//
//   bin_bench [--points N] [--cells N] [--threads T] [--repeat R] [--distance D] [--variants a,b]
//
// Points are LAS-like int32 triples, uniformly random over a square grid of --cells cells (every
// point a random cell, as `synth lidar`), in batches of 2^18 handed to threads dynamically.
#include "heightgrid/core/band_cells.hpp"
#include "heightgrid/core/cell_accumulator.hpp"
#include "heightgrid/core/grid_spec.hpp"
#include "heightgrid/core/host_grid.hpp"
#include "heightgrid/core/metrics.hpp"
#include "heightgrid/core/point_batch.hpp"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace heightgrid;

namespace {

struct options {
  std::uint64_t points{100000000};
  std::uint64_t cells{10000000};
  int threads{0};
  int repeat{3};
  std::size_t distance{16};
  unsigned stripe_bits{11};
  std::string variants{"cells,host,soa-plain,aos,aos-nocount"};
};

constexpr std::size_t batch = std::size_t{1} << 18;

struct cloud {
  std::vector<std::int32_t> x, y, z;
  scaled_coords t;
};

inline void amax(std::uint64_t* p, std::uint64_t v) noexcept
{
  std::uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

void* map_zeroed(std::size_t bytes)
{
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  if (std::getenv("HG_NO_THP") == nullptr) { (void)::madvise(p, bytes, MADV_HUGEPAGE); }  // as host_grid
  return p;
}

template <class PerBatch>
double timed(cloud const& c, int threads, PerBatch&& f)
{
  std::uint64_t const n = c.x.size();
  std::int64_t const batches = static_cast<std::int64_t>((n + batch - 1) / batch);
  auto const t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (std::int64_t b = 0; b < batches; ++b) {
    std::size_t const first = static_cast<std::size_t>(b) * batch;
    f(first, std::min<std::size_t>(batch, n - first));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline std::uint32_t cell_at(grid_spec const& g, cloud const& c, std::size_t i) noexcept
{
  double const x = scaled_coords::apply(c.x[i], c.t.scale[0], c.t.offset[0]);
  double const y = scaled_coords::apply(c.y[i], c.t.scale[1], c.t.offset[1]);
  cell_id const id = g.cell_of(x, y);
  return id == no_cell ? 0xffffffffU : static_cast<std::uint32_t>(id);
}

inline double z_at(cloud const& c, std::size_t i) noexcept
{
  return scaled_coords::apply(c.z[i], c.t.scale[2], c.t.offset[2]);
}

/// Visit(cell, i) for every point i of [first, first + n) in a cell, the cells computed a block
/// ahead and Prefetch(cell) called `distance` points before each visit.
template <class Prefetch, class Visit>
void fold_points(grid_spec const& g, cloud const& c, std::size_t first, std::size_t n, std::size_t distance,
                 Prefetch&& pf, Visit&& visit)
{
  constexpr std::size_t block = 256;
  std::uint32_t cells[block];
  for (std::size_t b0 = 0; b0 < n; b0 += block) {
    std::size_t const m = std::min(block, n - b0);
    for (std::size_t k = 0; k < m; ++k) { cells[k] = cell_at(g, c, first + b0 + k); }
    for (std::size_t k = 0; k < m; ++k) {
      if (k + distance < m && cells[k + distance] != 0xffffffffU) { pf(cells[k + distance]); }
      std::uint32_t const cell = cells[k];
      if (cell == 0xffffffffU) { continue; }
      visit(cell, first + b0 + k);
    }
  }
}

/// The layouts: Update(cell, lo, hi) folds one point's double keys; Prefetch(cell) touches its lines.
template <class Prefetch, class Update>
void fold(grid_spec const& g, cloud const& c, std::size_t first, std::size_t n, std::size_t distance, Prefetch&& pf,
          Update&& up)
{
  fold_points(g, c, first, n, distance, pf, [&](std::uint32_t cell, std::size_t i) {
    double const z = z_at(c, i);
    up(cell, lo_key(z), hi_key(z));
  });
}

struct result {
  double seconds;
  std::uint64_t check;
};

}  // namespace

int main(int argc, char** argv)
{
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string const a = argv[i];
    char const* v = argv[i + 1];
    if (a == "--points") {
      o.points = static_cast<std::uint64_t>(std::atof(v));
    } else if (a == "--cells") {
      o.cells = static_cast<std::uint64_t>(std::atof(v));
    } else if (a == "--threads") {
      o.threads = std::atoi(v);
    } else if (a == "--repeat") {
      o.repeat = std::atoi(v);
    } else if (a == "--distance") {
      o.distance = static_cast<std::size_t>(std::atoi(v));
    } else if (a == "--stripe-bits") {
      o.stripe_bits = static_cast<unsigned>(std::atoi(v));
    } else if (a == "--variants") {
      o.variants = v;
    } else {
      std::fprintf(stderr, "bin_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  int const threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  auto const side = static_cast<std::uint32_t>(std::llround(std::sqrt(static_cast<double>(o.cells))));
  grid_spec g;
  g.x0 = 0.0;
  g.y0 = side;
  g.xres = g.yres = 1.0;
  g.cols = g.rows = side;
  std::uint64_t const cells = g.num_cells();

  cloud c;
  c.t.scale[0] = c.t.scale[1] = c.t.scale[2] = 0.001;
  c.x.resize(o.points);
  c.y.resize(o.points);
  c.z.resize(o.points);
  {
    auto const span = static_cast<std::int32_t>(side * 1000 - 1);
#pragma omp parallel num_threads(threads)
    {
      std::mt19937 rng(1234u + static_cast<unsigned>(omp_get_thread_num()));
      std::uniform_int_distribution<std::int32_t> xy(0, span), zz(0, 50000);
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(o.points); ++i) {
        c.x[static_cast<std::size_t>(i)] = xy(rng);
        c.y[static_cast<std::size_t>(i)] = xy(rng);
        c.z[static_cast<std::size_t>(i)] = zz(rng);
      }
    }
  }
  std::printf("bin_bench: %llu points, %u x %u = %llu cells, %d threads, batches of %zu, prefetch distance %zu\n",
              static_cast<unsigned long long>(o.points), side, side, static_cast<unsigned long long>(cells), threads,
              batch, o.distance);

  auto const run = [&](std::string const& name) -> result {
    if (name == "cells") {
      std::vector<std::uint64_t> sink(static_cast<std::size_t>(threads) * 8, 0);
      double const s = timed(c, threads, [&](std::size_t first, std::size_t n) {
        std::uint64_t acc = 0;
        for (std::size_t i = first; i < first + n; ++i) { acc += cell_at(g, c, i) ^ hi_key(z_at(c, i)); }
        sink[static_cast<std::size_t>(omp_get_thread_num()) * 8] += acc;
      });
      std::uint64_t chk = 0;
      for (auto v : sink) { chk += v; }
      return {s, chk};
    }
    if (name == "cells-baseline" || name == "cells-avx2") {
      // band_cells alone, the product's cell arithmetic, with the code named.
      cell_code const code = name == "cells-avx2" ? cell_code::avx2 : cell_code::baseline;
      if (!cell_code_available(code)) {
        std::printf("%s: not available on this CPU\n", name.c_str());
        return {0.0, 0};
      }
      std::vector<std::uint64_t> sink(static_cast<std::size_t>(threads) * 8, 0);
      double const s = timed(c, threads, [&](std::size_t first, std::size_t n) {
        thread_local std::vector<std::int32_t> buf(3 * batch);
        thread_local std::vector<std::uint32_t> out(batch);
        point_batch pb;
        pb.data = buf.data();
        pb.capacity = batch;
        pb.size = n;
        pb.encoding = coord_encoding::scaled_int32;
        pb.transform = c.t;
        std::memcpy(buf.data(), c.x.data() + first, n * 4);
        std::memcpy(buf.data() + batch, c.y.data() + first, n * 4);
        band_cells(grid_band::whole(g), pb, 0, n, out.data(), code);
        std::uint64_t acc = 0;
        for (std::size_t i = 0; i < n; ++i) { acc += out[i]; }
        sink[static_cast<std::size_t>(omp_get_thread_num()) * 8] += acc;
      });
      std::uint64_t chk = 0;
      for (auto v : sink) { chk += v; }
      return {s, chk};
    }
    if (name == "host" || name == "host-count" || name == "host-prefault" || name == "host-doubles") {
      metric_request req;
      req.range = true;
      req.count = name == "host-count";  // range alone: the grid keeps no counts
      host_grid h(grid_band::whole(g), req);
      bool const doubles = name == "host-doubles";  // integers with a negative z scale: the pairs
      if (name == "host-prefault") {
        auto const t0 = std::chrono::steady_clock::now();
        h.prefault(true);
        std::printf("  prefault %.1f ms\n", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      double const s = timed(c, threads, [&](std::size_t first, std::size_t n) {
        point_batch pb;
        // A view of the cloud's columns: the batch's three columns must be capacity apart, so copy.
        thread_local std::vector<std::int32_t> buf(3 * batch);
        std::memcpy(buf.data(), c.x.data() + first, n * 4);
        std::memcpy(buf.data() + batch, c.y.data() + first, n * 4);
        std::memcpy(buf.data() + 2 * batch, c.z.data() + first, n * 4);
        pb.data = buf.data();
        pb.capacity = batch;
        pb.size = n;
        pb.encoding = coord_encoding::scaled_int32;
        pb.transform = c.t;
        if (doubles) {
          pb.transform.scale[2] = -pb.transform.scale[2];
        }
        (void)h.add_batch(pb);
      });
      window_counts counted;
      (void)h.finalize_rows(0, g.rows, g.cols, req, -9999.0F, &counted);
      return {s, counted.total};
    }
    if (name == "soa-plain" || name == "soa-atomic" || name == "soa-nocount") {
      bool const plain = name == "soa-plain";
      bool const counted = name != "soa-nocount";
      auto* lo = static_cast<std::uint64_t*>(map_zeroed(cells * 20));
      auto* hi = lo + cells;
      auto* cnt = reinterpret_cast<std::uint32_t*>(hi + cells);
      double const s = timed(c, threads, [&](std::size_t first, std::size_t n) {
        fold(
          g, c, first, n, o.distance,
          [&](std::uint32_t k) {
            __builtin_prefetch(lo + k, 1);
            __builtin_prefetch(hi + k, 1);
            if (counted) { __builtin_prefetch(cnt + k, 1); }
          },
          [&](std::uint32_t k, std::uint64_t l, std::uint64_t h) {
            if (plain) {
              lo[k] = std::max(lo[k], l);
              hi[k] = std::max(hi[k], h);
              ++cnt[k];
            } else {
              amax(lo + k, l);
              amax(hi + k, h);
              if (counted) { __atomic_fetch_add(cnt + k, 1U, __ATOMIC_RELAXED); }
            }
          });
      });
      std::uint64_t chk = 0;
      for (std::uint64_t i = 0; i < cells; ++i) { chk += counted ? cnt[i] : (hi[i] != 0); }
      ::munmap(lo, cells * 20);
      return {s, chk};
    }
    if (name == "aos" || name == "aos-nocount" || name == "aos-plain") {
      bool const counted = name == "aos";
      bool const plain = name == "aos-plain";
      std::size_t const bytes = cells * 16 + (counted ? cells * 4 : 0);
      auto* rec = static_cast<std::uint64_t*>(map_zeroed(bytes));
      auto* cnt = reinterpret_cast<std::uint32_t*>(rec + 2 * cells);
      double const s = timed(c, threads, [&](std::size_t first, std::size_t n) {
        fold(
          g, c, first, n, o.distance,
          [&](std::uint32_t k) {
            __builtin_prefetch(rec + 2 * std::size_t{k}, 1);
            if (counted) { __builtin_prefetch(cnt + k, 1); }
          },
          [&](std::uint32_t k, std::uint64_t l, std::uint64_t h) {
            std::uint64_t* r = rec + 2 * std::size_t{k};
            if (plain) {
              r[0] = std::max(r[0], l);
              r[1] = std::max(r[1], h);
            } else {
              amax(r, l);
              amax(r + 1, h);
            }
            if (counted) { __atomic_fetch_add(cnt + k, 1U, __ATOMIC_RELAXED); }
          });
      });
      std::uint64_t chk = 0;
      for (std::uint64_t i = 0; i < cells; ++i) { chk += counted ? cnt[i] : (rec[2 * i + 1] != 0); }
      ::munmap(rec, bytes);
      return {s, chk};
    }
    if (name == "int-pairs") {
      // The stored integer z instead of the double: a cell is one 64-bit word, hi key in the upper
      // half, ~lo key in the lower (empty = 0), updated with one compare-and-swap. Half aos-nocount's
      // footprint; the same cell arithmetic and prefetch (fold's).
      auto* w = static_cast<std::uint64_t*>(map_zeroed(cells * 8));
      double const s = timed(c, threads, [&](std::size_t first, std::size_t n) {
        fold_points(
          g, c, first, n, o.distance, [&](std::uint32_t cell) { __builtin_prefetch(w + cell, 1); },
          [&](std::uint32_t cell, std::size_t i) {
            std::uint32_t const key = static_cast<std::uint32_t>(c.z[i]) ^ 0x80000000U;
            std::uint64_t* p = w + cell;
            std::uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
            for (;;) {
              std::uint32_t const lo = std::max(static_cast<std::uint32_t>(cur), ~key);
              std::uint32_t const hi = std::max(static_cast<std::uint32_t>(cur >> 32), key);
              std::uint64_t const next = (std::uint64_t{hi} << 32) | lo;
              if (next == cur ||
                  __atomic_compare_exchange_n(p, &cur, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                return;
              }
            }
          });
      });
      std::uint64_t chk = 0;
      for (std::uint64_t i = 0; i < cells; ++i) { chk += w[i] != 0; }
      ::munmap(w, cells * 8);
      return {s, chk};
    }
    if (name == "stripes" || name == "stripes-nocount") {
      // Each batch counting-sorted by stripe (2^stripe_bits cells), then each stripe's points folded
      // with plain loads and stores under the stripe's lock.
      bool const counted = name == "stripes";
      auto* lo = static_cast<std::uint64_t*>(map_zeroed(cells * 20));
      auto* hi = lo + cells;
      auto* cnt = reinterpret_cast<std::uint32_t*>(hi + cells);
      std::size_t const stripes = (cells >> o.stripe_bits) + 1;
      struct alignas(64) padded_lock {
        std::atomic<bool> held{false};
      };
      std::vector<padded_lock> locks(stripes);
      double const s = timed(c, threads, [&](std::size_t first, std::size_t n) {
        thread_local std::vector<std::uint32_t> cell, sorted_cell, start;
        thread_local std::vector<double> sorted_z;
        cell.resize(n);
        sorted_cell.resize(n);
        sorted_z.resize(n);
        start.assign(stripes + 1, 0);
        for (std::size_t i = 0; i < n; ++i) {
          std::uint32_t const k = cell_at(g, c, first + i);
          cell[i] = k;
          if (k != 0xffffffffU) { ++start[(k >> o.stripe_bits) + 1]; }
        }
        for (std::size_t p = 1; p <= stripes; ++p) { start[p] += start[p - 1]; }
        for (std::size_t i = 0; i < n; ++i) {
          std::uint32_t const k = cell[i];
          if (k == 0xffffffffU) { continue; }
          std::uint32_t const at = start[k >> o.stripe_bits]++;
          sorted_cell[at] = k;
          sorted_z[at] = z_at(c, first + i);
        }
        // start[p] is now the end of stripe p (the beginning of p + 1).
        std::size_t begin = 0;
        for (std::size_t p = 0; p < stripes; ++p) {
          std::size_t const end = start[p];
          if (begin == end) { continue; }
          while (locks[p].held.exchange(true, std::memory_order_acquire)) {
            while (locks[p].held.load(std::memory_order_relaxed)) { __builtin_ia32_pause(); }
          }
          for (std::size_t j = begin; j < end; ++j) {
            if (j + o.distance < end) {
              std::uint32_t const a = sorted_cell[j + o.distance];
              __builtin_prefetch(lo + a, 1);
              __builtin_prefetch(hi + a, 1);
              if (counted) { __builtin_prefetch(cnt + a, 1); }
            }
            std::uint32_t const k = sorted_cell[j];
            double const z = sorted_z[j];
            lo[k] = std::max(lo[k], lo_key(z));
            hi[k] = std::max(hi[k], hi_key(z));
            if (counted) { ++cnt[k]; }
          }
          locks[p].held.store(false, std::memory_order_release);
          begin = end;
        }
      });
      std::uint64_t chk = 0;
      for (std::uint64_t i = 0; i < cells; ++i) { chk += counted ? cnt[i] : (hi[i] != 0); }
      ::munmap(lo, cells * 20);
      return {s, chk};
    }
    if (name == "owners") {
      // Each thread owns cells [t * share, (t + 1) * share). Phase 1: every batch is split by owner
      // (counting sort into a per-batch array); phase 2: every owner folds its part of every batch
      // with plain loads and stores. The bound of an exchange between readers and owners (the
      // buffers are touched beforehand, as a reused ring would be).
      auto* lo = static_cast<std::uint64_t*>(map_zeroed(cells * 20));
      auto* hi = lo + cells;
      auto* cnt = reinterpret_cast<std::uint32_t*>(hi + cells);
      std::uint64_t const n_all = c.x.size();
      std::size_t const batches = (n_all + batch - 1) / batch;
      static std::vector<std::uint32_t> ocell;
      static std::vector<double> oz;
      static std::vector<std::uint32_t> ostart;
      ocell.resize(n_all);
      oz.resize(n_all);
      ostart.assign(batches * (static_cast<std::size_t>(threads) + 1), 0);
      std::uint64_t const share = (cells + static_cast<std::uint64_t>(threads) - 1) / static_cast<std::uint64_t>(threads);
      auto const t0 = std::chrono::steady_clock::now();
      double const s1 = timed(c, threads, [&](std::size_t first, std::size_t n) {
        thread_local std::vector<std::uint32_t> cell;
        cell.resize(n);
        std::size_t const b = first / batch;
        std::uint32_t* st = ostart.data() + b * (static_cast<std::size_t>(threads) + 1);
        std::vector<std::uint32_t> at(static_cast<std::size_t>(threads) + 1, 0);
        for (std::size_t i = 0; i < n; ++i) {
          std::uint32_t const k = cell_at(g, c, first + i);
          cell[i] = k;
          if (k != 0xffffffffU) { ++at[k / share + 1]; }
        }
        for (std::size_t p = 1; p < at.size(); ++p) { at[p] += at[p - 1]; }
        for (std::size_t p = 0; p < at.size(); ++p) { st[p] = at[p]; }
        for (std::size_t i = 0; i < n; ++i) {
          std::uint32_t const k = cell[i];
          if (k == 0xffffffffU) { continue; }
          std::uint32_t const pos = at[k / share]++;
          ocell[first + pos] = k;
          oz[first + pos] = z_at(c, first + i);
        }
      });
      (void)s1;
#pragma omp parallel num_threads(threads)
      {
        auto const t = static_cast<std::size_t>(omp_get_thread_num());
        for (std::size_t b = 0; b < batches; ++b) {
          std::uint32_t const* st = ostart.data() + b * (static_cast<std::size_t>(threads) + 1);
          std::size_t const base = b * batch;
          std::size_t const end = base + st[t + 1];
          for (std::size_t j = base + st[t]; j < end; ++j) {
            if (j + o.distance < end) {
              std::uint32_t const a = ocell[j + o.distance];
              __builtin_prefetch(lo + a, 1);
              __builtin_prefetch(hi + a, 1);
              __builtin_prefetch(cnt + a, 1);
            }
            std::uint32_t const k = ocell[j];
            double const z = oz[j];
            lo[k] = std::max(lo[k], lo_key(z));
            hi[k] = std::max(hi[k], hi_key(z));
            ++cnt[k];
          }
        }
      }
      double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("  owners: split %.1f ms, fold %.1f ms\n", s1 * 1e3, (s - s1) * 1e3);
      std::uint64_t chk = 0;
      for (std::uint64_t i = 0; i < cells; ++i) { chk += cnt[i]; }
      ::munmap(lo, cells * 20);
      return {s, chk};
    }
    std::fprintf(stderr, "bin_bench: unknown variant %s\n", name.c_str());
    std::exit(2);
  };

  std::string rest = o.variants;
  while (!rest.empty()) {
    auto const comma = rest.find(',');
    std::string const name = rest.substr(0, comma);
    rest = comma == std::string::npos ? std::string() : rest.substr(comma + 1);
    std::vector<double> t;
    std::uint64_t chk = 0;
    for (int r = 0; r < o.repeat + 1; ++r) {
      auto const res = run(name);
      if (r > 0) { t.push_back(res.seconds); }  // the first is a warm-up
      chk = res.check;
    }
    std::sort(t.begin(), t.end());
    double const med = t[t.size() / 2];
    std::printf("%-12s median %8.1f ms  (min %.1f, max %.1f)  %7.1f M points/s  %6.1f ns/point/thread  check %llu\n",
                name.c_str(), med * 1e3, t.front() * 1e3, t.back() * 1e3, static_cast<double>(o.points) / med / 1e6,
                med * 1e9 * threads / static_cast<double>(o.points), static_cast<unsigned long long>(chk));
  }
  return 0;
}
