// part_source::offload_chunks on LAS/LAZ sources: which sources hand their chunks to a bulk
// decoder, and that parts read from a bulk decoder's records (18-byte point14 prefixes, or whole
// 20-byte point10 records of pointwise files; here a stand-in that decodes with the CPU decoder and
// hands every other chunk back) equal the parts the source decodes itself.

#include "heightgrid/io/las_reader.hpp"

#include "heightgrid/core/bulk_decoder.hpp"
#include "heightgrid/core/point_filter.hpp"
#include "heightgrid/core/point_source.hpp"
#include "las/las_internal.hpp"
#include "las_parts_helpers.hpp"
#include "laz/laz_source.hpp"
#include "laz/laz_vlr.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace heightgrid::io {
namespace {

using test::parts_read;
using test::read_parts;

/// Decodes registered chunks of one file with the CPU decoder and keeps each record's first 18 bytes
/// (layered) or 20 (pointwise), as the GPU decoder writes them; hands chunks whose number is odd back
/// (nullptr).
class cpu_bulk_decoder final : public bulk_chunk_decoder {
 public:
  explicit cpu_bulk_decoder(std::string path) : opened_(detail::open_las_file(path)) {}

  std::size_t add_file(file_format const& format, std::vector<chunk> const& chunks, reader read) override
  {
    format_ = format;
    chunks_ = chunks;
    read_ = std::move(read);
    return first_;
  }
  std::uint8_t const* records(std::size_t index) override
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++asked_;
    std::size_t const c = index - first_;
    EXPECT_LT(c, chunks_.size());
    if (c % 2 == 1) { return nullptr; }
    auto const& vlr = *opened_.laz_vlr;
    auto const layout = detail::laz_layout_of(opened_.header);
    std::vector<std::uint8_t> full(std::size_t{chunks_[c].points} * format_.record_length);
    laz::chunk_scratch scratch;
    laz::chunk_entry const e{chunks_[c].offset, chunks_[c].bytes, chunks_[c].points};
    laz::decode_laz_chunk(layout, vlr, read_, c, e, scratch, full.data(), laz::field_selection::heightgrid());
    auto& out = decoded_[index];
    std::size_t const stride = format_.decoded_bytes();
    out.assign(std::size_t{chunks_[c].points} * stride, 0xEE);
    for (std::size_t i = 0; i < chunks_[c].points; ++i) {
      std::memcpy(out.data() + i * stride, full.data() + i * format_.record_length, stride);
      if (!format_.pointwise) {  // layered: intensity and user data not decoded
        out[i * stride + 12] = out[i * stride + 13] = 0;
        out[i * stride + 17] = 0;
      }
    }
    return out.data();
  }
  void release(std::size_t) noexcept override
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++released_;
  }

  std::size_t first_{5};  // as if another file had registered five chunks before
  file_format format_;
  std::vector<chunk> chunks_;
  std::size_t asked_{0}, released_{0};

 private:
  detail::opened_las opened_;
  reader read_;
  std::mutex mutex_;
  std::map<std::size_t, std::vector<std::uint8_t>> decoded_;
};

std::string data_file(char const* name) { return (test::data_dir() / name).string(); }

/// The offloaded source's parts equal the source's own decoding, with every point kept and with
/// the default filters (a read each).
void expect_same_parts(part_source& own, part_source& offloaded)
{
  for (auto const& filter : {filter_options::keep_all(), filter_options{}}) {
    parts_read const want = read_parts(own, filter);
    parts_read const got = read_parts(offloaded, filter);
    EXPECT_EQ(got.points.x, want.points.x);
    EXPECT_EQ(got.points.y, want.points.y);
    EXPECT_EQ(got.points.z, want.points.z);
    EXPECT_EQ(got.total.filtered.points_in, want.total.filtered.points_in);
    EXPECT_EQ(got.total.filtered.removed(), want.total.filtered.removed());
  }
}

