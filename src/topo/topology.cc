#include "topo/topology.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace strata {

Topology Topology::fromNodeIds(const std::vector<long long>& nodeIds) {
  Topology t;
  std::map<long long, int> index;
  t.places_.resize(nodeIds.size());
  for (size_t r = 0; r < nodeIds.size(); ++r) {
    auto it = index.find(nodeIds[r]);
    if (it == index.end()) {
      it = index.emplace(nodeIds[r], int(t.nodes_.size())).first;
      t.nodes_.emplace_back();
    }
    RankPlace& p = t.places_[r];
    p.node = it->second;
    p.local = int(t.nodes_[size_t(p.node)].size());
    t.nodes_[size_t(p.node)].push_back(int(r));
  }
  return t;
}

bool ranksOutnumberCpus(const std::vector<RankCpus>& ranks) {
  struct Machine {
    int ranks = 0;
    std::map<uint32_t, int> cpuSets;  // hash -> CPUs in it
  };
  std::map<uint32_t, Machine> machines;
  for (const RankCpus& r : ranks) {
    if (r.kernel == 0 || r.cpus <= 0) continue;
    Machine& m = machines[r.kernel];
    m.ranks++;
    m.cpuSets[r.cpuSet] = r.cpus;
  }
  for (const auto& [kernel, m] : machines) {
    int cpus = 0;
    for (const auto& [set, count] : m.cpuSets) cpus += count;
    if (m.ranks > cpus) return true;
  }
  return false;
}

Topology Topology::singleNode(int n) {
  return fromNodeIds(std::vector<long long>(size_t(n), 0));
}

int Topology::maxLocal() const {
  size_t m = 0;
  for (const auto& n : nodes_) m = std::max(m, n.size());
  return int(m);
}

bool Topology::uniform() const {
  for (const auto& n : nodes_)
    if (n.size() != nodes_[0].size()) return false;
  return true;
}

std::string Topology::summary() const {
  std::string s = format("topology: %d ranks on %d node%s (", nranks(), nnodes(), nnodes() == 1 ? "" : "s");
  const size_t shown = std::min<size_t>(nodes_.size(), 8);
  for (size_t m = 0; m < shown; ++m) {
    s += format("%s%zu", m ? " + " : "", nodes_[m].size());
  }
  if (shown < nodes_.size()) s += format(" + ... (%zu more)", nodes_.size() - shown);
  s += " ranks per node)\n";
  s += format("  links: intra-node alpha %.2f us, %.2f GB/s (%s); inter-node alpha %.2f us, %.3f GB/s "
              "per node%s, gap %.2f us, latency hidden %.2f (%s%s)\n",
              intra.alphaUs, intra.gbps, intra.source.c_str(), inter.alphaUs, inter.gbps,
              inter.rails > 1 ? format(" in %d rails", inter.rails).c_str() : "", inter.gapUs, inter.latencyHidden,
              inter.source.c_str(), inter.gapKnown ? "" : "; gap not measured");
  if (coresShared) s += "  ranks outnumber the CPUs of their machine: hier_radix not offered, waits yield the core at once\n";
  s += format("  this host %s: %d cores, %d NUMA node%s, %zu GPU%s (%s)", host.hostname.c_str(), host.cores,
              host.numaNodes, host.numaNodes == 1 ? "" : "s", host.gpus.size(),
              host.gpus.size() == 1 ? "" : "s", host.gpuSource.c_str());
  if (!host.nvlinkPairs.empty()) s += format(", %zu NVLink pairs", host.nvlinkPairs.size());
  for (const Nic& n : host.nics)
    s += format("\n  nic %s: %s, NUMA %d", n.name.c_str(),
                n.gbps > 0 ? format("%.2f GB/s", n.gbps).c_str() : "speed unknown", n.numa);
  return s;
}

}  // namespace strata
