#include "support/plan_runner.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "algo/select.h"
#include "core/dtype.h"
#include "core/error.h"
#include "exec/executor.h"
#include "support/collective_check.h"
#include "support/mem_links.h"
#include "support/reference.h"

namespace strata::test {

// Runs one collective on n threads; returns "" or the first problem found.
std::string runPlanCase(Coll coll, const char* algo, bool inPlace, int n, size_t count, strataDataType_t dtype,
                        strataRedOp_t op, int root, const Topology* topo) {
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
  MemFabric fabric(n, 1024, 3);
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
        executePlan(links, plan, Buffers{send, recv, nullptr});
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
