// Remote inputs (issue #37): LAS, LAZ and COPC files served over HTTP by a small range-capable
// server on 127.0.0.1 (range_server.py, started and stopped here; nothing leaves the machine) grid
// to the same GeoTIFF as the local files, through GDAL's /vsicurl/; a COPC window fetches part of
// the file; a missing URL is an input error naming it. Skips without python3.

#include "cli_fixture.hpp"
#include "range_server.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

class RemoteCli : public Cli {
 protected:
  void SetUp() override
  {
    Cli::SetUp();
    if (std::system("python3 -c pass > /dev/null 2>&1") != 0) { GTEST_SKIP() << "no python3 for the test server"; }
    www_ = out("www");
    fs::create_directories(www_);
    for (auto const* name : {"copc_octree_pdrf6.copc.laz", "lazrs_variable_chunks_pf6.laz", "layered_dims_pdrf8.las",
                             "layered_dims_pdrf8.laz"}) {
      fs::copy_file(data(name), www_ / name);
    }
    server_ = std::make_unique<range_server>(www_, out("served"));
    if (server_->port() == 0) { GTEST_SKIP() << "the test server did not start"; }
  }
  fs::path www_;
  std::unique_ptr<range_server> server_;
};

TEST_F(RemoteCli, UrlsGridAsTheLocalFiles)
{
  std::string const common = " --res 1 --metrics range,min,max,count --device cpu -q";
  for (auto const* name : {"copc_octree_pdrf6.copc.laz", "lazrs_variable_chunks_pf6.laz", "layered_dims_pdrf8.las",
                           "layered_dims_pdrf8.laz"}) {
    SCOPED_TRACE(name);
    auto const local = run("grid " + (www_ / name).string() + " -o " + out("local.tif").string() + " --overwrite" + common);
    ASSERT_EQ(local.code, 0) << local.output;
    for (std::string const& spelling : {server_->url(name), "/vsicurl/" + server_->url(name)}) {
      auto const remote = run("grid " + spelling + " -o " + out("remote.tif").string() + " --overwrite" + common);
      ASSERT_EQ(remote.code, 0) << remote.output;
      EXPECT_EQ(file_bytes(out("remote.tif")), file_bytes(out("local.tif"))) << spelling;
    }
  }
  // A local file and a URL in one job.
  auto const both = run("grid " + (www_ / "layered_dims_pdrf8.las").string() + " " +
                        server_->url("lazrs_variable_chunks_pf6.laz") + " -o " + out("both.tif").string() + common);
  EXPECT_EQ(both.code, 0) << both.output;
}

TEST_F(RemoteCli, AnEptDatasetOverHttpGridsAsTheLocalOne)
{
  auto const real = real_data_dir();
  auto const ept = real.empty() ? fs::path() : real.parent_path() / "cloud/lasR/ept-test-multi";
  if (ept.empty() || !fs::exists(ept)) { GTEST_SKIP() << "../shared/data/cloud/lasR/ept-test-multi not present"; }
  fs::copy(ept, www_ / "ept", fs::copy_options::recursive);
  std::string const common = " --res 2 --metrics range,min,max,count --device cpu -q";
  auto const local = run("grid " + (www_ / "ept").string() + " -o " + out("local.tif").string() + common);
  ASSERT_EQ(local.code, 0) << local.output;
  auto const remote = run("grid " + server_->url("ept/ept.json") + " -o " + out("remote.tif").string() + common);
  ASSERT_EQ(remote.code, 0) << remote.output;
  EXPECT_EQ(file_bytes(out("remote.tif")), file_bytes(out("local.tif")));
}

TEST_F(RemoteCli, ACopcWindowFetchesPartOfTheFile)
{
  auto const before = served(out("served"));
  auto const r = run("grid " + server_->url("copc_octree_pdrf6.copc.laz") + " -o " + out("w.tif").string() +
                     " -te 500045 4100045 500055 4100055 -tr 1 1 --device cpu -v");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("remote inputs: "), std::string::npos) << r.output;
  auto const fetched = served(out("served")) - before;
  auto const size = fs::file_size(www_ / "copc_octree_pdrf6.copc.laz");
  EXPECT_GT(fetched, 0U);
  // The header, the chunk table and the hierarchy (117 KB of this small file) and 24 of 1,114
  // nodes, in GDAL's 16 KiB blocks: well under the whole file.
  EXPECT_LT(fetched, size * 6 / 10) << fetched << " of " << size << " bytes served";
  auto const local = run("grid " + (www_ / "copc_octree_pdrf6.copc.laz").string() + " -o " + out("l.tif").string() +
                         " -te 500045 4100045 500055 4100055 -tr 1 1 --device cpu -q");
  ASSERT_EQ(local.code, 0) << local.output;
  EXPECT_EQ(file_bytes(out("w.tif")), file_bytes(out("l.tif")));
}

TEST_F(RemoteCli, AMissingUrlIsAnInputErrorNamingIt)
{
  auto const url = server_->url("nowhere.laz");
  auto const r = run("grid " + url + " -o " + out("x.tif").string() + " --res 1");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("heightgrid: error: " + url + ": cannot open through GDAL"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out("x.tif")));
  auto const info = run("info " + server_->url("layered_dims_pdrf8.laz"));
  EXPECT_EQ(info.code, 0) << info.output;
  EXPECT_NE(info.output.find("remote: read through GDAL (/vsicurl/http://127.0.0.1:"), std::string::npos) << info.output;
}

}  // namespace
}  // namespace heightgrid::test
