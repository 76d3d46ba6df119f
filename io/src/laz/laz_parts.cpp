// LAZ files as part_sources (open_las_parts, las_parts_base.hpp): runs of whole chunks read and
// decoded by the thread that asks for them (a COPC hierarchy keeps the nodes a window or level
// needs), or the whole file in order where it has no chunk table.

#include "las/las_parts_base.hpp"

namespace heightgrid::io::las_parts_detail {
namespace {

/// Consecutive chunks [first_chunk, end_chunk) read as one part.
struct chunk_run {
  std::size_t first_chunk;
  std::size_t end_chunk;
  std::size_t points;
};

/// Groups chunks into runs of at most `part_points` points; a larger chunk is a run by itself.
std::vector<chunk_run> group_chunks(std::vector<laz::chunk_entry> const& chunks, std::size_t part_points)
{
  std::vector<chunk_run> runs;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    auto const points = static_cast<std::size_t>(chunks[i].points);
    // Empty chunks (the table allows them) join the current run, whatever its size.
    if (!runs.empty() && (runs.back().points + points <= part_points || points == 0)) {
      runs.back().end_chunk = i + 1;
      runs.back().points += points;
    } else {
      runs.push_back({i, i + 1, points});
    }
  }
  return runs;
}

/// A COPC file's octree, chunk by chunk (copc.hpp).
struct copc_layout {
  laz::copc_info info;
  std::vector<std::optional<laz::copc_node>> node_of_chunk;  ///< the node whose chunk it is, if any
};

/// The node of each chunk of a COPC file (by offset), or nothing when the file is not COPC. Throws
/// error_kind::input for an info VLR or hierarchy that is malformed or names chunks the chunk
/// table does not have.
std::optional<copc_layout> copc_layout_of(detail::opened_las const& opened, std::vector<laz::chunk_entry> const& chunks)
{
  las_file const& file = opened.file;
  laz::file_reader const read = [&file](std::uint64_t offset, std::size_t count, std::uint8_t* bytes) {
    file.read_exact(offset, count, bytes);
  };
  std::optional<laz::copc_info> info = laz::read_copc_info(opened.header, read);
  if (!info) { return std::nullopt; }
  copc_layout layout{*info, std::vector<std::optional<laz::copc_node>>(chunks.size())};
  std::vector<laz::copc_node> const nodes = laz::read_copc_hierarchy(opened.header, *info, read);
  std::unordered_map<std::uint64_t, std::size_t> chunk_at;
  for (std::size_t i = 0; i < chunks.size(); ++i) { chunk_at.emplace(chunks[i].offset, i); }
  for (auto const& n : nodes) {
    auto const it = chunk_at.find(n.offset);
    if (it == chunk_at.end() || chunks[it->second].points != n.points) {
      throw error(error_kind::input, opened.header.path + ": COPC: node " + std::to_string(n.level) + "-" +
                                       std::to_string(n.x) + "-" + std::to_string(n.y) + "-" + std::to_string(n.z) +
                                       " (" + std::to_string(n.points) + " points at byte " + std::to_string(n.offset) +
                                       ") is no chunk of the LAZ chunk table");
    }
    layout.node_of_chunk[it->second] = n;
  }
  return layout;
}

/// LAZ with a usable chunk table: part k is run k of whole chunks, decoded by the reading thread.
/// A COPC file's chunks are its octree's nodes: restrict_to keeps those a window or a level needs.
class laz_chunk_parts final : public las_parts_base {
 public:
  laz_chunk_parts(detail::opened_las opened, std::size_t part_points, std::string const& dimension,
                  laz::laz_file_layout where, laz::laz_vlr_info vlr, std::vector<laz::chunk_entry> chunks,
                  std::optional<copc_layout> copc = std::nullopt)
    : las_parts_base(std::move(opened), part_points, dimension),
      where_(std::move(where)),
      vlr_(std::move(vlr)),
      fields_(laz_fields(vlr_)),
      all_chunks_(std::move(chunks)),
      copc_(std::move(copc))
  {
    use_chunks(all_chunks_);
  }

