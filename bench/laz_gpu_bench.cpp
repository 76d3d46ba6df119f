// laz_gpu_bench: LAZ chunks decoded on the GPU (kernels/laz_gpu.hpp) against the CPU decoder, and
// timed: layered (compressor 3, point formats 6-10) or pointwise (compressor 2, point10 v2 with
// gpstime11/rgb12/byte v2: formats 0-3) files, the layout detected from the first file (all files
// must share its record format). All chunks of all files given go to the device in one decode() (a
// directory of tiles is one batch), after their compressed bytes were read into page-locked memory.
//
//   laz_gpu_bench [--threads N] [--mapping thread|layers] [--lanes K] [--reps R] [--copies C [--distinct]] [--check] FILE.laz...
//
// --lanes K (1, 2, 4; 0, the default: the decoder's choice) decodes K pointwise chunks a warp.
// --copies C decodes every chunk C times in the call (the same compressed bytes, C times the
// records): small files fill the device that way. --distinct gives each copy compressed bytes of
// its own on the device (C times the bytes uploaded), as a directory of C copies of the files has:
// the decoder then reads its input from device memory instead of the L2. --check decodes every
// chunk on the CPU too (all cores) and compares each record's bytes the GPU writes (18 layered, 20
// pointwise); exit 1 on a difference. Prints the read, upload, decode and download times (CUDA events), the wall of each
// decode() call and the kernel's M points/s; the median over --reps after one warm-up.

#include "heightgrid/core/error.hpp"
#include "heightgrid/kernels/laz_gpu.hpp"

#include "las/las_internal.hpp"
#include "laz/laz_source.hpp"
#include "laz/laz_vlr.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
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

/// The decoder's format of a file's records: layered point14, or pointwise point10 v2 followed by
/// gpstime11 v2, rgb12 v2 and byte v2 (each optional, in that order); nothing for other items.
std::optional<laz_gpu_format> gpu_format_of(laz::laz_vlr_info const& vlr)
{
  laz_gpu_format f;
  f.record_length = static_cast<std::uint32_t>(vlr.record_length());
  if (std::size_t const layers = laz::layered_layer_count(vlr); layers != 0) {
    f.layout = laz_gpu_layout::layered_point14;
    f.layer_count = static_cast<std::uint32_t>(layers);
    return f;
  }
  auto const& items = vlr.items;
  if (vlr.compressor != laz::compressor_pointwise_chunked || items.empty() ||
      items[0].type != laz::item_type::point10 || items[0].version != 2) {
    return std::nullopt;
  }
  f.layout = laz_gpu_layout::pointwise_point10;
  std::size_t i = 1;
  if (i < items.size() && items[i].type == laz::item_type::gpstime11 && items[i].version == 2) {
    f.gps_time = true;
    ++i;
  }
  if (i < items.size() && items[i].type == laz::item_type::rgb12 && items[i].version == 2) {
    f.rgb = true;
    ++i;
  }
  if (i < items.size() && items[i].type == laz::item_type::byte && items[i].version == 2) { f.extra_bytes = items[i++].size; }
  if (i != items.size() || f.record_length != 20u + (f.gps_time ? 8u : 0u) + (f.rgb ? 6u : 0u) + f.extra_bytes) { return std::nullopt; }
  return f;
}

