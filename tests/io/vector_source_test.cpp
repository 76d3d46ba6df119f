#include "heightgrid/io/vector_source.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/crs.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "io/io_test_helpers.hpp"
#include "test_paths.hpp"

#include <gdal_priv.h>
#include <ogrsf_frmts.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace heightgrid::io {
namespace {

using test::read_all;
using test::xyz;

/// A field value of a test feature: the field's name and its value (NaN: leave it null).
struct field_value {
  char const* name;
  double value;
};

class VectorSource : public ::testing::Test {
 protected:
  void SetUp() override
  {
    GDALAllRegister();
    path_ = (test::scratch_dir("vector_source") / "points.gpkg").string();
    auto* driver = GetGDALDriverManager()->GetDriverByName("GPKG");
    dataset_.reset(driver->Create(path_.c_str(), 0, 0, 0, GDT_Unknown, nullptr));
    ASSERT_NE(dataset_, nullptr);
    srs_.importFromEPSG(32633);
  }

  OGRLayer* add_layer(char const* name, OGRwkbGeometryType type)
  {
    auto* layer = dataset_->CreateLayer(name, &srs_, type, nullptr);
    EXPECT_NE(layer, nullptr);
    return layer;
  }

  void add_feature(OGRLayer* layer, char const* wkt, std::vector<field_value> const& fields = {})
  {
    OGRFeatureUniquePtr feature(OGRFeature::CreateFeature(layer->GetLayerDefn()));
    OGRGeometry* geometry = nullptr;
    ASSERT_EQ(OGRGeometryFactory::createFromWkt(wkt, nullptr, &geometry), OGRERR_NONE) << wkt;
    feature->SetGeometryDirectly(geometry);
    for (auto const& f : fields) {
      if (!std::isnan(f.value)) { feature->SetField(f.name, f.value); }
    }
    ASSERT_EQ(layer->CreateFeature(feature.get()), OGRERR_NONE);
  }

  /// Closes the GeoPackage so the reader sees everything.
  std::string const& path()
  {
    dataset_.reset();
    return path_;
  }

  std::string open_error(std::string const& layer, std::string const& z_field = {})
  {
    try {
      auto source = open_vector_source(path(), layer, z_field);
      read_all(*source);
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      return e.what();
    }
    ADD_FAILURE() << "no error for layer '" << layer << "'";
    return {};
  }