  /// A warning for the job's log (source_info::notes).
  void add_note(std::string note) { info_.notes.push_back(std::move(note)); }

  /// Why the file's COPC hierarchy cannot be used: it is read whole (a warning), and --copc-level
  /// is refused.
  void set_copc_problem(std::string problem)
  {
    add_note(problem + "; the file is read whole, as plain LAZ");
    copc_problem_ = std::move(problem);
  }

  region_report restrict_to(read_region const& region) override
  {
    // A COPC file whose hierarchy cannot be used is read whole (the same cells for any window), but
    // levels cannot be left out without it: reading every level would silently give other cells.
    HG_EXPECTS(copc_ || copc_problem_.empty() || (!region.max_level && !(region.auto_level_cell > 0.0)),
               error_kind::input, copc_problem_ + "; --copc-level needs it");
    if (!copc_) { return {}; }
    HG_EXPECTS(bulk_ == nullptr, error_kind::internal, info_.path + ": restricted after its chunks were offloaded");
    region_report r;
    r.sources = 1;
    int shallowest = std::numeric_limits<int>::max();
    for (auto const& n : copc_->node_of_chunk) {
      if (n) {
        r.deepest = std::max(r.deepest, static_cast<int>(n->level));
        shallowest = std::min(shallowest, static_cast<int>(n->level));
      }
    }
    int const max_level =
      region.auto_level_cell > 0.0
        ? laz::copc_auto_level(copc_->info, region.auto_level_cell, shallowest, std::max(r.deepest, 0))
        : region.max_level.value_or(std::numeric_limits<int>::max());
    // A node is read when its cube, widened by a millionth of its side and half a stored unit
    // (points on a face, rounding), meets the window.
    double const unit = 0.5 * std::max(std::abs(header_transform_.scale[0]), std::abs(header_transform_.scale[1]));
    std::vector<laz::chunk_entry> kept;
    for (std::size_t i = 0; i < all_chunks_.size(); ++i) {
      auto const& c = all_chunks_[i];
      auto const& n = copc_->node_of_chunk[i];
      bool keep = c.points > 0;  // a chunk no node names is read (its points are somewhere)
      if (n) {
        r.nodes += 1;
        r.points += c.points;
        r.bytes += c.bytes;
        keep = n->level <= max_level;
        if (keep && region.window) {
          bounds const b = laz::copc_node_bounds(copc_->info, *n);
          double const pad = (b.xmax - b.xmin) * 1e-6 + unit;
          keep = b.xmin - pad <= region.window->xmax && b.xmax + pad >= region.window->xmin &&
                 b.ymin - pad <= region.window->ymax && b.ymax + pad >= region.window->ymin;
        }
        if (keep) {
          r.nodes_read += 1;
          r.points_read += c.points;
          r.bytes_read += c.bytes;
          r.deepest_read = std::max(r.deepest_read, static_cast<int>(n->level));
        }
      }
      if (keep) { kept.push_back(c); }
    }
    use_chunks(std::move(kept));
    return r;
  }

  [[nodiscard]] std::optional<std::uint64_t> part_count() const override { return runs_.size(); }
  [[nodiscard]] bool concurrent_parts() const override { return true; }
  [[nodiscard]] std::size_t max_part_points() const override { return max_points_; }

