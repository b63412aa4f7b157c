// What one rank does in a collective piece over CUDA IPC (the cuda_ipc path of
// src/device, for communicators whose ranks all share one host): every rank's
// staging slot is device memory that the other ranks have mapped, each rank
// has copied its piece of input into its own slot in the host collective's
// in-place layout (stagePiece, staged_request.h: the same layout in every
// rank's slot), and then, between two barriers,
//
//   barrier "every rank's input is in its slot"
//   each rank computes the part of the result it owns, reading the peers'
//   slots and writing that part where it belongs (its own slot or theirs)
//   barrier "every rank's writes are done"
//
// after which each rank copies its result out of its own slot. Every region
// that one rank writes in a step is read or written by no other rank in that
// step (tests/unit/ipc_plan_test.cc checks it for every collective), so the
// ranks need no synchronisation between the two barriers. Each element of a
// reduced result is computed by one rank only, sources in rank order, so every
// rank gets the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algo/plan.h"
#include "strata/strata.h"

namespace strata {

// A place in a slot: `area` is the local rank whose slot it is.
struct IpcRegion {
  int area = 0;
  size_t offset = 0;  // bytes from the slot's start
};

// Combine `count` elements of every source (in this order) and write the
// result to every destination (at most 2: the reduce-and-copy kernel writes
// both in the same pass).
struct IpcReduce {
  std::vector<IpcRegion> dsts;
  std::vector<IpcRegion> srcs;
  size_t count = 0;
};

struct IpcCopy {
  IpcRegion dst, src;
  size_t bytes = 0;
};

// One rank's work in one step: the reductions first, then the copies (which
// may read what the reductions wrote), in one stream's order.
struct IpcWork {
  std::vector<IpcReduce> reduces;
  std::vector<IpcCopy> copies;
  uint64_t divisor = 1;  // > 1: each reduction divides its result by it (Avg)
};

// A rank's part of an all-reduce piece on a communicator of several nodes
// with `nlocal` ranks each (the node's ranks map each other's slots; the areas
// are local indices): local rank j reduces shard j of its node's slots into
// its own slot (`reduce`); the ranks with local index j on every node
// all-reduce that shard between nodes on the host (the caller's team stage,
// `offset` / `count`); then j writes the result to its own slot and the next
// one in one pass (`spread`, where Avg divides by `divisor`) and copies it to
// the rest (`copies`). Shard j is read and written only by local rank j.
struct IpcShardWork {
  IpcReduce reduce;
  size_t offset = 0, count = 0;  // the shard, in bytes from the slot's start / elements
  IpcReduce spread;              // one source: the shard in this rank's slot
  std::vector<IpcCopy> copies;
  uint64_t divisor = 1;
};
IpcShardWork planIpcShardAllReduce(strataDataType_t dtype, strataRedOp_t op, size_t elements, int nlocal,
                                   int local, int nranks);

// The most ranks a step combines in one reduction (the reduce-and-copy
// kernel's sources, cuda::kMaxSources); larger communicators stage through
// the host.
constexpr int kIpcMaxRanks = 8;

// Whether `coll` runs over IPC (every collective; send and receive do not).
bool ipcCarries(Coll coll);

// Rank `rank`'s work of a piece of `elements` elements per row, in a world of
// `nranks` (<= kIpcMaxRanks) ranks sharing the host.
IpcWork planIpcStep(Coll coll, strataDataType_t dtype, strataRedOp_t op, int root, size_t elements, int nranks,
                    int rank);

}  // namespace strata
