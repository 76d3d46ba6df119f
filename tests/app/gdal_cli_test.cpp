// The command line as GDAL and PDAL users type it (issue 23): GDAL's single-dash spellings mean
// exactly what the long forms mean (same output bytes), the output format follows the extension,
// and every usage error exits 2 leaving nothing behind.

#include "cli_run.hpp"
#include "test_paths.hpp"

#include "heightgrid/kernels/gpu.hpp"

#include <gdal_priv.h>
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <sys/wait.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

using heightgrid::test::run_cli;
using heightgrid::test::file_bytes;
using json = nlohmann::json;

/// The JSON document a command printed on stdout (stderr, with the log, is not captured).
json run_json(std::string const& args, int& code)
{
  // stdout alone: the log goes to stderr.
  std::string output;
  FILE* pipe = ::popen((heightgrid::test::shell_quote(heightgrid::test::exe()) + " " + args + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) { return {}; }
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) { output += buf.data(); }
  int const status = ::pclose(pipe);
  code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  try {
    return json::parse(output);
  } catch (json::exception const& e) {
    ADD_FAILURE() << args << ": not JSON (" << e.what() << "):\n" << output;
    return {};
  }
}

class GdalCli : public ::testing::Test {
 protected:
  void SetUp() override
  {
    GDALAllRegister();
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = heightgrid::test::scratch_dir(std::string("gdal-cli-") + info->name());
  }
  fs::path out(std::string const& name) const { return dir_ / name; }
  static std::string sample() { return (heightgrid::test::data_dir() / "sample.xyz").string(); }
  /// `grid sample.xyz -o NAME OPTIONS --device cpu`.
  heightgrid::test::cli_result grid(std::string const& name, std::string const& options) const
  {
    return run_cli("grid " + sample() + " -o " + out(name).string() + " " + options + " --device cpu");
  }
  fs::path dir_;
};

TEST_F(GdalCli, EachGdalSpellingWritesTheSameBytesAsItsLongForm)
{
  // {GDAL spelling, long form}: the rest of the command is the same.
  std::vector<std::pair<std::string, std::string>> const pairs{
    {"-tr 1 1", "--tr 1 1"},
    {"-tr 1 1 -te 500000 4100000 500003 4100002", "--tr 1 1 --te 500000 4100000 500003 4100002"},
    {"-tr 1 1 -te 500000.3 4100000.2 500002.6 4100001.9 -tap", "--tr 1 1 --te 500000.3 4100000.2 500002.6 4100001.9 --tap"},
    {"--res 1 -a_srs EPSG:32633", "--res 1 --a_srs EPSG:32633"},
    {"--res 1 -co COMPRESS=LZW -co BLOCKXSIZE=32", "--res 1 --co COMPRESS=LZW --co BLOCKXSIZE=32"},
    {"--res 1 -ot Float64", "--res 1 --ot Float64"},
    {"--res 1 -of COG", "--res 1 --of COG"},
    {"--res 1 -a_nodata -9999", "--res 1 --nodata -9999"},
  };
  int i = 0;
  for (auto const& [gdal, ours] : pairs) {
    std::string const a = "gdal" + std::to_string(i) + ".tif";
    std::string const b = "long" + std::to_string(i) + ".tif";
    ++i;
    auto const ra = grid(a, gdal + " --metrics range,count");
    ASSERT_EQ(ra.code, 0) << gdal << "\n" << ra.output;
    auto const rb = grid(b, ours + " --metrics range,count");
    ASSERT_EQ(rb.code, 0) << ours << "\n" << rb.output;
    auto const bytes = file_bytes(out(a));
    EXPECT_FALSE(bytes.empty()) << gdal;
    EXPECT_TRUE(bytes == file_bytes(out(b))) << gdal << " and " << ours << " wrote different files";
  }
}

