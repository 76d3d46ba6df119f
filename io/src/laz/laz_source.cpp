#include "laz_source.hpp"

#include "heightgrid/core/error.hpp"
#include "laz_arith.hpp"
#include "laz_layered.hpp"
#include "laz_pointwise.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace heightgrid::io::laz {
namespace {

/// A chunk decoded into memory needs points * record_length bytes; beyond this a chunk table
/// entry is more likely corrupt than real (LASzip writes 50,000-point chunks by default).
constexpr std::uint64_t max_chunk_bytes = std::uint64_t{1} << 30;

/// Records decoded per step when one chunk is streamed (the pointwise compressor 1 puts the
/// whole file in one chunk).
constexpr std::size_t stream_step_points = 65536;

std::string byte_range(std::uint64_t begin, std::uint64_t end)
{
  return "bytes " + std::to_string(begin) + "-" + std::to_string(end);
}

/// Decoded records of one chunk, or of one step of a streamed chunk.
struct piece {
  std::vector<std::uint8_t> records;
  std::size_t points{0};
};

[[noreturn]] void fail_at(laz_file_layout const& layout, std::uint64_t byte, std::string const& what)
{
  throw error(error_kind::input, layout.path + ": byte " + std::to_string(byte) + ": " + what);
}

/// Finds the chunk table and decodes it; throws decode_error saying why it cannot be used.
std::vector<chunk_entry> read_chunk_table(laz_file_layout const& layout, laz_vlr_info const& vlr,
                                          file_reader const& read, std::uint64_t chunks_start)
{
  std::uint64_t const offset_at = layout.point_data_start;
  std::int64_t stored = 0;
  read(offset_at, sizeof stored, reinterpret_cast<std::uint8_t*>(&stored));
  std::uint64_t const size = layout.file_size;
  if (stored == -1) {
    // The writer could not seek back: the offset is in the last 8 bytes of the file.
    if (size < chunks_start + 8) {
      throw decode_error("the chunk table offset is -1 (stored at the end of the file), but the file ends at byte " + std::to_string(size));
    }
    read(size - 8, sizeof stored, reinterpret_cast<std::uint8_t*>(&stored));
  }
  if (stored == static_cast<std::int64_t>(offset_at)) {
    throw decode_error("the chunk table offset points at itself: the writer did not finish the file");
  }
  if (stored < static_cast<std::int64_t>(chunks_start) || static_cast<std::uint64_t>(stored) > size - 8 ||
      size < 8) {
    throw decode_error("the chunk table offset " + std::to_string(stored) +
                       " is outside the point data (bytes " + std::to_string(chunks_start) + "-" +
                       std::to_string(size) + ")");
  }
  auto const table_at = static_cast<std::uint64_t>(stored);
  std::uint8_t head[8];
  read(table_at, sizeof head, head);
  std::uint32_t count;
  std::memcpy(&count, head + 4, sizeof count);
  // Two compressed 32-bit integers per entry take well under 16 bytes.
  std::uint64_t const wanted = 8 + 16 * std::uint64_t{count} + 64;
  std::vector<std::uint8_t> table(static_cast<std::size_t>(std::min(wanted, size - table_at)));
  read(table_at, table.size(), table.data());
  return parse_chunk_table(vlr, table.data(), table.size(), chunks_start, table_at, layout.point_count);
}

/// Decodes chunks 0..count-1 on worker threads, at most `window` chunks ahead of the consumer,
/// and hands them out in order. A worker's exception is stored with its chunk and rethrown by
/// take(); the destructor stops and joins the workers whatever state they are in.
class chunk_pool {
 public:
  using decode_fn = std::function<void(std::size_t index, chunk_scratch&, piece&)>;

  chunk_pool(std::size_t workers, std::size_t count, decode_fn decode)
    : count_(count), window_(2 * workers), decode_(std::move(decode)), slots_(window_)
  {
    threads_.reserve(workers);
    try {
      for (std::size_t i = 0; i < workers; ++i) { threads_.emplace_back([this] { work(); }); }
    } catch (...) {
      stop();
      throw;
    }
  }
  ~chunk_pool() { stop(); }
  chunk_pool(chunk_pool const&) = delete;
  chunk_pool& operator=(chunk_pool const&) = delete;

