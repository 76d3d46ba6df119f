#include "pipeline/tiles_mpi.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

namespace heightgrid::app {
namespace {

/// Tiles a worker rank holds at most: the one it grids and the next, sent before it asks, so that no
/// rank waits for a message between two tiles.
constexpr std::size_t tiles_in_hand = 2;

/// Message tags (tiles_mpi.hpp has the conversation).
enum tag : int {
  tag_hello = 1,      // worker -> 0
  tag_request = 2,    // worker -> 0
  tag_outcome = 3,    // worker -> 0
  tag_round = 4,      // 0 -> worker
  tag_task = 5,       // 0 -> worker
  tag_end_round = 6,  // 0 -> worker
  tag_done = 7,       // 0 -> worker
};

void mpi_try(int rc, char const* call)
{
  if (rc == MPI_SUCCESS) { return; }
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw error(error_kind::internal, std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

// ---- bytes --------------------------------------------------------------------------------------

class byte_writer {
 public:
  template <typename T>
  void put(T const& v)
  {
    static_assert(std::is_trivially_copyable_v<T>);
    char const* p = reinterpret_cast<char const*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof v);
  }
  void put_string(std::string const& s)
  {
    put<std::uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  [[nodiscard]] std::vector<char> take() { return std::move(bytes_); }

 private:
  std::vector<char> bytes_;
};

/// Reads what byte_writer wrote; a message that is cut short or too long is a bug (or ranks of
/// different builds): error_kind::internal naming the message.
class byte_reader {
 public:
  byte_reader(std::vector<char> const& bytes, char const* what) : bytes_(bytes), what_(what) {}
  template <typename T>
  T get()
  {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string get_string()
  {
    auto const n = count(1);
    std::string s(bytes_.data() + at_, n);
    at_ += n;
    return s;
  }
  /// A count of items of at least `item_bytes` each, checked against the bytes left.
  std::size_t count(std::size_t item_bytes)
  {
    auto const n = get<std::uint64_t>();
    need(0);
    HG_EXPECTS(n <= (bytes_.size() - at_) / std::max<std::size_t>(1, item_bytes), error_kind::internal,
            std::string("MPI message '") + what_ + "': a count past its end");
    return static_cast<std::size_t>(n);
  }
  void end() const
  {
    HG_EXPECTS(at_ == bytes_.size(), error_kind::internal, std::string("MPI message '") + what_ + "': bytes past its end");
  }

 private:
  void need(std::size_t n) const
  {
    HG_EXPECTS(at_ <= bytes_.size() && n <= bytes_.size() - at_, error_kind::internal,
            std::string("MPI message '") + what_ + "' is cut short");
  }
  std::vector<char> const& bytes_;
  char const* what_;
  std::size_t at_{0};
};

void put_grid(byte_writer& w, grid_spec const& g)
{
  w.put(g.x0);
  w.put(g.y0);
  w.put(g.xres);
  w.put(g.yres);
  w.put(g.cols);
  w.put(g.rows);
  w.put(g.col0);
  w.put(g.row0);
  w.put(static_cast<std::uint8_t>(g.edge));
}

grid_spec get_grid(byte_reader& r)
{
  grid_spec g;
  g.x0 = r.get<double>();
  g.y0 = r.get<double>();
  g.xres = r.get<double>();
  g.yres = r.get<double>();
  g.cols = r.get<std::uint32_t>();
  g.rows = r.get<std::uint32_t>();
  g.col0 = r.get<std::uint32_t>();
  g.row0 = r.get<std::uint32_t>();
  g.edge = r.get<std::uint8_t>() == 0 ? edge_rule::gdal : edge_rule::pdal;
  return g;
}

// ---- messages -----------------------------------------------------------------------------------

void send(int to, tag t, std::vector<char> const& bytes)
{
  mpi_try(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, t, MPI_COMM_WORLD), "MPI_Send");
}

struct message {
  int source{0};
  int tag{0};
  std::vector<char> bytes;
};

/// The next message from `source` (MPI_ANY_SOURCE: any rank). Waits by probing and sleeping rather
/// than in MPI_Recv, which spins a core in Open MPI: rank 0 waits for tiles that take seconds, on
/// cores the workers need. A millisecond or two of latency per tile is nothing against that.
std::optional<message> try_receive(int source)
{
  MPI_Status status{};
  int ready = 0;
  mpi_try(MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &ready, &status), "MPI_Iprobe");
  if (ready == 0) { return std::nullopt; }
  int count = 0;
  mpi_try(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  message m{status.MPI_SOURCE, status.MPI_TAG, std::vector<char>(static_cast<std::size_t>(std::max(count, 0)))};
  // Messages between two ranks with one tag do not overtake each other: this is the probed one.
  mpi_try(MPI_Recv(m.bytes.data(), count, MPI_BYTE, m.source, m.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  return m;
}

message receive(int source)
{
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    if (auto m = try_receive(source)) { return std::move(*m); }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

std::vector<char> done_message(int exit_code)
{
  byte_writer w;
  w.put<std::int32_t>(exit_code);
  return w.take();
}

int exit_code_in(message const& done)
{
  byte_reader r(done.bytes, "done");
  auto const code = r.get<std::int32_t>();
  r.end();
  return code;
}

std::string rank_name(int rank, std::string const& host) { return "rank " + std::to_string(rank) + " on " + host; }

}  // namespace

// ---- encodings ----------------------------------------------------------------------------------

std::vector<char> encode_task(tile_task const& t)
{
  byte_writer w;
  w.put<std::uint64_t>(t.index);
  w.put<std::uint64_t>(t.sources.size());
  for (auto const s : t.sources) { w.put<std::uint64_t>(s); }
  return w.take();
}

tile_task decode_task(std::vector<char> const& bytes)
{
  byte_reader r(bytes, "task");
  tile_task t;
  t.index = r.get<std::uint64_t>();
  t.sources.resize(r.count(sizeof(std::uint64_t)));
  for (auto& s : t.sources) { s = static_cast<std::size_t>(r.get<std::uint64_t>()); }
  r.end();
  return t;
}

std::vector<char> encode_outcome(tile_outcome const& o, std::string const& worker_name)
{
  byte_writer w;
  w.put<std::uint8_t>(static_cast<std::uint8_t>(o.status));
  w.put(o.records);
  w.put(o.binned);
  w.put(o.non_empty);
  w.put<std::uint64_t>(o.extents.size());
  for (auto const& [source, b] : o.extents) {
    w.put<std::uint64_t>(source);
    w.put(b.xmin);
    w.put(b.ymin);
    w.put(b.xmax);
    w.put(b.ymax);
  }
  w.put<std::uint64_t>(o.bad);
  w.put_string(o.message);
  w.put<std::int32_t>(static_cast<std::int32_t>(o.error));
  w.put<std::uint64_t>(o.warnings.size());
  for (auto const& text : o.warnings) { w.put_string(text); }
  w.put(o.seconds);
  w.put(o.gpu_seconds);
  w.put_string(worker_name);
  return w.take();
}

tile_outcome decode_outcome(std::vector<char> const& bytes, std::string* worker_name)
{
  byte_reader r(bytes, "outcome");
  tile_outcome o;
  auto const status = r.get<std::uint8_t>();
  HG_EXPECTS(status <= static_cast<std::uint8_t>(tile_outcome::kind::failed), error_kind::internal,
          "MPI message 'outcome': no such tile status " + std::to_string(status));
  o.status = static_cast<tile_outcome::kind>(status);
  o.records = r.get<std::uint64_t>();
  o.binned = r.get<std::uint64_t>();
  o.non_empty = r.get<std::uint64_t>();
  o.extents.resize(r.count(sizeof(std::uint64_t) + 4 * sizeof(double)));
  for (auto& [source, b] : o.extents) {
    source = static_cast<std::size_t>(r.get<std::uint64_t>());
    b.xmin = r.get<double>();
    b.ymin = r.get<double>();
    b.xmax = r.get<double>();
    b.ymax = r.get<double>();
  }
  o.bad = static_cast<std::size_t>(r.get<std::uint64_t>());
  o.message = r.get_string();
  auto const kind = r.get<std::int32_t>();
  HG_EXPECTS(kind >= 0 && kind <= static_cast<std::int32_t>(error_kind::internal), error_kind::internal,
          "MPI message 'outcome': no such error kind " + std::to_string(kind));
  o.error = static_cast<error_kind>(kind);
  o.warnings.resize(r.count(sizeof(std::uint64_t)));
  for (auto& text : o.warnings) { text = r.get_string(); }
  o.seconds = r.get<double>();
  o.gpu_seconds = r.get<double>();
  auto name = r.get_string();
  r.end();
  if (worker_name != nullptr) { *worker_name = std::move(name); }
  return o;
}

std::vector<char> encode_tiling(tiling const& t)
{
  byte_writer w;
  put_grid(w, t.grid);
  w.put(t.tile_cols);
  w.put(t.tile_rows);
  return w.take();
}

tiling decode_tiling(std::vector<char> const& bytes)
{
  byte_reader r(bytes, "round");
  tiling t;
  t.grid = get_grid(r);
  t.tile_cols = r.get<std::uint32_t>();
  t.tile_rows = r.get<std::uint32_t>();
  r.end();
  HG_EXPECTS(t.tile_cols > 0 && t.tile_rows > 0, error_kind::internal, "MPI message 'round': a tile of no cells");
  return t;
}

std::uint64_t catalogue_fingerprint(std::vector<catalogue_entry> const& catalogue)
{
  // FNV-1a over "count\npath\npath\n...", as the manifest fingerprints the inputs.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto const mix = [&](std::string const& text) {
    for (unsigned char const c : text) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
  };
  mix(std::to_string(catalogue.size()) + '\n');
  for (auto const& e : catalogue) { mix(e.path + '\n'); }
  return h;
}

// ---- the world ----------------------------------------------------------------------------------

mpi_world::mpi_world()
{
  int provided = MPI_THREAD_SINGLE;
  mpi_try(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  host_.assign(name, static_cast<std::size_t>(std::max(length, 0)));
  // The ranks of this host, ordered by world rank: every rank grids (rank 0 too, beside coordinating).
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_rank = 0;
  int local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  local_workers_ = std::max(1, local_size);
  local_worker_ = std::max(0, local_rank);
}

mpi_world::~mpi_world() { MPI_Finalize(); }

void mpi_world::abort(int exit_code) const noexcept
{
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; should it, nothing else may run either
}

// ---- rank 0 -------------------------------------------------------------------------------------

mpi_tile_ranks::mpi_tile_ranks(mpi_world const& world) : host_(world.host())
{
  for (int r = 1; r < world.size(); ++r) { workers_[r] = worker{}; }
}

void mpi_tile_ranks::read_hello(int r)
{
  auto& w = workers_.at(r);
  if (!w.hello_pending) { return; }
  auto const m = receive(r);
  HG_EXPECTS(m.tag == tag_hello, error_kind::internal, "MPI: rank " + std::to_string(r) + " did not begin with hello");
  w.hello_pending = false;
  byte_reader in(m.bytes, "hello");
  w.host = in.get_string();
  if (in.get<std::uint8_t>() != 0) {
    w.inputs = in.get<std::uint64_t>();
    w.fingerprint = in.get<std::uint64_t>();
  } else {
    auto const kind = in.get<std::int32_t>();
    auto text = in.get_string();
    bool const known = kind >= 0 && kind <= static_cast<std::int32_t>(error_kind::internal);
    w.setup_error = error(known ? static_cast<error_kind>(kind) : error_kind::internal, std::move(text));
  }
  in.end();
}

void mpi_tile_ranks::check_catalogue(std::vector<catalogue_entry> const& catalogue)
{
  std::uint64_t const mine = catalogue_fingerprint(catalogue);
  for (auto& [r, w] : workers_) { read_hello(r); }
  for (auto const& [r, w] : workers_) {
    if (w.setup_error) { throw error(w.setup_error->kind(), rank_name(r, w.host) + ": " + w.setup_error->what()); }
    HG_EXPECTS(w.fingerprint == mine, error_kind::input,
            rank_name(r, w.host) + " opened other inputs than rank 0 (" + std::to_string(w.inputs) + " there, " +
              std::to_string(catalogue.size()) + " here): every rank must see the same files under the same paths");
  }
}

void mpi_tile_ranks::run(tile_coordinator& c, tiling const& layout, tile_log const& log, bool show_progress)
{
  auto const round = encode_tiling(layout);
  for (auto& [r, w] : workers_) {
    send(r, tag_round, round);
    w.in_round = true;
    w.owes_request = true;
  }
  for (;;) {
    // Every worker that asked holds tiles_in_hand tiles while there are tiles to hand out: first one
    // each, then the next, so that few tiles go to as many ranks as possible.
    for (std::size_t depth = 1; depth <= tiles_in_hand; ++depth) {
      for (auto& [r, w] : workers_) {
        if (w.owes_request || w.tasks.size() >= depth) { continue; }
        auto task = c.next();
        if (!task) { break; }
        send(r, tag_task, encode_task(*task));
        w.tasks.push_back(std::move(*task));
      }
    }
    bool const waiting = std::any_of(workers_.begin(), workers_.end(),
                                     [](auto const& entry) { return entry.second.owes_request || !entry.second.tasks.empty(); });
    if (!waiting) {
      // Nothing out with the ranks and nothing to hand out. Rank 0's own worker (run_tiled_job)
      // may still grid a tile that requeues others: wait for it; else the coordinator is finished
      // (or stopped by a failure).
      if (!c.idle_worker_may_get_work()) { break; }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    auto const m = receive(MPI_ANY_SOURCE);
    auto& w = workers_.at(m.source);
    bool const expected = m.tag == tag_request ? w.owes_request : m.tag == tag_outcome && !w.owes_request && !w.tasks.empty();
    HG_EXPECTS(expected, error_kind::internal,
            "MPI: " + rank_name(m.source, w.host) + " sent an unexpected message (tag " + std::to_string(m.tag) + ")");
    if (m.tag == tag_request) {
      w.owes_request = false;
      continue;
    }
    auto outcome = decode_outcome(m.bytes, &w.name);
    // A failed tile fails the job: say where it failed.
    if (outcome.status == tile_outcome::kind::failed) {
      outcome.message = rank_name(m.source, w.host) + ": " + outcome.message;
    }
    tile_task const task = std::move(w.tasks.front());
    w.tasks.pop_front();
    ++w.tiles;
    w.busy_s += outcome.seconds;
    w.gpu_s += outcome.gpu_seconds;
    log(c.complete(task, outcome));
    if (show_progress) { c.report_progress(); }
  }
  for (auto& [r, w] : workers_) {
    send(r, tag_end_round, {});
    w.in_round = false;
  }
}

void mpi_tile_ranks::describe(tiled_job_report& r) const
{
  for (auto const& [rank, w] : workers_) {
    r.workers.push_back(
      {rank_name(rank, w.host) + (w.name.empty() ? std::string() : ", " + w.name), w.tiles, w.busy_s, w.gpu_s});
  }
}

std::string mpi_tile_ranks::local_label() const { return rank_name(0, host_); }

void mpi_tile_ranks::finish(int exit_code)
{
  if (finished_) { return; }
  finished_ = true;
  auto const done = done_message(exit_code);
  for (auto& [r, w] : workers_) {
    read_hello(r);
    // A request, and the outcomes of tiles that finished after the job failed: they change nothing.
    if (w.owes_request) {
      (void)receive(r);
      w.owes_request = false;
    }
    for (; !w.tasks.empty(); w.tasks.pop_front()) { (void)receive(r); }
    if (w.in_round) {
      send(r, tag_end_round, {});
      w.in_round = false;
    }
    send(r, tag_done, done);
  }
}

// ---- worker ranks -------------------------------------------------------------------------------

int serve_tile_rank(mpi_world const& world, std::vector<catalogue_entry> const& catalogue, tile_source_opener const& open,
                    tiled_job_options const& o, int device, unsigned threads)
{
  {
    byte_writer hello;
    hello.put_string(world.host());
    hello.put<std::uint8_t>(1);
    hello.put<std::uint64_t>(catalogue.size());
    hello.put(catalogue_fingerprint(catalogue));
    send(0, tag_hello, hello.take());
  }
  for (;;) {
    auto const m = receive(0);
    if (m.tag == tag_done) { return exit_code_in(m); }
    HG_EXPECTS(m.tag == tag_round, error_kind::internal, "MPI: expected a round from rank 0, got tag " + std::to_string(m.tag));
    tiling const layout = decode_tiling(m.bytes);
    tile_worker w(o, layout, catalogue, open, device, threads);
    send(0, tag_request, {});
    std::deque<tile_task> in_hand;  // rank 0 sends the next tile before this one ends
    for (bool round_over = false; !round_over;) {
      // Take the tiles that arrived; wait only with none in hand.
      while (auto t = in_hand.empty() ? std::optional<message>(receive(0)) : try_receive(0)) {
        if (t->tag == tag_end_round) {
          HG_EXPECTS(in_hand.empty(), error_kind::internal, "MPI: rank 0 ended the round before this rank's tiles");
          round_over = true;
          break;
        }
        HG_EXPECTS(t->tag == tag_task, error_kind::internal,
                   "MPI: expected a tile from rank 0, got tag " + std::to_string(t->tag));
        auto task = decode_task(t->bytes);
        HG_EXPECTS(task.index < layout.count() &&
                     std::all_of(task.sources.begin(), task.sources.end(),
                                 [&](std::size_t s) { return s < catalogue.size(); }),
                   error_kind::internal, "MPI: rank 0 sent a tile outside the grid or the catalogue");
        in_hand.push_back(std::move(task));
      }
      if (round_over) { break; }
      auto const outcome = w.run(in_hand.front());
      in_hand.pop_front();
      send(0, tag_outcome, encode_outcome(outcome, w.name()));
    }
  }
}

int fail_tile_rank(mpi_world const& world, error const& why)
{
  byte_writer hello;
  hello.put_string(world.host());
  hello.put<std::uint8_t>(0);
  hello.put<std::int32_t>(static_cast<std::int32_t>(why.kind()));
  hello.put_string(why.what());
  send(0, tag_hello, hello.take());
  // Rank 0 starts no round once a rank could not open the inputs: the next message is the end.
  auto const m = receive(0);
  HG_EXPECTS(m.tag == tag_done, error_kind::internal, "MPI: rank 0 sent a round to a rank that could not open the inputs");
  return exit_code_in(m);
}

}  // namespace heightgrid::app
