// LAS reader throughput, and the file generator/dumper behind tests/io/laspy_check.py.
// Run by hand, not by CTest:
//   las_read_bench write FILE POINTS FORMAT MINOR [--crs CRS] [--extra-bytes N] [--evlr] [--expected OUT]
//       deterministic points with every attribute of the format; --expected also writes them
//       as packed records (see laspy_check.py for the layout)
//   las_read_bench read FILE [CHUNK_POINTS] [PASSES] [MAX_POINTS] [--threads N] [--repeat R]
//       reads the file PASSES times (default 2), MAX_POINTS per read() call (default
//       CHUNK_POINTS), and prints MB/s of each pass; LAS or LAZ. --threads: LAZ decoding threads
//       (default 0: one per core). --repeat R: one untimed warm-up pass, then R passes, and a
//       last line "result: ... median_s=... points_per_s=..." (points/s of the median pass),
//       which scripts/laz_bench.sh reads
//   las_read_bench dump FILE OUT
//       what open_las_source delivers, as packed records: x, y, z (f64), classification,
//       return number, number of returns, flags (u8)

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/las_reader.hpp"
#include "heightgrid/io/las_writer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using heightgrid::io::las_point;

/// A reproducible point i: coordinates on the 0.01 grid (so they survive quantisation exactly),
/// attributes cycling through the ranges the format allows.
las_point synthetic_point(std::uint64_t i, int format)
{
  // splitmix64: cheap, well-mixed, reproducible everywhere.
  std::uint64_t s = i + 0x9E3779B97F4A7C15ULL;
  auto next = [&s] {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  bool const extended = format >= 6;
  las_point p;
  p.x = static_cast<double>(static_cast<std::int64_t>(next() % 100000000)) * 0.01 + 500000.0;
  p.y = static_cast<double>(static_cast<std::int64_t>(next() % 100000000)) * 0.01 + 4000000.0;
  p.z = static_cast<double>(static_cast<std::int64_t>(next() % 400000) - 100000) * 0.01 + 0.0;
  std::uint64_t const r = next();
  p.intensity = static_cast<std::uint16_t>(r);
  unsigned const max_returns = extended ? 15 : 7;
  p.number_of_returns = static_cast<std::uint8_t>(1 + (r >> 16) % max_returns);
  p.return_number = static_cast<std::uint8_t>(1 + (r >> 24) % p.number_of_returns);
  p.classification = static_cast<std::uint8_t>((r >> 32) % (extended ? 256 : 32));
  p.flags = static_cast<std::uint8_t>((r >> 40) % (extended ? 16 : 8));
  p.gps_time = format == 0 ? 0.0 : static_cast<double>(i) * 0.25 + 123456.5;
  if (format == 3) {
    p.red = static_cast<std::uint16_t>(r >> 44);
    p.green = static_cast<std::uint16_t>(r >> 48);
    p.blue = static_cast<std::uint16_t>(i);
  }
  return p;
}

/// laspy_check.py reads these with a numpy structured dtype; keep the two in step.
void append_expected(std::vector<std::uint8_t>& out, las_point const& p)
{
  auto put = [&out](auto v) {
    std::uint8_t b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    out.insert(out.end(), b, b + sizeof v);
  };
  put(p.x);
  put(p.y);
  put(p.z);
  put(p.intensity);
  put(p.return_number);
  put(p.number_of_returns);
  put(p.classification);
  put(p.flags);
  put(p.gps_time);
  put(p.red);
  put(p.green);
  put(p.blue);
}

void write_file(std::FILE* f, std::vector<std::uint8_t> const& bytes)
{
  if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    throw heightgrid::error(heightgrid::error_kind::output, "short write");
  }
}

int run_write(int argc, char** argv)
{
  if (argc < 6) { return 2; }
  std::string const path = argv[2];
  std::uint64_t const n = std::strtoull(argv[3], nullptr, 10);
  heightgrid::io::las_write_options o;
  o.point_format = std::atoi(argv[4]);
  o.version_minor = std::atoi(argv[5]);
  o.offset = {500000.0, 4000000.0, 0.0};
  std::string expected_path;
  for (int a = 6; a < argc; ++a) {
    std::string const arg = argv[a];
    if (arg == "--crs" && a + 1 < argc) {
      o.crs_wkt = argv[++a];
    } else if (arg == "--extra-bytes" && a + 1 < argc) {
      o.extra_bytes = static_cast<std::uint16_t>(std::atoi(argv[++a]));
    } else if (arg == "--evlr") {
      o.crs_in_evlr = true;
    } else if (arg == "--expected" && a + 1 < argc) {
      expected_path = argv[++a];
    } else {
      return 2;
    }
  }
  heightgrid::io::las_writer writer(path, o);
  std::vector<las_point> block;
  std::vector<std::uint8_t> expected;
  std::FILE* ef = expected_path.empty() ? nullptr : std::fopen(expected_path.c_str(), "wb");
  for (std::uint64_t i = 0; i < n;) {
    block.clear();
    for (; i < n && block.size() < 65536; ++i) { block.push_back(synthetic_point(i, o.point_format)); }
    writer.write(block);
    if (ef != nullptr) {
      expected.clear();
      for (auto const& p : block) { append_expected(expected, p); }
      write_file(ef, expected);
    }
  }
  writer.close();
  if (ef != nullptr) { std::fclose(ef); }
  return 0;
}