TEST_F(GdalCli, OptionsMeanWhatGdalMeans)
{
  // -tap moves --te's edges outwards to whole cells: 500000.3 .. 500002.6 -> 500000 .. 500003.
  ASSERT_EQ(grid("tap.tif", "-tr 1 1 -te 500000.3 4100000.2 500002.6 4100001.9 -tap").code, 0);
  GDALDatasetUniquePtr tap(GDALDataset::Open(out("tap.tif").c_str(), GDAL_OF_RASTER));
  ASSERT_TRUE(tap);
  std::array<double, 6> gt{};
  tap->GetGeoTransform(gt.data());
  EXPECT_EQ(gt[0], 500000.0);
  EXPECT_EQ(gt[3], 4100002.0);
  EXPECT_EQ(tap->GetRasterXSize(), 3);
  EXPECT_EQ(tap->GetRasterYSize(), 2);

  // -ot chooses the sample type; -of COG is the COG driver, not "-o f".
  auto const r = grid("cog.tif", "--res 1 -of COG -ot Float64");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_FALSE(fs::exists(fs::path("f")));
  GDALDatasetUniquePtr cog(GDALDataset::Open(out("cog.tif").c_str(), GDAL_OF_RASTER));
  ASSERT_TRUE(cog);
  EXPECT_EQ(cog->GetRasterBand(1)->GetRasterDataType(), GDT_Float64);
  EXPECT_STREQ(cog->GetMetadataItem("LAYOUT", "IMAGE_STRUCTURE"), "COG");
  ASSERT_EQ(grid("count.tif", "--res 1 --metrics count -ot UInt32").code, 0);

  // --config KEY VALUE reaches GDAL: CPL_DEBUG ON makes GDAL's debug messages appear at -vv.
  auto const quiet = grid("c0.tif", "--res 1 -vv");
  auto const debug = grid("c1.tif", "--res 1 -vv --config CPL_DEBUG ON");
  ASSERT_EQ(debug.code, 0) << debug.output;
  EXPECT_EQ(quiet.output.find("GDAL: GTiff"), std::string::npos) << quiet.output;
  EXPECT_NE(debug.output.find("GDAL: "), std::string::npos) << debug.output;
}

TEST_F(GdalCli, FormatFollowsTheExtension)
{
  // .tiff and no extension are GeoTIFF; an unknown extension is GeoTIFF as in GDAL's tools.
  for (auto const* name : {"a.tiff", "noext", "a.out"}) {
    auto const r = grid(name, "--res 1");
    ASSERT_EQ(r.code, 0) << name << "\n" << r.output;
    GDALDatasetUniquePtr ds(GDALDataset::Open(out(name).c_str(), GDAL_OF_RASTER));
    ASSERT_TRUE(ds) << name;
    EXPECT_STREQ(ds->GetDriver()->GetDescription(), "GTiff") << name;
  }
}

