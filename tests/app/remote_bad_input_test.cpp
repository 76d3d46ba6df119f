// Bad remote inputs (issue #37): a server without range support, a connection reset mid-chunk, a
// redirect loop, S3 refusing access, an EPT node missing, a catalogue naming a file that does not
// exist or cut short. Each is an input error (exit 3) that starts "heightgrid: error: " and names
// the URL or file as given and what failed, comes at once (no unbounded retries or waits) and leaves
// nothing in the output directory; a tiled run with --skip-bad leaves such inputs out and grids the
// rest (exit 7). A malformed COPC hierarchy is a warning naming the URL, and the file is read whole.
// The failures are range_server.py's (127.0.0.1 only; see its docstring). A missing URL (404) is in
// remote_cli_test.cpp. Skips without python3.

#include "cli_fixture.hpp"
#include "range_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

/// The names in `dir`, hidden ones included, sorted.
std::vector<std::string> listing(fs::path const& dir)
{
  std::vector<std::string> names;
  std::error_code ec;
  for (auto const& e : fs::directory_iterator(dir, ec)) { names.push_back(e.path().filename().string()); }
  std::sort(names.begin(), names.end());
  return names;
}

/// A failure is answered as soon as the server answers: far below this (a few tenths of a second
/// here), and below the GDAL_HTTP_TIMEOUT the runs are given as a guard against a hang.
constexpr double max_seconds = 10.0;

/// A STAC Item of a virtual point cloud (.vpc) whose asset is `href`.
std::string vpc_item(std::string const& id, std::string const& href)
{
  return R"({"type": "Feature", "stac_version": "1.0.0", "id": ")" + id +
         R"(", "geometry": null, "properties": {"datetime": null}, "assets": {"data": {"href": ")" + href +
         R"(", "roles": ["data"]}}})";
}

class RemoteBadInput : public Cli {
 protected:
  void SetUp() override
  {
    Cli::SetUp();
    if (std::system("python3 -c pass > /dev/null 2>&1") != 0) { GTEST_SKIP() << "no python3 for the test server"; }
    www_ = out("www");
    fs::create_directories(www_ / "bucket");
    for (auto const* name : {"copc_octree_pdrf6.copc.laz", "layered_dims_pdrf8.laz"}) {
      fs::copy_file(data(name), www_ / name);
    }
    fs::copy_file(data("layered_dims_pdrf8.laz"), www_ / "bucket" / "layered_dims_pdrf8.laz");
    out_ = out("o");
    fs::create_directories(out_);
    server_ = std::make_unique<range_server>(www_, out("served"));
    if (server_->port() == 0) { GTEST_SKIP() << "the test server did not start"; }
  }

  /// `heightgrid ARGS` with a timeout on GDAL's requests (a guard: no run should come near it); how
  /// long it took must stay under max_seconds.
  cli_result timed(std::string const& args) const
  {
    auto const start = std::chrono::steady_clock::now();
    auto r = run(args + " --config GDAL_HTTP_TIMEOUT 30");
    std::chrono::duration<double> const took = std::chrono::steady_clock::now() - start;
    EXPECT_LT(took.count(), max_seconds) << args;
    return r;
  }

  /// `heightgrid grid INPUTS -o <out_>/x.tif`.
  cli_result grid(std::string const& inputs, std::string const& more = "") const
  {
    return timed("grid " + inputs + " -o " + (out_ / "x.tif").string() + " --res 1 --device cpu " + more);
  }

  /// An input error whose message starts with `message`, and nothing left in the output directory.
  void expect_input_error(cli_result const& r, std::string const& message) const
  {
    EXPECT_EQ(r.code, 3) << r.output;
    EXPECT_NE(r.output.find("heightgrid: error: " + message), std::string::npos) << r.output;
    EXPECT_EQ(listing(out_), std::vector<std::string>{}) << r.output;
  }

