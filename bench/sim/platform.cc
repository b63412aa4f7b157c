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

struct Builder {
  const PlatformSpec& spec;
  std::vector<sg4::Host*> hosts;

  // Node m: its ranks on a star, its NIC on the route out of the gateway;
  // with several rails, a zone of explicit routes instead (railedNode).
  std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> node(sg4::NetZone* parent,
                                                                                          int m) {
    if (spec.inter.rails > 1) return railedNode(parent, m);
    const std::string name = "node" + std::to_string(m);
    sg4::NetZone* zone = sg4::create_star_zone(name);
    zone->set_parent(parent);
    for (int i = 0; i < spec.perNode; ++i) {
      sg4::Host* h = rankHost(zone, m, i);
      zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr,
                      {{rankLink(zone, m, i), sg4::LinkInRoute::Direction::UP}}, true);
    }
    auto* gw = zone->create_router(name + "-gw");
    auto* link = nicLink(zone, m, "-nic", 1);
    zone->add_route(gw, nullptr, nullptr, nullptr, {{link, sg4::LinkInRoute::Direction::UP}}, true);
    zone->seal();
    return {zone->get_netpoint(), gw};
  }

  // Node m with its network in spec.inter.rails links (NICs) of an equal
  // share each: local rank i leaves and enters the node through rail
  // i % rails only (a rank's connections go through its own NIC), so one
  // transfer gets one rail's bandwidth. Routes are listed pair by pair; the
  // links a route crosses are those of the star above.
  std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> railedNode(sg4::NetZone* parent,
                                                                                                int m) {
    const std::string name = "node" + std::to_string(m);
    const int rails = spec.inter.rails;
    sg4::NetZone* zone = sg4::create_full_zone(name);
    zone->set_parent(parent);
    std::vector<sg4::Host*> ranks;
    std::vector<sg4::Link*> own, rail;
    for (int i = 0; i < spec.perNode; ++i) {
      ranks.push_back(rankHost(zone, m, i));
      own.push_back(rankLink(zone, m, i));
    }
    for (int k = 0; k < rails; ++k) rail.push_back(nicLink(zone, m, "-rail" + std::to_string(k), rails));
    auto* gw = zone->create_router(name + "-gw");
    using D = sg4::LinkInRoute::Direction;
    for (int i = 0; i < spec.perNode; ++i) {
      for (int j = i + 1; j < spec.perNode; ++j)
        zone->add_route(ranks[size_t(i)]->get_netpoint(), ranks[size_t(j)]->get_netpoint(), nullptr, nullptr,
                        {{own[size_t(i)], D::UP}, {own[size_t(j)], D::DOWN}}, true);
      zone->add_route(ranks[size_t(i)]->get_netpoint(), gw, nullptr, nullptr,
                      {{own[size_t(i)], D::UP}, {rail[size_t(i % rails)], D::DOWN}}, true);
    }
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
    for (int m = 0; m < spec.nodes; ++m) {
      auto [np, gw] = node(top, m);
      // The switch is a crossbar: a port as fast as the NIC, nothing shared.
      auto* port = top->create_split_duplex_link("port" + std::to_string(m), spec.inter.gbps * 1e9 * 16);
      port->seal();
      top->add_route(np, nullptr, gw, nullptr, {{port, sg4::LinkInRoute::Direction::UP}}, true);
    }
    top->seal();
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
  Builder b{spec, std::vector<sg4::Host*>(size_t(spec.nodes) * size_t(spec.perNode), nullptr)};
  if (spec.kind == "switch") b.oneSwitch();
  else if (spec.kind == "fat-tree") b.fatTree();
  else b.file();
  return b.hosts;
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
