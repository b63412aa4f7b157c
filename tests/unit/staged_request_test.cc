// The device path's staging layout (src/device/staged_request.h), checked on
// the CPU for every collective and send/recv: each rank's buffers are cut
// into pieces, copied in and out as the GPU's 2D copies would, and between
// the two the host collective's in-place result is computed on the staging
// areas of all ranks (held in this one process) from the float64 reference
// (support/staged_calls.h). Each rank's output must then match the reference
// for the whole call, for world sizes 1, 2, 3 and 5, odd counts, pieces of 1
// element to all of them, in place and out of place, roots other than 0.
#include <gtest/gtest.h>

#include <cstring>

#include "core/dtype.h"
#include "device/staged_request.h"
#include "support/collective_check.h"
#include "support/reference.h"
#include "support/staged_calls.h"

namespace strata {
namespace {

// What the host collective leaves in each rank's staging area (its in-place
// layout), computed from every rank's staged input.
void emulateHostCollective(std::vector<StagedPiece>& p, int root) {
  const int n = int(p.size());
  const Request& h0 = p[0].host;
  const strataDataType_t t = h0.dtype;
  const size_t c = h0.count, e = dtypeSize(t);
  auto sendOf = [&](int q, size_t block) {
    return static_cast<const void*>(static_cast<const uint8_t*>(p[size_t(q)].host.send) + block * c * e);
  };
  std::vector<std::vector<double>> out{size_t(n)};
  for (int r = 0; r < n; ++r) {
    std::vector<double>& o = out[size_t(r)];
    switch (h0.coll) {
      case Coll::kAllReduce:
      case Coll::kReduce:
      case Coll::kReduceScatter: {
        if (h0.coll == Coll::kReduce && r != root) break;
        std::vector<const void*> in;
        for (int q = 0; q < n; ++q) in.push_back(sendOf(q, h0.coll == Coll::kReduceScatter ? size_t(r) : 0));
        for (size_t i = 0; i < c; ++i) o.push_back(test::reduceReference(t, h0.redop, in, i));
        break;
      }
      case Coll::kBroadcast:
        for (size_t i = 0; i < c; ++i) o.push_back(test::load(t, sendOf(root, 0), i));
        break;
      case Coll::kAllGather:
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < c; ++i) o.push_back(test::load(t, sendOf(q, 0), i));
        break;
      case Coll::kAllToAll:
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < c; ++i) o.push_back(test::load(t, sendOf(q, size_t(r)), i));
        break;
      default: FAIL() << "not a collective";
    }
  }
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < out[size_t(r)].size(); ++i) test::store(t, p[size_t(r)].host.recv, i, out[size_t(r)][i]);
}

// The host collective runs in place on the staging area (all-to-all out of
// place, inside it): its layout must be the one strata.h defines for in-place
// calls, or the host algorithm would overwrite inputs it has not read yet.
std::string inPlaceLayoutProblem(const Request& h, int rank, int n, const std::vector<uint8_t>& area) {
  const size_t block = h.count * dtypeSize(h.dtype);
  const auto* send = static_cast<const uint8_t*>(h.send);
  const auto* recv = static_cast<const uint8_t*>(h.recv);
  const size_t sendBytes = test::sendsBlocks(h.coll) ? size_t(n) * block : block;
  const size_t recvBytes = test::recvsBlocks(h.coll) ? size_t(n) * block : block;
  const uint8_t* begin = area.data();
  if (send < begin || recv < begin || send + sendBytes > begin + area.size() || recv + recvBytes > begin + area.size())
    return "host buffers outside the staging area";
  switch (h.coll) {
    case Coll::kReduceScatter:
      return h.inPlace && recv == send + size_t(rank) * block ? "" : "reduce-scatter: recv is not block `rank` of send";
    case Coll::kAllGather:
      return h.inPlace && send == recv + size_t(rank) * block ? "" : "all-gather: send is not block `rank` of recv";
    case Coll::kAllToAll:
      return !h.inPlace && recv >= send + sendBytes ? "" : "all-to-all: send and recv overlap";
    default: return h.inPlace && send == recv ? "" : "send and recv differ in an in-place layout";
  }
}

using LayoutCase = test::StagedCallCase;

class StagedLayout : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(StagedLayout, PiecesCopiedInReducedAndCopiedOutGiveTheWholeResult) {
  test::checkStagedCalls(GetParam(), {1, 2, 3, 5}, [](test::StagedStep& step) {
    const int n = int(step.pieces.size());
    for (int r = 0; r < n; ++r)
      ASSERT_EQ(inPlaceLayoutProblem(step.pieces[size_t(r)].host, r, n, step.areas[size_t(r)]), "") << "rank " << r;
    emulateHostCollective(step.pieces, step.root);
  });
}

INSTANTIATE_TEST_SUITE_P(
    EveryCollective, StagedLayout,
    ::testing::Values(LayoutCase{Coll::kAllReduce, strataFloat32, strataSum},
                      LayoutCase{Coll::kAllReduce, strataInt32, strataMax},
                      LayoutCase{Coll::kReduceScatter, strataFloat64, strataSum},
                      LayoutCase{Coll::kReduceScatter, strataBfloat16, strataMin},
                      LayoutCase{Coll::kAllGather, strataFloat16, strataSum},
                      LayoutCase{Coll::kBroadcast, strataInt8, strataSum},
                      LayoutCase{Coll::kReduce, strataFloat32, strataProd},
                      LayoutCase{Coll::kAllToAll, strataUint64, strataSum}),
    [](const auto& info) {
      return std::string(collName(info.param.coll)) + "_" + dtypeName(info.param.dtype) + "_" +
             redOpName(info.param.op);
    });

// Send and receive: the sender's pieces copy in only, the receiver's copy out
// only, and the bytes arrive unchanged.
TEST(StagedLayout, SendAndReceivePiecesMoveTheBytes) {
  const size_t count = 1009, chunk = 97;
  std::vector<uint8_t> input(count * 8), sent = input, received(count * 8, 0xCD);
  test::fillRandom(strataFloat64, strataSum, input.data(), count, 3);
  sent = input;
  Request send, recv;
  send.coll = Coll::kSend;
  recv.coll = Coll::kRecv;
  send.dtype = recv.dtype = strataFloat64;
  send.count = recv.count = count;
  send.root = 1;
  recv.root = 0;
  send.send = sent.data();
  recv.recv = received.data();
  for (size_t offset = 0; offset < count; offset += chunk) {
    const size_t elements = std::min(chunk, count - offset);
    std::vector<uint8_t> a(stagingBytes(send, {2, 0}, elements)), b(stagingBytes(recv, {2, 1}, elements));
    StagedPiece ps = stagePiece(send, {2, 0}, offset, elements, a.data());
    StagedPiece pr = stagePiece(recv, {2, 1}, offset, elements, b.data());
    EXPECT_EQ(ps.copyOut.rows, 0u);
    EXPECT_EQ(pr.copyIn.rows, 0u);
    test::copyRows(ps.copyIn);
    std::memcpy(pr.host.recv, ps.host.send, elements * 8);  // the transfer
    test::copyRows(pr.copyOut);
  }
  EXPECT_EQ(std::memcmp(received.data(), input.data(), count * 8), 0);
}

}  // namespace
}  // namespace strata