  std::string path_;
  gdal_dataset_ptr dataset_;
  OGRSpatialReference srs_;
};

TEST_F(VectorSource, Points3dAndCrs)
{
  auto* layer = add_layer("pts3d", wkbPoint25D);
  add_feature(layer, "POINT Z (500000.5 5000000.25 101.5)");
  add_feature(layer, "POINT Z (500001 5000002 -3)");
  add_feature(layer, "POINT Z (500003 5000001 0)");
  auto source = open_vector_source(path());
  EXPECT_EQ(source->info().format, "GPKG vector");
  EXPECT_EQ(source->info().path, path_);
  EXPECT_TRUE(same_crs(source->info().crs_wkt, crs_from_user_input("EPSG:32633")));
  EXPECT_FALSE(same_crs(source->info().crs_wkt, crs_from_user_input("EPSG:4326")));
  EXPECT_EQ(read_all(*source, 2), (std::vector<xyz>{{500000.5, 5000000.25, 101.5},
                                                    {500001, 5000002, -3},
                                                    {500003, 5000001, 0}}));
}

TEST_F(VectorSource, Points2dWithZField)
{
  auto* layer = add_layer("pts2d", wkbPoint);
  OGRFieldDefn elev("elev", OFTReal);
  OGRFieldDefn rank("rank", OFTInteger);
  OGRFieldDefn name("name", OFTString);
  ASSERT_EQ(layer->CreateField(&elev), OGRERR_NONE);
  ASSERT_EQ(layer->CreateField(&rank), OGRERR_NONE);
  ASSERT_EQ(layer->CreateField(&name), OGRERR_NONE);
  double const null = std::nan("");
  add_feature(layer, "POINT (1 2)", {{"elev", 10.25}, {"rank", 3}});
  add_feature(layer, "POINT (3 4)", {{"elev", null}, {"rank", 4}});
  add_feature(layer, "POINT (5 6)", {{"elev", -2}, {"rank", 5}});
  auto const& file = path();

  auto by_elev = read_all(*open_vector_source(file, "pts2d", "elev"));
  ASSERT_EQ(by_elev.size(), 3U);
  EXPECT_EQ(by_elev[0], (xyz{1, 2, 10.25}));
  EXPECT_TRUE(std::isnan(by_elev[1][2])) << "a null attribute is a NaN z, counted by the filter";
  EXPECT_EQ(by_elev[2], (xyz{5, 6, -2}));
  EXPECT_EQ(read_all(*open_vector_source(file, "0", "rank")), (std::vector<xyz>{{1, 2, 3}, {3, 4, 4}, {5, 6, 5}}));

  auto const no_z = open_error("pts2d");
  EXPECT_NE(no_z.find("use --z-field"), std::string::npos) << no_z;
  EXPECT_NE(no_z.find("'elev'"), std::string::npos) << no_z;
  auto const missing = open_error("pts2d", "height");
  EXPECT_NE(missing.find(file + ": layer 'pts2d': no field 'height' (fields: 'elev', 'rank', 'name')"),
            std::string::npos)
    << missing;
  auto const text = open_error("pts2d", "name");
  EXPECT_NE(text.find("'name' is of type String, not numeric"), std::string::npos) << text;
}

TEST_F(VectorSource, MultipointsSpanChunks)
{
  auto* layer = add_layer("multi", wkbMultiPoint25D);
  add_feature(layer, "MULTIPOINT Z ((0 0 1), (1 0 2), (2 0 3), (3 0 4), (4 0 5))");
  add_feature(layer, "MULTIPOINT Z ((9 9 9))");
  auto const points = read_all(*open_vector_source(path(), "multi"), 2);
  ASSERT_EQ(points.size(), 6U);
  EXPECT_EQ(points[4], (xyz{4, 0, 5}));
  EXPECT_EQ(points[5], (xyz{9, 9, 9}));
}

TEST_F(VectorSource, LayersByNameAndIndex)
{
  add_feature(add_layer("first", wkbPoint25D), "POINT Z (1 1 1)");
  add_feature(add_layer("second", wkbPoint25D), "POINT Z (2 2 2)");
  auto const& file = path();
  EXPECT_EQ(read_all(*open_vector_source(file)), (std::vector<xyz>{{1, 1, 1}}));
  EXPECT_EQ(read_all(*open_vector_source(file, "second")), (std::vector<xyz>{{2, 2, 2}}));
  EXPECT_EQ(read_all(*open_vector_source(file, "1")), (std::vector<xyz>{{2, 2, 2}}));
  auto const message = open_error("third");
  EXPECT_NE(message.find(file + ": no layer 'third' (layers: 'first', 'second')"), std::string::npos) << message;
}

TEST_F(VectorSource, NonPointGeometries)
{
  add_feature(add_layer("lines", wkbLineString25D), "LINESTRING Z (0 0 0, 1 1 1)");
  auto* mixed = add_layer("mixed", wkbUnknown);
  add_feature(mixed, "POINT Z (0 0 0)");
  add_feature(mixed, "POLYGON Z ((0 0 0, 1 0 0, 1 1 0, 0 0 0))");
  auto const lines = open_error("lines");
  EXPECT_NE(lines.find("layer 'lines': has 3D Line String geometries; only points and multipoints"),
            std::string::npos)
    << lines;
  auto const polygon = open_error("mixed");
  EXPECT_NE(polygon.find(path_ + ": layer 'mixed', feature 2: POLYGON geometry"), std::string::npos) << polygon;
}

TEST(VectorSourceFiles, MissingFile)
{
  try {
    (void)open_vector_source("/nonexistent/points.gpkg");
    FAIL() << "no error";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::input);
    EXPECT_EQ(std::string(e.what()).rfind("/nonexistent/points.gpkg: cannot open as a vector source: ", 0), 0U)
      << e.what();
  }
}

}  // namespace
}  // namespace heightgrid::io
