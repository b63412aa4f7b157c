// strata-model: what the cost model predicts for clusters this machine cannot
// run. For each node count and message size it prints the algorithm the
// selector would choose, its predicted time and bus bandwidth, and every
// candidate's prediction. The model and selector are the ones the library
// runs (src/algo/cost_model.cc), so a prediction here is what strata expects
// of itself on that cluster.
//
//   strata-model [--coll all_reduce] [--nodes 8,64,512,4096] [--per-node 8]
//                [--intra ALPHA_US,GBPS] [--inter ALPHA_US,GBPS] [--rails R] [-b MIN] [-e MAX]
//                [--memory GBPS] [-f FACTOR] [--chunk BYTES] [--topo FILE] [--json]
// --topo takes placement and link parameters from a STRATA_TOPO_DUMP_FILE
// (for validating the model against a measured run); --inter is the
// bandwidth of one node's network (all rails together), --rails how many
// links (NICs) it is made of: one transfer runs on one of them; --memory the local
// memory traffic that unpipelined reductions pay (HBM class on GPUs).
#include <cstdio>
#include <string>
#include <vector>

#include "algo/cost_model.h"
#include "algo/ring_blocks.h"
#include "algo/select.h"
#include "core/config.h"
#include "core/error.h"
#include "model_options.h"
#include "topo/topo_json.h"

using namespace strata;

namespace {

const char kUsage[] =
    "usage: strata-model [COLLECTIVE | --coll C] [--nodes N,N..] [--per-node L] [--intra A,G] "
    "[--inter A,G[,GAP[,HIDDEN]]] [--rails R] [--memory G] [-b MIN] [-e MAX] [-f F] [--chunk B] [--topo FILE] "
    "[--json]\n";

}  // namespace

int main(int argc, char** argv) {
  try {
    ModelOptions o;
    parseModelOptions(argc, argv, "strata-model", kUsage, o);
    Coll coll = Coll::kAllReduce;
    collFromName(o.coll, &coll);
    std::vector<Topology> topos;
    if (!o.topoFile.empty()) {
      // Count the ranks in the file, then load it for that many.
      for (int n = 1; n <= 1 << 16; ++n) {
        try {
          topos.push_back(readTopologyFile(o.topoFile, n));
          topos.back().linkBufferBytes = linkCapacityOf(Config{});  // set at init in a run
          break;
        } catch (const Error& e) {
          if (std::string(e.what()).find("describes") == std::string::npos) throw;
        }
      }
    } else {
      for (int n : o.nodes) topos.push_back(makeCluster(n, o.perNode, o));
    }
    if (o.json) std::printf("[\n");
    bool first = true;
    for (const Topology& t : topos) {
      if (!o.json)
        std::printf("# %s on %d nodes x %d ranks; intra %.2f us %.1f GB/s, inter %.2f us %.3f GB/s per node\n"
                    "#%13s %-20s %14s %12s   candidates (us)\n",
                    o.coll.c_str(), t.nnodes(), t.maxLocal(), t.intra.alphaUs, t.intra.gbps, t.inter.alphaUs,
                    t.inter.gbps, "size (B)", "chosen", "time (us)", "busbw (GB/s)");
      for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
        std::string best, cands;
        double bestUs = -1;
        std::vector<Prediction> all = predictAll(coll, bytes, t, o.chunk);
        if (!all.empty()) {
          const Prediction& pick = all[pickFastest(all, t.nnodes() > 1)];
          best = pick.algorithm;
          bestUs = pick.us;
        }
        std::string forcedOnly;  // predicted, but run only when forced (Prediction::automatic false)
        for (const Prediction& p : all) {
          cands += format(o.json ? "%s\"%s\": %.3f" : "%s%s %.1f", cands.empty() ? "" : ", ", p.algorithm.c_str(),
                          p.us);
          if (!p.automatic) forcedOnly += format("%s\"%s\"", forcedOnly.empty() ? "" : ", ", p.algorithm.c_str());
        }
        double bus = busBandwidth(coll, bytes, t.nranks(), bestUs);
        if (o.json) {
          std::printf("%s  {\"nodes\": %d, \"per_node\": %d, \"bytes\": %zu, \"chosen\": \"%s\", \"us\": %.3f, "
                      "\"busbw\": %.4f, \"candidates\": {%s}, \"forced_only\": [%s], \"node_ring_slice\": %zu}",
                      first ? "" : ",\n", t.nnodes(), t.maxLocal(), bytes, best.c_str(), bestUs, bus, cands.c_str(),
                      forcedOnly.c_str(), nodeRingSliceBytes(t, o.chunk));
          first = false;
        } else {
          std::printf("%14zu %-20s %14.1f %12.3f   %s\n", bytes, best.c_str(), bestUs, bus, cands.c_str());
        }
      }
    }
    if (o.json) std::printf("\n]\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-model: %s\n", e.what());
    return 1;
  }
  return 0;
}
