// Throughput of the XYZ text reader: generates a file of LiDAR-like lines (once), then times
// reading it through open_text_source. The file is read once before timing, so the figure is
// parsing speed from the page cache, not disk speed.
//
//   text_source_bench [lines=10000000] [delimiter: space|comma] [path]

#include "heightgrid/io/text_source.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

void generate(std::filesystem::path const& path, long lines, char delimiter)
{
  std::ofstream out(path, std::ios::binary);
  std::vector<char> buffer(1 << 20);
  std::size_t used = 0;
  unsigned state = 12345;
  for (long i = 0; i < lines; ++i) {
    state = state * 1664525U + 1013904223U;
    double const x = 512000.0 + (state % 1000000U) * 0.001;
    double const y = 5401000.0 + ((state >> 8) % 1000000U) * 0.001;
    double const z = 200.0 + ((state >> 4) % 100000U) * 0.001;
    if (used + 128 > buffer.size()) {
      out.write(buffer.data(), static_cast<std::streamsize>(used));
      used = 0;
    }
    used += static_cast<std::size_t>(std::snprintf(buffer.data() + used, 128, "%.3f%c%.3f%c%.3f%c%u\n", x,
                                                   delimiter, y, delimiter, z, delimiter, state % 256U));
  }
  out.write(buffer.data(), static_cast<std::streamsize>(used));
}

}  // namespace

int main(int argc, char** argv)
{
  long const lines = argc > 1 ? std::atol(argv[1]) : 10'000'000L;
  char const delimiter = (argc > 2 && std::string(argv[2]) == "comma") ? ',' : ' ';
  std::filesystem::path const path =
    argc > 3 ? std::filesystem::path(argv[3])
             : std::filesystem::temp_directory_path() /
                 ("heightgrid-bench-" + std::to_string(lines) + (delimiter == ',' ? ".csv" : ".xyz"));
  if (!std::filesystem::exists(path)) { generate(path, lines, delimiter); }
  auto const bytes = static_cast<double>(std::filesystem::file_size(path));

  double best = 0.0;
  for (int run = 0; run < 4; ++run) {  // run 0 warms the page cache
    auto const start = std::chrono::steady_clock::now();
    auto source = heightgrid::io::open_text_source(path.string());
    heightgrid::point_chunk chunk;
    std::size_t points = 0;
    double checksum = 0.0;
    while (source->read(chunk, heightgrid::default_chunk_points)) {
      points += chunk.size();
      checksum += chunk.z.back();
    }
    double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double const mb_per_s = bytes / 1e6 / seconds;
    if (run > 0 && mb_per_s > best) { best = mb_per_s; }
    std::cout << "run " << run << ": " << points << " points, " << bytes / 1e6 << " MB in " << seconds << " s = "
              << mb_per_s << " MB/s (checksum " << checksum << ")\n";
  }
  std::cout << "best: " << best << " MB/s\n";
  return 0;
}