int run_read(int argc, char** argv)
{
  if (argc < 3) { return 2; }
  std::string const path = argv[2];
  heightgrid::io::las_read_options o;
  std::vector<char const*> positional;
  int repeat = 0;
  for (int a = 3; a < argc; ++a) {
    std::string const arg = argv[a];
    if (arg == "--threads" && a + 1 < argc) {
      o.threads = std::strtoull(argv[++a], nullptr, 10);
    } else if (arg == "--repeat" && a + 1 < argc) {
      repeat = std::atoi(argv[++a]);
      if (repeat < 1) { return 2; }
    } else if (arg.rfind("--", 0) == 0) {
      return 2;
    } else {
      positional.push_back(argv[a]);
    }
  }
  if (!positional.empty()) { o.chunk_points = std::strtoull(positional[0], nullptr, 10); }
  int const passes = repeat > 0 ? repeat + 1 : positional.size() > 1 ? std::atoi(positional[1]) : 2;
  std::size_t const max_points = positional.size() > 2 ? std::strtoull(positional[2], nullptr, 10) : o.chunk_points;
  double const mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  heightgrid::point_chunk chunk;
  std::vector<double> seconds;
  std::uint64_t points = 0;
  std::string format;
  for (int pass = 1; pass <= passes; ++pass) {
    auto const t0 = std::chrono::steady_clock::now();
    auto source = heightgrid::io::open_las_source(path, o);
    points = 0;
    double z_sum = 0;
    while (source->read(chunk, max_points)) {
      points += chunk.size();
      z_sum += chunk.z.back();
    }
    format = source->info().format;
    source.reset();  // joins the decoding threads: part of the time
    double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bool const warm_up = repeat > 0 && pass == 1;
    std::printf("pass %d%s: %s, %llu points, %.1f MB in %.3f s: %.0f MB/s, %.1f Mpoints/s (check %g)\n",
                pass, warm_up ? " (warm-up)" : "", format.c_str(), static_cast<unsigned long long>(points), mb,
                s, mb / s, static_cast<double>(points) / s / 1e6, z_sum);
    if (!warm_up) { seconds.push_back(s); }
  }
  if (repeat > 0) {
    std::sort(seconds.begin(), seconds.end());
    std::size_t const n = seconds.size();
    double const median = n % 2 == 1 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
    std::printf("result: file=%s format=\"%s\" threads=%zu points=%llu repeat=%d median_s=%.4f "
                "min_s=%.4f points_per_s=%.0f\n",
                path.c_str(), format.c_str(), o.threads, static_cast<unsigned long long>(points), repeat,
                median, seconds.front(), static_cast<double>(points) / median);
  }
  return 0;
}

int run_dump(int argc, char** argv)
{
  if (argc < 4) { return 2; }
  auto source = heightgrid::io::open_las_source(argv[2]);
  std::FILE* f = std::fopen(argv[3], "wb");
  if (f == nullptr) { return 1; }
  heightgrid::point_chunk chunk;
  std::vector<std::uint8_t> out;
  while (source->read(chunk, 1 << 16)) {
    out.clear();
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      for (double v : {chunk.x[i], chunk.y[i], chunk.z[i]}) {
        std::uint8_t b[8];
        std::memcpy(b, &v, 8);
        out.insert(out.end(), b, b + 8);
      }
      out.push_back(chunk.classification[i]);
      out.push_back(chunk.return_number[i]);
      out.push_back(chunk.number_of_returns[i]);
      out.push_back(chunk.flags[i]);
    }
    write_file(f, out);
  }
  std::fclose(f);
  std::printf("crs_source=%s\nvertical_units=%s\ncrs_wkt=%s\n",
              heightgrid::io::read_las_header(argv[2]).crs_source.c_str(),
              source->info().vertical_units.c_str(), source->info().crs_wkt.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv)
{
  try {
    std::string const mode = argc > 1 ? argv[1] : "";
    int rc = 2;
    if (mode == "write") {
      rc = run_write(argc, argv);
    } else if (mode == "read") {
      rc = run_read(argc, argv);
    } else if (mode == "dump") {
      rc = run_dump(argc, argv);
    }
    if (rc == 2) {
      std::fprintf(stderr,
                   "usage: las_read_bench write FILE POINTS FORMAT MINOR [--crs CRS] [--extra-bytes N] "
                   "[--evlr] [--expected OUT]\n"
                   "       las_read_bench read FILE [CHUNK_POINTS] [PASSES] [MAX_POINTS] [--threads N] "
                   "[--repeat R]\n"
                   "       las_read_bench dump FILE OUT\n");
    }
    return rc;
  } catch (heightgrid::error const& e) {
    std::fprintf(stderr, "las_read_bench: %s\n", e.what());
    return heightgrid::exit_code(e.kind());
  }
}