  std::size_t workers() const { return threads_.size(); }

  /// Waits for chunk `index` (which must be the one after the last taken) and returns it;
  /// rethrows the exception its worker caught.
  piece take(std::size_t index)
  {
    std::unique_lock<std::mutex> lock(mutex_);
    slot& s = slots_[index % window_];
    done_.wait(lock, [&] { return s.ready; });
    s.ready = false;
    piece p = std::move(s.result);
    std::exception_ptr failure = std::exchange(s.failure, nullptr);
    taken_ = index + 1;
    lock.unlock();
    wake_.notify_all();  // the window moved: one more chunk may start
    if (failure) std::rethrow_exception(failure);
    return p;
  }

  /// Gives a consumed piece's buffer back for the next chunk to reuse.
  void recycle(std::vector<std::uint8_t>&& buffer)
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (spare_.size() < window_) spare_.push_back(std::move(buffer));
  }

 private:
  struct slot {
    bool ready{false};
    piece result;
    std::exception_ptr failure;
  };

  void work()
  {
    chunk_scratch scratch;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || (next_ < count_ && next_ < taken_ + window_); });
      if (stopping_) return;
      std::size_t const index = next_++;
      piece result;
      if (!spare_.empty()) {
        result.records = std::move(spare_.back());
        spare_.pop_back();
      }
      lock.unlock();
      std::exception_ptr failure;
      try {
        decode_(index, scratch, result);
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      slot& s = slots_[index % window_];
      s.result = std::move(result);
      s.failure = failure;
      s.ready = true;
      done_.notify_all();
    }
  }

  void stop()
  {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  std::size_t const count_;
  std::size_t const window_;
  decode_fn decode_;
  std::mutex mutex_;
  std::condition_variable wake_;  // workers: a chunk may start, or stop
  std::condition_variable done_;  // consumer: a chunk is ready
  std::vector<slot> slots_;
  std::vector<std::vector<std::uint8_t>> spare_;
  std::size_t next_{0};   // the next chunk a worker takes
  std::size_t taken_{0};  // chunks handed to the consumer
  bool stopping_{false};
  std::vector<std::thread> threads_;  // last: started after everything they use exists
};

}  // namespace

laz_chunk_map locate_laz_chunks(laz_file_layout const& layout, laz_vlr_info const& vlr, file_reader const& read)
{
  laz_chunk_map map;
  if (vlr.compressor == compressor_pointwise) {
    // One chunk holding every point, no chunk table offset in front of it.
    map.chunks_start = layout.point_data_start;
    return map;
  }
  map.chunks_start = layout.point_data_start + 8;
  if (layout.point_count == 0) return map;
  if (layout.point_data_limit < map.chunks_start) {
    fail_at(layout, layout.point_data_start, "the point data ends before the 8-byte chunk table offset");
  }
  try {
    map.chunks = read_chunk_table(layout, vlr, read, map.chunks_start);
  } catch (decode_error const& e) {
    map.table_problem = e.what();
    map.chunks.clear();
  }
  if (map.chunks.empty()) {
    if (vlr.variable_chunks()) {
      fail_at(layout, layout.point_data_start,
              "the chunk table cannot be used (" + map.table_problem +
                "); variable-size chunks cannot be found without it");
    }
    return map;
  }
  for (std::size_t i = 0; i < map.chunks.size(); ++i) {
    if (map.chunks[i].points * layout.record_length > max_chunk_bytes) {
      fail_at(layout, map.chunks[i].offset,
              "chunk " + std::to_string(i) + " holds " + std::to_string(map.chunks[i].points) +
                " points, more than heightgrid decodes at once");
    }
  }
  return map;
}

