#include "heightgrid/core/temp_registry.hpp"

#include "heightgrid/core/error.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <string>
#include <thread>

namespace heightgrid {
namespace {

namespace fs = std::filesystem;

/// A fresh directory under the system's temporary directory, removed with the fixture.
class TemporaryFile : public ::testing::Test {
 protected:
  void SetUp() override
  {
    dir_ = fs::temp_directory_path() / ("hg_temporary_file_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override
  {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static void write(fs::path const& p, std::string const& text)
  {
    std::ofstream(p, std::ios::binary) << text;
  }
  static std::string read(fs::path const& p)
  {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  /// Descriptors of this process open on a file that was at `p` and has been unlinked.
  static int open_on_deleted(fs::path const& p)
  {
    int n = 0;
    std::string const deleted = p.string() + " (deleted)";
    for (auto const& e : fs::directory_iterator("/proc/self/fd")) {
      std::error_code ec;
      if (fs::read_symlink(e.path(), ec).string() == deleted) { ++n; }
    }
    return n;
  }

  fs::path dir_;
};

TEST_F(TemporaryFile, CommitReplacesAFileAndReleasesTheOldOneSoon)
{
  fs::path const target = dir_ / "out.tif";
  write(target, std::string(1 << 20, 'o'));
  {
    temporary_file t(target);
    write(t.path(), "new");
    t.commit();
    EXPECT_FALSE(fs::exists(t.path()));
  }
  EXPECT_EQ(read(target), "new");
  // The old file's last descriptor is closed on a thread of its own: gone within seconds.
  auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (open_on_deleted(target) > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(open_on_deleted(target), 0) << "the replaced file is still held open";
}

TEST_F(TemporaryFile, CommitOverAFifoNeitherBlocksNorOpensIt)
{
  fs::path const target = dir_ / "out.tif";
  ASSERT_EQ(::mkfifo(target.c_str(), 0600), 0);
  auto t = std::make_shared<temporary_file>(target);
  write(t->path(), "new");
  // A blocking open of a FIFO with no writer would never return: the commit runs on a thread
  // this test can leave behind if it does not end.
  auto done = std::make_shared<std::promise<void>>();
  auto ended = done->get_future();
  std::thread([t, done] {
    try {
      t->commit();
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  }).detach();
  ASSERT_EQ(ended.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "commit blocked on a FIFO";
  ended.get();
  EXPECT_TRUE(fs::is_regular_file(target));
  EXPECT_EQ(read(target), "new");
}

TEST_F(TemporaryFile, CommitReplacesALinkNotWhatItNamesAndLeavesOtherLinksAlone)
{
  fs::path const named = dir_ / "named.tif";
  fs::path const link = dir_ / "link.tif";
  fs::path const hard = dir_ / "hard.tif";
  fs::path const other = dir_ / "other.tif";
  write(named, "named");
  fs::create_symlink(named, link);
  write(hard, "hard");
  fs::create_hard_link(hard, other);
  for (auto const& target : {link, hard}) {
    temporary_file t(target);
    write(t.path(), "new");
    t.commit();
    EXPECT_EQ(read(target), "new");
  }
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_EQ(read(named), "named");
  EXPECT_EQ(read(other), "hard");
}

TEST_F(TemporaryFile, AFailedCommitKeepsTheOldFileAndHoldsNothing)
{
  fs::path const target = dir_ / "out.tif";
  write(target, "old");
  temporary_file t(target);
  // Nothing at the temporary path: the rename fails.
  EXPECT_THROW(t.commit(), error);
  EXPECT_EQ(read(target), "old");
  EXPECT_EQ(open_on_deleted(target), 0);
  int held = 0;
  for (auto const& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(e.path(), ec) == target) { ++held; }
  }
  EXPECT_EQ(held, 0) << "the old file is still open after a failed commit";
}

}  // namespace
}  // namespace heightgrid
