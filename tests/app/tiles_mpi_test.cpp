// The bytes of the MPI tile messages (app/pipeline/tiles_mpi.hpp): what a rank encodes, rank 0
// decodes field for field, doubles bit for bit; bytes that are not a message are refused. No MPI
// is started. Built only with MPI (HEIGHTGRID_MPI).

#include "pipeline/tiles_mpi.hpp"

#include "heightgrid/core/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace heightgrid::app {
namespace {

TEST(TilesMpi, TaskRoundTrips)
{
  for (auto const& sources : {std::vector<std::size_t>{}, std::vector<std::size_t>{7}, std::vector<std::size_t>{0, 3, 99999}}) {
    tile_task const t{12345678901ULL, sources};
    auto const back = decode_task(encode_task(t));
    EXPECT_EQ(back.index, t.index);
    EXPECT_EQ(back.sources, t.sources);
  }
}

TEST(TilesMpi, OutcomeRoundTripsEveryField)
{
  tile_outcome o;
  o.status = tile_outcome::kind::bad_input;
  o.records = 1ULL << 40;
  o.binned = 12;
  o.non_empty = 3;
  bounds b;
  b.extend(500000.125, 4100000.0000001);
  b.extend(-0.0, std::nextafter(1.0, 2.0));
  o.extents = {{4, b}, {9, bounds{}}};
  o.bad = 4;
  o.message = std::string("t_1_1.las: cut short\0after a NUL", 32);
  o.error = error_kind::input;
  o.warnings = {"", "a warning", std::string(5000, 'w')};
  o.seconds = 0.1;
  o.gpu_seconds = 0.025;
  std::string name;
  auto const back = decode_outcome(encode_outcome(o, "worker (1 threads)"), &name);
  EXPECT_EQ(name, "worker (1 threads)");
  EXPECT_EQ(back.status, o.status);
  EXPECT_EQ(back.records, o.records);
  EXPECT_EQ(back.binned, o.binned);
  EXPECT_EQ(back.non_empty, o.non_empty);
  ASSERT_EQ(back.extents.size(), 2u);
  EXPECT_EQ(back.extents[0].first, 4u);
  EXPECT_EQ(back.extents[0].second.xmin, b.xmin);
  EXPECT_EQ(back.extents[0].second.ymin, b.ymin);
  EXPECT_EQ(back.extents[0].second.xmax, b.xmax);
  EXPECT_EQ(back.extents[0].second.ymax, b.ymax);
  EXPECT_TRUE(back.extents[1].second.empty());
  EXPECT_EQ(back.bad, o.bad);
  EXPECT_EQ(back.message, o.message);
  EXPECT_EQ(back.error, o.error);
  EXPECT_EQ(back.warnings, o.warnings);
  EXPECT_EQ(back.seconds, o.seconds);
  EXPECT_EQ(back.gpu_seconds, o.gpu_seconds);
}

TEST(TilesMpi, TilingRoundTripsBitForBit)
{
  tiling t;
  t.grid = grid_spec{500000.1, 4100300.7, 0.1, 0.25, 3001, 1201, 0, 0};
  t.tile_cols = 64;
  t.tile_rows = 48;
  auto const back = decode_tiling(encode_tiling(t));
  EXPECT_EQ(back.grid.x0, t.grid.x0);
  EXPECT_EQ(back.grid.y0, t.grid.y0);
  EXPECT_EQ(back.grid.xres, t.grid.xres);
  EXPECT_EQ(back.grid.yres, t.grid.yres);
  EXPECT_EQ(back.grid.cols, t.grid.cols);
  EXPECT_EQ(back.grid.rows, t.grid.rows);
  EXPECT_EQ(back.tile_cols, t.tile_cols);
  EXPECT_EQ(back.tile_rows, t.tile_rows);
}

TEST(TilesMpi, BrokenMessagesAreRefused)
{
  tile_outcome o;
  o.message = "why";
  o.warnings = {"w"};
  auto bytes = encode_outcome(o, "n");
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    std::vector<char> const part(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_THROW((void)decode_outcome(part), error) << "cut at " << cut;
  }
  auto longer = bytes;
  longer.push_back('x');
  EXPECT_THROW((void)decode_outcome(longer), error);
  bytes[0] = 9;  // no such status
  EXPECT_THROW((void)decode_outcome(bytes), error);
  // A count of sources far past the message's end is refused before anything is allocated.
  auto task = encode_task(tile_task{1, {2}});
  task[8] = static_cast<char>(0xff);
  EXPECT_THROW((void)decode_task(task), error);
}

TEST(TilesMpi, CatalogueFingerprintSeesOrderAndNames)
{
  std::vector<catalogue_entry> const a{{"a.las", std::nullopt, 0}, {"b.las", std::nullopt, 0}};
  std::vector<catalogue_entry> const b{{"b.las", std::nullopt, 0}, {"a.las", std::nullopt, 0}};
  std::vector<catalogue_entry> const c{{"a.las", std::nullopt, 0}};
  EXPECT_EQ(catalogue_fingerprint(a), catalogue_fingerprint(a));
  EXPECT_NE(catalogue_fingerprint(a), catalogue_fingerprint(b));
  EXPECT_NE(catalogue_fingerprint(a), catalogue_fingerprint(c));
}

}  // namespace
}  // namespace heightgrid::app
