// within_device_memory: the one rule by which the GPU stages wait for device memory other processes
// hold (app/pipeline/memory_wait.hpp). Host only: the attempts throw device_memory_error as the
// kernels do when an allocation fails; the device tests (device_memory_test.cpp) run it for real.

#include "pipeline/memory_wait.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace heightgrid::app {
namespace {

struct recorder {
  std::vector<std::string> notes;
  std::vector<bool> waiting;
  int pauses{0};
  int allowed_pauses{1000};  // the job "ends" after this many
  double sleep_s{0.0};       // how long a pause sleeps (not the poll's 0.2 s: the tests stay short)
  memory_wait_hooks hooks()
  {
    return {[this](double seconds) {
              EXPECT_DOUBLE_EQ(seconds, device_memory_poll_s);
              std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
              return ++pauses <= allowed_pauses;
            },
            [this](std::string n) { notes.push_back(std::move(n)); }, [this](bool on) { waiting.push_back(on); }};
  }
};

TEST(MemoryWait, ASuccessAtOnceWaitsForNothing)
{
  recorder r;
  int const v = within_device_memory("the binner", 10.0, r.hooks(), [] { return 7; });
  EXPECT_EQ(v, 7);
  EXPECT_TRUE(r.notes.empty());
  EXPECT_TRUE(r.waiting.empty());
  EXPECT_EQ(r.pauses, 0);
}

TEST(MemoryWait, FailuresAreRetriedAfterAPauseEachUntilOneSucceeds)
{
  recorder r;
  int attempts = 0;
  int const v = within_device_memory("a LAZ wave", 600.0, r.hooks(), [&] {
    if (++attempts < 4) { throw device_memory_error("out of device memory: 2 GiB asked"); }
    return attempts;
  });
  EXPECT_EQ(v, 4);
  EXPECT_EQ(r.pauses, 3);
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[0].find("a LAZ wave: waiting up to 600.00 s"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[0].find("2 GiB asked"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[1].find("a LAZ wave: device memory came free after"), std::string::npos) << r.notes[1];
  EXPECT_EQ(r.waiting, (std::vector<bool>{true, false}));
}

TEST(MemoryWait, NoWaitRethrowsTheFailureAsItWas)
{
  recorder r;
  try {
    (void)within_device_memory("the binner", 0.0, r.hooks(), []() -> int { throw device_memory_error("out of device memory"); });
    FAIL() << "no exception";
  } catch (device_memory_error const& e) {
    EXPECT_STREQ(e.what(), "out of device memory");
  }
  EXPECT_TRUE(r.notes.empty());
  EXPECT_EQ(r.pauses, 0);
}

TEST(MemoryWait, AnExpiredWaitNamesWhatWaitedAndHowLong)
{
  recorder r;
  r.sleep_s = 0.01;
  int attempts = 0;
  try {
    (void)within_device_memory("the binner", 0.05, r.hooks(), [&]() -> int {
      ++attempts;
      throw device_memory_error("out of device memory");
    });
    FAIL() << "no exception";
  } catch (device_memory_error const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("out of device memory (the binner: waited 50.0 ms for device memory)"), std::string::npos) << what;
    EXPECT_EQ(e.kind(), error_kind::resource);
  }
  EXPECT_GE(attempts, 2);
  ASSERT_FALSE(r.waiting.empty());
  EXPECT_FALSE(r.waiting.back()) << "the stage must not stay marked as waiting";
}

TEST(MemoryWait, AJobThatEndsStopsTheWait)
{
  recorder r;
  r.allowed_pauses = 2;
  int attempts = 0;
  try {
    (void)within_device_memory("CUDA's start", 600.0, r.hooks(), [&]() -> int {
      ++attempts;
      throw device_memory_error("no context");
    });
    FAIL() << "no exception";
  } catch (device_memory_error const& e) {
    EXPECT_NE(std::string(e.what()).find("the job ended while it waited for device memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(r.waiting, (std::vector<bool>{true, false}));
}

TEST(MemoryWait, OtherErrorsPassThroughAtOnce)
{
  recorder r;
  EXPECT_THROW((void)within_device_memory("the binner", 600.0, r.hooks(), []() -> int { throw error(error_kind::device, "a kernel failed"); }),
               error);
  EXPECT_EQ(r.pauses, 0);
}

TEST(MemoryWait, AnotherErrorAfterAWaitEndsTheWaitWithoutSayingMemoryCameFree)
{
  recorder r;
  int attempts = 0;
  EXPECT_THROW((void)within_device_memory("CUDA's start", 600.0, r.hooks(),
                                          [&]() -> int {
                                            if (++attempts == 1) { throw device_memory_error("no context"); }
                                            throw error(error_kind::device, "no CUDA-capable device");
                                          }),
               error);
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(r.waiting, (std::vector<bool>{true, false})) << "the stage must not stay marked as waiting";
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].find("came free"), std::string::npos) << r.notes[0];
}

}  // namespace
}  // namespace heightgrid::app