  /// GDAL's /vsis3/ pointed at the test server (bucket = the first folder under www_), unsigned.
  std::string s3_config() const
  {
    return " --config AWS_S3_ENDPOINT 127.0.0.1:" + std::to_string(server_->port()) +
           " --config AWS_HTTPS NO --config AWS_VIRTUAL_HOSTING FALSE --config AWS_NO_SIGN_REQUEST YES";
  }

  fs::path www_;
  fs::path out_;  ///< where each run writes; must stay empty after a failure
  std::unique_ptr<range_server> server_;
};

TEST_F(RemoteBadInput, AServerWithoutRangesServesASmallFileWholeAndALargeOneIsRefused)
{
  // GDAL takes a 200 answer to its first 16 KiB request when the whole file is at most ten times
  // that (and caches it); a larger file is refused with its own message, naming no URL.
  auto const local = run("grid " + (www_ / "layered_dims_pdrf8.laz").string() + " -o " + out("local.tif").string() +
                         " --res 1 --device cpu -q");
  ASSERT_EQ(local.code, 0) << local.output;
  auto const small = grid(server_->url("norange/layered_dims_pdrf8.laz"), "-q");
  ASSERT_EQ(small.code, 0) << small.output;
  EXPECT_EQ(file_bytes(out_ / "x.tif"), file_bytes(out("local.tif")));
  fs::remove(out_ / "x.tif");
  auto const url = server_->url("norange/copc_octree_pdrf6.copc.laz");
  expect_input_error(grid(url), url + ": byte 0: read failed: Range downloading not supported by this server!");
}

TEST_F(RemoteBadInput, AConnectionResetMidChunkNamesTheUrlAndTheByte)
{
  // The server resets the connection in the middle of the file: inside a point chunk, after the
  // header, chunk table and hierarchy were read.
  auto const url = server_->url("reset/copc_octree_pdrf6.copc.laz");
  auto const r = grid(url);
  expect_input_error(r, url + ": byte ");
  EXPECT_NE(r.output.find(": read failed: the transfer stopped short (the connection was closed, reset or timed out)"),
            std::string::npos)
    << r.output;
  // A tiled run fails the same way, with no tile and no VRT (the directory keeps only the job's
  // manifest and log, for --resume).
  auto const tiled = timed("grid " + url + " -o " + (out_ / "t").string() + " --res 1 --tile-size 64 --device cpu");
  EXPECT_EQ(tiled.code, 3) << tiled.output;
  EXPECT_NE(tiled.output.find("heightgrid: error: " + url + ": byte "), std::string::npos) << tiled.output;
  EXPECT_EQ(listing(out_ / "t"), (std::vector<std::string>{".heightgrid-tiles", ".heightgrid-tiles.log"}));
}

TEST_F(RemoteBadInput, AStalledServerEndsTheRunInsteadOfHangingIt)
{
  // The server answers HEAD, then never answers a GET. heightgrid's default (unless --config or the
  // environment set them): under 1 byte/s for 60 s aborts; 2 s here to keep the test short. No
  // GDAL_HTTP_TIMEOUT guard: the low-speed rule alone must end it.
  auto const url = server_->url("silent/layered_dims_pdrf8.laz");
  auto const start = std::chrono::steady_clock::now();
  auto const r = run("grid " + url + " -o " + (out_ / "x.tif").string() +
                     " --res 1 --device cpu --config GDAL_HTTP_LOW_SPEED_TIME 2 --config GDAL_HTTP_MAX_RETRY 0");
  std::chrono::duration<double> const took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took.count(), max_seconds);
  expect_input_error(r, url + ": ");
}

TEST_F(RemoteBadInput, ARedirectLoopEndsAtCurlsLimit)
{
  // /loop/F and /loop/F?again redirect to each other; curl stops after GDAL's 10 redirects.
  auto const url = server_->url("loop/layered_dims_pdrf8.laz");
  auto const r = grid(url);
  expect_input_error(r, url + ": cannot open through GDAL (/vsicurl/" + url + "): not found or not reachable");
  EXPECT_NE(r.output.find(": 302)"), std::string::npos) << r.output;
}

