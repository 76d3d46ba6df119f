#include "pipeline/sources.hpp"

#include "pipeline/ground_source.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/ept.hpp"
#include "heightgrid/io/las_reader.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

namespace heightgrid::app {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t max_chunk_points = std::size_t{1} << 28;

class sequential_part_source final : public part_source {
 public:
  sequential_part_source(std::function<std::unique_ptr<point_source>()> open, std::size_t part_points,
                         std::optional<bounds> declared)
    : open_(std::move(open)), source_(open_()), info_(source_->info()), part_points_(part_points), declared_(declared)
  {
  }

  [[nodiscard]] source_info const& info() const override { return info_; }
  [[nodiscard]] std::optional<bounds> declared_bounds() const override { return declared_; }
  [[nodiscard]] std::optional<std::uint64_t> part_count() const override { return std::nullopt; }
  [[nodiscard]] bool concurrent_parts() const override { return false; }
  [[nodiscard]] std::size_t max_part_points() const override { return part_points_; }

  part_result read_part(std::uint64_t k, filter_rules const& rules, point_batch& out) override
  {
    if (k == 0 && next_ != 0) {  // another pass: start over
      source_ = open_();
      next_ = 0;
    }
    HG_EXPECTS(k == next_, error_kind::internal,
            info().path + ": sequential part " + std::to_string(k) + " asked for, " + std::to_string(next_) + " is next");
    ++next_;
    part_result r;
    bool const more = source_->read(chunk_, part_points_);
    r.last = !more;
    apply_filter(rules, chunk_, r.filtered);
    copy_to_batch(chunk_, out, r, &rules, info_.path);
    return r;
  }

 private:
  std::function<std::unique_ptr<point_source>()> open_;
  std::unique_ptr<point_source> source_;
  source_info info_;
  std::size_t part_points_;
  std::optional<bounds> declared_;
  std::uint64_t next_{0};
  point_chunk chunk_;
};

}  // namespace

namespace {
std::unique_ptr<part_source> open_unwrapped(std::string const& path, input_options const& options);
}  // namespace

std::unique_ptr<part_source> open_part_source(std::string const& path, input_options const& options)
{
  auto source = open_unwrapped(path, options);
  if (options.ground) { return above_ground(std::move(source), options.ground); }
  return source;
}

namespace {

std::unique_ptr<part_source> open_unwrapped(std::string const& path, input_options const& options)
{
  std::size_t const part = options.chunk_points;
  if (io::is_ept_node(path)) {
    // A binary or zstandard EPT node: records by the dataset's schema, read in order.
    return sequential_parts([path, dimension = options.dimension] { return io::open_ept_node_source(path, dimension); },
                            part);
  }
  auto const format = resolve_input_format(path, options.format);
  if (format == input_format::las) { return io::open_las_parts(path, part, options.dimension); }
  input_options o = options;
  bool const is_z = options.dimension.empty() || options.dimension == "Z" || options.dimension == "z";
  if (format == input_format::vector && !is_z) {
    // A vector layer's attributes are its dimensions: --dimension NAME is --z-field NAME.
    HG_EXPECTS(o.z_field.empty() || o.z_field == o.dimension, error_kind::usage,
            "--dimension " + o.dimension + " and --z-field " + o.z_field + " name different attributes");
    o.z_field = o.dimension;
  }
  HG_EXPECTS(is_z || format == input_format::vector, error_kind::input,
          path + ": " + (format == input_format::text ? "XYZ/CSV text" : "a raster DEM") + " has no dimension '" +
            options.dimension + "' (only X, Y and Z); --dimension needs LAS/LAZ or a vector layer's attribute");
  return sequential_parts([path, o] { return open_input(path, o); }, part);
}

}  // namespace

input_options reader_options(input_selection const& in)
{
  auto const format = parse_input_format(in.input_format);
  HG_EXPECTS(format.has_value(), error_kind::usage,
          "--input-format: '" + in.input_format + "' is not auto, las, text, raster or vector");
  input_options reader = in.reader;
  reader.format = *format;
  return reader;
}

