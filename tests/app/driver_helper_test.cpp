// The helper process that asks CUDA's driver for the device (app/pipeline/driver_helper.hpp): its
// answers, a helper that crashes or hangs, the descriptors it keeps, and when it is not started.
// The finders here stand in for the driver and keep to async-signal-safe calls (the test process
// has threads when it forks).

#include "pipeline/driver_helper.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <thread>
#include <unistd.h>

namespace heightgrid::app {
namespace {

bool finds(int device, char*, std::size_t) noexcept { return device == 3; }

bool refuses(int, char* reason, std::size_t size) noexcept
{
  char const text[] = "no device here\nsecond line";
  std::size_t const n = std::min(size - 1, sizeof text - 1);
  std::memcpy(reason, text, n);
  reason[n] = '\0';
  return false;
}

bool crashes(int, char*, std::size_t) noexcept { std::abort(); }

bool hangs(int, char*, std::size_t) noexcept
{
  for (;;) { ::pause(); }
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(DriverHelper, AnswersOneQuestionWithTheDeviceItWasAskedFor)
{
  ASSERT_TRUE(start_driver_helper(&finds));
  EXPECT_TRUE(driver_helper_waiting());
  EXPECT_FALSE(start_driver_helper(&finds)) << "a second helper while one waits";
  auto const a = ask_driver_helper(3, 30.0);
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->found) << a->reason;
  EXPECT_FALSE(driver_helper_waiting());
  EXPECT_FALSE(ask_driver_helper(3, 30.0).has_value()) << "a helper answers one question";
  // The device asked for reaches the finder: device 2 is not found.
  ASSERT_TRUE(start_driver_helper(&finds));
  auto const b = ask_driver_helper(2, 30.0);
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->found);
}

TEST(DriverHelper, PassesTheDriversReasonOnOneLine)
{
  ASSERT_TRUE(start_driver_helper(&refuses));
  auto const a = ask_driver_helper(-1, 30.0);
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->found);
  EXPECT_EQ(a->reason, "no device here second line");
}

TEST(DriverHelper, AHelperThatCrashesIsAnAnswerOfNotFoundThatSaysSo)
{
  ASSERT_TRUE(start_driver_helper(&crashes));
  auto const a = ask_driver_helper(-1, 30.0);
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->found);
  EXPECT_NE(a->reason.find("ended without an answer"), std::string::npos) << a->reason;
  EXPECT_NE(a->reason.find("signal 6"), std::string::npos) << a->reason;
}

TEST(DriverHelper, AHelperThatHangsIsStoppedAfterTheTimeout)
{
  ASSERT_TRUE(start_driver_helper(&hangs));
  auto const t0 = std::chrono::steady_clock::now();
  auto const a = ask_driver_helper(-1, 0.3);
  double const waited = seconds_since(t0);
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->found);
  EXPECT_NE(a->reason.find("no answer within 0.3 s"), std::string::npos) << a->reason;
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 10.0);
}

TEST(DriverHelper, KeepsNoDescriptorOfTheProcess)
{
  // A pipe open in this process when the helper starts (as a job's stdout may be one): once this
  // process closes its write end, its reader meets end of file although the helper still runs.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_TRUE(start_driver_helper(&hangs));
  ::close(fds[1]);
  pollfd p{fds[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "the helper holds the pipe's write end";
  char c = 0;
  EXPECT_EQ(::read(fds[0], &c, 1), 0);
  ::close(fds[0]);
  auto const a = ask_driver_helper(-1, 0.2);  // stops the helper
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->found);
}

TEST(DriverHelper, TheDriversFinderIsNotForkedFromAProcessWithThreads)
{
  // CUDA's driver after a fork of a process with threads could deadlock on a lock another thread
  // held: the job then asks the driver itself.
  std::atomic<bool> done{false};
  std::thread other([&] {
    while (!done.load()) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }
  });
  EXPECT_FALSE(start_driver_helper());
  EXPECT_FALSE(driver_helper_waiting());
  EXPECT_FALSE(ask_driver_helper(-1, 1.0).has_value());
  done = true;
  other.join();
}

}  // namespace
}  // namespace heightgrid::app
