// strata-model: what the cost model predicts for clusters this machine cannot
// run. For each node count and message size it prints the algorithm the
// selector would choose, its predicted time and bus bandwidth, and every
// candidate's prediction. The model and selector are the ones the library
// runs (src/algo/cost_model.cc), so a prediction here is what strata expects
// of itself on that cluster.
//
//   strata-model [--coll all_reduce] [--nodes 8,64,512,4096] [--per-node 8]
//                [--intra ALPHA_US,GBPS] [--inter ALPHA_US,GBPS] [-b MIN] [-e MAX]
//                [--memory GBPS] [-f FACTOR] [--chunk BYTES] [--topo FILE] [--json]
// --topo takes placement and link parameters from a STRATA_TOPO_DUMP_FILE
// (for validating the model against a measured run); --inter is the
// bandwidth of one node's network (all rails together); --memory the local
// memory traffic that unpipelined reductions pay (HBM class on GPUs).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algo/cost_model.h"
#include "algo/select.h"
#include "core/error.h"
#include "core/link_probe.h"
#include "topo/topo_json.h"

using namespace strata;

namespace {

struct Options {
  std::string coll = "all_reduce";
  std::vector<int> nodes{8, 64, 512, 4096};
  int perNode = 8;
  LinkParams intra{2.0, 450.0, "configured"};  // NVLink-class
  LinkParams inter{15.0, 50.0, "configured"};  // 4 x 100 Gbit/s rails
  double memoryGbps = 2000.0;                   // HBM-class
  size_t minBytes = 8, maxBytes = size_t(1) << 30, factor = 4, chunk = 524288;
  std::string topoFile;
  bool json = false;
};

size_t parseSize(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (*end) {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return size_t(v);
}

Coll collFromName(const std::string& n) {
  if (n == "all_reduce") return Coll::kAllReduce;
  if (n == "reduce_scatter") return Coll::kReduceScatter;
  if (n == "all_gather") return Coll::kAllGather;
  if (n == "broadcast") return Coll::kBroadcast;
  if (n == "reduce") return Coll::kReduce;
  if (n == "alltoall") return Coll::kAllToAll;
  std::fprintf(stderr, "strata-model: unknown collective '%s'\n", n.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "strata-model: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--coll") o.coll = next();
    else if (a == "--nodes") {
      o.nodes.clear();
      for (char* tok = std::strtok(const_cast<char*>(next()), ","); tok; tok = std::strtok(nullptr, ","))
        o.nodes.push_back(std::atoi(tok));
    } else if (a == "--per-node") o.perNode = std::atoi(next());
    else if (a == "--intra") o.intra = parseLinkParams(next(), "--intra");
    else if (a == "--inter") o.inter = parseLinkParams(next(), "--inter");
    else if (a == "--memory") o.memoryGbps = std::atof(next());
    else if (a == "-b") o.minBytes = parseSize(next());
    else if (a == "-e") o.maxBytes = parseSize(next());
    else if (a == "-f") o.factor = size_t(std::atoi(next()));
    else if (a == "--chunk") o.chunk = parseSize(next());
    else if (a == "--topo") o.topoFile = next();
    else if (a == "--json") o.json = true;
    else {
      std::fprintf(stderr, "usage: strata-model [--coll C] [--nodes N,N..] [--per-node L] [--intra A,G] "
                           "[--inter A,G] [--memory G] [-b MIN] [-e MAX] [-f F] [--chunk B] [--topo FILE] [--json]\n");
      std::exit(2);
    }
  }
  if (o.factor < 2) o.factor = 2;
  return o;
}

Topology makeCluster(int nodes, int perNode, const Options& o) {
  std::vector<long long> ids;
  for (int m = 0; m < nodes; ++m)
    for (int i = 0; i < perNode; ++i) ids.push_back(m);
  Topology t = Topology::fromNodeIds(ids);
  t.intra = o.intra;
  t.inter = o.inter;
  t.memoryGbps = o.memoryGbps;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = parse(argc, argv);
    const Coll coll = collFromName(o.coll);
    std::vector<Topology> topos;
    if (!o.topoFile.empty()) {
      // Count the ranks in the file, then load it for that many.
      for (int n = 1; n <= 1 << 16; ++n) {
        try {
          topos.push_back(readTopologyFile(o.topoFile, n));
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
        for (const Prediction& p : all)
          cands += format(o.json ? "%s\"%s\": %.3f" : "%s%s %.1f", cands.empty() ? "" : ", ", p.algorithm.c_str(), p.us);
        double bus = busBandwidth(coll, bytes, t.nranks(), bestUs);
        if (o.json) {
          std::printf("%s  {\"nodes\": %d, \"per_node\": %d, \"bytes\": %zu, \"chosen\": \"%s\", \"us\": %.3f, "
                      "\"busbw\": %.4f, \"candidates\": {%s}}",
                      first ? "" : ",\n", t.nnodes(), t.maxLocal(), bytes, best.c_str(), bestUs, bus, cands.c_str());
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
