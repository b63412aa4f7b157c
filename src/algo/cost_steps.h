// The cost model's building blocks: what a set of transfers happening at once
// costs on a Topology's links, and the flat patterns built from such steps
// (rings, chains, recursive doubling, binomial trees). cost_model.cc composes
// them into each algorithm's prediction; cost_steps.cc says how each is
// charged and why.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "topo/topology.h"

namespace strata::cost {

// What one transfer of a set that happens at once costs: a fixed part (the
// link's latency, and a gap per other message leaving its node) and a part
// per byte (a node's network bandwidth shared by the transfers leaving or
// entering that node; a transfer never gets more than its rail's share:
// interStreamUsPerByte).
struct HopCost {
  double fixedUs = 0, usPerByte = 0;
  double us(double bytes) const { return fixedUs + bytes * usPerByte; }
};

// Microseconds per byte of each of `streams` transfers leaving (or entering) a node at once.
double interStreamUsPerByte(const Topology& t, double streams);
// Each (from, to) transfer's cost when all of them happen at once.
std::vector<HopCost> hopCosts(const Topology& t, const std::vector<std::pair<int, int>>& pairs);
// One step: the pairs each moving `bytes` at once; the slowest transfer's time.
double stepUs(const Topology& t, const std::vector<std::pair<int, int>>& pairs, double bytes);
// A ring over `order` in which every member sends `bytes` to the next, `steps` times.
double ringUs(const Topology& t, const std::vector<int>& order, double bytes, double steps);
// 0, 1, ..., n-1.
std::vector<int> identity(int n);
// A pipelined chain over `order` (cut-through, in slices of `chunk`).
double chainUs(const Topology& t, const std::vector<int>& order, double bytes, size_t chunk);
// The latency path of `steps` hops around a ring whose hops take `hopUs`.
double ringPathUs(const std::vector<double>& hopUs, double steps);
// A ring over `order` as the ring plans run it: `slices` slices of blocks of `blockBytes`, `steps` hops each.
double pipelinedRingUs(const Topology& t, const std::vector<int>& order, double blockBytes, double steps,
                       double slices);
// Reducing a whole message of `bytes` after it arrived (two inputs read, one output written).
double localReduceUs(const Topology& t, double bytes);
// A local copy of `bytes` (read and written once).
double localCopyUs(const Topology& t, double bytes);
// Recursive doubling all-reduce over `team` (global ranks).
double recursiveDoublingUs(const Topology& t, const std::vector<int>& team, double bytes);
// A binomial tree from team[root] (broadcast; `reduces`: a reduce, each level reducing the whole message).
double treeUs(const Topology& t, const std::vector<int>& team, int root, double bytes, bool reduces = false);

}  // namespace strata::cost