TEST_F(RemoteBadInput, S3AccessDeniedNamesTheS3Url)
{
  // The endpoint serves bucket "bucket" and refuses bucket "denied" with S3's AccessDenied (403).
  auto const local = run("grid " + (www_ / "layered_dims_pdrf8.laz").string() + " -o " + out("local.tif").string() +
                         " --res 1 --device cpu -q");
  ASSERT_EQ(local.code, 0) << local.output;
  auto const good = grid("s3://bucket/layered_dims_pdrf8.laz", "-q" + s3_config());
  ASSERT_EQ(good.code, 0) << good.output;
  EXPECT_EQ(file_bytes(out_ / "x.tif"), file_bytes(out("local.tif")));
  fs::remove(out_ / "x.tif");
  auto const r = grid("s3://denied/tiles/a.laz", s3_config());
  expect_input_error(
    r, "s3://denied/tiles/a.laz: cannot open through GDAL (/vsis3/denied/tiles/a.laz): not found or not reachable");
  EXPECT_NE(r.output.find(": 403)"), std::string::npos) << r.output;
}

TEST_F(RemoteBadInput, AMissingEptNodeIsNamed)
{
  auto const real = real_data_dir();
  auto const ept = real.empty() ? fs::path() : real.parent_path() / "cloud/lasR/ept-test-multi";
  if (ept.empty() || !fs::exists(ept)) { GTEST_SKIP() << "../shared/data/cloud/lasR/ept-test-multi not present"; }
  fs::copy(ept, www_ / "ept", fs::copy_options::recursive);
  fs::permissions(www_ / "ept" / "ept-data", fs::perms::owner_all, fs::perm_options::add);
  fs::remove(www_ / "ept" / "ept-data" / "1-1-0-0.laz");
  auto const node = server_->url("ept/ept-data/1-1-0-0.laz");
  expect_input_error(grid(server_->url("ept/ept.json")), node + ": cannot open through GDAL (/vsicurl/" + node + ")");
  // A window that misses the node does not open it.
  auto const corner = grid(server_->url("ept/ept.json"), "-te 273360 5274360 273400 5274400 -q");
  EXPECT_EQ(corner.code, 0) << corner.output;
  // The local copy says the same of its file.
  fs::remove_all(out_ / "x.tif");
  expect_input_error(grid((www_ / "ept").string()),
                     (www_ / "ept" / "ept-data" / "1-1-0-0.laz").string() + ": cannot read: ");
}

TEST_F(RemoteBadInput, ACatalogueNamingAMissingFileOrCutShortIsNamed)
{
  // The same .vpc read from its folder and over HTTP: the missing entry is named as it resolves.
  std::ofstream(www_ / "tiles.vpc") << R"({"type": "FeatureCollection", "features": [)"
                                    << vpc_item("a", "./layered_dims_pdrf8.laz") << ", "
                                    << vpc_item("b", "./missing.laz") << "]}";
  expect_input_error(grid((www_ / "tiles.vpc").string()),
                     (www_ / "missing.laz").string() + ": cannot read: No such file or directory");
  auto const missing = server_->url("missing.laz");
  expect_input_error(grid(server_->url("tiles.vpc")),
                     missing + ": cannot open through GDAL (/vsicurl/" + missing + "): not found or not reachable");
  // A catalogue that is not there.
  expect_input_error(grid(server_->url("none.vpc")),
                     server_->url("none.vpc") + ": cannot open the catalogue: not found or not reachable");
  expect_input_error(grid((www_ / "none.vpc").string()),
                     (www_ / "none.vpc").string() + ": cannot open the catalogue: not found or not reachable");
  // A list whose transfer is cut in its middle, between its two files: an error, not a job over
  // the first file alone.
  {
    std::ofstream list(www_ / "long.lst");
    list << server_->url("layered_dims_pdrf8.laz") << "\n";
    for (int i = 0; i < 400; ++i) { list << "# a comment line, to put the middle of the list between its files\n"; }
    list << "copc_octree_pdrf6.copc.laz\n";
  }
  auto const cut = server_->url("reset/long.lst");
  auto const r = grid(cut);
  expect_input_error(r, cut + ": byte ");
  EXPECT_NE(r.output.find(": read failed: the transfer stopped short"), std::string::npos) << r.output;
}