bool same_format(laz_gpu_format const& a, laz_gpu_format const& b)
{
  return a.layout == b.layout && a.record_length == b.record_length && a.layer_count == b.layer_count &&
         a.gps_time == b.gps_time && a.rgb == b.rgb && a.extra_bytes == b.extra_bytes;
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
  unsigned lanes = 0;
  int reps = 3;
  bool check = false;
  bool distinct = false;
  std::size_t copies = 1;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--mapping" && i + 1 < argc) {
      mapping = std::string(argv[++i]) == "thread" ? laz_gpu_mapping::chunk_per_thread : laz_gpu_mapping::layer_per_lane;
    } else if (a == "--lanes" && i + 1 < argc) {
      lanes = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--copies" && i + 1 < argc) {
      copies = std::max<std::size_t>(std::strtoull(argv[++i], nullptr, 10), 1);
    } else if (a == "--check") {
      check = true;
    } else if (a == "--distinct") {
      distinct = true;
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: laz_gpu_bench [--threads N] [--mapping thread|layers] [--lanes K] [--reps R] [--copies C [--distinct]] [--check] FILE.laz...\n");
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
    auto const file_format = gpu_format_of(vlr);
    if (!file_format) {
      throw error(error_kind::input, path + ": neither layered (LAS 1.4 PDRF 6-10) nor pointwise with point10/gpstime11/"
                                            "rgb12/byte v2 items: " + laz::describe_items(vlr));
    }
    if (files.empty()) {
      format = *file_format;
    } else if (!same_format(format, *file_format)) {
      throw error(error_kind::input, path + ": its records differ from the first file's (" + laz::describe_items(vlr) + ")");
    }
    f.layout = io::detail::laz_layout_of(f.opened.header);
    auto const& file = f.opened.file;
    f.chunks = laz::locate_laz_chunks(f.layout, vlr, [&file](std::uint64_t o, std::size_t n, std::uint8_t* b) {
                 file.read_exact(o, n, b);
               }).chunks;
    if (f.chunks.empty()) { throw error(error_kind::input, path + ": no usable chunk table"); }
    for (auto const& c : f.chunks) {
      chunks.push_back({compressed_bytes, c.bytes, points, static_cast<std::uint32_t>(c.points)});
      compressed_bytes += c.bytes;
      points += c.points;
    }
    files.push_back(std::move(f));
  }
  double const open_s = seconds_since(t_open);
  std::size_t const file_chunks = chunks.size();
  std::uint64_t const file_points = points;
  // The copies decode the same compressed bytes (or, --distinct, copies of them) into records of their own.
  std::uint64_t const file_bytes = compressed_bytes;
  for (std::size_t k = 1; k < copies; ++k) {
    for (std::size_t c = 0; c < file_chunks; ++c) {
      laz_gpu_chunk copy = chunks[c];
      copy.first_record += k * file_points;
      if (distinct) { copy.source += k * file_bytes; }
      chunks.push_back(copy);
    }
  }
  if (distinct) { compressed_bytes = file_bytes * copies; }
  points = file_points * copies;
  std::size_t const stride = laz_gpu_record_bytes_of(format.layout);
  bool const pointwise = format.layout == laz_gpu_layout::pointwise_point10;

  laz_gpu_decoder decoder(threads, mapping);
  decoder.set_pointwise_lanes(lanes);
  std::uint8_t* const compressed = decoder.pinned(compressed_bytes);
  std::uint8_t* const records = decoder.pinned(points * stride);
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
        for (std::size_t c; (c = next.fetch_add(1)) < file_chunks;) {
          auto it = std::upper_bound(files.begin(), files.end(), c,
                                     [](std::size_t v, file_job const& f) { return v < f.first_chunk; });
          file_job const& f = *(it - 1);
          laz::chunk_entry const& e = f.chunks[c - f.first_chunk];
          f.opened.file.read_exact(e.offset, e.bytes, compressed + chunks[c].source);
        }
      });
    }
    for (auto& t : pool) { t.join(); }
    if (distinct) {
      for (std::size_t k = 1; k < copies; ++k) { std::memcpy(compressed + k * file_bytes, compressed, file_bytes); }
    }
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
  std::printf("files %zu  chunks %zu (%zu copies%s)  points %llu  compressed %.1f MB  open %.3f s  layout %s  "
              "chunks at once %zu (layered) / %zu (this call), mapping %s\n",
              files.size(), chunks.size(), copies, distinct ? ", distinct bytes" : "",
              static_cast<unsigned long long>(points), compressed_bytes / 1e6,
              open_s, pointwise ? "pointwise" : "layered", decoder.threads(), decoder.last_chunks_at_once(),
              pointwise ? (decoder.last_pointwise_lanes() == 1 ? "one chunk a warp"
                           : decoder.last_pointwise_lanes() == 2 ? "two chunks a warp" : "four chunks a warp")
              : mapping == laz_gpu_mapping::chunk_per_thread ? "thread" : "layers");
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
        std::size_t const fc = c % file_chunks;
        auto it = std::upper_bound(files.begin(), files.end(), fc,
                                   [](std::size_t v, file_job const& f) { return v < f.first_chunk; });
        file_job const& f = *(it - 1);
        std::size_t const index = fc - f.first_chunk;
        laz::chunk_entry const& e = f.chunks[index];
        std::size_t const length = format.record_length;
        cpu.assign(e.points * length, 0);
        auto const& file = f.opened.file;
        laz::decode_laz_chunk(f.layout, *f.opened.laz_vlr,
                              [&file](std::uint64_t o, std::size_t n, std::uint8_t* b) { file.read_exact(o, n, b); },
                              index, e, scratch, cpu.data(), fields);
        for (std::size_t i = 0; i < e.points; ++i) {
          std::uint8_t const* g = records + (chunks[c].first_record + i) * stride;
          if (std::memcmp(g, cpu.data() + i * length, stride) != 0) {
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
