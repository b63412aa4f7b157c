// Plans for every collective and algorithm, run by the real executor on
// 1..17 ranks (one thread each) over bounded in-memory links with tiny slots
// and pipeline slices, so that slicing, forwarding and flow control are all
// exercised. Results are checked against the float64 / exact reference, and
// all-reduce results must be bitwise identical on every rank.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "algo/select.h"
#include "core/dtype.h"
#include "core/error.h"
#include "exec/executor.h"
#include "support/collective_check.h"
#include "support/mem_links.h"
#include "support/reference.h"

namespace strata {
namespace {

struct PlanCase {
  Coll coll;
  const char* algo;  // forced STRATA_ALGO value ("" = automatic)
  bool inPlace;
};

std::string caseName(const PlanCase& c) {
  return std::string(collName(c.coll)) + "_" + (c.algo[0] ? c.algo : "auto") +
         (c.inPlace ? "_inplace" : "");
}


// Runs one collective on n threads; returns "" or the first problem found.
std::string runCase(const PlanCase& pc, int n, size_t count, strataDataType_t dtype,
                    strataRedOp_t op, int root) {
  const size_t e = test::elemSize(dtype);
  const size_t sendElems = test::sendsBlocks(pc.coll) ? count * size_t(n) : count;
  const size_t recvElems = test::recvsBlocks(pc.coll) ? count * size_t(n) : count;
  std::vector<std::vector<uint8_t>> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  std::vector<const void*> inputs;
  for (int r = 0; r < n; ++r) {
    in[size_t(r)].resize(sendElems * e + 1);
    test::fillRandom(dtype, op, in[size_t(r)].data(), sendElems, uint64_t(r) * 1000 + count);
    inputs.push_back(in[size_t(r)].data());
    out[size_t(r)].assign(std::max(recvElems, sendElems) * e + 1, 0xEE);
  }
  test::MemFabric fabric(n, 1024, 3);
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        test::MemLinkSet links(fabric, r);
        Config cfg;
        cfg.algo = pc.algo;
        cfg.chunkBytes = 4096;
        cfg.smallBytes = 2048;
        CollArgs a;
        a.coll = pc.coll;
        a.rank = r;
        a.nranks = n;
        a.count = count;
        a.dtype = dtype;
        a.redop = op;
        a.root = root;
        a.inPlace = pc.inPlace;
        a.chunkBytes = pipelineSliceBytes(cfg.chunkBytes, links.linkCapacity());
        OpDesc d;
        d.coll = pc.coll;
        d.dtype = dtype;
        d.redop = op;
        d.root = root;
        d.count = count;
        d.seq = 1;
        uint8_t* recv = out[size_t(r)].data();
        const void* send = in[size_t(r)].data();
        if (pc.inPlace) {
          if (pc.coll == Coll::kAllGather) {
            std::memcpy(recv + size_t(r) * count * e, send, count * e);
            send = recv + size_t(r) * count * e;
          } else if (pc.coll == Coll::kReduceScatter) {
            std::memcpy(recv, send, sendElems * e);
            send = recv;
            recv = recv + size_t(r) * count * e;
          } else {
            std::memcpy(recv, send, sendElems * e);
            send = recv;
          }
        }
        Plan plan = buildCollectivePlan(a, d, cfg);
        executePlan(links, plan, Buffers{send, recv, nullptr});
        if (pc.inPlace && pc.coll == Coll::kReduceScatter)  // result sits in block r
          std::memmove(out[size_t(r)].data(), recv, count * e);
      } catch (const std::exception& ex) {
        errors[size_t(r)] = ex.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r)
    if (!errors[size_t(r)].empty()) return format("rank %d threw: %s", r, errors[size_t(r)].c_str());
  for (int r = 0; r < n; ++r) {
    std::string err = test::checkOutput(pc.coll, dtype, op, n, r, root, count, inputs, out[size_t(r)].data());
    if (!err.empty()) return format("rank %d: %s", r, err.c_str());
    if (pc.coll == Coll::kAllReduce && std::memcmp(out[size_t(r)].data(), out[0].data(), count * e))
      return format("rank %d's result is not bitwise identical to rank 0's", r);
  }
  return "";
}

class PlanExec : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanExec, CorrectOnOneToSeventeenRanks) {
  const PlanCase pc = GetParam();
  for (int n = 1; n <= 17; ++n) {
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1023)}) {
      int root = (n > 2) ? n / 2 + 1 : n - 1;
      std::string err = runCase(pc, n, count, strataFloat32, strataSum, root);
      ASSERT_EQ(err, "") << caseName(pc) << " n=" << n << " count=" << count;
    }
  }
}

TEST_P(PlanExec, OtherTypesAndOpsOnOddWorlds) {
  const PlanCase pc = GetParam();
  struct TO { strataDataType_t t; strataRedOp_t op; };
  for (TO to : {TO{strataBfloat16, strataAvg}, TO{strataInt32, strataMax}, TO{strataFloat64, strataProd},
                TO{strataInt8, strataMin}, TO{strataFloat16, strataSum}})
    for (int n : {3, 5}) {
      std::string err = runCase(pc, n, 1031, to.t, to.op, n - 1);
      ASSERT_EQ(err, "") << caseName(pc) << " n=" << n << " " << dtypeName(to.t) << " " << redOpName(to.op);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, PlanExec,
    ::testing::Values(PlanCase{Coll::kAllReduce, "ring", false}, PlanCase{Coll::kAllReduce, "ring", true},
                      PlanCase{Coll::kAllReduce, "recursive_doubling", false},
                      PlanCase{Coll::kAllReduce, "recursive_doubling", true},
                      PlanCase{Coll::kReduceScatter, "", false}, PlanCase{Coll::kReduceScatter, "", true},
                      PlanCase{Coll::kAllGather, "", false}, PlanCase{Coll::kAllGather, "", true},
                      PlanCase{Coll::kBroadcast, "chain", false}, PlanCase{Coll::kBroadcast, "tree", true},
                      PlanCase{Coll::kBroadcast, "tree", false}, PlanCase{Coll::kReduce, "chain", false},
                      PlanCase{Coll::kReduce, "tree", false}, PlanCase{Coll::kReduce, "tree", true},
                      PlanCase{Coll::kAllToAll, "", false}, PlanCase{Coll::kAllToAll, "", true}),
    [](const auto& info) { return caseName(info.param); });

TEST(PlanShape, RingAllReduceMovesTwoNMinusOneOverNOfTheData) {
  for (int n : {2, 3, 8, 17}) {
    CollArgs a;
    a.coll = Coll::kAllReduce;
    a.nranks = n;
    a.count = 1 << 20;
    a.chunkBytes = 1 << 16;
    Config cfg;
    cfg.algo = "ring";
    OpDesc d;
    Plan p = buildCollectivePlan(a, d, cfg);
    size_t sent = 0;
    for (const Flow& f : p.flows)
      if (f.kind == FlowKind::kSend || f.forwardPeer >= 0) sent += f.bytes;
    double expected = 2.0 * (n - 1) / n * double(a.count * 4);
    EXPECT_NEAR(double(sent), expected, 4.0 * n * 64) << "n=" << n;
  }
}

}  // namespace
}  // namespace strata
