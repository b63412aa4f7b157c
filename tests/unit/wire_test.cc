// Parsers of everything strata reads from the network: unique ids, Hello
// handshakes, operation descriptors and ABORT frames. Valid inputs round-trip;
// wrong secrets, versions and garbage are rejected with a reason, never crash.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "algo/plan.h"
#include "bootstrap/wire.h"
#include "transports/transport.h"

namespace strata {
namespace {

Hello sampleHello(const Secret& s) {
  Hello h;
  h.kind = HelloKind::kData;
  h.secret = s;
  h.nranks = 5;
  h.fromRank = 3;
  h.toRank = 4;
  h.transportId = 1;
  return h;
}

TEST(Hello, RoundTrips) {
  Secret s = randomSecret();
  uint8_t buf[kHelloBytes];
  encodeHello(sampleHello(s), buf);
  Hello out;
  std::string why;
  ASSERT_TRUE(decodeHello(buf, s, &out, &why)) << why;
  EXPECT_EQ(out.kind, HelloKind::kData);
  EXPECT_EQ(out.nranks, 5);
  EXPECT_EQ(out.fromRank, 3);
  EXPECT_EQ(out.toRank, 4);
  EXPECT_EQ(out.transportId, 1u);
}

TEST(Hello, ALinkRefusalRoundTripsAndUnknownKindsAreRejected) {
  Secret s = randomSecret();
  uint8_t buf[kHelloBytes];
  Hello refused = sampleHello(s);
  refused.kind = HelloKind::kLinkRefused;
  encodeHello(refused, buf);
  Hello out;
  std::string why;
  ASSERT_TRUE(decodeHello(buf, s, &out, &why)) << why;
  EXPECT_EQ(out.kind, HelloKind::kLinkRefused);
  buf[6] = 4;  // the kind's low byte: no such kind
  EXPECT_FALSE(decodeHello(buf, s, &out, &why));
  EXPECT_NE(why.find("kind"), std::string::npos) << why;
}

TEST(Hello, RejectsWrongSecretVersionMagicAndRanks) {
  Secret s = randomSecret(), other = randomSecret();
  uint8_t buf[kHelloBytes];
  Hello out;
  std::string why;
  encodeHello(sampleHello(other), buf);
  EXPECT_FALSE(decodeHello(buf, s, &out, &why));
  EXPECT_NE(why.find("secret"), std::string::npos) << why;

  encodeHello(sampleHello(s), buf);
  buf[4] = 99;  // version
  EXPECT_FALSE(decodeHello(buf, s, &out, &why));
  EXPECT_NE(why.find("version"), std::string::npos) << why;

  encodeHello(sampleHello(s), buf);
  buf[0] ^= 0xff;  // magic
  EXPECT_FALSE(decodeHello(buf, s, &out, &why));
  EXPECT_NE(why.find("magic"), std::string::npos) << why;

  Hello bad = sampleHello(s);
  bad.fromRank = 7;  // >= nranks
  encodeHello(bad, buf);
  EXPECT_FALSE(decodeHello(buf, s, &out, &why));
  EXPECT_NE(why.find("rank"), std::string::npos) << why;
}

TEST(Hello, RandomGarbageNeverParsesOrCrashes) {
  Secret s = randomSecret();
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    uint8_t buf[kHelloBytes];
    for (auto& b : buf) b = uint8_t(rng());
    if (i % 2) std::memcpy(buf, "STRA", 4);  // get past the magic sometimes
    Hello out;
    std::string why;
    EXPECT_FALSE(decodeHello(buf, s, &out, &why));
    EXPECT_FALSE(why.empty());
  }
}

TEST(UniqueId, RoundTripsAndRejectsForeignBytes) {
  UniqueIdData d;
  d.root.ip = 0x0100007f;
  d.root.port = 4242;
  d.secret = randomSecret();
  strataUniqueId id;
  encodeUniqueId(d, &id);
  UniqueIdData back;
  std::string why;
  ASSERT_TRUE(decodeUniqueId(id, &back, &why)) << why;
  EXPECT_EQ(back.root.port, 4242);
  EXPECT_EQ(back.root.ip, d.root.ip);
  EXPECT_TRUE(secretsEqual(back.secret, d.secret));
  strataUniqueId zero;
  std::memset(&zero, 0, sizeof(zero));
  EXPECT_FALSE(decodeUniqueId(zero, &back, &why));
  EXPECT_FALSE(why.empty());
}

TEST(OpDesc, RoundTripsAndMatchesOnlyTheSameCall) {
  OpDesc a;
  a.coll = Coll::kReduce;
  a.dtype = strataBfloat16;
  a.redop = strataMax;
  a.root = 2;
  a.count = 1048579;
  a.seq = 77;
  uint8_t buf[kOpDescBytes];
  encodeOpDesc(a, buf);
  OpDesc b;
  ASSERT_TRUE(decodeOpDesc(buf, &b));
  EXPECT_TRUE(descMatches(a, b));
  OpDesc c = b;
  c.count = 1048578;
  EXPECT_FALSE(descMatches(a, c));
  c = b;
  c.dtype = strataFloat32;
  EXPECT_FALSE(descMatches(a, c));
  c = b;
  c.root = 1;
  EXPECT_FALSE(descMatches(a, c));
  c = b;
  c.redop = strataSum;
  EXPECT_FALSE(descMatches(a, c));
  c = b;
  c.coll = Coll::kAllReduce;
  EXPECT_FALSE(descMatches(a, c));
  EXPECT_NE(a.describe().find("count=1048579"), std::string::npos) << a.describe();
  buf[1] = 200;  // unknown collective
  EXPECT_FALSE(decodeOpDesc(buf, &b));
}

// A descriptor is 24 bytes on the wire: counts travel as 48 bits and sequence
// numbers as their low 32, widened back against the receiver's own.
TEST(OpDesc, LargeCountsAndSequenceNumbersPastTwoToThe32Survive) {
  OpDesc a;
  a.coll = Coll::kAllGather;
  a.dtype = strataUint8;
  a.count = (uint64_t(1) << 48) - 3;
  a.seq = (uint64_t(5) << 32) + 7;
  a.fusedTensors = 65535;
  a.layout = 0xdeadbeef;
  a.root = -1;
  uint8_t buf[kOpDescBytes];
  encodeOpDesc(a, buf);
  OpDesc b;
  ASSERT_TRUE(decodeOpDesc(buf, &b));
  EXPECT_EQ(b.count, a.count);
  EXPECT_EQ(b.fusedTensors, a.fusedTensors);
  EXPECT_EQ(b.layout, a.layout);
  EXPECT_EQ(b.root, -1);
  EXPECT_EQ(b.seq, 7u);  // the low 32 bits
  b.seq = widenSeq(a.seq, b.seq);
  EXPECT_EQ(b.seq, a.seq);
  EXPECT_TRUE(descMatches(a, b));
  // A peer a few calls behind or ahead, across a 2^32 boundary either way.
  const uint64_t mine = uint64_t(1) << 32;
  EXPECT_EQ(widenSeq(mine, uint32_t(mine - 3)), mine - 3);
  EXPECT_EQ(widenSeq(mine - 2, uint32_t(mine + 4)), mine + 4);
  EXPECT_EQ(widenSeq(mine + 9, uint32_t(mine + 9)), mine + 9);
  // Near 0 nothing wraps below it; send / receive descriptors carry 0.
  EXPECT_EQ(widenSeq(2, 0xfffffff0u), 0xfffffff0u);
  EXPECT_EQ(widenSeq(0, 0), 0u);
  // Any bit of the 48 that differs is a mismatch.
  OpDesc c = a;
  c.count = a.count ^ (uint64_t(1) << 47);
  encodeOpDesc(c, buf);
  ASSERT_TRUE(decodeOpDesc(buf, &b));
  b.seq = widenSeq(a.seq, b.seq);
  EXPECT_FALSE(descMatches(a, b));
}

// In front of more than 32 bytes of values a sender pads the descriptor to
// 32 bytes; the first byte says so, and either form decodes to
// the same call.
TEST(OpDesc, PaddedDescriptorsSayHowLongTheyAreAndDecodeAlike) {
  OpDesc a;
  a.coll = Coll::kBroadcast;
  a.dtype = strataFloat64;
  a.root = 3;
  a.count = 65537;
  a.seq = 12;
  uint8_t plain[kOpDescPaddedBytes], padded[kOpDescPaddedBytes];
  std::memset(plain, 0xab, sizeof plain);
  std::memset(padded, 0xab, sizeof padded);
  encodeOpDesc(a, plain);
  encodeOpDesc(a, padded, true);
  EXPECT_EQ(opDescBytes(plain), kOpDescBytes);
  EXPECT_EQ(opDescBytes(padded), kOpDescPaddedBytes);
  EXPECT_EQ(plain[kOpDescBytes], 0xab) << "an unpadded descriptor wrote past its 24 bytes";
  for (size_t i = kOpDescBytes; i < kOpDescPaddedBytes; ++i) EXPECT_EQ(padded[i], 0) << i;
  OpDesc b, c;
  ASSERT_TRUE(decodeOpDesc(plain, &b));
  ASSERT_TRUE(decodeOpDesc(padded, &c));
  EXPECT_TRUE(descMatches(a, b));
  EXPECT_TRUE(descMatches(a, c));
  EXPECT_EQ(opDescBytesBefore(0), kOpDescBytes);
  EXPECT_EQ(opDescBytesBefore(kOpDescUnpaddedValues), kOpDescBytes);
  EXPECT_EQ(opDescBytesBefore(kOpDescUnpaddedValues + 1), kOpDescPaddedBytes);
}

TEST(OpDesc, SendMatchesRecvOfSameSizeAndType) {
  OpDesc recv, send;
  recv.coll = Coll::kRecv;
  send.coll = Coll::kSend;
  recv.count = send.count = 9;
  EXPECT_TRUE(descMatches(recv, send));
  send.count = 10;
  EXPECT_FALSE(descMatches(recv, send));
}

TEST(AbortFrame, RoundTripsAndBoundsHostileLengths) {
  std::string frame = encodeAbortFrame(strataMismatch, "rank 1 called AllReduce(count=3)");
  ASSERT_GE(frame.size(), kFrameHeaderBytes + 4);
  uint32_t len;
  std::memcpy(&len, frame.data() + 4, 4);
  strataResult_t code;
  std::string msg;
  ASSERT_TRUE(decodeAbortPayload(reinterpret_cast<const uint8_t*>(frame.data()) + kFrameHeaderBytes,
                                 len, &code, &msg));
  EXPECT_EQ(code, strataMismatch);
  EXPECT_EQ(msg, "rank 1 called AllReduce(count=3)");
  std::string huge(100000, 'x');
  EXPECT_LE(encodeAbortFrame(strataRemoteError, huge).size(), kFrameHeaderBytes + kMaxAbortBytes);
  uint8_t zeros[8] = {0};
  EXPECT_FALSE(decodeAbortPayload(zeros, 8, &code, &msg));             // code 0
  EXPECT_FALSE(decodeAbortPayload(zeros, kMaxAbortBytes + 1, &code, &msg));  // too long
}

}  // namespace
}  // namespace strata
