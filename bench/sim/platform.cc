#include "platform.h"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <unordered_map>

#include "core/error.h"

namespace sg4 = simgrid::s4u;

namespace strata::sim {

namespace {

constexpr double kRankSpeed = 1e9;  // flops per second: replay charges 1 flop per nanosecond of work

// Latencies taken out of the links (see takeLatenciesOut), per link.
std::unordered_map<const sg4::Link*, double>& savedLatency() {
  static std::unordered_map<const sg4::Link*, double> m;
  return m;
}

using NetPoint = simgrid::kernel::routing::NetPoint;

// A node's links: each rank's own into the node, and its NIC (one rail) or
// its rails.
struct NodeLinks {
  std::vector<sg4::Link*> own, nics;
};

struct Builder {
  const PlatformSpec& spec;
  std::vector<sg4::Host*> hosts;
  NodeLinks node0;  // what the symmetric platform's mirror routes through again

  // Node m: its ranks on a star, its NIC on the route out of the gateway;
  // with several rails, a zone of explicit routes instead (wire).
  std::pair<NetPoint*, NetPoint*> node(sg4::NetZone* parent, int m) {
    const std::string name = "node" + std::to_string(m);
    sg4::NetZone* zone = nodeZone(parent, name);
    std::vector<sg4::Host*> ranks;
    NodeLinks links;
    for (int i = 0; i < spec.perNode; ++i) {
      ranks.push_back(rankHost(zone, m, i));
      links.own.push_back(rankLink(zone, m, i));
    }
    const int rails = spec.inter.rails;
    for (int k = 0; k < rails; ++k)
      links.nics.push_back(nicLink(zone, m, rails > 1 ? "-rail" + std::to_string(k) : "-nic", rails));
    if (m == 0) node0 = links;
    return wire(zone, name, ranks, links);
  }

  // The symmetric platform's stand-in for every other node: a host per local
  // index whose routes cross node 0's own links and NIC (or rails) again, in
  // the direction traffic enters node 0 by. A message from node 0's rank i to
  // the mirror's host j leaves through i's link and the NIC and comes back
  // in through the NIC and j's link: node 0's links carry both directions of
  // the exchange, as every node's do in the full cluster.
  std::pair<NetPoint*, NetPoint*> mirror(sg4::NetZone* parent, std::vector<sg4::Host*>* far) {
    sg4::NetZone* zone = nodeZone(parent, "mirror");
    for (int i = 0; i < spec.perNode; ++i) far->push_back(zone->create_host("far" + std::to_string(i), kRankSpeed));
    return wire(zone, "mirror", *far, node0);
  }

  sg4::NetZone* nodeZone(sg4::NetZone* parent, const std::string& name) {
    sg4::NetZone* zone = spec.inter.rails > 1 ? sg4::create_full_zone(name) : sg4::create_star_zone(name);
    zone->set_parent(parent);
    return zone;
  }

  // A node's routes. One rail: a star (each rank's link to the node's switch,
  // the NIC between it and the gateway). Several: local rank i leaves and
  // enters the node through rail i % rails only (a rank's connections go
  // through its own NIC), so one transfer gets one rail's bandwidth; routes
  // are listed pair by pair, over the links of the star.
  std::pair<NetPoint*, NetPoint*> wire(sg4::NetZone* zone, const std::string& name,
                                       const std::vector<sg4::Host*>& ranks, const NodeLinks& links) {
    using D = sg4::LinkInRoute::Direction;
    auto* gw = zone->create_router(name + "-gw");
    const size_t rails = links.nics.size();
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (rails == 1) {
        zone->add_route(ranks[i]->get_netpoint(), nullptr, nullptr, nullptr, {{links.own[i], D::UP}}, true);
        continue;
      }
      for (size_t j = i + 1; j < ranks.size(); ++j)
        zone->add_route(ranks[i]->get_netpoint(), ranks[j]->get_netpoint(), nullptr, nullptr,
                        {{links.own[i], D::UP}, {links.own[j], D::DOWN}}, true);
      zone->add_route(ranks[i]->get_netpoint(), gw, nullptr, nullptr,
                      {{links.own[i], D::UP}, {links.nics[i % rails], D::DOWN}}, true);
    }
    if (rails == 1) zone->add_route(gw, nullptr, nullptr, nullptr, {{links.nics[0], D::UP}}, true);
    zone->seal();
    return {zone->get_netpoint(), gw};
  }

  sg4::Host* rankHost(sg4::NetZone* zone, int m, int i) {
    const int rank = m * spec.perNode + i;
    sg4::Host* h = zone->create_host("rank" + std::to_string(rank), kRankSpeed);
    hosts[size_t(rank)] = h;
    return h;
  }

  // A rank's own link into its node (shared memory or NVLink class).
  sg4::Link* rankLink(sg4::NetZone* zone, int m, int i) {
    auto* link = zone->create_split_duplex_link("node" + std::to_string(m) + "-r" + std::to_string(i),
                                                spec.intra.gbps * 1e9);
    link->set_latency(spec.intra.alphaUs * 1e-6 / 2)->seal();
    return link;
  }