TEST_F(GdalCli, EveryUsageErrorExitsTwoAndWritesNothing)
{
  // {options after "grid sample.xyz", what the message must name}; -o is out/o.tif unless given.
  std::string const o = out("o.tif").string();
  std::vector<std::pair<std::string, std::string>> const cases{
    {"-o " + o + " --res 1 --bogus", "--bogus"},
    {"-o " + o + " --res 1 -bogus", "-bogus"},
    {"-o " + o + " -tr 1", "--tr"},
    {"-o " + o + " -tr 1 1 -te 1 2 3", "--te"},
    {"-o " + o + " --res 1 -tr 1 1", "--res"},
    {"-o " + o + " --res abc", "abc"},
    {"-o " + o + " --res 0", "resolution"},
    {"-o " + o, "--res"},
    {"--res 1", "--output"},
    {"-o " + o + " --res 1 -o " + out("p.tif").string(), "--output"},
    {"-o " + o + " --res 1 -of PNG", "PNG"},
    {"-o " + o + " --res 1 -of", "--of"},
    {"-o " + out("o.png").string() + " --res 1", "PNG"},
    {"-o " + out("o.png").string() + " --res 1 -of COG", "PNG"},
    {"-o " + out("o.jpg").string() + " --res 1 -of GTiff", "JPEG"},
    {"-o " + o + " --res 1 -ot Int8", "Int8"},
    {"-o " + o + " --res 1 -ot UInt32", "UInt32"},
    {"-o " + o + " --res 1 -co NOEQUALS", "NOEQUALS"},
    {"-o " + o + " --res 1 -a_srs EPSG:999999999", "EPSG:999999999"},
    {"-o " + o + " --res 1 -a_nodata abc", "abc"},
    {"-o " + o + " --res 1 --config ONLYKEY", "--config"},
    {"-o " + o + " --res 1 --threads many", "many"},
    {"-o " + o + " --res 1 --metrics bogus", "bogus"},
    {"-o " + o + " --res 1 --mode fastest", "fastest"},
    {"-o " + o + " --res 1 --memory lots", "lots"},
    {"-o " + o + " --res 1 --returns middle", "middle"},
    {"-o " + o + " --res 1 --classes 300", "300"},
    {"-o " + o + " --res 1 --z-min 5 --z-max 1", "--z-min"},
    {"-o " + o + " --res 1 --resume", "--resume"},
    {"-o " + o + " --res 1 --edge-rule top", "top"},
  };
  for (auto const& [options, needle] : cases) {
    auto const r = run_cli("grid " + sample() + " --device cpu " + options);  // options last: -of, --config
    EXPECT_EQ(r.code, 2) << options << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << options << ": expected '" << needle << "' in\n" << r.output;
    EXPECT_NE(r.output.find("heightgrid: error: "), std::string::npos) << options << "\n" << r.output;
    EXPECT_TRUE(fs::is_empty(dir_)) << options << " left a file behind";
  }
  // Without a command, an unknown command, and the other commands' parse errors.
  for (auto const* args : {"", "gridd x", "info --res", "synth", "synth bogus -o x.las", "compare --repeat x",
                           "limits --copy-size 0", "--config ONLYKEY grid"}) {
    auto const r = run_cli(args);
    EXPECT_EQ(r.code, 2) << "'" << args << "'\n" << r.output;
  }
}

TEST_F(GdalCli, ImplausibleCellSizeForTheCrsUnitsIsWarnedAbout)
{
  auto const degrees = grid("geo.tif", "--res 10 -a_srs EPSG:4326");
  ASSERT_EQ(degrees.code, 0) << degrees.output;
  EXPECT_NE(degrees.output.find("implausible cell size"), std::string::npos) << degrees.output;
  EXPECT_NE(degrees.output.find("degree"), std::string::npos) << degrees.output;
  auto const metres = grid("utm.tif", "--res 10 -a_srs EPSG:32633");
  ASSERT_EQ(metres.code, 0) << metres.output;
  EXPECT_EQ(metres.output.find("implausible"), std::string::npos) << metres.output;
}

