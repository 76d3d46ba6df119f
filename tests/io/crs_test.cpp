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

}  // namespace
}  // namespace heightgrid::io