  // One of `rails` equal parts of node m's network (the NIC when rails is 1).
  sg4::Link* nicLink(sg4::NetZone* zone, int m, const std::string& suffix, int rails) {
    const double speed = spec.inter.gbps * 1e9 / rails * (m == spec.slowNode ? spec.slowFactor : 1.0);
    auto* link = zone->create_split_duplex_link("node" + std::to_string(m) + suffix, speed);
    link->set_latency(std::max(0.0, spec.inter.alphaUs - spec.intra.alphaUs) * 1e-6 / 2)->seal();
    return link;
  }

  void oneSwitch() {
    sg4::NetZone* top = sg4::create_star_zone("switch");
    for (int m = 0; m < spec.nodes; ++m) plug(top, "port" + std::to_string(m), node(top, m));
    top->seal();
  }

  // Node 0 and its mirror on one switch (buildSymmetricPlatform).
  void symmetric(std::vector<sg4::Host*>* far) {
    sg4::NetZone* top = sg4::create_star_zone("switch");
    plug(top, "port0", node(top, 0));
    plug(top, "port-mirror", mirror(top, far));
    top->seal();
  }

  // A node's zone on the switch: a crossbar, a port as fast as the NIC, nothing shared.
  void plug(sg4::NetZone* top, const std::string& name, std::pair<NetPoint*, NetPoint*> zoneAndGateway) {
    auto* port = top->create_split_duplex_link(name, spec.inter.gbps * 1e9 * 16);
    port->seal();
    top->add_route(zoneAndGateway.first, nullptr, zoneAndGateway.second, nullptr,
                   {{port, sg4::LinkInRoute::Direction::UP}}, true);
  }

  void fatTree() {
    const unsigned leaf = unsigned(std::min(spec.nodes, spec.leafNodes));
    const unsigned leaves = unsigned(spec.nodes) / leaf;
    std::vector<unsigned> down, up, count;
    unsigned levels = 1;
    if (leaves == 1) {
      down = {leaf}, up = {1}, count = {1};
    } else {
      levels = 2;
      const unsigned spines = std::max(1u, unsigned(double(leaf) / spec.taper));
      down = {leaf, leaves}, up = {1, spines}, count = {1, 1};
    }
    auto cb = [this](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
      return node(zone, int(id));
    };
    sg4::create_fatTree_zone("fabric", nullptr, sg4::FatTreeParams(levels, down, up, count),
                             sg4::ClusterCallbacks(cb), spec.inter.gbps * 1e9, 0,
                             sg4::Link::SharingPolicy::SPLITDUPLEX)
        ->seal();
  }

  void file() {
    sg4::Engine::get_instance()->load_platform(spec.kind);
    std::vector<sg4::Host*> all = sg4::Engine::get_instance()->get_all_hosts();
    std::sort(all.begin(), all.end(), [](sg4::Host* a, sg4::Host* b) { return a->get_name() < b->get_name(); });
    if (all.size() < hosts.size())
      throw std::runtime_error(format("platform file %s has %zu hosts, fewer than the %zu ranks of %d nodes x %d",
                                      spec.kind.c_str(), all.size(), hosts.size(), spec.nodes, spec.perNode));
    std::copy(all.begin(), all.begin() + long(hosts.size()), hosts.begin());
  }
};

}  // namespace

std::string checkPlatform(const PlatformSpec& s) {
  if (s.nodes < 1 || s.perNode < 1) return "the cluster needs at least one node of at least one rank";
  if (s.kind == "switch") return "";
  if (s.kind == "fat-tree") {
    if (s.leafNodes < 1) return "--leaf-nodes must be at least 1";
    if (!(s.taper >= 1)) return format("--taper %.2f: a fat-tree's taper is 1 (full bisection) or more", s.taper);
    if (s.nodes > s.leafNodes && s.nodes % s.leafNodes != 0)
      return format("a fat-tree of %d-node leaf switches cannot hold %d nodes (use a multiple of %d, --leaf-nodes, "
                    "or --platform switch)", s.leafNodes, s.nodes, s.leafNodes);
    return "";
  }
  std::ifstream f(s.kind);
  if (!f) return format("--platform '%s' is neither fat-tree, switch nor a readable platform file", s.kind.c_str());
  return "";
}

std::vector<sg4::Host*> buildPlatform(const PlatformSpec& spec) {
  Builder b{spec, std::vector<sg4::Host*>(size_t(spec.nodes) * size_t(spec.perNode), nullptr), {}};
  if (spec.kind == "switch") b.oneSwitch();
  else if (spec.kind == "fat-tree") b.fatTree();
  else b.file();
  return b.hosts;
}

SymmetricHosts buildSymmetricPlatform(const PlatformSpec& spec) {
  Builder b{spec, std::vector<sg4::Host*>(size_t(spec.perNode), nullptr), {}};
  SymmetricHosts out;
  b.symmetric(&out.far);
  out.ranks = b.hosts;
  return out;
}

RouteLatency takeLatenciesOut(const std::vector<sg4::Host*>& hosts) {
  for (sg4::Link* l : sg4::Engine::get_instance()->get_all_links()) {
    savedLatency()[l] = l->get_latency();
    l->set_latency(0);
  }
  return RouteLatency{hosts};
}

double RouteLatency::operator()(int from, int to) const {
  std::vector<sg4::Link*> links;
  double ignored = 0;
  hosts[size_t(from)]->route_to(hosts[size_t(to)], links, &ignored);
  double s = 0;
  for (const sg4::Link* l : links) {
    auto it = savedLatency().find(l);
    if (it != savedLatency().end()) s += it->second;
  }
  return s;
}

}  // namespace strata::sim
