// Why a transfer with a peer failed, as the survivors report it: the
// liveness line's account (the peer's ABORT frame, its cause, or its exit,
// each within the grace period), and a tcp stream's ABORT frame found behind
// data not read yet; and a peer's GOODBYE before its close (a clean exit).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "transports/liveness.h"
#include "transports/tcp/tcp_stream.h"
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

// A peer that destroys its communicator cleanly says GOODBYE before its
// close (its last packets may still be on their way over other connections);
// one that crashes just closes. Arrival announcements before it still count.
TEST(LivenessGoodbye, AClosePrecededByGoodbyeIsTold) {
  for (bool goodbye : {true, false}) {
    SocketPair p;
    LivenessSocket mine(Fd(p.ends[0]), 2);
    std::string frames = encodeArrivedFrame(7, 1);
    if (goodbye) frames += encodeGoodbyeFrame();
    ASSERT_EQ(::send(p.ends[1], frames.data(), frames.size(), 0), ssize_t(frames.size()));
    ::close(p.ends[1]);
    EXPECT_NO_THROW(mine.onReadable());  // EOF alone is no error
    EXPECT_TRUE(mine.gone());
    EXPECT_EQ(mine.saidGoodbye(), goodbye);
    EXPECT_EQ(mine.announcedSeq(), 7u);
    EXPECT_THROW(mine.throwIfGone(), Error);  // gone all the same when still needed
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

TEST(LivenessAbortOnly, AnAbortSentBeforeTheExitIsThrown) {
  SocketPair p;
  LivenessSocket mine(Fd(p.ends[0]), 5);
  std::string frame = encodeAbortFrame(strataMismatch, "rank 5 called all_gather, rank 0 broadcast");
  ASSERT_EQ(::send(p.ends[1], frame.data(), frame.size(), 0), ssize_t(frame.size()));
  ::close(p.ends[1]);
  try {
    mine.throwAbortWithin(2000);
    ADD_FAILURE() << "the ABORT frame was not thrown";
  } catch (const PeerAbort& e) {
    EXPECT_EQ(e.code(), strataMismatch);
    EXPECT_NE(std::string(e.what()).find("rank 5 called all_gather"), std::string::npos) << e.what();
  }
}

TEST(LivenessAbortOnly, AnExitWithoutAbortLeavesTheCallersErrorAtOnce) {
  SocketPair p;
  LivenessSocket mine(Fd(p.ends[0]), 6);
  ::close(p.ends[1]);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(mine.throwAbortWithin(5000));
  EXPECT_LT(secondsSince(t0), 2.5);  // EOF ends the wait; it is not the grace
  EXPECT_TRUE(mine.gone());
}

TEST(TcpStreamCause, AnAbortBehindUnreadDataFramesIsThePeersCause) {
  SocketPair p;
  TcpStream mine(Fd(p.ends[0]), 2, 1 << 16);
  Fd theirs(p.ends[1]);
  std::string wire;
  for (uint32_t len : {100u, 0u, 7000u}) {  // data frames this rank has not read
    uint8_t header[kFrameHeaderBytes];
    encodeFrameHeader(FrameType::kData, len, header);
    wire.append(reinterpret_cast<char*>(header), sizeof(header));
    wire.append(len, 'x');
  }
  wire += encodeAbortFrame(strataMismatch, "rank 0 called AllReduce(count=3)");
  ASSERT_EQ(::send(theirs.get(), wire.data(), wire.size(), 0), ssize_t(wire.size()));
  theirs.reset();  // and it closes
  try {
    mine.throwAbortIfArrived();
    ADD_FAILURE() << "no cause was thrown";
  } catch (const PeerAbort& e) {
    EXPECT_EQ(e.code(), strataMismatch);
    EXPECT_STREQ(e.what(), "rank 2 aborted: rank 0 called AllReduce(count=3)");
  }
}

TEST(TcpStreamCause, WithoutAnAbortNothingIsThrown) {
  SocketPair p;
  TcpStream mine(Fd(p.ends[0]), 2, 1 << 16);
  Fd theirs(p.ends[1]);
  uint8_t header[kFrameHeaderBytes];
  encodeFrameHeader(FrameType::kData, 5, header);
  std::string wire(reinterpret_cast<char*>(header), sizeof(header));
  wire += "hello";
  ASSERT_EQ(::send(theirs.get(), wire.data(), wire.size(), 0), ssize_t(wire.size()));
  EXPECT_NO_THROW(mine.throwAbortIfArrived());
}

}  // namespace
}  // namespace strata