  bool offload_chunks(bulk_chunk_decoder* decoder) override
  {
    bulk_ = nullptr;
    if (decoder == nullptr) { return false; }
    // What a bulk decoder produces: point14 records (layered LAZ) up to the classification, with
    // Z, classification and flags decoded, or whole point10 records (pointwise LAZ of formats 0-3:
    // point10 v2, then gpstime11, rgb12 and byte items v2); enough when the job reads nothing else.
    laz::field_selection const want = laz::field_selection::heightgrid();
    laz::field_selection const& f = fields_;
    bool const only_base = f.z == want.z && f.classification == want.classification && f.flags == want.flags &&
                           f.intensity == want.intensity && f.scan_angle == want.scan_angle &&
                           f.user_data == want.user_data && f.point_source == want.point_source &&
                           f.gps_time == want.gps_time && f.rgb == want.rgb && f.nir == want.nir &&
                           f.extra_bytes == want.extra_bytes && f.wavepacket == want.wavepacket;
    std::size_t const layers = laz::layered_layer_count(vlr_);
    bulk_chunk_decoder::file_format format{static_cast<std::uint32_t>(vlr_.record_length()),
                                           static_cast<std::uint32_t>(layers), header_transform_, dimension_.is_z};
    bool known = layers != 0 && vlr_.items.front().type == laz::item_type::point14;
    if (layers == 0 && vlr_.compressor == laz::compressor_pointwise_chunked && !vlr_.items.empty() &&
        vlr_.items.front().type == laz::item_type::point10 && vlr_.items.front().version == 2) {
      format.pointwise = known = true;
      for (std::size_t i = 1; i < vlr_.items.size() && known; ++i) {
        laz::laz_item const& item = vlr_.items[i];
        known = item.version == 2 && ((item.type == laz::item_type::gpstime11 && !format.gps_time && !format.rgb &&
                                       format.extra_bytes == 0) ||
                                      (item.type == laz::item_type::rgb12 && !format.rgb && format.extra_bytes == 0) ||
                                      (item.type == laz::item_type::byte && format.extra_bytes == 0));
        format.gps_time = format.gps_time || item.type == laz::item_type::gpstime11;
        format.rgb = format.rgb || item.type == laz::item_type::rgb12;
        if (item.type == laz::item_type::byte) { format.extra_bytes = item.size; }
      }
    }
    bool const eligible = known && !chunks_.empty() && only_base && !double_values_ &&
                          dimension_.at + dimension_.bytes() <= format.decoded_bytes();
    if (!eligible) { return false; }
    std::vector<bulk_chunk_decoder::chunk> chunks;
    chunks.reserve(chunks_.size());
    for (auto const& c : chunks_) {
      if (c.points > UINT32_MAX) { return false; }
      chunks.push_back({c.offset, c.bytes, static_cast<std::uint32_t>(c.points)});
    }
    // The decoder reads on its own threads, opening a local file for each chunk: a handle kept per
    // file would hold one descriptor per input for the whole job (10^5 tiles pass the usual limit),
    // and an open costs microseconds next to a chunk's ~300 KB. A remote file is opened once, at its
    // first chunk (an open through GDAL asks the server: ~1 ms a chunk measured), its handles shared.
    std::string const path = header_.path;
    if (is_remote(path)) {
      auto const opened = std::make_shared<std::shared_ptr<las_file const>>();
      auto const once = std::make_shared<std::once_flag>();
      bulk_first_ = decoder->add_file(format, chunks, [path, opened, once](std::uint64_t o, std::size_t n, std::uint8_t* b) {
        std::call_once(*once, [&] { *opened = std::make_shared<las_file const>(path); });
        (*opened)->read_exact(o, n, b);
      });
    } else {
      bulk_first_ = decoder->add_file(format, chunks, [path](std::uint64_t o, std::size_t n, std::uint8_t* b) {
        las_file const f(path);
        f.read_exact(o, n, b);
      });
    }
    bulk_ = decoder;
    bulk_stride_ = format.decoded_bytes();
    return true;
  }

  /// Chunks binned where the GPU decoded them (bulk_chunk_decoder::binned) are reported by the grid.
  [[nodiscard]] part_result result_of_records(las_record_stats const& stats) const override
  {
    return records_result(stats, header_transform_);
  }

