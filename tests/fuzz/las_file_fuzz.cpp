// libFuzzer target for whole LAS and LAZ files through both readers: open_las_parts (every part,
// in order, into a batch of max_part_points() as the pipeline sizes it, default filter) and
// open_las_source (every chunk). Each must read the file or throw heightgrid::error; anything
// else (a crash, a sanitizer report, another exception, a leak, a hang, an allocation beyond
// -malloc_limit_mb, a part overrunning its batch) is a finding. A reader that reads the file must
// deliver as many records as the header says (never fewer, silently), so both agree.
//
// Built twice from this file: las_file_fuzz, seeded with uncompressed files, and laz_file_fuzz,
// seeded with LAZ files, so that each spends its time on its own structure.

#include "fuzz_file.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_batch.hpp"
#include "heightgrid/core/point_chunk.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "heightgrid/io/las_reader.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace heightgrid;

// Small parts, chunks and reads, so that a file of a few KB has several of each.
constexpr std::size_t part_points = 7;
constexpr std::size_t chunk_points = 5;
constexpr std::size_t read_points = 11;

[[noreturn]] void finding(std::string const& what)
{
  std::fprintf(stderr, "las_file_fuzz: %s\n", what.c_str());
  std::abort();
}

/// Records in the file according to open_las_parts, or nothing when it threw heightgrid::error.
std::optional<std::uint64_t> records_by_parts(std::string const& path)
{
  try {
    auto source = io::open_las_parts(path, part_points);
    filter_rules const rules(filter_options{});
    std::size_t const capacity = source->max_part_points();
    // The pipeline reads part_count() parts when it is known: they must have room for every point.
    auto const declared = source->info().point_count;
    if (declared && source->part_count() && capacity > 0 &&
        *source->part_count() < *declared / capacity + (*declared % capacity != 0 ? 1 : 0)) {
      finding(std::to_string(*source->part_count()) + " parts of " + std::to_string(capacity) + " points for " +
              std::to_string(*declared) + " points");
    }
    std::vector<double> buffer(batch_bytes(capacity) / sizeof(double));
    std::uint64_t records = 0;
    auto const read = [&](std::uint64_t k) {
      point_batch batch;
      batch.data = buffer.data();
      batch.capacity = capacity;
      part_result const r = source->read_part(k, rules, batch);
      if (batch.size > capacity || r.filtered.points_in - r.filtered.removed() != batch.size) {
        finding("part " + std::to_string(k) + ": " + std::to_string(batch.size) + " points in a batch of " +
                std::to_string(capacity) + ", " + std::to_string(r.filtered.points_in) + " read");
      }
      records += r.filtered.points_in;
      return r.last;
    };
    if (source->concurrent_parts()) {
      if (!source->part_count()) { finding("concurrent parts without a part count"); }
      for (std::uint64_t k = 0; k < *source->part_count(); ++k) { (void)read(k); }
    } else {
      for (std::uint64_t k = 0; !read(k); ++k) {
        if (source->part_count() && k + 1 >= *source->part_count()) { finding("the last part did not say so"); }
      }
    }
    source->release();
    if (source->info().point_count && records != *source->info().point_count) {
      finding("open_las_parts read " + std::to_string(records) + " records of the header's " +
              std::to_string(*source->info().point_count));
    }
    return records;
  } catch (error const&) {
    return std::nullopt;
  }
}

/// Records in the file according to open_las_source, or nothing when it threw heightgrid::error.
std::optional<std::uint64_t> records_by_source(std::string const& path)
{
  try {
    io::las_read_options options;
    options.chunk_points = chunk_points;
    options.threads = 1;  // reproducible: a finding replays the same way
    auto source = io::open_las_source(path, options);
    point_chunk chunk;
    std::uint64_t records = 0;
    while (source->read(chunk, read_points)) {
      if (chunk.size() > read_points) { finding(std::to_string(chunk.size()) + " points from one read"); }
      records += chunk.size();
    }
    if (source->info().point_count && records != *source->info().point_count) {
      finding("open_las_source read " + std::to_string(records) + " records of the header's " +
              std::to_string(*source->info().point_count));
    }
    return records;
  } catch (error const&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  static fuzz::fuzz_file file(".las");
  std::string const& path = file.write(data, size);
  auto const by_parts = records_by_parts(path);
  auto const by_source = records_by_source(path);
  if (by_parts && by_source && *by_parts != *by_source) {
    finding("open_las_parts read " + std::to_string(*by_parts) + " records, open_las_source " +
            std::to_string(*by_source));
  }
  return 0;
}