TEST_F(RemoteBadInput, AMalformedCopcHierarchyIsNamedByItsUrlAndTheFileReadWhole)
{
  // The root page's first entry (node 0-0-0-0) with -5 points (the other damages:
  // tests/io/copc_test.cpp): a warning naming the URL, and the window's cells all the same.
  fs::copy_file(www_ / "copc_octree_pdrf6.copc.laz", www_ / "bad.copc.laz");
  {
    std::fstream f(www_ / "bad.copc.laz", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(375 + 54 + 40);  // the info VLR's root page offset
    std::uint64_t page = 0;
    f.read(reinterpret_cast<char*>(&page), 8);
    f.seekp(static_cast<std::streamoff>(page + 28));
    std::int32_t const points = -5;
    f.write(reinterpret_cast<char const*>(&points), 4);
  }
  std::string const te = " -te 500045 4100045 500055 4100055 -tr 1 1 --device cpu";
  auto const local =
    run("grid " + (www_ / "copc_octree_pdrf6.copc.laz").string() + " -o " + out("local.tif").string() + te);
  ASSERT_EQ(local.code, 0) << local.output;
  auto const url = server_->url("bad.copc.laz");
  auto const r = timed("grid " + url + " -o " + (out_ / "x.tif").string() + te);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("heightgrid: warning: " + url + ": COPC: the hierarchy page at byte 383650, entry 0 (node "
                                                          "0-0-0-0): a point count of -5; the file is read whole"),
            std::string::npos)
    << r.output;
  EXPECT_EQ(file_bytes(out_ / "x.tif"), file_bytes(out("local.tif")));
}

TEST_F(RemoteBadInput, SkipBadLeavesBadUrlsOutOfATiledRun)
{
  // One good file and four bad URLs, three failing when opened and one while its points are read.
  std::vector<std::string> const bad{server_->url("nowhere.laz"), server_->url("loop/layered_dims_pdrf8.laz"),
                                     "s3://denied/a.laz", server_->url("reset/copc_octree_pdrf6.copc.laz")};
  std::string inputs = (www_ / "layered_dims_pdrf8.laz").string();
  for (auto const& u : bad) { inputs += " " + u; }
  auto const tiles = out_ / "t";
  std::string const common = " --res 1 --tile-size 64 --metrics count --device cpu" + s3_config();
  auto const stop = timed("grid " + inputs + " -o " + tiles.string() + common);
  EXPECT_EQ(stop.code, 3) << stop.output;
  EXPECT_NE(stop.output.find("heightgrid: error: " + bad[0] + ": "), std::string::npos) << stop.output;
  EXPECT_FALSE(fs::exists(tiles / "t.vrt"));
  auto const skip = timed("grid " + inputs + " -o " + tiles.string() + common + " --overwrite --skip-bad");
  EXPECT_EQ(skip.code, 7) << skip.output;
  for (auto const& u : bad) {
    EXPECT_NE(skip.output.find("skipped " + u + ": " + u + ": "), std::string::npos) << skip.output;
  }
  EXPECT_NE(skip.output.find("4 inputs skipped (--skip-bad); exit code 7"), std::string::npos) << skip.output;
  // The good file's 400 points, every one in the mosaic.
  auto const mosaic = read_raster(tiles / "t.vrt");
  ASSERT_EQ(mosaic.bands, 1);
  double points = 0.0;
  for (double const v : mosaic.values[0]) { points += std::isnan(v) || v == mosaic.nodata[0] ? 0.0 : v; }
  EXPECT_EQ(points, 400.0);
  for (auto const& name : listing(tiles)) { EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name; }
}

}  // namespace
}  // namespace heightgrid::test