void decode_laz_chunk(laz_file_layout const& layout, laz_vlr_info const& vlr, file_reader const& read,
                      std::size_t index, chunk_entry const& c, chunk_scratch& scratch, std::uint8_t* records,
                      field_selection const& fields)
{
  std::string const label =
    layout.path + ": chunk " + std::to_string(index) + " (" + byte_range(c.offset, c.offset + c.bytes) + "): ";
  try {
    scratch.compressed.resize(static_cast<std::size_t>(c.bytes));
    read(c.offset, scratch.compressed.size(), scratch.compressed.data());
    auto const points = static_cast<std::size_t>(c.points);
    if (vlr.compressor == compressor_layered_chunked) {
      std::size_t consumed = 0;
      std::size_t const got = decode_layered_chunk(vlr, scratch.compressed.data(), scratch.compressed.size(), points,
                                                   points, records, fields, &consumed);
      if (got != points) {
        throw decode_error("decoded " + std::to_string(got) + " points, the chunk table says " +
                           std::to_string(points));
      }
    } else {
      if (!scratch.pointwise) scratch.pointwise.emplace(vlr);
      scratch.pointwise->start(scratch.compressed.data(), scratch.compressed.size());
      scratch.pointwise->decode(points, records);
    }
  } catch (decode_error const& e) {
    throw error(error_kind::input, label + e.what());
  } catch (std::bad_alloc const&) {
    throw error(error_kind::resource, label + "not enough memory to decode it");
  }
}

struct laz_record_stream::impl {
  laz_file_layout layout;
  laz_vlr_info vlr;
  file_reader read;
  field_selection fields;
  std::uint64_t chunks_start{0};  // first byte of the first chunk

  // Chunk table mode.
  std::vector<chunk_entry> chunks;
  std::unique_ptr<chunk_pool> pool;
  std::size_t next_chunk{0};

  // Sequential mode (compressor 1, or no usable chunk table).
  bool sequential{false};
  std::string table_problem;               // why the table was not used
  std::vector<std::uint8_t> compressed;    // [chunks_start, point_data_limit), read on first use
  bool compressed_loaded{false};
  std::size_t seq_chunk{0};                // index of the chunk being decoded
  std::uint64_t seq_offset{0};             // its start, relative to chunks_start
  std::uint64_t seq_left{0};               // its points not yet decoded
  std::uint64_t seq_produced{0};           // points decoded in earlier chunks and steps
  bool seq_started{false};
  std::optional<pointwise_decoder> seq_decoder;

  piece current;
  std::size_t current_pos{0};
  std::uint64_t delivered{0};
  std::exception_ptr failed;

  bool layered() const { return vlr.compressor == compressor_layered_chunked; }

  void setup(std::size_t threads)
  {
    laz_chunk_map map = locate_laz_chunks(layout, vlr, read);
    chunks_start = map.chunks_start;
    chunks = std::move(map.chunks);
    table_problem = std::move(map.table_problem);
    if (layout.point_count == 0) return;
    if (chunks.empty()) {
      sequential = true;
      return;
    }
    std::size_t workers = threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
    workers = std::min(workers, chunks.size());
    pool = std::make_unique<chunk_pool>(
      workers, chunks.size(), [this](std::size_t index, chunk_scratch& scratch, piece& out) {
        out.points = static_cast<std::size_t>(chunks[index].points);
        try {
          out.records.resize(out.points * layout.record_length);
        } catch (std::bad_alloc const&) {
          throw error(error_kind::resource, layout.path + ": chunk " + std::to_string(index) +
                                              ": not enough memory to decode it");
        }
        decode_laz_chunk(layout, vlr, read, index, chunks[index], scratch, out.records.data(), fields);
      });
  }

  void load_compressed()
  {
    if (compressed_loaded) return;
    std::uint64_t const end = std::max(layout.point_data_limit, chunks_start);
    compressed.resize(static_cast<std::size_t>(end - chunks_start));
    read(chunks_start, compressed.size(), compressed.data());
    compressed_loaded = true;
  }

