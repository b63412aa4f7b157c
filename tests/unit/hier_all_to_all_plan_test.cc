// The aggregated all-to-all (hier_pairwise) in place, read from its plans
// without processes: which blocks each rank keeps in scratch before its steps
// overwrite their slots. The executor tests (hier_plan_test.cc: HierExec,
// HierSweep) check the results.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "algo/plan.h"
#include "algo/select.h"
#include "core/config.h"
#include "support/clusters.h"
#include "topo/topology.h"

namespace strata {
namespace {

using test::cluster;

// The byte ranges [first, last) that a flow's source (or destination)
// covers in its buffer, run by run.
std::vector<std::pair<size_t, size_t>> rangesOf(const Flow& f, bool source) {
  std::vector<std::pair<size_t, size_t>> out;
  const Ref r = source ? f.src : f.dst;
  const size_t stride = source ? f.srcStride : f.dstStride, each = f.bytes / f.runs;
  for (uint32_t i = 0; i < f.runs; ++i) out.push_back({r.offset + i * stride, r.offset + i * stride + each});
  return out;
}

// In place the aggregated all-to-all reads every block it sends before any
// step writes the block's slot (blocks of the same step included), and it
// keeps in scratch only blocks for which that was needed: each block copied
// to scratch has its slot written no later than the phase that sends it
// from there. Checked on the plan's flows (phase by phase, byte ranges),
// not by the formula the plan uses; the executor tests check the results.
TEST(HierPlans, InPlaceAggregatedAllToAllKeepsOnlyBlocksOverwrittenBeforeTheyAreSent) {
  for (int nodes : {2, 3, 4, 5})
    for (int per : {1, 2, 3, 4})
      for (bool uneven : {false, true}) {
        Topology t = cluster(nodes, per, uneven);
        CollArgs a;
        a.coll = Coll::kAllToAll;
        a.nranks = t.nranks();
        a.count = 37;
        a.inPlace = true;
        a.topo = &t;
        Config cfg;
        cfg.algo = "hier_pairwise";
        const size_t block = a.count * 4;
        for (int r = 0; r < t.nranks(); ++r) {
          a.rank = r;
          Plan p = buildCollectivePlan(a, OpDesc{}, cfg);
          const std::string where = std::to_string(nodes) + "x" + std::to_string(per) + (uneven ? " uneven" : "") +
                                    " rank " + std::to_string(r);
          std::map<size_t, size_t> writtenAt;          // block of the buffer -> first phase writing its slot
          std::map<size_t, size_t> keptAt;             // scratch offset -> block kept there
          std::map<size_t, size_t> readFromScratchAt;  // block -> first phase sending it from scratch
          for (size_t ph = 0; ph < p.phases.size(); ++ph)
            for (uint32_t i = 0; i < p.phases[ph].count; ++i) {
              const Flow& f = p.flows[p.phases[ph].first + i];
              if (f.dst.buf == Buf::kRecv)
                for (auto [b, e] : rangesOf(f, false))
                  for (size_t k = b / block; k * block < e; ++k) writtenAt.emplace(k, ph);
              if (f.kind == FlowKind::kCopy && f.src.buf == Buf::kSend) {
                ASSERT_EQ(f.dst.buf, Buf::kScratch) << where;
                ASSERT_EQ(f.bytes, block) << where;
                keptAt[f.dst.offset] = f.src.offset / block;
              }
            }
          for (size_t ph = 0; ph < p.phases.size(); ++ph)
            for (uint32_t i = 0; i < p.phases[ph].count; ++i) {
              const Flow& f = p.flows[p.phases[ph].first + i];
              if (f.kind != FlowKind::kSend) continue;
              for (auto [b, e] : rangesOf(f, true)) {
                if (f.src.buf == Buf::kSend) {
                  auto w = writtenAt.find(b / block);
                  EXPECT_TRUE(w == writtenAt.end() || w->second > ph)
                      << where << ": block " << b / block << " sent in phase " << ph << ", its slot written in phase "
                      << w->second;
                } else if (f.src.buf == Buf::kScratch) {
                  auto k = keptAt.upper_bound(b);
                  if (k == keptAt.begin()) continue;  // staging: blocks other ranks handed over
                  --k;
                  if (b < k->first + block) readFromScratchAt.emplace(k->second, ph);
                }
              }
            }
          for (auto [offset, blk] : keptAt) {
            EXPECT_NE(blk, size_t(r)) << where << ": its own block kept";
            auto s = readFromScratchAt.find(blk);
            ASSERT_NE(s, readFromScratchAt.end()) << where << ": block " << blk << " kept, never sent from scratch";
            auto w = writtenAt.find(blk);
            ASSERT_NE(w, writtenAt.end()) << where << ": block " << blk << " kept, its slot never written";
            EXPECT_LE(w->second, s->second) << where << ": block " << blk << " kept, its slot written after it was sent";
          }
        }
      }
}

}  // namespace
}  // namespace strata
