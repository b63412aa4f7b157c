// Command line of strata-perf (nccl-tests' flags).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "strata/strata.h"

// The collective, resolved once from its name, so that the timed loop
// branches on a number (a string comparison per call would be a visible part
// of an 8-byte collective's time, in strata-perf and mpi-perf alike).
enum class PerfColl { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce, kAllToAll, kSendRecv };

struct PerfOptions {
  std::string collective = "all_reduce";
  PerfColl coll = PerfColl::kAllReduce;  // the same, as a number
  int nprocs = 0;             // -np: fork this many local ranks (0: ranks from the launcher)
  size_t minBytes = 8, maxBytes = 64 << 20;
  double factor = 2;          // -f
  size_t stepBytes = 0;       // -i (additive steps instead of a factor)
  int iters = 20, warmup = 5; // -n -w
  strataDataType_t dtype = strataFloat32;
  strataRedOp_t op = strataSum;
  int root = 0;               // -r
  int check = 1;              // -c: iterations verified per size (0: none)
  std::string jsonPath;       // -J
  // -A auto,ring,...: compare these algorithms (STRATA_ALGO values; "auto" is
  // the cost model's choice) in one launch, one communicator each, timed in
  // alternating rounds (-R), out-of-place only.
  std::vector<std::string> algorithms;
  int rounds = 5;             // -R
  // -W: calls of an algorithm right before each of its timed rounds, untimed,
  // so that every round starts from the state the algorithm itself leaves the
  // links in, not the one the algorithm timed before it left (a shaped link's
  // token bucket, full after a latency-bound round, empty after a
  // bandwidth-bound one).
  int roundWarmup = 0;
  int gpu = 0;                // -G 1: CUDA device buffers, calls enqueued on a stream (nccl-tests' default)
  int mapped = 0;             // -M 1: host buffers from strataMemAlloc (the peers of a host map them)
};

// Parses argv; on error prints usage to stderr and returns false.
bool parsePerfOptions(int argc, char** argv, PerfOptions* out);
size_t parseSize(const std::string& text);  // 64, 4K, 16M, 1G; 0 on error
const char* dtypeLabel(strataDataType_t t);
const char* opLabel(strataRedOp_t op);
size_t elemBytes(strataDataType_t t);
