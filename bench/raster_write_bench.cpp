// Wall time of raster_writer on a synthetic N x N grid of 1-4 float bands (min, max, range,
// count), fed in row windows of about 2^24 cells as the pipeline finalizes them, so that creation
// options (NUM_THREADS above all) can be compared on a given machine. The grid is generated
// before timing; each run creates, writes, compresses, closes and renames the whole file. The
// commit share is what is left after the last window (closing, the last compressed blocks, the
// COG's copy and overviews).
//
//   raster_write_bench [N=4000] [bands=1] [--of GTiff|COG] [--co KEY=VALUE]... [--runs R=3]
//                      [--window-cells C=16777216] [--out PATH]
//
// e.g. compare  raster_write_bench 4000 1 --co NUM_THREADS=1  with  raster_write_bench 4000 1

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/geotiff_writer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace {

using namespace heightgrid;

/// Rows [row0, row0 + rows) of a smooth terrain with noise, empty in a tenth of the cells (in
/// patches, as gaps in LiDAR coverage are), NaN in empty cells of float bands.
cell_results terrain_rows(std::uint32_t n, std::uint32_t row0, std::uint32_t rows, std::vector<metric> const& bands)
{
  std::size_t const cells = std::size_t{n} * rows;
  cell_results out;
  auto const has = [&](metric m) { return std::find(bands.begin(), bands.end(), m) != bands.end(); };
  if (has(metric::min)) { out.min.resize(cells); }
  if (has(metric::max)) { out.max.resize(cells); }
  if (has(metric::range)) { out.range.resize(cells); }
  if (has(metric::count)) { out.count.resize(cells); }
  float const nan = std::nanf("");
  for (std::uint32_t r = 0; r < rows; ++r) {
    double const y = row0 + r;
    for (std::uint32_t c = 0; c < n; ++c) {
      std::size_t const i = std::size_t{r} * n + c;
      std::uint32_t state = (static_cast<std::uint32_t>(y) * 2654435761U) ^ (c * 40503U);
      state = state * 1664525U + 1013904223U;
      bool const empty = std::sin(c / 37.0) * std::cos(y / 53.0) > 0.8;
      auto const count = empty ? 0U : 1U + (state >> 28);
      double const ground = 200.0 + 30.0 * std::sin(c / 200.0) * std::cos(y / 300.0);
      double const spread = ((state >> 8) % 4096U) / 1024.0;
      auto const lo = static_cast<float>(ground + ((state >> 4) % 256U) / 512.0);
      auto const hi = static_cast<float>(ground + spread);
      if (!out.min.empty()) { out.min[i] = empty ? nan : std::min(lo, hi); }
      if (!out.max.empty()) { out.max[i] = empty ? nan : std::max(lo, hi); }
      if (!out.range.empty()) { out.range[i] = empty ? nan : std::fabs(hi - lo); }
      if (!out.count.empty()) { out.count[i] = count; }
    }
  }
  return out;
}

int usage()
{
  std::cerr << "usage: raster_write_bench [N=4000] [bands=1..4] [--of GTiff|COG] [--co KEY=VALUE]... [--runs R]\n"
               "                          [--window-cells C] [--out PATH]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv)
{
  std::uint32_t n = 4000;
  std::size_t nbands = 1;
  int runs = 3;
  std::size_t window_cells = std::size_t{1} << 24;
  io::raster_write_options options;
  options.overwrite = true;
  std::filesystem::path out = std::filesystem::temp_directory_path() / "raster_write_bench.tif";
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    std::string const arg = argv[i];
    bool const has_value = i + 1 < argc;
    if (arg == "--of" && has_value) {
      options.format = argv[++i];
    } else if (arg == "--co" && has_value) {
      options.creation_options.emplace_back(argv[++i]);
    } else if (arg == "--runs" && has_value) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--window-cells" && has_value) {
      window_cells = std::max<std::size_t>(1, std::strtoull(argv[++i], nullptr, 10));
    } else if (arg == "--out" && has_value) {
      out = argv[++i];
    } else if (positional == 0 && std::atol(arg.c_str()) > 0) {
      n = static_cast<std::uint32_t>(std::atol(arg.c_str()));
      ++positional;
    } else if (positional == 1 && std::atoi(arg.c_str()) >= 1 && std::atoi(arg.c_str()) <= 4) {
      nbands = static_cast<std::size_t>(std::atoi(arg.c_str()));
      ++positional;
    } else {
      return usage();
    }
  }
  std::vector<metric> const all{metric::min, metric::max, metric::range, metric::count};
  std::vector<metric> const bands(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(nbands));
  grid_spec const grid{500000.0, 5000000.0 + n, 1.0, 1.0, n, n};

  // The windows the pipeline would finalize: whole rows, about window_cells cells each.
  auto const window_rows = static_cast<std::uint32_t>(std::clamp<std::size_t>(window_cells / n, 1, n));
  std::vector<std::pair<std::uint32_t, cell_results>> windows;
  std::uint64_t max_count = 0;
  for (std::uint32_t r = 0; r < n; r += window_rows) {
    windows.emplace_back(r, terrain_rows(n, r, std::min(window_rows, n - r), bands));
    auto const& count = windows.back().second.count;
    if (!count.empty()) { max_count = std::max<std::uint64_t>(max_count, *std::max_element(count.begin(), count.end())); }
  }

  try {
    std::vector<double> ms;
    std::vector<double> commit_ms;
    std::string co;
    for (int run = 0; run < runs; ++run) {
      auto const start = std::chrono::steady_clock::now();
      io::raster_writer writer(out.string(), grid, bands, options, max_count);
      if (run == 0) {
        for (auto const& option : writer.creation_options()) { co += " " + option; }
      }
      for (auto const& [row0, rows] : windows) { writer.write_rows(row0, rows); }
      auto const rows_done = std::chrono::steady_clock::now();
      writer.commit();
      auto const end = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
      commit_ms.push_back(std::chrono::duration<double, std::milli>(end - rows_done).count());
    }
    auto const bytes = std::filesystem::file_size(out);
    std::filesystem::remove(out);
    std::sort(ms.begin(), ms.end());
    std::sort(commit_ms.begin(), commit_ms.end());
    std::cout << "raster_write_bench: " << n << " x " << n << ", " << nbands << " band(s), " << options.format
              << ", windows of " << window_rows << " rows, creation options:" << co << "\n"
              << "  wall ms: best " << ms.front() << ", median " << ms[ms.size() / 2] << " over " << runs
              << " runs (median commit: " << commit_ms[commit_ms.size() / 2] << "); file " << bytes / 1.0e6
              << " MB\n";
  } catch (error const& e) {
    std::cerr << "raster_write_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
