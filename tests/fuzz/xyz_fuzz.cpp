// libFuzzer target for XYZ/CSV text through open_text_source. The input is read twice, in reads
// of a few bytes (lines straddle reads, and outgrow the buffer) and in one read; each must give
// the points or throw heightgrid::error, and both must give the same outcome and the same points
// (bit for bit). Anything else (a crash, a sanitizer report, another exception, a leak, a hang)
// is a finding.

#include "fuzz_file.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/io/text_source.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace heightgrid;

/// Every coordinate as read, x y z of each point in turn, or nothing when reading threw.
std::optional<std::vector<double>> read_all(std::string const& path, std::size_t block_bytes)
{
  try {
    io::text_options options;
    options.block_bytes = block_bytes;
    auto source = io::open_text_source(path, options);
    std::vector<double> coords;
    point_chunk chunk;
    while (source->read(chunk, 13)) {
      for (std::size_t i = 0; i < chunk.size(); ++i) {
        coords.insert(coords.end(), {chunk.x[i], chunk.y[i], chunk.z[i]});
      }
    }
    return coords;
  } catch (error const&) {
    return std::nullopt;
  }
}

bool same_bits(std::vector<double> const& a, std::vector<double> const& b)
{
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  static fuzz::fuzz_file file(".xyz");
  std::string const& path = file.write(data, size);
  // 1..16 bytes per read, chosen by the input's size so that every size is tried.
  std::size_t const small_block = 1 + size % 16;
  auto const small = read_all(path, small_block);
  auto const whole = read_all(path, size + 1);
  if (small.has_value() != whole.has_value() || (small && !same_bits(*small, *whole))) {
    std::fprintf(stderr, "xyz_fuzz: reads of %zu bytes %s, one read %s\n", small_block,
                 small ? (std::to_string(small->size() / 3) + " points").c_str() : "failed",
                 whole ? (std::to_string(whole->size() / 3) + " points").c_str() : "failed");
    std::abort();
  }
  return 0;
}
