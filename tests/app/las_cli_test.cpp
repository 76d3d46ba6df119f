// End-to-end tests of `heightgrid grid` on LAS and LAZ inputs: a LAS file grids as the same points
// given as XYZ text (synthetic and real files), a LAZ file as its uncompressed twin, tiles given as
// a directory or a glob as one file, and the LAS filters (classes, withheld, returns, z).

#include "cli_fixture.hpp"

#include "heightgrid/io/las_writer.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

/// Writes every point of an uncompressed LAS file as "x y z" text with 17 significant digits (exact
/// doubles), decoded here from the bytes as the ASPRS tables lay them out (x, y, z: the first three
/// int32 of each record, times the header's scale plus its offset), not with heightgrid's reader:
/// the LAS-vs-XYZ tests then catch a decoding error of the reader.
void las_to_xyz(fs::path const& las, fs::path const& xyz)
{
  std::ifstream in(las, std::ios::binary);
  std::string const b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto const load = [&](std::size_t at, auto value) {
    std::memcpy(&value, b.data() + at, sizeof value);
    return value;
  };
  ASSERT_GE(b.size(), 227u);
  ASSERT_EQ(b.substr(0, 4), "LASF");
  ASSERT_EQ(static_cast<unsigned char>(b[104]) & 0x80, 0) << las << " is compressed";
  auto const start = load(96, std::uint32_t{});
  auto const record = load(105, std::uint16_t{});
  std::uint64_t count = load(107, std::uint32_t{});
  if (b[25] >= 4 && load(247, std::uint64_t{}) != 0) { count = load(247, std::uint64_t{}); }
  double scale[3], offset[3];
  for (std::size_t a = 0; a < 3; ++a) {
    scale[a] = load(131 + 8 * a, double{});
    offset[a] = load(155 + 8 * a, double{});
  }
  ASSERT_LE(start + count * record, b.size()) << las;
  std::ofstream out(xyz);
  out.precision(17);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::size_t const r = start + i * record;
    for (std::size_t a = 0; a < 3; ++a) {
      out << static_cast<double>(load(r + 4 * a, std::int32_t{})) * scale[a] + offset[a] << (a < 2 ? ' ' : '\n');
    }
  }
}

void expect_same_raster_from_las_and_xyz(fs::path const& las, fs::path const& dir, std::string const& res)
{
  las_to_xyz(las, dir / "points.xyz");
  // --keep-all: XYZ has no classes or flags, so the LAS side must not filter either
  std::string const common = " --res " + res + " --metrics range,min,max,count,mean,stddev --keep-all --device cpu -q --overwrite";
  auto const a = run("grid " + las.string() + " -o " + (dir / "las.tif").string() + common);
  ASSERT_EQ(a.code, 0) << a.output;
  auto const b = run("grid " + (dir / "points.xyz").string() + " -o " + (dir / "xyz.tif").string() + common);
  ASSERT_EQ(b.code, 0) << b.output;
  auto const r1 = read_raster(dir / "las.tif");
  auto const r2 = read_raster(dir / "xyz.tif");
  ASSERT_EQ(r1.bands, 6);
  ASSERT_EQ(r1.gt, r2.gt);
  for (int band = 0; band < 6; ++band) {
    ASSERT_EQ(0, std::memcmp(r1.values[band].data(), r2.values[band].data(), r1.values[band].size() * sizeof(double)))
      << las << " band " << band;
  }
}

TEST_F(Cli, LasGivesTheSameRasterAsTheSamePointsAsXyz)
{
  std::vector<heightgrid::io::las_point> pts;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> xy(0.0, 50.0), z(-5.0, 40.0);
  for (int i = 0; i < 50000; ++i) {
    heightgrid::io::las_point p;
    p.x = 636000.0 + xy(rng);
    p.y = 4849000.0 + xy(rng);
    p.z = z(rng);
    pts.push_back(p);
  }
  heightgrid::io::las_write_options w;
  w.scale = {0.001, 0.001, 0.001};
  w.offset = {636000.0, 4849000.0, 0.0};
  heightgrid::io::write_las(out("synthetic.las").string(), pts, w);
  expect_same_raster_from_las_and_xyz(out("synthetic.las"), dir_, "1");
}