TEST(las_parts_offload, pointwise_parts_from_bulk_records_equal_the_sources_own_decoding)
{
  // Pointwise LAZ hands out whole 20-byte point10 records: Z, the filters' fields and any point10
  // dimension read from them as the source reads its own decoding.
  std::vector<std::string> files = {data_file("lazrs_variable_chunks_pf1.laz")};
  if (!test::real_data_dir().empty()) {
    for (char const* f : {"laspy/simple.laz", "pdal/laz_autzen_trim.laz"}) {
      files.push_back((test::real_data_dir() / f).string());
    }
  }
  for (auto const& path : files) {
    bool const small = path == files.front();  // parts of 7 points: the small file alone
    for (char const* dimension : {"", "Classification", "Intensity", "PointSourceId"}) {
      for (std::size_t part : {small ? std::size_t{7} : default_part_points, default_part_points}) {
        SCOPED_TRACE(path + " " + dimension + " part " + std::to_string(part));
        auto own = open_las_parts(path, part, dimension);
        auto offloaded = open_las_parts(path, part, dimension);
        cpu_bulk_decoder bulk(path);
        ASSERT_TRUE(offloaded->offload_chunks(&bulk));
        EXPECT_TRUE(bulk.format_.pointwise);
        EXPECT_EQ(bulk.format_.decoded_bytes(), 20U);
        expect_same_parts(*own, *offloaded);
        EXPECT_EQ(bulk.released_, bulk.asked_);
      }
    }
  }
}

TEST(las_parts_offload, layered_parts_from_bulk_records_equal_the_sources_own_decoding)
{
  std::vector<std::string> files = {data_file("layered_dims_pdrf8.laz"), data_file("lazrs_variable_chunks_pf6.laz")};
  if (!test::real_data_dir().empty()) { files.push_back((test::real_data_dir() / "lasR/las14_pdrf6.laz").string()); }
  for (auto const& path : files) {
    for (char const* dimension : {"", "Classification"}) {
      for (std::size_t part : {std::size_t{5}, std::size_t{7}, default_part_points}) {
        SCOPED_TRACE(path + " " + dimension + " part " + std::to_string(part));
        auto own = open_las_parts(path, part, dimension);
        auto offloaded = open_las_parts(path, part, dimension);
        cpu_bulk_decoder bulk(path);
        ASSERT_TRUE(offloaded->offload_chunks(&bulk));
        EXPECT_GT(bulk.format_.layer_count, 8U);
        expect_same_parts(*own, *offloaded);
        // Every chunk asked for once a read (two filters), each released.
        EXPECT_EQ(bulk.asked_, 2 * bulk.chunks_.size());
        EXPECT_EQ(bulk.released_, bulk.asked_);
        // Taken back: the source decodes alone again.
        EXPECT_FALSE(offloaded->offload_chunks(nullptr));
        (void)read_parts(*offloaded, filter_options::keep_all());
        EXPECT_EQ(bulk.asked_, 2 * bulk.chunks_.size());
      }
    }
  }
}

TEST(las_parts_offload, only_laz_read_for_its_base_record_is_offloaded)
{
  auto const offloads = [](std::string const& path, std::string const& dimension) {
    auto source = open_las_parts(path, default_part_points, dimension);
    cpu_bulk_decoder bulk(path);
    return source->offload_chunks(&bulk);
  };
  std::string const layered = data_file("layered_dims_pdrf8.laz");
  EXPECT_TRUE(offloads(layered, ""));
  EXPECT_TRUE(offloads(layered, "Z"));
  EXPECT_TRUE(offloads(layered, "Classification"));
  // Fields the GPU decoder leaves out: the source keeps decoding them itself.
  for (char const* d : {"Intensity", "GpsTime", "UserData", "ScanAngleRank", "PointSourceId", "Red", "Infrared",
                        "Amplitude"}) {
    EXPECT_FALSE(offloads(layered, d)) << d;
  }
  EXPECT_FALSE(offloads(data_file("layered_dims_pdrf8.las"), ""));  // not compressed
  // Pointwise (LAS 1.2 format 1: point10, gpstime11 and byte items v2): the GPU decoder hands out
  // whole point10 records (it decodes every item anyway), so any field of them may be gridded from
  // them; GPS time lies past them. A wavepacket13 item it does not decode.
  std::string const pointwise = data_file("lazrs_variable_chunks_pf1.laz");
  for (char const* d : {"", "Z", "Classification", "Intensity", "UserData", "ScanAngleRank", "PointSourceId"}) {
    EXPECT_TRUE(offloads(pointwise, d)) << d;
  }
  EXPECT_FALSE(offloads(pointwise, "GpsTime"));
  EXPECT_FALSE(offloads(data_file("wavepacket_pdrf4.laz"), ""));
}

}  // namespace
}  // namespace heightgrid::io
