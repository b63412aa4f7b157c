#include "topo/topo_json.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

namespace strata {

using nlohmann::json;

namespace {

json linkJson(const LinkParams& l) {
  return json{{"alpha_us", l.alphaUs}, {"gbps", l.gbps}, {"gap_us", l.gapUs}, {"rails", l.rails},
              {"latency_hidden", l.latencyHidden}, {"gap_known", l.gapKnown}, {"source", l.source}};
}

LinkParams linkFrom(const json& j, const std::string& origin, const char* name) {
  LinkParams l;
  if (!j.is_object() || !j.contains("alpha_us") || !j.contains("gbps") || !j["alpha_us"].is_number() ||
      !j["gbps"].is_number())
    fail(strataInvalidArgument, "%s: links.%s needs numbers \"alpha_us\" and \"gbps\"", origin.c_str(), name);
  l.alphaUs = j["alpha_us"].get<double>();
  l.gbps = j["gbps"].get<double>();
  if (!(l.alphaUs >= 0) || !(l.gbps > 0))
    fail(strataInvalidArgument, "%s: links.%s needs alpha_us >= 0 and gbps > 0 (got %g, %g)", origin.c_str(),
         name, l.alphaUs, l.gbps);
  if (j.contains("gap_us") && j["gap_us"].is_number()) l.gapUs = std::max(0.0, j["gap_us"].get<double>());
  // A gap the file states is known, unless the file says it was not measured
  // (a dump of a launch whose probe could not fit it).
  l.gapKnown = j.contains("gap_us") && j["gap_us"].is_number();
  if (j.contains("gap_known")) {
    if (!j["gap_known"].is_boolean())
      fail(strataInvalidArgument, "%s: links.%s.gap_known must be true or false", origin.c_str(), name);
    l.gapKnown = l.gapKnown && j["gap_known"].get<bool>();
  }
  if (j.contains("rails")) {
    if (!j["rails"].is_number_integer() || j["rails"].get<long long>() < 1)
      fail(strataInvalidArgument, "%s: links.%s.rails must be a whole number of at least 1", origin.c_str(), name);
    l.rails = int(j["rails"].get<long long>());
  }
  if (j.contains("latency_hidden")) {
    if (!j["latency_hidden"].is_number() || !(j["latency_hidden"].get<double>() >= 0) ||
        !(j["latency_hidden"].get<double>() <= 1))
      fail(strataInvalidArgument, "%s: links.%s.latency_hidden must be a number from 0 to 1", origin.c_str(), name);
    l.latencyHidden = j["latency_hidden"].get<double>();
  }
  l.source = "file";
  return l;
}

}  // namespace

std::string topologyToJson(const Topology& t) {
  json ranks = json::array();
  for (int r = 0; r < t.nranks(); ++r) {
    const RankPlace& p = t.place(r);
    ranks.push_back({{"rank", r}, {"node", p.node}, {"local", p.local}, {"numa", p.numa}});
  }
  const HostHardware& h = t.host;
  json gpus = json::array(), nics = json::array();
  for (const Gpu& g : h.gpus) gpus.push_back({{"index", g.index}, {"bus_id", g.busId}, {"numa", g.numa}});
  for (const Nic& n : h.nics) nics.push_back({{"name", n.name}, {"gbps", n.gbps}, {"numa", n.numa}});
  json doc = {
      {"version", 1},
      {"nranks", t.nranks()},
      {"nodes", t.nnodes()},
      {"ranks", ranks},
      {"links", {{"intra", linkJson(t.intra)}, {"inter", linkJson(t.inter)}, {"memory_gbps", t.memoryGbps}}},
      {"cores_shared", t.coresShared},
      {"host",
       {{"hostname", h.hostname},
        {"cores", h.cores},
        {"numa_nodes", h.numaNodes},
        {"gpu_source", h.gpuSource},
        {"gpus", gpus},
        {"nvlink_pairs", h.nvlinkPairs},
        {"peer_access_pairs", h.peerAccessPairs},
        {"nics", nics}}},
  };
  return doc.dump(2) + "\n";
}

void writeTopologyFile(const Topology& t, const std::string& path) {
  std::ofstream out(path);
  out << topologyToJson(t);
  if (!out) fail(strataSystemError, "cannot write the topology to '%s' (STRATA_TOPO_DUMP_FILE)", path.c_str());
}

Topology topologyFromJson(const std::string& text, int nranks, const std::string& origin) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    fail(strataInvalidArgument, "%s is not a JSON object", origin.c_str());
  if (!doc.contains("ranks") || !doc["ranks"].is_array())
    fail(strataInvalidArgument, "%s has no \"ranks\" array", origin.c_str());
  const json& ranks = doc["ranks"];
  if (int(ranks.size()) != nranks)
    fail(strataInvalidArgument, "%s describes %zu ranks but the communicator has %d", origin.c_str(),
         ranks.size(), nranks);
  std::vector<long long> nodeIds;
  std::vector<int> numa;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const json& e = ranks[r];
    if (!e.is_object() || !e.contains("node") || !e["node"].is_number_integer())
      fail(strataInvalidArgument, "%s: ranks[%zu] needs an integer \"node\"", origin.c_str(), r);
    nodeIds.push_back(e["node"].get<long long>());
    numa.push_back(e.contains("numa") && e["numa"].is_number_integer() ? e["numa"].get<int>() : -1);
  }
  Topology t = Topology::fromNodeIds(nodeIds);
  for (int r = 0; r < nranks; ++r) t.setNuma(r, numa[size_t(r)]);
  if (doc.contains("links")) {
    const json& links = doc["links"];
    if (links.contains("intra")) t.intra = linkFrom(links["intra"], origin, "intra");
    if (links.contains("inter")) t.inter = linkFrom(links["inter"], origin, "inter");
    if (links.contains("memory_gbps")) {
      const json& m = links["memory_gbps"];
      if (!m.is_number() || !(m.get<double>() > 0))
        fail(strataInvalidArgument, "%s: links.memory_gbps must be a positive number (GB/s)", origin.c_str());
      t.memoryGbps = m.get<double>();
    }
  }
  if (doc.contains("cores_shared")) {
    if (!doc["cores_shared"].is_boolean())
      fail(strataInvalidArgument, "%s: \"cores_shared\" must be true or false", origin.c_str());
    t.coresShared = doc["cores_shared"].get<bool>();
  }
  return t;
}

Topology readTopologyFile(const std::string& path, int nranks) {
  std::ifstream in(path);
  if (!in) fail(strataInvalidArgument, "cannot read the topology file '%s' (STRATA_TOPO_FILE)", path.c_str());
  std::stringstream ss;
  ss << in.rdbuf();
  return topologyFromJson(ss.str(), nranks, "topology file '" + path + "'");
}

}  // namespace strata
