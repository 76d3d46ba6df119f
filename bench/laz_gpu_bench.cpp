// laz_gpu_bench: layered LAZ chunks decoded on the GPU (kernels/laz_gpu.hpp) against the CPU
// decoder, and timed. All chunks of all files given go to the device in one decode() (a directory
// of tiles is one batch), after their compressed bytes were read into page-locked memory.
//
//   laz_gpu_bench [--threads N] [--mapping thread|layers] [--reps R] [--check] FILE.laz...
//
// --check decodes every chunk on the CPU too (all cores) and compares the records' first 30
// bytes; exit 1 on the first difference. Prints the read, upload, decode and download times
// (CUDA events) and the wall of each decode() call; the median over --reps after one warm-up.

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/laz_gpu.hpp"

#include "las_internal.hpp"
#include "laz/laz_source.hpp"
#include "laz/laz_vlr.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace heightgrid;
namespace laz = heightgrid::io::laz;

struct file_job {
  io::detail::opened_las opened;
  laz::laz_file_layout layout;
  std::vector<laz::chunk_entry> chunks;
  std::size_t first_chunk{0};  // in the batch
};

double seconds_since(std::chrono::steady_clock::time_point t)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int run(int argc, char** argv)
{
  std::size_t threads = 0;
  laz_gpu_mapping mapping = laz_gpu_mapping::layer_per_lane;
  int reps = 3;
  bool check = false;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--mapping" && i + 1 < argc) {
      mapping = std::string(argv[++i]) == "thread" ? laz_gpu_mapping::chunk_per_thread : laz_gpu_mapping::layer_per_lane;
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--check") {
      check = true;
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: laz_gpu_bench [--threads N] [--mapping thread|layers] [--reps R] [--check] FILE.laz...\n");
    return 2;
  }

  auto const t_open = std::chrono::steady_clock::now();
  std::vector<file_job> files;
  std::vector<laz_gpu_chunk> chunks;
  laz_gpu_format format{};
  std::uint64_t compressed_bytes = 0;
  std::uint64_t points = 0;
  for (auto const& path : paths) {
    file_job f{io::detail::open_las_file(path), {}, {}, chunks.size()};
    if (!f.opened.laz_vlr) { throw error(error_kind::input, path + ": not a LAZ file"); }
    laz::laz_vlr_info const& vlr = *f.opened.laz_vlr;
    std::size_t const layers = laz::layered_layer_count(vlr);
    if (layers == 0) { throw error(error_kind::input, path + ": not a layered (LAS 1.4 PDRF 6-10) LAZ file"); }
    f.layout = io::detail::laz_layout_of(f.opened.header);
    auto const& file = f.opened.file;
    f.chunks = laz::locate_laz_chunks(f.layout, vlr, [&file](std::uint64_t o, std::size_t n, std::uint8_t* b) {
                 file.read_exact(o, n, b);
               }).chunks;
    if (f.chunks.empty()) { throw error(error_kind::input, path + ": no usable chunk table"); }
    format.record_length = static_cast<std::uint32_t>(vlr.record_length());
    format.layer_count = static_cast<std::uint32_t>(layers);
    for (auto const& c : f.chunks) {
      chunks.push_back({compressed_bytes, c.bytes, points, static_cast<std::uint32_t>(c.points)});
      compressed_bytes += c.bytes;
      points += c.points;
    }
    files.push_back(std::move(f));
  }
  double const open_s = seconds_since(t_open);

  laz_gpu_decoder decoder(threads, mapping);
  std::uint8_t* const compressed = decoder.pinned(compressed_bytes);
  std::uint8_t* const records = decoder.pinned(points * laz_gpu_record_bytes);
  std::vector<double> read_s;
  std::vector<double> up, dec, down, wall;
  std::vector<laz_gpu_status> status;
  for (int r = 0; r <= reps; ++r) {
    auto const t_read = std::chrono::steady_clock::now();
    // Reads on all cores, a file (or a chunk of a big file) at a time.
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    unsigned const cores = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned t = 0; t < cores; ++t) {
      pool.emplace_back([&] {
        for (std::size_t c; (c = next.fetch_add(1)) < chunks.size();) {
          auto it = std::upper_bound(files.begin(), files.end(), c,
                                     [](std::size_t v, file_job const& f) { return v < f.first_chunk; });
          file_job const& f = *(it - 1);
          laz::chunk_entry const& e = f.chunks[c - f.first_chunk];
          f.opened.file.read_exact(e.offset, e.bytes, compressed + chunks[c].source);
        }
      });
    }
    for (auto& t : pool) { t.join(); }
    double const rs = seconds_since(t_read);
    laz_gpu_times times;
    auto const t0 = std::chrono::steady_clock::now();
    decoder.reserve(compressed_bytes, points);
    auto const t_up = std::chrono::steady_clock::now();
    decoder.upload(compressed, compressed_bytes, 0);
    double const upload_s = seconds_since(t_up);
    status = decoder.decode(format, chunks, &times);
    decoder.download(0, points, records, &times);
    double const w = seconds_since(t0);
    if (r == 0) { continue; }
    read_s.push_back(rs);
    up.push_back(upload_s * 1e3);
    dec.push_back(times.decode_ms);
    down.push_back(times.download_ms);
    wall.push_back(w);
  }
  std::size_t bad = 0;
  for (auto s : status) { bad += s != laz_gpu_status::ok ? 1 : 0; }
  std::printf("files %zu  chunks %zu  points %llu  compressed %.1f MB  open %.3f s  chunks at once %zu, mapping %s\n",
              files.size(), chunks.size(), static_cast<unsigned long long>(points), compressed_bytes / 1e6, open_s,
              decoder.threads(), mapping == laz_gpu_mapping::chunk_per_thread ? "thread" : "layers");
  std::printf("read %.3f s  upload %.1f ms  decode %.1f ms  download %.1f ms  reserve+upload+decode+download wall %.3f s  = %.1f M points/s "
              "(decode kernel %.1f M points/s)  chunks not ok: %zu\n",
              median(read_s), median(up), median(dec), median(down), median(wall), points / median(wall) / 1e6,
              points / (median(dec) / 1e3) / 1e6, bad);
  if (!check) { return bad == 0 ? 0 : 1; }

  // Every chunk on the CPU, compared.
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> mismatches{0};
  std::vector<std::thread> pool;
  unsigned const cores = std::max(1u, std::thread::hardware_concurrency());
  auto const fields = laz::field_selection::heightgrid();
  for (unsigned t = 0; t < cores; ++t) {
    pool.emplace_back([&] {
      laz::chunk_scratch scratch;
      std::vector<std::uint8_t> cpu;
      for (std::size_t c; (c = next.fetch_add(1)) < chunks.size();) {
        auto it = std::upper_bound(files.begin(), files.end(), c,
                                   [](std::size_t v, file_job const& f) { return v < f.first_chunk; });
        file_job const& f = *(it - 1);
        std::size_t const index = c - f.first_chunk;
        laz::chunk_entry const& e = f.chunks[index];
        std::size_t const stride = format.record_length;
        cpu.assign(e.points * stride, 0);
        auto const& file = f.opened.file;
        laz::decode_laz_chunk(f.layout, *f.opened.laz_vlr,
                              [&file](std::uint64_t o, std::size_t n, std::uint8_t* b) { file.read_exact(o, n, b); },
                              index, e, scratch, cpu.data(), fields);
        for (std::size_t i = 0; i < e.points; ++i) {
          std::uint8_t const* g = records + (chunks[c].first_record + i) * laz_gpu_record_bytes;
          if (std::memcmp(g, cpu.data() + i * stride, laz_gpu_record_bytes) != 0) {
            if (mismatches.fetch_add(1) < 5) {
              std::printf("MISMATCH %s chunk %zu point %zu (status %d)\n", f.layout.path.c_str(), index, i,
                          static_cast<int>(status[c]));
            }
            break;
          }
        }
      }
    });
  }
  for (auto& t : pool) { t.join(); }
  std::printf("check: %zu of %zu chunks differ from the CPU decoder\n", mismatches.load(), chunks.size());
  return mismatches == 0 && bad == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv)
{
  try {
    return run(argc, argv);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "laz_gpu_bench: %s\n", e.what());
    return 1;
  }
}
