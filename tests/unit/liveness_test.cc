// The liveness line's account of why a transfer with a peer failed: the
// peer's ABORT frame (its cause) or its exit, each within the grace period.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "transports/liveness.h"
#include "transports/transport.h"

namespace strata {
namespace {

struct SocketPair {
  int ends[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0); }
};

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(LivenessCause, AnAbortFrameThatArrivesWithinTheGraceIsThrownAsThePeersCause) {
  SocketPair p;
  LivenessSocket mine(Fd(p.ends[0]), 3);
  Fd theirs(p.ends[1]);
  std::thread peer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::string frame = encodeAbortFrame(strataRemoteError, "rank 2 closed its connection");
    ASSERT_EQ(::send(theirs.get(), frame.data(), frame.size(), 0), ssize_t(frame.size()));
  });
  try {
    mine.throwCauseWithin(2000);
    ADD_FAILURE() << "no cause was thrown";
  } catch (const PeerAbort& e) {
    EXPECT_EQ(e.code(), strataRemoteError);
    EXPECT_STREQ(e.what(), "rank 3 aborted: rank 2 closed its connection");
  }
  peer.join();
}

TEST(LivenessCause, APeerThatExitedIsNamed) {
  SocketPair p;
  LivenessSocket mine(Fd(p.ends[0]), 4);
  ::close(p.ends[1]);
  try {
    mine.throwCauseWithin(2000);
    ADD_FAILURE() << "no cause was thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), strataRemoteError);
    EXPECT_NE(std::string(e.what()).find("rank 4 closed its connection"), std::string::npos) << e.what();
  }
}

TEST(LivenessCause, ASilentPeerLeavesTheCallersErrorAfterTheGrace) {
  SocketPair p;
  LivenessSocket mine(Fd(p.ends[0]), 1);
  Fd theirs(p.ends[1]);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(mine.throwCauseWithin(100));
  const double took = secondsSince(t0);
  EXPECT_GE(took, 0.09);
  EXPECT_LT(took, 5.0);
  EXPECT_FALSE(mine.gone());
}

}  // namespace
}  // namespace strata