  part_result read_part(std::uint64_t k, filter_rules const& filter, point_batch& out) override
  {
    HG_EXPECTS(k < runs_.size(), error_kind::usage,
            info_.path + ": part " + std::to_string(k) + " asked for, the file has " + std::to_string(runs_.size()));
    chunk_run const& run = runs_[static_cast<std::size_t>(k)];
    begin_part(k, run.points, out);
    std::shared_ptr<las_file const> const f = file();
    laz::file_reader const read = [&f](std::uint64_t offset, std::size_t count, std::uint8_t* bytes) {
      f->read_exact(offset, count, bytes);
    };
    // The thread's buffers lent to this call (and lost, not shared, if it throws); the item
    // decoders are built per part, as they depend on the file.
    laz::chunk_scratch scratch;
    scratch.compressed = std::move(thread_bytes(compressed_bytes));
    std::vector<std::uint8_t> records = std::move(thread_bytes(raw_records));
    std::size_t const stride = header_.record_length;
    if (records.size() < largest_chunk_ * stride) { records.resize(largest_chunk_ * stride); }
    filter_stats stats;
    stats.points_in = run.points;
    int_extent ext;
    for (std::size_t c = run.first_chunk; c < run.end_chunk; ++c) {
      auto const points = static_cast<std::size_t>(chunks_[c].points);
      if (bulk_ != nullptr) {
        // Records decoded in bulk (the GPU): the first bulk_stride_ bytes of each record, all the
        // fields this job reads (offload_chunks checked).
        struct release_guard {
          bulk_chunk_decoder* d;
          std::size_t i;
          ~release_guard() { d->release(i); }
        } const guard{bulk_, bulk_first_ + c};
        if (bulk_->binned(bulk_first_ + c)) { continue; }  // on the device: reported by the grid
        if (std::uint8_t const* decoded = bulk_->records(bulk_first_ + c)) {
          decoder(filter)(decoded, bulk_stride_, points, filter, header_transform_, dimension_, out,
                  stats, ext);
          continue;
        }
      }
      laz::decode_laz_chunk(where_, vlr_, read, c, chunks_[c], scratch, records.data(), fields_);
      decoder(filter)(records.data(), stride, points, filter, header_transform_, dimension_, out, stats, ext);
    }
    thread_bytes(compressed_bytes) = std::move(scratch.compressed);
    thread_bytes(raw_records) = std::move(records);
    return finish_part(stats, ext, out.size);
  }

 private:
  /// Reads `chunks` (all of the file's, or those restrict_to kept) from now on.
  void use_chunks(std::vector<laz::chunk_entry> chunks)
  {
    chunks_ = std::move(chunks);
    runs_ = group_chunks(chunks_, part_points_);
    max_points_ = part_points_;
    for (auto const& r : runs_) { max_points_ = std::max(max_points_, r.points); }
    largest_chunk_ = 0;
    std::uint64_t points = 0;
    for (auto const& c : chunks_) {
      largest_chunk_ = std::max(largest_chunk_, static_cast<std::size_t>(c.points));
      points += c.points;
    }
    if (copc_) { info_.point_count = points; }
  }

  laz::laz_file_layout where_;
  laz::laz_vlr_info vlr_;
  laz::field_selection fields_;
  std::vector<laz::chunk_entry> all_chunks_;
  std::optional<copc_layout> copc_;
  std::string copc_problem_;  ///< why a COPC hierarchy cannot be used (set_copc_problem); empty when it can
  std::vector<laz::chunk_entry> chunks_;  ///< the chunks read
  std::vector<chunk_run> runs_;
  std::size_t max_points_{0};
  std::size_t largest_chunk_{0};
  bulk_chunk_decoder* bulk_{nullptr};  ///< offload_chunks' decoder, or none
  std::size_t bulk_first_{0};          ///< the number of chunk 0 in bulk_
  std::size_t bulk_stride_{bulk_chunk_decoder::record_bytes};  ///< bytes of a record bulk_ hands out
};

/// LAZ without a usable chunk table: the chunks can only be found one after the other, so parts
/// are read in order through one laz_record_stream decoding on the calling thread.
class laz_sequential_parts final : public las_parts_base {
 public:
  laz_sequential_parts(detail::opened_las opened, std::size_t part_points, std::string const& dimension,
                       laz::laz_vlr_info vlr)
    : las_parts_base(std::move(opened), part_points, dimension), vlr_(std::move(vlr))
  {
  }

  [[nodiscard]] std::optional<std::uint64_t> part_count() const override { return count(); }
  [[nodiscard]] bool concurrent_parts() const override { return false; }
  [[nodiscard]] std::size_t max_part_points() const override { return part_points_; }

