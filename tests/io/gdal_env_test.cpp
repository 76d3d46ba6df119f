#include "heightgrid/io/gdal_env.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace heightgrid::io {
namespace {

using message = std::pair<gdal_message_level, std::string>;

class GdalEnv : public ::testing::Test {
 protected:
  void SetUp() override
  {
    init_gdal([this](gdal_message_level level, std::string const& text) { received.emplace_back(level, text); });
  }
  // Later tests get GDAL's default handler back rather than a sink into a dead fixture.
  void TearDown() override { init_gdal(nullptr); }

  std::vector<message> received;
};

TEST_F(GdalEnv, MessagesReachTheSink)
{
  CPLError(CE_Warning, CPLE_AppDefined, "a warning %d", 1);
  CPLError(CE_Failure, CPLE_AppDefined, "a failure");
  EXPECT_EQ(received, (std::vector<message>{{gdal_message_level::warning, "a warning 1"},
                                            {gdal_message_level::error, "a failure"}}));
  EXPECT_EQ(gdal_last_error(), "a failure");
}

TEST_F(GdalEnv, ScopeKeepsFailuresAndPassesWarningsOn)
{
  {
    gdal_error_scope errors;
    EXPECT_FALSE(errors.failed());
    EXPECT_EQ(errors.message(), "no details from GDAL");
    CPLError(CE_Failure, CPLE_OpenFailed, "cannot open x");
    CPLError(CE_Failure, CPLE_OpenFailed, "cannot open x");
    CPLError(CE_Warning, CPLE_AppDefined, "odd tag");
    {
      gdal_error_scope inner;
      CPLError(CE_Failure, CPLE_AppDefined, "inner only");
      EXPECT_EQ(inner.message(), "inner only");
    }
    CPLError(CE_Failure, CPLE_FileIO, "write failed");
    EXPECT_TRUE(errors.failed());
    EXPECT_EQ(errors.message(), "cannot open x; write failed");
    // A pair repeated (one per block GDAL fails to write) is said once too.
    CPLError(CE_Failure, CPLE_FileIO, "cannot open x");
    CPLError(CE_Failure, CPLE_FileIO, "write failed");
    CPLError(CE_Failure, CPLE_FileIO, "at block 2");
    EXPECT_EQ(errors.message(), "cannot open x; write failed; at block 2");
  }
  EXPECT_EQ(received, (std::vector<message>{{gdal_message_level::warning, "odd tag"}}));
  CPLError(CE_Warning, CPLE_AppDefined, "after");
  EXPECT_EQ(received.back(), (message{gdal_message_level::warning, "after"}));
}

}  // namespace
}  // namespace heightgrid::io
