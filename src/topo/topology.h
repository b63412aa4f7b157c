// What strata knows about where ranks run, for choosing and building
// topology-aware algorithms:
//  - placement: which node (host) each rank is on and its index there
//    (local rank), and the NUMA node of its CPU;
//  - this rank's host hardware (NUMA nodes, cores, GPUs with NVLink / peer
//    access, NICs with speed and NUMA affinity), for logs and the JSON dump;
//  - the link model: latency (alpha) and bandwidth per link class, the
//    parameters of the cost model (src/algo/cost_model.h).
// Detected at communicator init (detect.cc), or loaded from STRATA_TOPO_FILE;
// written with STRATA_TOPO_DUMP_FILE (topo_json.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata {

// One link class of the cost model. A message of b bytes costs
// alphaUs + b / (gbps * 1e3) microseconds on an unshared link; when k
// messages leave a node at once, they share its bandwidth and each waits
// (k - 1) * gapUs more (the node's per-message cost, LogP's "gap": NIC
// message rate, or CPU when ranks outnumber cores).
struct LinkParams {
  double alphaUs = 1.0;
  double gbps = 1.0;       // GB/s (1e9 bytes per second)
  std::string source;      // where the numbers came from: default | configured | measured | file
  double gapUs = 0;
  // Links of a node that carry its network traffic side by side (NIC rails,
  // between nodes only): one transfer runs on one rail at gbps / rails, and
  // `rails` transfers or more leaving a node share all of gbps.
  int rails = 1;
  // Share (0..1) of the latency between a node's transfers that its link
  // hides behind their bytes (between nodes only). A NIC hides none: a step
  // that waits for its partner leaves the link idle. A link shaped by a token
  // bucket with a deep burst (tbf, as in the namespace clusters) refunds that
  // idle time, so a run of steps costs the longer of its latencies and its
  // bytes rather than their sum. Measured at init (link_probe.cc).
  double latencyHidden = 0;
  // gapUs is known rather than assumed: measured (the link probe can fit it
  // only where a node has two ranks or more), configured, or from a topology
  // file. The built-in defaults and a probe with one rank per node leave it
  // 0 and unknown; algorithms whose steps send several messages at once
  // (hier_radix) are then not offered (algo/select.cc).
  bool gapKnown = false;
  double us(double bytes) const { return alphaUs + bytes / (gbps * 1e3); }
};

struct Nic {
  std::string name;
  double gbps = 0;  // link speed in GB/s as sysfs reports it (0: unknown)
  int numa = -1;
};

struct Gpu {
  int index = 0;
  std::string busId;
  int numa = -1;
};

struct HostHardware {
  std::string hostname;
  int numaNodes = 1;
  int cores = 1;
  std::vector<Nic> nics;
  std::vector<Gpu> gpus;
  std::vector<std::pair<int, int>> nvlinkPairs;      // GPU index pairs joined by NVLink
  std::vector<std::pair<int, int>> peerAccessPairs;  // pairs with CUDA peer access
  std::string gpuSource;                             // nvml | none
};

// Where one rank may run, as ranks tell each other at init: the machine (its
// kernel's boot id, the same in every network namespace and container on
// it), the set of CPUs its affinity allows (a hash) and how many.
struct RankCpus {
  uint32_t kernel = 0;
  uint32_t cpuSet = 0;
  int cpus = 0;
};
// Whether some machine runs more ranks than it has CPUs for them. Ranks with
// the same CPU set share it; different sets are taken as disjoint (ranks
// bound one per core), so only a count that cannot fit is reported. Ranks
// with an unknown machine (kernel 0) or CPU count (0) are not counted.
bool ranksOutnumberCpus(const std::vector<RankCpus>& ranks);

struct RankPlace {
  int node = 0;   // index into Topology::nodes
  int local = 0;  // index of the rank within its node
  int numa = -1;  // NUMA node of the rank's CPU (-1: unknown)
};

class Topology {
 public:
  Topology() = default;
  // Ranks grouped by node id (any integers; nodes numbered by first appearance).
  static Topology fromNodeIds(const std::vector<long long>& nodeIds);
  // n ranks on one node.
  static Topology singleNode(int n);

  int nranks() const { return int(places_.size()); }
  int nnodes() const { return int(nodes_.size()); }
  const RankPlace& place(int rank) const { return places_[size_t(rank)]; }
  int nodeOf(int rank) const { return places_[size_t(rank)].node; }
  // The ranks of node m, ascending; member i has local index i.
  const std::vector<int>& node(int m) const { return nodes_[size_t(m)]; }
  int maxLocal() const;
  // Every node has the same number of ranks.
  bool uniform() const;
  void setNuma(int rank, int numa) { places_[size_t(rank)].numa = numa; }

  LinkParams intra;   // between ranks on one node
  LinkParams inter;   // between nodes: the bandwidth of one node's network link
  // Local memory traffic (bytes read + written per second, GB/s) of one rank:
  // what a reduction that is not pipelined with the transfers costs (a
  // recursive-doubling step or a tree level reduces a whole message, reading
  // two inputs and writing one). Single-core class by default.
  double memoryGbps = 20.0;
  HostHardware host;  // the host of the rank that detected it
  // Some machine runs more ranks than it has CPUs (ranksOutnumberCpus; the
  // namespace clusters: 8 ranks on 2 cores): a message a rank adds to a step
  // then costs its CPU time another rank needed, which no link parameter
  // prices, so algorithms that send several messages a step are not offered.
  bool coresShared = false;
  // Bytes a link between two ranks buffers each way before its receiver must
  // take them (Comm::linkCapacity: the smallest over the transports), set at
  // init; 0 where not known (a topology built by hand). A ring phase sends its
  // whole slice before receiving, so no slice may exceed half of it; known,
  // the rings inside a node may use slices longer than the pipeline chunk
  // (nodeRingSliceBytes, algo/ring_blocks.h).
  size_t linkBufferBytes = 0;

  // A one-screen summary for INFO logs.
  std::string summary() const;

 private:
  std::vector<RankPlace> places_;
  std::vector<std::vector<int>> nodes_;
};

}  // namespace strata
