// A tcp stream's packets written straight from many pieces (trySendPieces,
// what a fused buffer's short pieces are sent with): one frame of exactly
// their bytes, continued across partial writes, cut at kMaxSendPieces.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <random>
#include <vector>

#include "transports/tcp/tcp_stream.h"
#include "transports/transport.h"

namespace strata {
namespace {

struct SocketPair {
  int ends[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0); }
};

// Odd-sized pieces of random bytes, each in its own allocation.
std::vector<std::vector<uint8_t>> randomPieces(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<uint8_t>> pieces(count);
  for (auto& p : pieces) {
    p.resize(1 + rng() % 5003);
    for (auto& b : p) b = uint8_t(rng());
  }
  return pieces;
}

// Sends the pieces from byte `from` on (the rest of a frame) as trySendPieces'
// caller does: the spans of exactly those bytes.
size_t sendFrom(TcpStream& s, const std::vector<std::vector<uint8_t>>& pieces, size_t from) {
  std::vector<ConstSpan> spans;
  for (const auto& p : pieces) {
    if (from >= p.size()) {
      from -= p.size();
      continue;
    }
    spans.push_back(ConstSpan{p.data() + from, p.size() - from});
    from = 0;
  }
  return s.trySendPieces(spans.data(), spans.size());
}

// Receives one whole DATA frame's bytes, the sender writing what is left
// whenever its socket takes more (a small send buffer: many partial writes).
std::vector<uint8_t> exchange(TcpStream& sender, TcpStream& receiver,
                              const std::vector<std::vector<uint8_t>>& pieces, size_t frameBytes, int* calls) {
  std::vector<uint8_t> got;
  size_t sent = 0;
  for (int spins = 0; (got.size() < frameBytes || !receiver.frameDone()) && spins < 1000000; ++spins) {
    if (sent < frameBytes) {
      sent += sendFrom(sender, pieces, sent);
      ++*calls;
    }
    ConstSpan s = receiver.peekRecv();
    got.insert(got.end(), s.data, s.data + s.size);
    receiver.consumeRecv(s.size);
    if (got.size() == frameBytes && receiver.frameDone()) break;
  }
  EXPECT_EQ(sent, frameBytes);
  return got;
}

TEST(TcpStreamPieces, OneFrameOfThePiecesBytesAcrossPartialWrites) {
  SocketPair p;
  TcpStream sender(Fd(p.ends[0]), 1, 4096), receiver(Fd(p.ends[1]), 0, 1 << 16);
  for (uint32_t seed : {1u, 2u}) {  // two frames back to back
    const auto pieces = randomPieces(Channel::kMaxSendPieces - 1, seed);
    std::vector<uint8_t> expected;
    for (const auto& piece : pieces) expected.insert(expected.end(), piece.begin(), piece.end());
    int calls = 0;
    EXPECT_EQ(exchange(sender, receiver, pieces, expected.size(), &calls), expected) << "seed " << seed;
    EXPECT_GT(calls, 2) << "the send buffer took the frame in one write: nothing continued";
    EXPECT_TRUE(sender.directIdle());
  }
}

TEST(TcpStreamPieces, AFrameTakesAtMostTheMostPiecesAndTheRestFollowsInTheNext) {
  SocketPair p;
  TcpStream sender(Fd(p.ends[0]), 1, 1 << 16), receiver(Fd(p.ends[1]), 0, 1 << 16);
  const auto pieces = randomPieces(Channel::kMaxSendPieces + 5, 3);
  size_t first = 0;
  for (size_t i = 0; i < Channel::kMaxSendPieces; ++i) first += pieces[i].size();
  std::vector<uint8_t> expected;
  for (const auto& piece : pieces) expected.insert(expected.end(), piece.begin(), piece.end());
  int calls = 0;
  std::vector<uint8_t> got = exchange(sender, receiver, pieces, first, &calls);
  const std::vector<std::vector<uint8_t>> rest(pieces.begin() + Channel::kMaxSendPieces, pieces.end());
  const std::vector<uint8_t> second = exchange(sender, receiver, rest, expected.size() - first, &calls);
  got.insert(got.end(), second.begin(), second.end());
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace strata
