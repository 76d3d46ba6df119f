#include "heightgrid/io/crs.hpp"

#include "heightgrid/core/error.hpp"

#include <gtest/gtest.h>

#include <string>

namespace heightgrid::io {
namespace {

TEST(Crs, FromUserInput)
{
  auto const utm = crs_from_user_input("EPSG:32633");
  EXPECT_EQ(utm.rfind("PROJCRS[\"WGS 84 / UTM zone 33N\"", 0), 0U) << utm;
  EXPECT_EQ(crs_name(utm), "WGS 84 / UTM zone 33N (EPSG:32633)");
  EXPECT_TRUE(same_crs(utm, crs_from_user_input(utm)));
  EXPECT_TRUE(same_crs(utm, crs_from_user_input("+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs")));
  EXPECT_FALSE(same_crs(utm, crs_from_user_input("EPSG:32632")));
  // The WKT1 a LAS file or an older tool would carry, without authority codes.
  std::string const utm_wkt1 =
    "PROJCS[\"WGS 84 / UTM zone 33N\",GEOGCS[\"WGS 84\",DATUM[\"WGS_1984\",SPHEROID[\"WGS 84\",6378137,"
    "298.257223563]],PRIMEM[\"Greenwich\",0],UNIT[\"degree\",0.0174532925199433]],"
    "PROJECTION[\"Transverse_Mercator\"],PARAMETER[\"latitude_of_origin\",0],PARAMETER[\"central_meridian\",15],"
    "PARAMETER[\"scale_factor\",0.9996],PARAMETER[\"false_easting\",500000],PARAMETER[\"false_northing\",0],"
    "UNIT[\"metre\",1]]";
  EXPECT_TRUE(same_crs(utm, utm_wkt1));
  EXPECT_EQ(crs_name(utm_wkt1), "WGS 84 / UTM zone 33N");
}

TEST(Crs, BadUserInputIsAUsageError)
{
  for (std::string const bad : {"foo", "EPSG:999999", ""}) {
    try {
      (void)crs_from_user_input(bad);
      FAIL() << "no error for '" << bad << "'";
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::usage);
      EXPECT_EQ(std::string(e.what()).rfind("--a_srs: cannot interpret '" + bad + "': ", 0), 0U) << e.what();
    }
  }
}

TEST(Crs, EmptyAndUnparsable)
{
  EXPECT_EQ(crs_name(""), "none");
  EXPECT_EQ(crs_name("NOT WKT"), "unrecognised CRS");
  EXPECT_TRUE(same_crs("", ""));
  EXPECT_FALSE(same_crs("", crs_from_user_input("EPSG:4326")));
  EXPECT_TRUE(same_crs("NOT WKT", "NOT WKT"));
  EXPECT_FALSE(same_crs("NOT WKT", crs_from_user_input("EPSG:4326")));
}

TEST(Crs, EquivalentCrssWithOtherNamesAreTheSame)
{
  // EPSG:2154 as PROJ names it now ("RGF93 v1 / Lambert-93", WKT2) and as an older tool's WKT1
  // does ("RGF93 / Lambert-93", datum without "v1", TOWGS84): one CRS (issue 23).
  auto const now = crs_from_user_input("EPSG:2154");
  EXPECT_EQ(crs_name(now), "RGF93 v1 / Lambert-93 (EPSG:2154)");
  std::string const old =
    "PROJCS[\"RGF93 / Lambert-93\",GEOGCS[\"RGF93\",DATUM[\"Reseau_Geodesique_Francais_1993\","
    "SPHEROID[\"GRS 1980\",6378137,298.257222101],TOWGS84[0,0,0,0,0,0,0]],PRIMEM[\"Greenwich\",0],"
    "UNIT[\"degree\",0.0174532925199433],AUTHORITY[\"EPSG\",\"4171\"]],PROJECTION[\"Lambert_Conformal_Conic_2SP\"],"
    "PARAMETER[\"standard_parallel_1\",49],PARAMETER[\"standard_parallel_2\",44],"
    "PARAMETER[\"latitude_of_origin\",46.5],PARAMETER[\"central_meridian\",3],PARAMETER[\"false_easting\",700000],"
    "PARAMETER[\"false_northing\",6600000],UNIT[\"metre\",1],AXIS[\"Easting\",EAST],AXIS[\"Northing\",NORTH],"
    "AUTHORITY[\"EPSG\",\"2154\"]]";
  EXPECT_EQ(crs_name(old), "RGF93 / Lambert-93 (EPSG:2154)");
  EXPECT_TRUE(same_crs(now, old));
  EXPECT_TRUE(same_crs(old, now));
  EXPECT_FALSE(same_crs(now, crs_from_user_input("EPSG:27572")));
  // Geographic CRSs compared whatever their axis order.
  EXPECT_TRUE(same_crs(crs_from_user_input("EPSG:4326"), crs_from_user_input("OGC:CRS84")));
}

TEST(Crs, ImplausibleCellSizesAreNamedWithTheUnits)
{
  auto const wgs84 = crs_from_user_input("EPSG:4326");
  auto const geo = cell_size_warning(wgs84, 10.0, 10.0);
  EXPECT_NE(geo.find("degree"), std::string::npos) << geo;
  EXPECT_NE(geo.find("geographic"), std::string::npos) << geo;
  EXPECT_TRUE(cell_size_warning(wgs84, 1e-5, 1e-5).empty());
  auto const utm = crs_from_user_input("EPSG:32633");
  EXPECT_TRUE(cell_size_warning(utm, 0.5, 0.5).empty());
  EXPECT_TRUE(cell_size_warning(utm, 1000.0, 1000.0).empty());
  auto const tiny = cell_size_warning(utm, 1e-5, 1e-5);
  EXPECT_NE(tiny.find("metre"), std::string::npos) << tiny;
  // US survey feet: 1e5 ft is 30.5 km, plausible; 1e6 ft is not.
  auto const feet = crs_from_user_input("EPSG:2227");
  EXPECT_TRUE(cell_size_warning(feet, 1e5, 1e5).empty());
  EXPECT_NE(cell_size_warning(feet, 1e6, 1e6).find("foot"), std::string::npos) << cell_size_warning(feet, 1e6, 1e6);
  EXPECT_TRUE(cell_size_warning("", 10.0, 10.0).empty());
}

}  // namespace
}  // namespace heightgrid::io