TEST_F(GdalCli, GridJsonDescribesWhatWasWritten)
{
  int code = -1;
  auto const tif = out("s.tif");
  auto const doc = run_json("grid " + sample() + " -o " + tif.string() +
                              " -tr 1 1 --metrics range,count -a_srs EPSG:32633 --device cpu --json",
                            code);
  ASSERT_EQ(code, 0);
  auto const& o = doc.at("outputs").at(0);
  EXPECT_EQ(o.at("path"), tif.string());
  EXPECT_EQ(o.at("format"), "GTiff");
  EXPECT_EQ(o.at("data_type"), "Float32");
  EXPECT_EQ(o.at("size"), json::parse("[3, 2]"));
  EXPECT_EQ(o.at("nodata"), "nan");
  EXPECT_EQ(o.at("bands").at(0).at("name"), "range");
  EXPECT_EQ(o.at("bands").at(1).at("name"), "count");
  EXPECT_NE(o.at("crs").at("name").get<std::string>().find("EPSG:32633"), std::string::npos);
  EXPECT_EQ(doc.at("points").at("read"), 14);
  EXPECT_EQ(doc.at("points").at("binned"), 14);
  EXPECT_EQ(doc.at("cells").at("total"), 6);
  EXPECT_EQ(doc.at("cells").at("non_empty"), 5);
  EXPECT_GE(doc.at("seconds").at("total").get<double>(), 0.0);
  // The geotransform is the file's.
  GDALDatasetUniquePtr ds(GDALDataset::Open(tif.c_str(), GDAL_OF_RASTER));
  ASSERT_TRUE(ds);
  std::array<double, 6> gt{};
  ds->GetGeoTransform(gt.data());
  EXPECT_EQ(o.at("geotransform").get<std::vector<double>>(), std::vector<double>(gt.begin(), gt.end()));

  // A tiled job describes its VRT and its tiles.
  auto const tiled = run_json("grid " + sample() + " -o " + out("tiles").string() +
                                " --res 1 --tile-size 2 --device cpu --json",
                              code);
  ASSERT_EQ(code, 0);
  EXPECT_EQ(tiled.at("outputs").at(0).at("format"), "VRT");
  EXPECT_TRUE(fs::exists(tiled.at("outputs").at(0).at("path").get<std::string>()));
  EXPECT_EQ(tiled.at("tiles").at("written"), 2);
}

TEST_F(GdalCli, InfoJsonPerFileAndForACatalogue)
{
  int code = -1;
  auto const one = run_json("info " + sample() + " --res 1 --json", code);
  ASSERT_EQ(code, 0);
  EXPECT_EQ(one.at("files").size(), 1U);
  EXPECT_EQ(one.at("files").at(0).at("path"), sample());
  EXPECT_EQ(one.at("points").at("read"), 14);
  EXPECT_EQ(one.at("z_range").at(1), 101.0);
  EXPECT_EQ(one.at("grid").at("size"), json::parse("[3, 2]"));
  EXPECT_EQ(one.at("grid").at("non_empty_cells"), 5);
  EXPECT_FALSE(one.contains("catalogue"));

  // Two LAS files: the catalogue from their headers, then each file.
  auto const las = heightgrid::test::data_dir() / "wavepacket_pdrf4.las";
  fs::copy_file(las, out("a.las"));
  fs::copy_file(las, out("b.las"));
  auto const cat = run_json("info " + out("a.las").string() + " " + out("b.las").string() + " --headers-only --json", code);
  ASSERT_EQ(code, 0);
  auto const& c = cat.at("catalogue");
  EXPECT_EQ(c.at("files"), 2);
  EXPECT_EQ(c.at("inputs").size(), 2U);
  auto const per_file = c.at("inputs").at(0).at("point_count").get<std::uint64_t>();
  EXPECT_GT(per_file, 0U);
  EXPECT_EQ(c.at("points"), 2 * per_file);
  auto const both = run_json("info " + out("a.las").string() + " " + out("b.las").string() + " --json", code);
  ASSERT_EQ(code, 0);
  EXPECT_EQ(both.at("catalogue").at("files"), 2);
  EXPECT_EQ(both.at("files").size(), 2U);
  EXPECT_EQ(both.at("files").at(0).at("las").at("point_count"), per_file);
  EXPECT_EQ(both.at("points").at("read"), 2 * per_file);
}