  /// Calling-thread side without a table: the next step of the current chunk, starting the
  /// next chunk where the last one's decoder stopped.
  piece decode_sequential()
  {
    load_compressed();
    std::uint64_t const begin = chunks_start + seq_offset;
    std::string const label = layout.path + ": chunk " + std::to_string(seq_chunk) + " (" +
                              byte_range(begin, chunks_start + compressed.size()) +
                              (table_problem.empty() ? "" : ", no usable chunk table: " + table_problem) + "): ";
    piece out = std::move(current);
    try {
      if (!seq_started) {
        if (seq_offset >= compressed.size()) {
          throw decode_error("the chunk would start at the end of the point data (truncated file?)");
        }
        std::uint64_t const remaining = layout.point_count - seq_produced;
        seq_left = vlr.compressor == compressor_pointwise ? remaining
                                                          : std::min<std::uint64_t>(vlr.chunk_size, remaining);
        seq_started = true;
        if (!layered()) {
          if (!seq_decoder) seq_decoder.emplace(vlr);
          seq_decoder->start(compressed.data() + seq_offset, compressed.size() - seq_offset);
        }
      }
      if (layered()) {
        // Layered chunks decode whole; fixed-size chunks bound their size.
        if (seq_left * layout.record_length > max_chunk_bytes) {
          throw decode_error("a chunk of " + std::to_string(seq_left) +
                             " points is more than heightgrid decodes at once");
        }
        auto const points = static_cast<std::size_t>(seq_left);
        out.records.resize(points * layout.record_length);
        std::size_t consumed = 0;
        std::size_t const got = decode_layered_chunk(vlr, compressed.data() + seq_offset, compressed.size() - seq_offset,
                                                     points, points, out.records.data(),
                                                     fields, &consumed);
        if (got != points) {
          throw decode_error("decoded " + std::to_string(got) + " points, expected " + std::to_string(points));
        }
        out.points = points;
        seq_left = 0;
        seq_offset += consumed;
      } else {
        auto const step = static_cast<std::size_t>(std::min<std::uint64_t>(seq_left, stream_step_points));
        out.records.resize(step * layout.record_length);
        seq_decoder->decode(step, out.records.data());
        out.points = step;
        seq_left -= step;
        if (seq_left == 0) seq_offset += seq_decoder->consumed();
      }
    } catch (decode_error const& e) {
      throw error(error_kind::input, label + e.what());
    }
    seq_produced += out.points;
    if (seq_left == 0) {
      seq_started = false;
      ++seq_chunk;
    }
    return out;
  }

  void fetch()
  {
    if (sequential) {
      current = decode_sequential();
    } else {
      if (pool && !current.records.empty()) pool->recycle(std::move(current.records));
      current = pool->take(next_chunk++);
    }
    current_pos = 0;
  }
};

laz_record_stream::laz_record_stream(laz_file_layout layout, laz_vlr_info vlr, file_reader read,
                                     std::size_t threads, field_selection fields)
  : impl_(std::make_unique<impl>())
{
  impl_->layout = std::move(layout);
  impl_->vlr = std::move(vlr);
  impl_->read = std::move(read);
  impl_->fields = fields;
  impl_->setup(threads);
}

laz_record_stream::~laz_record_stream() = default;

laz_record_stream::run laz_record_stream::next(std::size_t max_points)
{
  impl& s = *impl_;
  if (s.failed) std::rethrow_exception(s.failed);
  if (s.delivered >= s.layout.point_count || max_points == 0) return {nullptr, 0};
  try {
    while (s.current_pos == s.current.points) s.fetch();
  } catch (...) {
    s.failed = std::current_exception();
    s.pool.reset();  // stop decoding chunks nobody will read
    throw;
  }
  std::size_t const n = std::min(max_points, s.current.points - s.current_pos);
  run r{s.current.records.data() + s.current_pos * s.layout.record_length, n};
  s.current_pos += n;
  s.delivered += n;
  return r;
}

std::size_t laz_record_stream::table_chunks() const { return impl_->chunks.size(); }

std::size_t laz_record_stream::worker_threads() const
{
  return impl_->pool ? impl_->pool->workers() : 0;
}

}  // namespace heightgrid::io::laz
