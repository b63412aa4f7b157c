#include "support/plan_runner.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

#include "algo/select.h"
#include "core/dtype.h"
#include "core/error.h"
#include "exec/executor.h"
#include "support/collective_check.h"
#include "support/mem_links.h"
#include "support/reference.h"

namespace strata::test {

namespace {

// A copy of a buffer scattered over separate allocations, and the pieces
// that address a range of it.
struct Scattered {
  std::vector<std::vector<uint8_t>> parts;
  std::vector<size_t> starts;

  Scattered(const uint8_t* data, size_t bytes, size_t elem, size_t pieceElems, uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (size_t at = 0; at < bytes;) {
      size_t len = std::min(bytes - at, (1 + rng() % (2 * pieceElems)) * elem);
      starts.push_back(at);
      parts.emplace_back(data + at, data + at + len);
      at += len;
    }
  }
  Segments range(size_t begin, size_t bytes) {
    Segments s;
    for (size_t i = 0; i < parts.size(); ++i) {
      size_t b = std::max(begin, starts[i]), e = std::min(begin + bytes, starts[i] + parts[i].size());
      if (b < e) s.append(parts[i].data() + (b - starts[i]), e - b);
    }
    return s;
  }
  void gather(uint8_t* out) const {
    for (size_t i = 0; i < parts.size(); ++i) std::memcpy(out + starts[i], parts[i].data(), parts[i].size());
  }
};

}  // namespace

// Runs one collective on n threads; returns "" or the first problem found.
std::string runPlanCase(Coll coll, const char* algo, bool inPlace, int n, size_t count, strataDataType_t dtype,
                        strataRedOp_t op, int root, const Topology* topo, size_t pieceElems) {
  const size_t e = elemSize(dtype);
  const size_t sendElems = sendsBlocks(coll) ? count * size_t(n) : count;
  const size_t recvElems = recvsBlocks(coll) ? count * size_t(n) : count;
  std::vector<std::vector<uint8_t>> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  std::vector<const void*> inputs;
  for (int r = 0; r < n; ++r) {
    in[size_t(r)].resize(sendElems * e + 1);
    fillRandom(dtype, op, in[size_t(r)].data(), sendElems, uint64_t(r) * 1000 + count);
    inputs.push_back(in[size_t(r)].data());
    out[size_t(r)].assign(std::max(recvElems, sendElems) * e + 1, 0xEE);
  }
  // Links buffer 3 KiB, or what the topology says they buffer (the rings
  // inside a node may then take longer slices: nodeRingSliceBytes).
  const int slots = topo && topo->linkBufferBytes ? int(topo->linkBufferBytes / 1024) : 3;
  MemFabric fabric(n, 1024, slots);
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        MemLinkSet links(fabric, r);
        Config cfg;
        cfg.algo = algo;
        cfg.chunkBytes = 4096;
        CollArgs a;
        a.coll = coll;
        a.rank = r;
        a.nranks = n;
        a.count = count;
        a.dtype = dtype;
        a.redop = op;
        a.root = root;
        a.inPlace = inPlace;
        a.chunkBytes = pipelineSliceBytes(cfg.chunkBytes, links.linkCapacity());
        a.topo = topo;
        OpDesc d;
        d.coll = coll;
        d.dtype = dtype;
        d.redop = op;
        d.root = root;
        d.count = count;
        d.seq = 1;
        uint8_t* recv = out[size_t(r)].data();
        const void* send = in[size_t(r)].data();
        if (inPlace) {
          if (coll == Coll::kAllGather) {
            std::memcpy(recv + size_t(r) * count * e, send, count * e);
            send = recv + size_t(r) * count * e;
          } else if (coll == Coll::kReduceScatter) {
            std::memcpy(recv, send, sendElems * e);
            send = recv;
            recv = recv + size_t(r) * count * e;
          } else {
            std::memcpy(recv, send, sendElems * e);
            send = recv;
          }
        }
        Plan plan = buildCollectivePlan(a, d, cfg);
        const std::vector<std::string> names = algorithmNames(coll);
        if (std::find(names.begin(), names.end(), std::string(algo)) != names.end() && plan.algorithm != algo &&
            (topo || std::string(algo).rfind("hier", 0) != 0))
          throw Error(strataInternalError, "built " + plan.algorithm + " instead of the forced " + algo);
        if (pieceElems == 0) {
          executePlan(links, plan, Buffers{send, recv, nullptr});
        } else {
          // Scatter the larger side (in place: the one buffer both sides live in).
          uint8_t* whole = out[size_t(r)].data();
          size_t wholeBytes = std::max(sendElems, recvElems) * e;
          if (!inPlace) std::memcpy(whole, send, sendElems * e);
          Scattered sc(whole, wholeBytes, e, pieceElems, uint64_t(r) + 7);
          Scattered recvSc(whole, inPlace ? 0 : recvElems * e, e, pieceElems, uint64_t(r) + 99);
          auto offsetIn = [&](const void* p) { return size_t(static_cast<const uint8_t*>(p) - whole); };
          Segments sp = sc.range(inPlace ? offsetIn(send) : 0, sendElems * e);
          Segments rp = inPlace ? sc.range(offsetIn(recv), recvElems * e) : recvSc.range(0, recvElems * e);
          executePlan(links, plan, Buffers{nullptr, nullptr, nullptr, &sp, &rp});
          if (inPlace) {
            sc.gather(whole);
          } else {
            recvSc.gather(whole);
          }
        }
        if (inPlace && coll == Coll::kReduceScatter)  // result sits in block r
          std::memmove(out[size_t(r)].data(), recv, count * e);
      } catch (const std::exception& ex) {
        errors[size_t(r)] = ex.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r)
    if (!errors[size_t(r)].empty()) return format("rank %d threw: %s", r, errors[size_t(r)].c_str());
  for (int r = 0; r < n; ++r) {
    std::string err = checkOutput(coll, dtype, op, n, r, root, count, inputs, out[size_t(r)].data());
    if (!err.empty()) return format("rank %d: %s", r, err.c_str());
    if (coll == Coll::kAllReduce && std::memcmp(out[size_t(r)].data(), out[0].data(), count * e))
      return format("rank %d's result is not bitwise identical to rank 0's", r);
  }
  return "";
}

}  // namespace strata::test