std::unique_ptr<part_source> sequential_parts(std::function<std::unique_ptr<point_source>()> open,
                                              std::size_t part_points, std::optional<bounds> declared)
{
  return std::make_unique<sequential_part_source>(std::move(open), part_points, declared);
}

std::vector<std::string> input_paths(input_selection const& in, read_region const& region)
{
  if (!in.synth.empty()) {
    HG_EXPECTS(in.inputs.empty(), error_kind::usage, "give either input files or --synth, not both");
    return {};
  }
  HG_EXPECTS(!in.inputs.empty(), error_kind::usage, "no input given (name files, a directory or a glob, or use --synth)");
  return expand_inputs(in.inputs, region);
}

std::uint64_t guess_points(input_selection const& in, std::vector<std::string> const& paths)
{
  if (!in.synth.empty()) { return in.synthetic.points.value_or(0); }
  std::uint64_t points = 0;
  for (auto const& p : paths) {
    std::error_code ec;
    auto const bytes = fs::file_size(p, ec);
    if (ec) { continue; }
    auto ext = fs::path(p).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    // Bytes per point, roughly: LAS records 20-67 bytes, LAZ about a tenth of that, text lines ~30.
    points += bytes / (ext == ".laz" ? 4 : ext == ".las" ? 34 : 30);
  }
  return points;
}

opened_sources open_sources(input_selection const& in, std::vector<std::string> paths,
                            std::optional<double> cell_size_hint, unsigned threads, bool keep_going)
{
  opened_sources out;
  // A negative value wraps to a huge size_t; past 2^28 points (6 GiB of x, y, z) a part is no
  // longer a unit of parallel work but an allocation failure.
  HG_EXPECTS(in.reader.chunk_points > 0 && in.reader.chunk_points <= max_chunk_points, error_kind::usage,
          "--chunk-points: " + std::to_string(static_cast<std::int64_t>(in.reader.chunk_points)) + " is not in 1.." +
            std::to_string(max_chunk_points));
  if (!in.synth.empty()) {
    auto const kind = parse_synth_kind_option(in.synth, "--synth");
    out.synth = make_synth_options(kind, in.synthetic, cell_size_hint, "--synth-extent");
    out.sources.push_back(synthetic_parts(*out.synth, in.reader.chunk_points));
    return out;
  }
  input_options const reader = reader_options(in);
  out.paths = std::move(paths);
  out.sources.resize(out.paths.size());
  // Headers of thousands of tiles: opened on several threads; the first failure (in input order)
  // is reported.
  std::vector<std::exception_ptr> failures(out.paths.size());
  std::atomic<std::size_t> next{0};
  auto const work = [&] {
    for (std::size_t i = next++; i < out.paths.size(); i = next++) {
      try {
        out.sources[i] = open_part_source(out.paths[i], reader);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  // A thread per 1000 inputs: opening headers on more threads than that was measured slower (a cost
  // that grows with the threads, not yet found; docs/benchmarks-history.md, "run V").
  constexpr std::size_t inputs_per_thread = 1000;
  std::size_t const wanted = (out.paths.size() + inputs_per_thread - 1) / inputs_per_thread;
  auto const n = static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(threads, wanted)));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < n; ++t) { pool.emplace_back(work); }
  work();
  for (auto& t : pool) { t.join(); }
  if (keep_going) {
    // Inputs that fail to open are left out and listed (--skip-bad); other errors still stop.
    std::vector<std::unique_ptr<part_source>> kept;
    std::vector<std::string> kept_paths;
    for (std::size_t i = 0; i < failures.size(); ++i) {
      if (failures[i]) {
        try {
          std::rethrow_exception(failures[i]);
        } catch (error const& e) {
          if (e.kind() != error_kind::input) { throw; }
          out.failed.push_back({out.paths[i], e.what()});
        }
        continue;
      }
      kept.push_back(std::move(out.sources[i]));
      kept_paths.push_back(out.paths[i]);
    }
    out.sources = std::move(kept);
    out.paths = std::move(kept_paths);
    return out;
  }
  for (auto const& f : failures) {
    if (f) { std::rethrow_exception(f); }
  }
  return out;
}

}  // namespace heightgrid::app
