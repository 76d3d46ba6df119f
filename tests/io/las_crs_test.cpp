// CRS records of LAS files: WKT, GeoTIFF keys (through the in-memory TIFF GDAL reads), the
// precedence between them, and what happens with records that make no sense.

#include "heightgrid/io/las_crs.hpp"

#include "heightgrid/core/error.hpp"

#include <gtest/gtest.h>
#include <ogr_spatialref.h>

#include <cstdint>
#include <string>
#include <vector>

namespace heightgrid::io {
namespace {

std::string wkt_of_epsg(int code)
{
  OGRSpatialReference srs;
  EXPECT_EQ(srs.importFromEPSG(code), OGRERR_NONE);
  char* raw = nullptr;
  srs.exportToWkt(&raw);
  std::string wkt = raw;
  CPLFree(raw);
  return wkt;
}

bool same_as_epsg(std::string const& wkt, int code)
{
  OGRSpatialReference got;
  OGRSpatialReference expected;
  if (got.importFromWkt(wkt.c_str()) != OGRERR_NONE || expected.importFromEPSG(code) != OGRERR_NONE) {
    return false;
  }
  return got.IsSame(&expected) != 0;
}

/// A key directory {version 1.1.0, n keys} followed by {id, location, count, value} entries.
las_geotiff_keys keys_of(std::vector<std::vector<std::uint16_t>> const& entries, std::string ascii = {})
{
  las_geotiff_keys k;
  k.directory = {1, 1, 0, static_cast<std::uint16_t>(entries.size())};
  for (auto const& e : entries) { k.directory.insert(k.directory.end(), e.begin(), e.end()); }
  k.ascii = std::move(ascii);
  return k;
}

TEST(las_crs, no_records_no_crs)
{
  auto const crs = interpret_las_crs("", false, {});
  EXPECT_EQ(crs.source, "none");
  EXPECT_TRUE(crs.wkt.empty());
  EXPECT_TRUE(crs.note.empty());
}

TEST(las_crs, geographic_and_projected_epsg_keys)
{
  // GTModelType 2 (geographic), GTRasterType 1, GeographicType 4326.
  auto crs = interpret_las_crs("", false, keys_of({{1024, 0, 1, 2}, {1025, 0, 1, 1}, {2048, 0, 1, 4326}}));
  EXPECT_EQ(crs.source, "GeoTIFF keys");
  EXPECT_TRUE(same_as_epsg(crs.wkt, 4326)) << crs.wkt;
  // GTModelType 1 (projected), ProjectedCSType 32633, ProjLinearUnits metre.
  crs = interpret_las_crs("", false, keys_of({{1024, 0, 1, 1}, {3072, 0, 1, 32633}, {3076, 0, 1, 9001}}));
  EXPECT_TRUE(same_as_epsg(crs.wkt, 32633)) << crs.wkt;
  EXPECT_TRUE(crs.vertical_units.empty());
}

TEST(las_crs, vertical_keys_make_a_compound_crs)
{
  // NAD83 / UTM 15N + NAVD88 height (ftUS), vertical unit US survey foot.
  auto const crs = interpret_las_crs(
    "", false, keys_of({{1024, 0, 1, 1}, {3072, 0, 1, 26915}, {4096, 0, 1, 6360}, {4099, 0, 1, 9003}}));
  EXPECT_EQ(crs.source, "GeoTIFF keys");
  OGRSpatialReference srs;
  ASSERT_EQ(srs.importFromWkt(crs.wkt.c_str()), OGRERR_NONE);
  EXPECT_TRUE(srs.IsCompound()) << crs.wkt;
  EXPECT_EQ(crs.vertical_units, "US survey foot");
}

TEST(las_crs, user_defined_system_falls_back_to_its_citation)
{
  // ProjectedCSType user-defined, no parameters: only the PCS citation defines the system, in
  // a form SetFromUserInput reads (GDAL itself makes a LOCAL_CS of these keys).
  std::string const ascii = "+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs|";
  auto const crs = interpret_las_crs(
    "", false,
    keys_of({{1024, 0, 1, 1}, {3072, 0, 1, 32767}, {3073, 34737, static_cast<std::uint16_t>(ascii.size()), 0}},
            ascii));
  EXPECT_EQ(crs.source, "GeoTIFF keys") << crs.note;
  OGRSpatialReference got;
  ASSERT_EQ(got.importFromWkt(crs.wkt.c_str()), OGRERR_NONE);
  EXPECT_TRUE(got.IsProjected());
  EXPECT_EQ(got.GetUTMZone(), 33) << crs.wkt;
}

TEST(las_crs, meaningless_keys_give_a_note_and_no_crs)
{
  for (auto const& keys :
       {keys_of({{1024, 0, 1, 1}, {3072, 0, 1, 32767}}),
        keys_of({{1024, 0, 1, 1}, {3076, 0, 1, 32632}, {4099, 0, 1, 9001}}),  // simple1_3.las's mistake
        las_geotiff_keys{{1, 1, 0, 200, 3072, 0, 1}, {}, {}},                 // directory cut short
        las_geotiff_keys{{7}, {}, {}}}) {
    auto const crs = interpret_las_crs("", false, keys);
    EXPECT_EQ(crs.source, "none") << crs.wkt;
    EXPECT_TRUE(crs.wkt.empty());
    EXPECT_NE(crs.note.find("GeoTIFF keys present but not interpretable"), std::string::npos) << crs.note;
  }
}

TEST(las_crs, wkt_wins_over_keys)
{
  std::string const wkt = wkt_of_epsg(32615);
  auto const crs = interpret_las_crs(wkt, false, keys_of({{1024, 0, 1, 2}, {2048, 0, 1, 4326}}));
  EXPECT_EQ(crs.source, "WKT VLR");
  EXPECT_EQ(crs.wkt, wkt);
  EXPECT_EQ(interpret_las_crs(wkt, true, {}).source, "WKT EVLR");
}

TEST(las_crs, unparsable_wkt_falls_back_to_keys)
{
  auto const crs = interpret_las_crs("PROJCS[garbage", false, keys_of({{1024, 0, 1, 2}, {2048, 0, 1, 4326}}));
  EXPECT_EQ(crs.source, "GeoTIFF keys");
  EXPECT_TRUE(same_as_epsg(crs.wkt, 4326));
  EXPECT_NE(crs.note.find("WKT CRS record does not parse"), std::string::npos) << crs.note;
}

TEST(las_crs, records_met_again_give_the_same_answer_however_many_came_between)
{
  // Tiles of a catalogue repeat their records: interpret_las_crs answers those from memory, and
  // keys differing in one value, or in where the WKT record was, must not be answered alike.
  auto const utm = [](std::uint16_t zone) {
    return keys_of({{1024, 0, 1, 1}, {3072, 0, 1, static_cast<std::uint16_t>(32600 + zone)}, {3076, 0, 1, 9001}});
  };
  std::string const wkt = wkt_of_epsg(32615);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    for (std::uint16_t zone = 1; zone <= 40; ++zone) {  // more distinct records than are remembered
      auto const crs = interpret_las_crs("", false, utm(zone));
      EXPECT_EQ(crs.source, "GeoTIFF keys");
      EXPECT_TRUE(same_as_epsg(crs.wkt, 32600 + zone)) << zone;
      EXPECT_EQ(interpret_las_crs("", false, utm(zone)).wkt, crs.wkt);
    }
    EXPECT_EQ(interpret_las_crs(wkt, false, {}).source, "WKT VLR");
    EXPECT_EQ(interpret_las_crs(wkt, true, {}).source, "WKT EVLR");
    auto const bad = interpret_las_crs("", false, keys_of({{1024, 0, 1, 1}, {3072, 0, 1, 32767}}));
    EXPECT_TRUE(bad.wkt.empty());
    EXPECT_NE(bad.note.find("GeoTIFF keys present but not interpretable"), std::string::npos) << bad.note;
  }
}

TEST(las_crs, vertical_units_of_a_compound_wkt)
{
  std::string const wkt = las_wkt_from_crs("EPSG:26915+6360");
  auto const crs = interpret_las_crs(wkt, false, {});
  EXPECT_EQ(crs.vertical_units, "US survey foot") << wkt;
}

TEST(las_crs, writer_side_conversions)
{
  std::string const wkt = wkt_of_epsg(32615);
  EXPECT_EQ(las_wkt_from_crs(wkt), wkt) << "WKT is kept verbatim";
  EXPECT_TRUE(same_as_epsg(las_wkt_from_crs("EPSG:32615"), 32615));
  EXPECT_THROW((void)las_wkt_from_crs("no such crs"), error);

  auto const keys = geotiff_keys_from_crs("EPSG:32615");
  ASSERT_GE(keys.directory.size(), 4U);
  bool found = false;
  for (std::size_t k = 4; k + 3 < keys.directory.size(); k += 4) {
    found = found || (keys.directory[k] == 3072 && keys.directory[k + 3] == 32615);
  }
  EXPECT_TRUE(found) << "ProjectedCSTypeGeoKey 32615";
  EXPECT_TRUE(same_as_epsg(interpret_las_crs("", false, keys).wkt, 32615));
}

TEST(las_crs, tiff_bytes_are_a_classic_little_endian_tiff)
{
  auto const tiff = geotiff_keys_as_tiff(keys_of({{1024, 0, 1, 2}}, "abc|"));
  ASSERT_GE(tiff.size(), 8U);
  EXPECT_EQ(tiff[0], 'I');
  EXPECT_EQ(tiff[1], 'I');
  EXPECT_EQ(tiff[2], 42);
  EXPECT_EQ(tiff[3], 0);
}

}  // namespace
}  // namespace heightgrid::io
