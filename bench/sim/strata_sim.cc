// strata-sim: strata's own plans replayed on a simulated cluster (SimGrid).
// For each node count, size and algorithm it builds every rank's Plan with
// the library's planner and selector (the code a real run calls), replays the
// plans with the executor's semantics (replay.h) on a platform of one host
// per rank (platform.h), and prints nccl-tests' columns beside the cost
// model's prediction and the selector's choice. Each (size, algorithm) cell
// runs in a child process (a SimGrid engine runs once per process).
//
//   strata-sim COLLECTIVE [strata-model's flags] [--algo NAME|auto|all]
//              [--platform fat-tree|switch|FILE] [--leaf-nodes D] [--taper T]
//              [--slow-node N[,FACTOR]] [--late-rank R[,US]] [--max-messages M]
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/log.h>

#include <fcntl.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algo/cost_model.h"
#include "algo/select.h"
#include "core/dtype.h"
#include "core/error.h"
#include "model/model_options.h"
#include "platform.h"
#include "replay.h"
#include "symmetry.h"

using namespace strata;
using namespace strata::sim;

namespace {

const char kUsage[] =
    "usage: strata-sim COLLECTIVE [--nodes N,N..] [--per-node L] [--intra A,G] [--inter A,G[,GAP[,HIDDEN]]]\n"
    "                  [--rails R] [--memory G] [-b MIN] [-e MAX] [-f F] [--chunk B] [--algo NAME|auto|all]\n"
    "                  [--platform fat-tree|switch|FILE] [--leaf-nodes D] [--taper T]\n"
    "                  [--slow-node N[,FACTOR]] [--late-rank R[,US]]\n"
    "                  [-d TYPE] [--max-messages M] [--reduce] [--symmetric] [--fsdp-step] [--json]\n"
    "  A replay above --max-messages runs node 0's ranks alone where every node's plan is node 0's moved\n"
    "  by a shift or an exclusive or of the node indices and the network between the nodes limits no flow\n"
    "  (--symmetric: even below it); otherwise it is extrapolated from smaller clusters (--reduce: even\n"
    "  below it).\n"
    "  --fsdp-step: one sharded training step, each size from -b to -e a layer: its all-gather, then its\n"
    "  reduce-scatter, every call after the last (the selector's choice for each), beside the calls alone.\n";

struct SimOptions {
  std::string algo = "auto";
  PlatformSpec platform;
  int lateRank = -1;
  double lateUs = 1000;
  uint64_t maxMessages = 40000000;
  bool forceReduced = false;  // --reduce: extrapolate even where a full replay fits (to check the reduction)
  bool forceSymmetric = false;  // --symmetric: node 0's ranks alone even where a full replay fits (to check it)
  bool fsdpStep = false;  // --fsdp-step: per size (layer) an all-gather and a reduce-scatter, one after the other
  strataDataType_t dtype = strataFloat32;
};

// What a child reports for one cell.
struct CellResult {
  double us = -1;          // simulated time of the slowest rank
  double wallS = 0;        // host time the simulation took
  uint64_t messages = 0;   // fragments replayed
  char skipped[240] = {};  // why the cell was not simulated
};

CollArgs argsFor(Coll coll, size_t count, strataDataType_t dtype, int rank, const Topology& topo, size_t chunk) {
  CollArgs a;
  a.coll = coll;
  a.rank = rank;
  a.nranks = topo.nranks();
  a.count = count;
  a.dtype = dtype;
  a.redop = strataSum;
  a.root = 0;
  a.chunkBytes = chunk;
  a.topo = &topo;
  return a;
}

void startEngine() {
  int argc = 1;
  char name[] = "strata-sim";
  char* argv[] = {name, nullptr};
  xbt_log_control_set("root.thresh:critical");
  new simgrid::s4u::Engine(&argc, argv);  // lives until the child exits
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("contexts/stack-size:256");
  simgrid::s4u::Engine::set_config("contexts/guard-size:0");  // one mapping per actor: 32768 actors fit vm.max_map_count
}

// One collective call: what, and how many elements (as the C API counts them).
struct Call {
  Coll coll;
  size_t count;
};

// Rank `rank`'s plan for one call, as the library builds it.
ReplayPlan replayPlanOf(Coll coll, size_t count, const std::string& algo, int rank, const Topology& topo,
                        size_t chunk, strataDataType_t dtype) {
  Config cfg;
  cfg.algo = algo;
  cfg.chunkBytes = chunk;
  OpDesc desc;
  desc.coll = coll;
  desc.count = count;
  desc.dtype = dtype;
  return toReplayPlan(buildCollectivePlan(argsFor(coll, count, dtype, rank, topo, chunk), desc, cfg));
}

// Runs in the child: builds the platform and every rank's plans for `calls`
// (called one after the other, as a training step does), replays them. With
// `symmetric`, node 0's ranks alone on the symmetric platform (symmetry.h;
// the caller has checked that it applies).
CellResult simulateCalls(const std::vector<Call>& calls, const std::string& forced, const Topology& topo,
                         const ModelOptions& mo, const SimOptions& so, bool symmetric = false,
                         NodeSymmetry symmetry = NodeSymmetry::kShift) {
  CellResult res;
  startEngine();
  ReplayInput in;
  in.memoryGbps = mo.memoryGbps;
  const int L = mo.perNode;
  if (symmetric) {
    SymmetricHosts h = buildSymmetricPlatform(so.platform);
    std::vector<simgrid::s4u::Host*> both = h.ranks;
    both.insert(both.end(), h.far.begin(), h.far.end());
    RouteLatency latency = takeLatenciesOut(both);
    // To a rank of node 0, from one of node 0's or (its mirror's route) of another node's.
    in.latencyS = [latency, L](int from, int to) { return from < L ? latency(from, to) : latency(from % L, L + to); };
    in.hosts = h.ranks;
    in.farHosts = h.far;
    in.symmetricNodes = topo.nnodes();
    in.perNode = L;
    in.symmetry = symmetry;
  } else {
    in.hosts = buildPlatform(so.platform);
    in.latencyS = takeLatenciesOut(in.hosts);
  }
  in.gapS = topo.inter.gapUs * 1e-6;
  in.nodeOf.resize(size_t(topo.nranks()));
  for (int r = 0; r < topo.nranks(); ++r) in.nodeOf[size_t(r)] = topo.nodeOf(r);
  in.injectorFree.assign(size_t(topo.nnodes()), 0);
  const int n = symmetric ? L : topo.nranks();
  in.plans.resize(size_t(n));
  for (const Call& c : calls)
    for (int r = 0; r < n; ++r)
      appendPlan(in.plans[size_t(r)], replayPlanOf(c.coll, c.count, forced, r, topo, mo.chunk, so.dtype));
  for (const ReplayPlan& p : in.plans) res.messages += p.fragments;
  if (so.lateRank >= 0 && so.lateRank < n) {
    in.startDelayS.assign(size_t(n), 0);
    in.startDelayS[size_t(so.lateRank)] = so.lateUs * 1e-6;
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<double> finish = replay(in);
  res.wallS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double last = 0;
  for (double f : finish) last = std::max(last, f);
  res.us = last * 1e6;
  return res;
}

// "" when a symmetric replay stands for the whole cluster of this cell, with
// *symmetry the one it takes; otherwise a sentence saying why not: the
// network between the nodes must limit no flow (one switch, or a fat-tree of
// full bisection), every node be alike (no slow node, no late rank) and every
// node's plan node 0's moved by a shift or an exclusive or.
std::string symmetricRefusal(Coll coll, size_t count, const std::string& algo, const Topology& topo,
                             const ModelOptions& mo, const SimOptions& so, NodeSymmetry* symmetry, bool* exact) {
  if (topo.nnodes() < 2) return "one node";
  if (so.platform.kind != "switch" && !(so.platform.kind == "fat-tree" && so.platform.taper == 1))
    return "the network between the nodes may limit a flow (a tapered fat-tree or a platform file)";
  if (so.platform.slowNode >= 0 || so.lateRank >= 0) return "the nodes are not alike (a slow node or a late rank)";
  auto planOf = [&](int rank) { return replayPlanOf(coll, count, algo, rank, topo, mo.chunk, so.dtype); };
  std::string why;
  for (NodeSymmetry s : {NodeSymmetry::kShift, NodeSymmetry::kXor}) {
    const std::string miss = symmetryMismatch(planOf, topo.nnodes(), mo.perNode, s, exact);
    if (miss.empty()) {
      *symmetry = s;
      return "";
    }
    why += (why.empty() ? "" : "; ") + miss;
  }
  return why;
}

// Runs `work` on a thread with a 4 GiB stack (address space; only the pages
// touched are memory) and returns what it reported. SimGrid's engine runs on
// the thread that calls Engine::run, and its max-min solver recurses once per
// constraint reached through shared flows (System::update_modified_cnst_set_rec):
// a 64 KiB radix reduce-scatter on 4096 x 8 ranks went 87,000 frames deep and
// overflowed the main thread's 8 MiB.
CellResult onLargeStack(const std::function<CellResult()>& work) {
  struct Job {
    const std::function<CellResult()>* work;
    CellResult result;
  } job{&work, {}};
  auto run = [](void* p) -> void* {
    Job* j = static_cast<Job*>(p);
    try {
      j->result = (*j->work)();
    } catch (const std::exception& e) {
      std::snprintf(j->result.skipped, sizeof j->result.skipped, "%s", e.what());
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(4) << 30);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, run, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0)  // no room for that stack (overcommit refused): the main thread's, as before
    run(&job);
  else
    pthread_join(thread, nullptr);
  return job.result;
}

// Runs `work` in a child process (a SimGrid engine runs once per process)
// and returns what it reported; a child that dies reports why.
CellResult inChild(const std::function<CellResult()>& work, bool quiet) {
  int fds[2];
  CellResult res;
  if (pipe(fds) != 0) {
    std::snprintf(res.skipped, sizeof res.skipped, "pipe failed: %s", std::strerror(errno));
    return res;
  }
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (quiet) {  // SimGrid's own account of a failure is many lines; the child reports one
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 2);
    }
    CellResult r = onLargeStack(work);
    ssize_t w = write(fds[1], &r, sizeof r);
    _exit(w == ssize_t(sizeof r) ? 0 : 1);
  }
  close(fds[1]);
  ssize_t got = read(fds[0], &res, sizeof res);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != ssize_t(sizeof res)) {
    res = CellResult{};
    std::snprintf(res.skipped, sizeof res.skipped, "the simulation died (%s %d)",
                  WIFSIGNALED(status) ? "signal" : "exit status",
                  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
  return res;
}

// Whether SimGrid can build the platform: "" or a sentence saying why not.
std::string tryPlatform(const PlatformSpec& spec) {
  CellResult r = inChild(
      [&] {
        startEngine();
        buildPlatform(spec);
        return CellResult{};
      },
      true);
  if (!r.skipped[0]) return "";
  if (std::strncmp(r.skipped, "the simulation died", 19) == 0)
    return format("platform file '%s' does not parse as a SimGrid platform", spec.kind.c_str());
  return r.skipped;
}

// How big a replay is, from rank 0's plan (ranks play symmetric parts): the
// messages all ranks send, and what a rank moves in an average phase.
struct ReplaySize {
  uint64_t messages = 0;
  double bytesPerPhase = 0;
  size_t phases = 0;  // rank 0's
};
ReplaySize replaySize(Coll coll, size_t count, const std::string& algo, const Topology& topo,
                      const ModelOptions& mo, const SimOptions& so) {
  ReplayPlan plan = replayPlanOf(coll, count, algo, 0, topo, mo.chunk, so.dtype);
  double bytes = 0;
  for (const ReplayFlow& f : plan.flows) bytes += double(f.bytes);
  const double phases = double(plan.phaseEnd.size());
  return {plan.fragments * uint64_t(topo.nranks()), phases > 0 ? bytes / phases : 0, plan.phaseEnd.size()};
}

// A reduced replay's result: the extrapolated time, how far the same line
// misses the replay it was not drawn through (its own check), and how it was made.
struct Reduction {
  double us = -1, selfMiss = 1e9, wallS = 0;
  uint64_t messages = 0;
  std::string how;
};

// The whole cluster replayed in coarser fragments: with the chunk (and so
// every pipeline slice and phase) 2^j, 2^(j+1) and 2^(j+2) times the real
// one, for the smallest j whose replay fits, and the time extrapolated along
// the line through the two finest in rank 0's phase count to the real plan's.
// The bytes, the steps, the partners and the links they share are all the
// full cluster's; only the number of phases differs. Less exact than
// smaller clusters where those move what the full cluster moves per phase (a
// slice's latency overlaps less of the next one's bytes as slices grow: 6-11%
// low for the hierarchical algorithms at 16-256 MiB on 64 x 8 ranks), exact
// where they do not (a radix exchange, whose radix changes with the node
// count: at 128 x 1 ranks the smaller clusters' line put a 256 MiB radix
// all-gather at 3.5x its full replay, this one within 1%). us < 0: none fits
// or the phases stop changing (a ring's steps, not its fragments, are what is
// too many).
Reduction coarserFragments(Coll coll, size_t count, const std::string& algo, const Topology& topo,
                           const ModelOptions& mo, SimOptions so, size_t wholePhases) {
  Reduction out;
  for (int j = 1; j <= 6; ++j) {
    ModelOptions o[3] = {mo, mo, mo};
    ReplaySize z[3];
    for (int i = 0; i < 3; ++i) {
      o[i].chunk = mo.chunk << (j + i);
      z[i] = replaySize(coll, count, algo, topo, o[i], so);
    }
    if (z[0].messages > so.maxMessages && !so.forceReduced) continue;
    if (z[0].phases == z[1].phases || z[1].phases == z[2].phases || z[0].phases >= wholePhases) return out;
    CellResult r[3];
    for (int i = 0; i < 3; ++i) {
      so.platform.nodes = topo.nnodes();
      r[i] = inChild([&] { return simulateCalls({{coll, count}}, algo, topo, o[i], so); }, true);
      if (r[i].skipped[0]) return out;
      out.messages += r[i].messages;
      out.wallS += r[i].wallS;
    }
    auto at = [&](size_t phases) {
      return r[0].us + (r[0].us - r[1].us) / (double(z[0].phases) - double(z[1].phases)) *
                           (double(phases) - double(z[0].phases));
    };
    out.us = std::max(r[0].us, at(wholePhases));
    out.selfMiss = std::fabs(at(z[2].phases) / r[2].us - 1);
    out.how = format("of the whole cluster in fragments %dx, %dx and %dx as large (in rank 0's phases: %zu, %zu, %zu; "
                     "%zu in full)", 1 << j, 2 << j, 4 << j, z[0].phases, z[1].phases, z[2].phases, wholePhases);
    return out;
  }
  return out;
}

// One (size, algorithm) on `nodes` nodes. A replay above --max-messages is
// reduced: full replays on nodes/2^k, /2^(k+1) and /2^(k+2) nodes (the
// largest that fit), each with the count (as given, or scaled by the nodes
// either way) that keeps rank 0's bytes per phase closest to the full
// cluster's, so a step moves what it moves there (a ring's block, a recursive
// doubling round's whole vector), and the time extrapolated along the line
// through the two largest (below). *reduced says so, and how far the two
// largest are from that premise where they miss it by more than 10% (a radix
// exchange changes its radix with the node count: at 64 x 1 ranks a 64 MiB
// radix all-gather's smaller clusters move 0.44-0.64 of its bytes per phase,
// and the line through them comes out 21% low): there, coarserFragments
// too, and the way whose line better predicts its own third replay.
CellResult simulate(Coll coll, size_t count, const std::string& algo, int nodes, const ModelOptions& mo,
                    SimOptions so, std::string* reduced) {
  auto full = [&](int m, size_t c) {
    Topology t = makeCluster(m, mo.perNode, mo);
    so.platform.nodes = m;
    return inChild([&] { return simulateCalls({{coll, c}}, algo, t, mo, so); }, true);
  };
  auto sizeOn = [&](int m, size_t c) { return replaySize(coll, c, algo, makeCluster(m, mo.perNode, mo), mo, so); };
  const Topology topo = makeCluster(nodes, mo.perNode, mo);
  const ReplaySize whole = replaySize(coll, count, algo, topo, mo, so);
  if (whole.messages <= so.maxMessages && !so.forceReduced && !so.forceSymmetric) return full(nodes, count);
  if (!so.forceReduced) {
    NodeSymmetry symmetry = NodeSymmetry::kShift;
    bool exact = true;
    const std::string refused = symmetricRefusal(coll, count, algo, topo, mo, so, &symmetry, &exact);
    if (refused.empty()) {
      *reduced = format("symmetric replay: node 0's %d rank%s, every node's plan node 0's moved by %s%s", mo.perNode,
                        mo.perNode == 1 ? "" : "s", symmetryName(symmetry),
                        exact ? "" : " (phase for phase; cut into flows otherwise)");
      return inChild([&] { return simulateCalls({{coll, count}}, algo, topo, mo, so, true, symmetry); }, true);
    }
    if (so.forceSymmetric) {
      CellResult r;
      std::snprintf(r.skipped, sizeof r.skipped, "no symmetric replay: %s", refused.c_str());
      return r;
    }
  }
  // The count on m nodes: as given (scale 0), scaled with the nodes (1) or against them (-1).
  auto countAt = [&](int m, int scale) {
    if (scale > 0) return std::max<size_t>(1, count * size_t(m) / size_t(nodes));
    return scale < 0 ? count * size_t(nodes) / size_t(m) : count;
  };
  // One scaling for all three, the one that keeps the bytes per phase on the largest.
  auto chooseScale = [&](int m) {
    int best = 0;
    double bestMiss = -1;
    for (int scale : {0, 1, -1}) {
      double miss = std::fabs(std::log(sizeOn(m, countAt(m, scale)).bytesPerPhase / whole.bytesPerPhase));
      if (bestMiss < 0 || miss < bestMiss - 1e-9) best = scale, bestMiss = miss;
    }
    return best;
  };
  // The three clusters: the largest that fit.
  int m[3] = {};
  size_t c[3] = {};
  bool found = false;
  for (int k = 1; !found && (nodes >> (k + 2)) >= 2 && nodes % (1 << (k + 2)) == 0; ++k) {
    m[0] = nodes >> (k + 2), m[1] = nodes >> (k + 1), m[2] = nodes >> k;
    const int scale = chooseScale(m[2]);
    found = true;
    for (int i = 0; i < 3 && found; ++i) {
      so.platform.nodes = m[i];
      c[i] = countAt(m[i], scale);
      found = checkPlatform(so.platform).empty() && (so.forceReduced || sizeOn(m[i], c[i]).messages <= so.maxMessages);
    }
  }
  if (!found) {
    CellResult r;
    std::snprintf(r.skipped, sizeof r.skipped,
                  "about %llu messages, above --max-messages %llu, and no smaller cluster to extrapolate from",
                  static_cast<unsigned long long>(whole.messages), static_cast<unsigned long long>(so.maxMessages));
    return r;
  }
  const ReplaySize s0 = sizeOn(m[0], c[0]), s1 = sizeOn(m[1], c[1]), s2 = sizeOn(m[2], c[2]);
  CellResult r[3];
  for (int i = 0; i < 3; ++i) {
    r[i] = full(m[i], c[i]);
    if (r[i].skipped[0]) return r[i];
  }
  // The line through (x1, y1) and (x2, y2) at x.
  auto line = [](double x1, double y1, double x2, double y2, double x) { return y2 + (y2 - y1) / (x2 - x1) * (x - x2); };
  // With the bytes per phase kept, the time grows with the number of phases:
  // the line through the two largest replays in rank 0's phase count,
  // evaluated at the full cluster's, never below the largest replay. A
  // ring's phases grow with the nodes, a log-step algorithm's with their
  // logarithm, a radix exchange's with neither (its radix changes with the
  // node count: 523, 526, 521 and 534 phases on 4096, 32, 64 and 128 nodes for
  // a 256 MiB all-gather; a straight line in the nodes through the last two
  // put it at 3.2x its full replay, this line within 2%). Where rank 0's
  // phases do not grow (a pipelined chain's or tree's depth does not show in
  // them), the line in the nodes (a chain's steps) or in their logarithm (a
  // tree's), whichever better predicts the smallest replay.
  Reduction smaller;
  smaller.messages = r[0].messages + r[1].messages + r[2].messages;
  smaller.wallS = r[0].wallS + r[1].wallS + r[2].wallS;
  if (s1.phases != s2.phases) {
    auto at = [&](size_t phases) { return line(double(s1.phases), r[1].us, double(s2.phases), r[2].us, double(phases)); };
    smaller.us = at(whole.phases);
    smaller.selfMiss = std::fabs(at(s0.phases) / r[0].us - 1);
    smaller.how = format("on %d, %d and %d nodes (in rank 0's phases: %zu, %zu; %zu in full", m[0], m[1], m[2],
                         s1.phases, s2.phases, whole.phases);
  } else {
    auto at = [&](double (*x)(double), double nodesAt) {
      return line(x(m[1]), r[1].us, x(m[2]), r[2].us, x(nodesAt));
    };
    double (*linear)(double) = [](double v) { return v; };
    double (*logarithmic)(double) = [](double v) { return std::log2(v); };
    const double missLog = std::fabs(at(logarithmic, m[0]) / r[0].us - 1);
    const double missLinear = std::fabs(at(linear, m[0]) / r[0].us - 1);
    const bool useLog = missLog < missLinear;
    smaller.us = at(useLog ? logarithmic : linear, nodes);
    smaller.selfMiss = std::min(missLog, missLinear);
    smaller.how = format("on %d, %d and %d nodes (%s in the nodes", m[0], m[1], m[2], useLog ? "logarithmic" : "linear");
  }
  smaller.us = std::max(r[2].us, smaller.us);
  auto kept = [&](const ReplaySize& z) { return std::fabs(z.bytesPerPhase / whole.bytesPerPhase - 1) <= 0.1; };
  if (!(kept(s1) && kept(s2)))
    smaller.how += format("; bytes per phase %.2fx and %.2fx the full cluster's", s1.bytesPerPhase / whole.bytesPerPhase,
                          s2.bytesPerPhase / whole.bytesPerPhase);
  smaller.how += ")";
  // The smaller clusters do not move what the full one moves per phase:
  // replaying the whole cluster in coarser fragments is the other way, taken
  // unless the smaller clusters' line predicts its own third replay better by
  // more than a point (the coarse replays run the full cluster's steps and
  // partners; the smaller clusters' can all agree on a line that the full
  // cluster is not on: a radix exchange of one step on 16-64 nodes and two
  // on 128, where the model takes another radix, 0.88x its full replay).
  Reduction pick = smaller;
  if (!(kept(s1) && kept(s2))) {
    Reduction coarse = coarserFragments(coll, count, algo, topo, mo, so, whole.phases);
    if (coarse.us > 0 && coarse.selfMiss < smaller.selfMiss + 0.01) {
      coarse.messages += smaller.messages;
      coarse.wallS += smaller.wallS;
      pick = coarse;
    }
  }
  CellResult out = r[2];
  out.us = pick.us;
  out.messages = pick.messages;
  out.wallS = pick.wallS;
  *reduced = format("extrapolated from full replays %s", pick.how.c_str());
  return out;
}

std::string platformSummary(const PlatformSpec& p) {
  if (p.kind == "switch") return "one switch";
  if (p.kind != "fat-tree") return "platform file " + p.kind;
  if (p.nodes <= p.leafNodes) return "fat-tree (one leaf switch)";
  return format("two-level fat-tree (%d nodes per leaf switch, %s)", p.leafNodes,
                p.taper > 1 ? format("uplinks tapered %.3g:1", p.taper).c_str() : "full bisection");
}

// The symmetry every call of a step shares, where its replay is above
// --max-messages (or --symmetric asks) and a symmetric replay stands for each
// call (symmetricRefusal); *how says which, or why not ("" and false: a full
// replay).
bool stepSymmetry(const std::vector<Call>& calls, const std::vector<std::string>& algos, const Topology& topo,
                  const ModelOptions& mo, const SimOptions& so, NodeSymmetry* symmetry, std::string* how) {
  uint64_t messages = 0;
  for (size_t i = 0; i < calls.size(); ++i)
    messages += replaySize(calls[i].coll, calls[i].count, algos[i], topo, mo, so).messages;
  if (messages <= so.maxMessages && !so.forceSymmetric) return false;
  for (size_t i = 0; i < calls.size(); ++i) {
    NodeSymmetry s = NodeSymmetry::kShift;
    bool exact = true;
    const std::string refused = symmetricRefusal(calls[i].coll, calls[i].count, algos[i], topo, mo, so, &s, &exact);
    if (!refused.empty() || (i > 0 && s != *symmetry)) {
      *how = refused.empty() ? "the calls' plans are symmetric under different moves" : refused;
      return false;
    }
    *symmetry = s;
  }
  *how = format("symmetric replay: node 0's %d ranks, every call's plan on every node node 0's moved by %s",
                mo.perNode, symmetryName(*symmetry));
  return true;
}

// --fsdp-step: the layers' all-gathers and reduce-scatters replayed as one
// step (a call starts on a rank as soon as its last one ended there) beside
// the same calls replayed alone and the model's predictions, summed. Above
// --max-messages, node 0's ranks alone where every call's plans are
// symmetric (stepSymmetry).
int fsdpStep(const ModelOptions& mo, SimOptions so) {
  const size_t elem = dtypeSize(so.dtype);
  if (mo.json) std::printf("[\n");
  bool first = true;
  for (int nodes : mo.nodes) {
    Topology topo = makeCluster(nodes, mo.perNode, mo);
    so.platform.nodes = nodes;
    const int n = topo.nranks();
    std::vector<Call> calls;
    std::vector<std::string> picks;
    double modelUs = 0, aloneUs = 0, bytes = 0;
    std::string algos;
    for (size_t want = mo.minBytes; want <= mo.maxBytes; want *= mo.factor) {
      const size_t count = want / elem / size_t(n);
      if (count == 0) continue;
      for (Coll c : {Coll::kAllGather, Coll::kReduceScatter}) {
        const size_t b = collectiveBytes(c, count, elem, n);
        std::vector<Prediction> preds = predictAll(c, b, topo, mo.chunk);
        const Prediction& pick = preds[pickFastest(preds, topo.nnodes() > 1)];
        calls.push_back({c, count});
        picks.push_back(pick.algorithm);
        modelUs += pick.us;
        bytes += double(b);
        algos += (algos.empty() ? "" : ",") + pick.algorithm;
      }
    }
    if (calls.empty()) continue;
    NodeSymmetry symmetry = NodeSymmetry::kShift;
    std::string how;
    const bool symmetric = stepSymmetry(calls, picks, topo, mo, so, &symmetry, &how);
    if (so.forceSymmetric && !symmetric) {
      std::fprintf(stderr, "strata-sim: no symmetric replay of the step: %s\n", how.c_str());
      return 1;
    }
    for (size_t i = 0; i < calls.size(); ++i) {
      CellResult alone = inChild(
          [&] { return simulateCalls({calls[i]}, picks[i], topo, mo, so, symmetric, symmetry); }, true);
      if (alone.skipped[0]) {
        std::fprintf(stderr, "strata-sim: %s\n", alone.skipped);
        return 1;
      }
      aloneUs += alone.us;
    }
    CellResult step = inChild([&] { return simulateCalls(calls, "", topo, mo, so, symmetric, symmetry); }, true);
    if (step.skipped[0]) {
      std::fprintf(stderr, "strata-sim: %s\n", step.skipped);
      return 1;
    }
    if (mo.json) {
      std::printf("%s  {\"nodes\": %d, \"per_node\": %d, \"layers\": %zu, \"bytes\": %.0f, \"step_us\": %.3f, "
                  "\"alone_us\": %.3f, \"model_us\": %.3f, \"algorithms\": \"%s\", \"reduced\": \"%s\"}",
                  first ? "" : ",\n", nodes, mo.perNode, calls.size() / 2, bytes, step.us, aloneUs, modelUs,
                  algos.c_str(), symmetric ? how.c_str() : "");
      first = false;
    } else {
      std::printf("# one FSDP step on %d nodes x %d ranks, %s: %zu layers of %zu B to %zu B, an all-gather and a "
                  "reduce-scatter each\n# step %.1f us (simulated), the calls alone %.1f us (simulated, summed), "
                  "model %.1f us (summed); algorithms %s%s\n",
                  nodes, mo.perNode, platformSummary(so.platform).c_str(), calls.size() / 2, mo.minBytes, mo.maxBytes,
                  step.us, aloneUs, modelUs, algos.c_str(), symmetric ? ("\n# " + how).c_str() : "");
    }
  }
  if (mo.json) std::printf("\n]\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ModelOptions mo;
  mo.nodes = {8};
  SimOptions so;
  auto die = [](const std::string& sentence) {
    std::fprintf(stderr, "strata-sim: %s\n%s", sentence.c_str(), kUsage);
    std::exit(2);
  };
  parseModelOptions(argc, argv, "strata-sim", kUsage, mo, [&](const std::string& f, const auto& value) {
    if (f == "--algo") so.algo = value();
    else if (f == "--platform") so.platform.kind = value();
    else if (f == "--leaf-nodes") so.platform.leafNodes = std::atoi(value());
    else if (f == "--taper") so.platform.taper = std::atof(value());
    else if (f == "-d") {
      const char* v = value();
      bool known = false;
      for (int t = 0; t < strataNumTypes && !known; ++t)
        if (std::strcmp(v, dtypeName(strataDataType_t(t))) == 0) so.dtype = strataDataType_t(t), known = true;
      if (!known) die(format("-d '%s' is not a type (int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, "
                             "float32, float64)", v));
    } else if (f == "--reduce") {
      so.forceReduced = true;
    } else if (f == "--symmetric") {
      so.forceSymmetric = true;
    } else if (f == "--fsdp-step") {
      so.fsdpStep = true;
    } else if (f == "--max-messages") so.maxMessages = uint64_t(std::atof(value()));
    else if (f == "--slow-node") {
      std::vector<std::string> v = splitComma(value());
      so.platform.slowNode = std::atoi(v[0].c_str());
      if (v.size() > 1) so.platform.slowFactor = std::atof(v[1].c_str());
      if (!(so.platform.slowFactor > 0 && so.platform.slowFactor <= 1))
        die("--slow-node's factor is the slow NIC's share of its speed, above 0 and at most 1");
    } else if (f == "--late-rank") {
      std::vector<std::string> v = splitComma(value());
      so.lateRank = std::atoi(v[0].c_str());
      if (v.size() > 1) so.lateUs = std::atof(v[1].c_str());
    } else {
      return false;
    }
    return true;
  });
  Coll coll = Coll::kAllReduce;
  collFromName(mo.coll, &coll);
  const std::vector<std::string> names = algorithmNames(coll);
  if (so.algo != "auto" && so.algo != "all" && std::find(names.begin(), names.end(), so.algo) == names.end()) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    die(format("unknown algorithm '%s' for %s (auto, all, %s)", so.algo.c_str(), mo.coll.c_str(), list.c_str()));
  }
  if (!mo.topoFile.empty()) die("--topo is strata-model's; strata-sim builds its cluster from --nodes and --per-node");
  const size_t elem = dtypeSize(so.dtype);
  so.platform.perNode = mo.perNode;
  so.platform.intra = mo.intra;
  so.platform.inter = mo.inter;
  for (int nodes : mo.nodes) {  // every cluster checked before the first row
    so.platform.nodes = nodes;
    std::string bad = checkPlatform(so.platform);
    if (bad.empty() && so.platform.kind != "fat-tree" && so.platform.kind != "switch") bad = tryPlatform(so.platform);
    if (!bad.empty()) die(bad);
  }
  if (so.fsdpStep) return fsdpStep(mo, so);
  bool firstJson = true;
  if (mo.json) std::printf("[\n");
  for (int nodes : mo.nodes) {
    Topology topo = makeCluster(nodes, mo.perNode, mo);
    so.platform.nodes = nodes;
    const int n = topo.nranks();
    if (!mo.json)
      std::printf("# %s on %d nodes x %d ranks, %s; intra %.2f us %.1f GB/s, inter %.2f us %.3f GB/s per node%s%s\n"
                  "# simulated with SimGrid %d.%d (flow-level, max-min sharing) beside the cost model's prediction; "
                  "* = the selector's choice\n"
                  "#%13s %12s %-7s %-20s %12s %10s %10s %12s %9s %9s\n",
                  mo.coll.c_str(), nodes, mo.perNode, platformSummary(so.platform).c_str(), mo.intra.alphaUs,
                  mo.intra.gbps, mo.inter.alphaUs, mo.inter.gbps,
                  so.platform.slowNode >= 0 ? format("; node %d's NIC at %.2gx", so.platform.slowNode,
                                                     so.platform.slowFactor).c_str() : "",
                  so.lateRank >= 0 ? format("; rank %d starts %.0f us late", so.lateRank, so.lateUs).c_str() : "",
                  SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR, "size (B)", "count", "type", "algorithm",
                  "sim (us)", "algbw", "busbw", "model (us)", "sim/model", "wall (s)");
    for (size_t want = mo.minBytes; want <= mo.maxBytes; want *= mo.factor) {
      const bool blocks = coll == Coll::kReduceScatter || coll == Coll::kAllGather || coll == Coll::kAllToAll;
      const size_t count = want / elem / (blocks ? size_t(n) : 1);
      if (count == 0) continue;
      const size_t bytes = collectiveBytes(coll, count, elem, n);
      std::vector<Prediction> preds = predictAll(coll, bytes, topo, mo.chunk);
      if (preds.empty()) continue;
      const Prediction& chosen = preds[pickFastest(preds, topo.nnodes() > 1)];
      std::vector<Prediction> todo;
      for (const Prediction& p : preds)
        if (so.algo == "all" || p.algorithm == (so.algo == "auto" ? chosen.algorithm : so.algo)) todo.push_back(p);
      if (todo.empty())
        die(format("%s does not apply to %s on %d nodes x %d ranks", so.algo.c_str(), mo.coll.c_str(), nodes,
                   mo.perNode));
      for (const Prediction& p : todo) {
        std::string reduced;
        CellResult r = simulate(coll, count, p.algorithm, nodes, mo, so, &reduced);
        const bool isChoice = p.algorithm == chosen.algorithm;
        const double algbw = r.us > 0 ? double(bytes) / (r.us * 1e3) : 0;
        const double bus = busBandwidth(coll, bytes, n, r.us);
        if (mo.json) {
          std::printf("%s  {\"coll\": \"%s\", \"nodes\": %d, \"per_node\": %d, \"platform\": \"%s\", \"bytes\": %zu, "
                      "\"count\": %zu, \"algorithm\": \"%s\", \"chosen\": %s, \"sim_us\": %.3f, \"model_us\": %.3f, "
                      "\"busbw\": %.4f, \"messages\": %llu, \"wall_s\": %.3f, \"skipped\": \"%s\", \"reduced\": \"%s\", "
                      "\"offered\": %s}",
                      firstJson ? "" : ",\n", mo.coll.c_str(), nodes, mo.perNode, so.platform.kind.c_str(), bytes,
                      count, p.algorithm.c_str(), isChoice ? "true" : "false", r.us, p.us, bus,
                      static_cast<unsigned long long>(r.messages), r.wallS, r.skipped, reduced.c_str(),
                      p.automatic ? "true" : "false");
          firstJson = false;
        } else if (r.skipped[0]) {
          std::printf("%14zu %12zu %-7s %-20s %12s %10s %10s %12.1f   (%s)\n", bytes, count, dtypeName(so.dtype), 
                      (p.algorithm + (isChoice ? "*" : "")).c_str(), "-", "-", "-", p.us, r.skipped);
        } else {
          std::printf("%14zu %12zu %-7s %-20s %12.1f %10.3f %10.3f %12.1f %9.3f %9.2f%s\n", bytes, count,
                      dtypeName(so.dtype), (p.algorithm + (isChoice ? "*" : "")).c_str(), r.us, algbw, bus, p.us,
                      r.us / p.us, r.wallS, reduced.empty() ? "" : ("   (" + reduced + ")").c_str());
        }
        std::fflush(stdout);
      }
    }
  }
  if (mo.json) std::printf("\n]\n");
  return 0;
}