TEST_F(GdalCli, EdgeRulePdalPutsPointsOnHorizontalEdgesInTheCellAbove)
{
  // One column of three cells (y 3..2, 2..1, 1..0); z names the point.
  std::ofstream(out("edges.xyz")) << "0.5 3.0 5\n0.5 2.0 2\n0.5 1.0 1\n0.5 0.5 3\n0.5 0.0 4\n";
  struct expected {
    char const* rule;
    std::vector<double> count, min;
  };
  // gdal: a horizontal edge belongs to the cell below (y = 3 in the top cell, y = 0 outside);
  // pdal: to the cell above (y = 3 outside, y = 0 in the bottom cell).
  std::vector<expected> const rules{{"gdal", {1, 1, 2}, {5, 2, 1}}, {"pdal", {1, 1, 2}, {2, 1, 3}}};
  std::vector<std::string> devices{"--device cpu"};
  if (heightgrid::gpu_available()) {
    devices.emplace_back("--device gpu --mode atomic");
    devices.emplace_back("--device gpu --mode thread");
  }
  for (auto const& e : rules) {
    for (auto const& device : devices) {
      auto const tif = out(std::string(e.rule) + std::to_string(&device - devices.data()) + ".tif");
      auto const r = run_cli("grid " + out("edges.xyz").string() + " -o " + tif.string() +
                             " -te 0 0 1 3 -tr 1 1 --metrics count,min --edge-rule " + e.rule + " " + device);
      ASSERT_EQ(r.code, 0) << e.rule << " " << device << "\n" << r.output;
      GDALDatasetUniquePtr ds(GDALDataset::Open(tif.c_str(), GDAL_OF_RASTER));
      ASSERT_TRUE(ds);
      for (int b = 0; b < 2; ++b) {
        std::vector<double> v(3);
        ASSERT_EQ(ds->GetRasterBand(b + 1)->RasterIO(GF_Read, 0, 0, 1, 3, v.data(), 1, 3, GDT_Float64, 0, 0), CE_None);
        EXPECT_EQ(v, b == 0 ? e.count : e.min) << e.rule << " " << device << " band " << b + 1;
      }
    }
  }
}

TEST_F(GdalCli, PreviewIsAPngOfTheGridWithALegendAndGreyNodata)
{
  auto const png = out("p.png");
  auto const r = grid("s.tif", "--res 1 --metrics range,count --preview " + png.string());
  ASSERT_EQ(r.code, 0) << r.output;
  GDALDatasetUniquePtr ds(GDALDataset::Open(png.c_str(), GDAL_OF_RASTER));
  ASSERT_TRUE(ds);
  EXPECT_STREQ(ds->GetDriver()->GetDescription(), "PNG");
  // 3 x 2 cells, scaled by 85 to 255 x 170; the PNG at least 256 wide, 40 rows of legend below.
  EXPECT_EQ(ds->GetRasterXSize(), 256);
  EXPECT_EQ(ds->GetRasterYSize(), 170 + 40);
  ASSERT_EQ(ds->GetRasterCount(), 3);
  auto const pixel = [&](int x, int y) {
    std::array<int, 3> c{};
    for (int b = 0; b < 3; ++b) {
      EXPECT_EQ(ds->GetRasterBand(b + 1)->RasterIO(GF_Read, x, y, 1, 1, &c[static_cast<std::size_t>(b)], 1, 1, GDT_Int32, 0, 0),
                CE_None);
    }
    return c;
  };
  // data/README.md: the top-right cell is empty (grey); the top-left holds range 2.5, the largest
  // (the ramp's yellow end); the one below it range 0.5.
  EXPECT_EQ(pixel(2 * 85 + 40, 40), (std::array<int, 3>{210, 210, 210}));
  EXPECT_EQ(pixel(40, 40), (std::array<int, 3>{253, 231, 37}));
  EXPECT_NE(pixel(40, 85 + 40), pixel(40, 40));
  // Usage: a preview is a .png; an existing one is kept without --overwrite.
  EXPECT_EQ(grid("t.tif", "--res 1 --preview " + out("p.jpg").string()).code, 2);
  auto const again = grid("u.tif", "--res 1 --preview " + png.string());
  EXPECT_EQ(again.code, 4) << again.output;
  EXPECT_FALSE(fs::exists(out("u.tif")));
}

}  // namespace