  part_result read_part(std::uint64_t k, filter_rules const& filter, point_batch& out) override
  {
    HG_EXPECTS(k < count(), error_kind::usage,
            info_.path + ": part " + std::to_string(k) + " asked for, the file has " + std::to_string(count()));
    if (k == 0) {
      restart();
    } else {
      HG_EXPECTS(stream_ != nullptr && k == next_part_, error_kind::usage,
              info_.path + ": parts of a LAZ file without a chunk table are read in order; part " +
                std::to_string(k) + " asked for, the next one is " + std::to_string(stream_ ? next_part_ : 0));
    }
    std::uint64_t const first = k * part_points_;
    auto const n = static_cast<std::size_t>(std::min<std::uint64_t>(part_points_, header_.point_count - first));
    begin_part(k, n, out);
    filter_stats stats;
    stats.points_in = n;
    int_extent ext;
    try {
      for (std::size_t done = 0; done < n;) {
        auto const run = stream_->next(n - done);
        if (run.points == 0) {
          throw error(error_kind::internal, info_.path + ": the LAZ decoder ran out of points at point " +
                                              std::to_string(first + done) + " of " +
                                              std::to_string(header_.point_count));
        }
        decoder(filter)(run.records, header_.record_length, run.points, filter, header_transform_, dimension_, out, stats, ext);
        done += run.points;
      }
    } catch (...) {
      stream_.reset();  // a later read starts over at part 0
      throw;
    }
    next_part_ = k + 1;
    part_result r = finish_part(stats, ext, out.size);
    r.last = next_part_ == count();
    return r;
  }

  void release() override
  {
    stream_.reset();  // first: its reader holds the file
    las_parts_base::release();
  }

 private:
  [[nodiscard]] std::uint64_t count() const { return parts_for(header_.point_count, part_points_); }

  void restart()
  {
    stream_.reset();
    std::shared_ptr<las_file const> f = file();
    stream_ = std::make_unique<laz::laz_record_stream>(
      detail::laz_layout_of(header_), vlr_,
      [f](std::uint64_t offset, std::size_t count, std::uint8_t* bytes) { f->read_exact(offset, count, bytes); },
      1, laz_fields(vlr_));
    next_part_ = 0;
  }

  laz::laz_vlr_info vlr_;
  std::unique_ptr<laz::laz_record_stream> stream_;
  std::uint64_t next_part_{0};
};

}  // namespace

std::unique_ptr<part_source> open_laz_parts(detail::opened_las opened, std::size_t part_points,
                                            std::string const& dimension)
{
  laz::laz_vlr_info vlr = std::move(*opened.laz_vlr);
  laz::laz_file_layout where = detail::laz_layout_of(opened.header);
  if (where.point_count == 0) {
    // No points, no chunks: zero parts, concurrent like any file with a table.
    return std::make_unique<laz_chunk_parts>(std::move(opened), part_points, dimension, std::move(where),
                                             std::move(vlr), std::vector<laz::chunk_entry>{});
  }
  las_file const& file = opened.file;
  laz::laz_chunk_map map = laz::locate_laz_chunks(
    where, vlr, [&file](std::uint64_t offset, std::size_t count, std::uint8_t* bytes) {
      file.read_exact(offset, count, bytes);
    });
  if (map.chunks.empty()) {
    return std::make_unique<laz_sequential_parts>(std::move(opened), part_points, dimension, std::move(vlr));
  }
  // A COPC hierarchy only saves reading: one that cannot be used leaves a LAZ file whose chunk
  // table still gives every point (read whole, with a warning), as readers without COPC read it.
  std::optional<copc_layout> copc;
  std::string copc_problem;
  try {
    copc = copc_layout_of(opened, map.chunks);
  } catch (error const& e) {
    if (e.kind() != error_kind::input) { throw; }
    copc_problem = e.what();
  }
  auto parts = std::make_unique<laz_chunk_parts>(std::move(opened), part_points, dimension, std::move(where),
                                                 std::move(vlr), std::move(map.chunks), std::move(copc));
  if (!copc_problem.empty()) { parts->set_copc_problem(std::move(copc_problem)); }
  return parts;
}

}  // namespace heightgrid::io::las_parts_detail
