// The way out of a libfabric call that never returns (transports/ofi/
// call_watch.h): a call spinning while a watched peer process is dead, or
// past the limit, is jumped out of with strataRemoteError; a long call with
// every peer alive is left alone; ordinary calls return their result.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "core/error.h"
#include "transports/ofi/call_watch.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A call that spins until told to stop (never, for a stuck one).
int spinUntil(const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) {
  }
  return 1;
}

// A child process that exits at once and is not reaped yet (a zombie, as a
// killed rank is until its parent waits), or one that lives until killed.
pid_t childThatExits() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  return pid;
}
pid_t childThatLives() {
  pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

TEST(CallWatch, OrdinaryCallsReturnTheirResult) {
  CallWatch watch("libfabric test", milliseconds(60000));
  int calls = 0;
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(watch.run("call", 3, [&] { return ++calls; }), i + 1);
  EXPECT_FALSE(watch.abandoned());
}

TEST(CallWatch, ACallSpinningWhileAPeerProcessIsDeadIsJumpedOutOf) {
  CallWatch watch("libfabric test", milliseconds(60000));
  pid_t live = childThatLives(), dead = childThatExits();
  watch.watchPeerProcess(live, 1);
  watch.watchPeerProcess(dead, 2);
  std::atomic<bool> never{false};
  auto start = Clock::now();
  try {
    watch.run("fi_tsend", 2, [&] { return spinUntil(never); });
    ADD_FAILURE() << "the stuck call returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), strataRemoteError);
    EXPECT_NE(std::string(e.what()).find("rank 2"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fi_tsend"), std::string::npos) << e.what();
  }
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_TRUE(watch.abandoned());
  // Nothing runs on an abandoned endpoint, not even a call that would return.
  EXPECT_THROW(watch.run("fi_cq_read", -1, [] { return 0; }), Error);
  kill(live, SIGKILL);
  waitpid(live, nullptr, 0);
  waitpid(dead, nullptr, 0);
}

TEST(CallWatch, ACallPastTheLimitIsJumpedOutOfEvenWithEveryPeerAlive) {
  CallWatch watch("libfabric test", milliseconds(300));
  std::atomic<bool> never{false};
  auto start = Clock::now();
  try {
    watch.run("fi_cq_read", -1, [&] { return spinUntil(never); });
    ADD_FAILURE() << "the stuck call returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), strataRemoteError);
    EXPECT_NE(std::string(e.what()).find("timeout"), std::string::npos) << e.what();
  }
  EXPECT_GE(secondsSince(start), 0.3);
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_TRUE(watch.abandoned());
}

TEST(CallWatch, ALongCallWithEveryPeerAliveIsLeftAlone) {
  CallWatch watch("libfabric test", milliseconds(60000));
  pid_t live = childThatLives();
  watch.watchPeerProcess(live, 1);
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(1200));
    stop = true;
  });
  EXPECT_EQ(watch.run("fi_cq_read", -1, [&] { return spinUntil(stop); }), 1);
  stopper.join();
  EXPECT_FALSE(watch.abandoned());
  // A process that died after its call returned does not fail later quick calls.
  kill(live, SIGKILL);
  waitpid(live, nullptr, 0);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(watch.run("fi_cq_read", -1, [] { return 0; }), 0);
  EXPECT_FALSE(watch.abandoned());
}

}  // namespace
}  // namespace strata