TEST_F(Cli, RealLasFilesGiveTheSameRasterAsXyz)
{
  auto const real = heightgrid::test::real_data_dir();
  if (real.empty()) { GTEST_SKIP() << "../shared/data/real is not present (HEIGHTGRID_REAL_DATA_DIR)"; }
  for (auto const* name : {"pdal/las_autzen_trim.las", "laspy/vegetation_1_3.las", "lasR/Topography.las"}) {
    expect_same_raster_from_las_and_xyz(real / name, dir_, "2");
  }
}

// A LAZ file and its uncompressed twin grid to the same GeoTIFF, byte for byte (issue #8).
TEST_F(Cli, LazFilesGiveTheSameGeoTiffAsTheirLasTwin)
{
  auto const real = heightgrid::test::real_data_dir();
  if (real.empty()) { GTEST_SKIP() << "../shared/data/real is not present (HEIGHTGRID_REAL_DATA_DIR)"; }
  std::string const common = " --res 10 --metrics range,min,max,count --device cpu -q --co COMPRESS=NONE";
  for (auto const& [laz, las] : {std::pair{"pdal/laz_autzen_trim.laz", "pdal/las_autzen_trim.las"},
                                  std::pair{"lidR/Topography.laz", "lasR/Topography.las"}}) {
    if (!std::filesystem::exists(real / laz) || !std::filesystem::exists(real / las)) {
      GTEST_SKIP() << (real / laz).string() << " or its twin " << las << " is not in " << real.string();
    }
    ASSERT_EQ(run("grid " + (real / laz).string() + " -o " + out("laz.tif").string() + " --overwrite" + common).code, 0)
      << laz;
    ASSERT_EQ(run("grid " + (real / las).string() + " -o " + out("las.tif").string() + " --overwrite" + common).code, 0)
      << las;
    std::ifstream a(out("laz.tif"), std::ios::binary);
    std::ifstream b(out("las.tif"), std::ios::binary);
    std::string const bytes_a((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
    std::string const bytes_b((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
    EXPECT_FALSE(bytes_a.empty());
    EXPECT_TRUE(bytes_a == bytes_b) << laz << " and " << las << " gave different GeoTIFFs";
  }
  // info says it is LAZ and how it is chunked
  auto const info = run("info " + (real / "pdal/laz_autzen_trim.laz").string());
  EXPECT_EQ(info.code, 0);
  EXPECT_NE(info.output.find("compressor 2, fixed chunks of 50000 points, 3 chunks"), std::string::npos) << info.output;
}

TEST_F(Cli, TilesAsADirectoryOrAGlobGridLikeOneFile)
{
  // two LAS tiles side by side, and the same points as one XYZ file
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(0.0, 20.0), z(0.0, 30.0);
  fs::create_directories(out("tiles"));
  heightgrid::io::las_write_options w;
  w.scale = {0.001, 0.001, 0.001};
  for (int t = 0; t < 2; ++t) {
    std::vector<heightgrid::io::las_point> pts;
    for (int i = 0; i < 5000; ++i) {
      heightgrid::io::las_point p;
      p.x = 20.0 * t + std::floor(u(rng) * 1000.0) / 1000.0;
      p.y = std::floor(u(rng) * 1000.0) / 1000.0;
      p.z = std::floor(z(rng) * 1000.0) / 1000.0;
      pts.push_back(p);
    }
    heightgrid::io::write_las(out("tiles/tile" + std::to_string(t) + ".las").string(), pts, w);
  }
  las_to_xyz(out("tiles/tile0.las"), out("t0.xyz"));
  las_to_xyz(out("tiles/tile1.las"), out("t1.xyz"));
  std::string const common = " --res 2 --metrics range,min,max,count --device cpu -q";
  ASSERT_EQ(run("grid " + out("tiles").string() + " -o " + out("dir.tif").string() + common).code, 0);
  ASSERT_EQ(run("grid '" + out("tiles").string() + "/tile*.las' -o " + out("glob.tif").string() + common).code, 0);
  ASSERT_EQ(run("grid " + out("t0.xyz").string() + " " + out("t1.xyz").string() + " -o " + out("xyz.tif").string() + common).code, 0);
  auto const a = read_raster(out("dir.tif"));
  auto const b = read_raster(out("glob.tif"));
  auto const c = read_raster(out("xyz.tif"));
  ASSERT_EQ(a.cols, 20);
  ASSERT_EQ(a.bands, 4);
  for (int band = 0; band < 4; ++band) {  // bytewise: empty cells are NaN, and NaN != NaN
    auto const bytes = a.values[band].size() * sizeof(double);
    EXPECT_EQ(0, std::memcmp(a.values[band].data(), b.values[band].data(), bytes)) << "glob, band " << band;
    EXPECT_EQ(0, std::memcmp(a.values[band].data(), c.values[band].data(), bytes)) << "xyz, band " << band;
  }
  EXPECT_EQ(run("grid '" + out("tiles").string() + "/none*.las' -o " + out("n.tif").string() + common).code, 3);
}

TEST_F(Cli, AFilterThatMovesTheGridsOriginIsCroppedInOnePass)
{
  // The first returns of this file start a cell later than its (true) header bounds: the output is
  // the kept points' grid, a window of the one guessed from the header, cropped from its
  // accumulators in the same pass; --te of that grid gives the same file's cells and georeferencing.
  // Every finalize path: extremes (the CPU's integer words, the device's), sums, order statistics,
  // tagged counts; on the GPU too where there is one.
  auto const in = data("layered_dims_pdrf8.laz").string();
  std::vector<std::string> devices = {"cpu"};
  if (heightgrid::gpu_available()) { devices.emplace_back("gpu"); }
  for (auto const& device : devices) {
    for (std::string const metrics : {"range", "range,count,mean,p50,count:1,first"}) {
      SCOPED_TRACE(device + ", " + metrics);
      std::string const opts = " --res 0.5 --returns first -v --overwrite --device " + device + " --metrics " + metrics;
      auto const cropped = run("grid " + in + " -o " + out("cropped.tif").string() + opts);
      ASSERT_EQ(cropped.code, 0) << cropped.output;
      EXPECT_EQ(cropped.output.find("reading them again"), std::string::npos) << cropped.output;
      EXPECT_NE(cropped.output.find("passes: 1 binning"), std::string::npos) << cropped.output;
      EXPECT_NE(cropped.output.find("grid: the points kept start "), std::string::npos) << cropped.output;
      auto const ras = read_raster(out("cropped.tif"));
      std::ostringstream te;
      te.precision(17);
      te << ras.gt[0] << ' ' << ras.gt[3] + ras.gt[5] * ras.rows << ' ' << ras.gt[0] + ras.gt[1] * ras.cols << ' '
         << ras.gt[3];
      auto const once = run("grid " + in + " -o " + out("once.tif").string() + opts + " --te " + te.str());
      ASSERT_EQ(once.code, 0) << once.output;
      EXPECT_EQ(once.output.find("grid: the points kept start "), std::string::npos) << once.output;
      auto const ras_once = read_raster(out("once.tif"));
      ASSERT_EQ(ras_once.cols, ras.cols);
      ASSERT_EQ(ras_once.rows, ras.rows);
      EXPECT_EQ(ras_once.gt, ras.gt);
      ASSERT_EQ(ras_once.values.size(), ras.values.size());
      std::size_t differ = 0;
      std::size_t filled = 0;
      for (std::size_t b = 0; b < ras.values.size(); ++b) {
        for (std::size_t i = 0; i < ras.values[b].size(); ++i) {
          double const x = ras.values[b][i], y = ras_once.values[b][i];
          differ += (x == y || (std::isnan(x) && std::isnan(y))) ? 0 : 1;
          filled += std::isnan(x) ? 0 : 1;
        }
      }
      EXPECT_EQ(differ, 0U);
      EXPECT_GT(filled, 0U);
    }
  }
}

TEST_F(Cli, LasFiltersAreAppliedAndCounted)
{
  // classes 2 (ground), 7 (noise), 5 (vegetation); one withheld ground point
  std::vector<heightgrid::io::las_point> pts;
  auto add = [&](double z, std::uint8_t cls, std::uint8_t flags, std::uint8_t rn, std::uint8_t nr) {
    heightgrid::io::las_point p;
    p.x = 0.5;
    p.y = 0.5;
    p.z = z;
    p.classification = cls;
    p.flags = flags;
    p.return_number = rn;
    p.number_of_returns = nr;
    pts.push_back(p);
  };
  add(10.0, 2, 0, 1, 1);
  add(11.0, 2, 0, 1, 1);
  add(99.0, 7, 0, 1, 1);                                    // noise: dropped by default
  add(50.0, 2, heightgrid::point_flag::withheld, 1, 1);     // withheld: dropped by default
  add(20.0, 5, 0, 1, 2);                                    // first of two returns
  add(12.0, 5, 0, 2, 2);                                    // last of two returns
  heightgrid::io::write_las(out("f.las").string(), pts, {});
  auto range_of = [&](std::string const& opts) {
    auto const r = run("grid " + out("f.las").string() + " -o " + out("f.tif").string() +
                       " --res 1 --overwrite --device cpu " + opts);
    EXPECT_EQ(r.code, 0) << r.output;
    return std::make_pair(read_raster(out("f.tif")).values[0][0], r.output);
  };
  auto [def, def_log] = range_of("");
  EXPECT_EQ(def, 10.0);  // 10, 11, 20, 12
  EXPECT_NE(def_log.find("2 filtered (1 by class, 1 withheld)"), std::string::npos) << def_log;
  EXPECT_EQ(range_of("--keep-all").first, 89.0);
  EXPECT_EQ(range_of("--classes 2").first, 1.0);
  EXPECT_EQ(range_of("--returns last").first, 2.0);   // 10, 11, 12
  EXPECT_EQ(range_of("--returns first").first, 10.0);  // 10, 11, 20
  EXPECT_EQ(range_of("--z-max 15").first, 2.0);
  EXPECT_EQ(range_of("--z-min 10.5").first, 9.0);        // 11, 20, 12
  EXPECT_EQ(range_of("--drop-classes 5").first, 89.0);   // replaces 7,18: 10, 11, 99 (withheld still out)
  EXPECT_EQ(range_of("--classes 5").first, 8.0);         // 20, 12
  EXPECT_EQ(range_of("--classes 2,5").first, 10.0);      // 10, 11, 20, 12
}

TEST_F(Cli, AVlrCountPastTheRecordsThatFitIsAWarningAndThePointsAreGridded)
{
  // As laspy and PDAL read PDAL's bad_vlr_count.las: the VLRs that fit, then the points.
  std::vector<heightgrid::io::las_point> pts(3);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    pts[i].x = 0.5 + static_cast<double>(i);
    pts[i].y = 0.5;
    pts[i].z = 1.0 + static_cast<double>(i);
  }
  heightgrid::io::write_las(out("vlrs.las").string(), pts, {});
  std::fstream f(out("vlrs.las"), std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(100);
  std::uint32_t const count = 5;  // the file has none
  f.write(reinterpret_cast<char const*>(&count), sizeof count);
  f.close();
  auto const r = run("grid " + out("vlrs.las").string() + " -o " + out("vlrs.tif").string() + " --res 1 --overwrite");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: " + out("vlrs.las").string() + ": the header counts 5 VLRs, but only 0 fit"),
            std::string::npos)
    << r.output;
  EXPECT_NE(r.output.find("3 points read"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace heightgrid::test
