// monitoredBarrier: torch's way to find the rank that never reached a point
// (dist.monitored_barrier). Every other rank sets its arrival key in the
// group's c10d store; rank 0 waits for them in rank order until opts.timeout
// from its own arrival, then either sets the "passed" key that releases them,
// or raises naming the first missing rank (every missing rank with
// waitAllRanks). The texts are gloo's, which torch's tests and users match,
// followed by strata's detail: where rank 0 last saw each missing rank (the
// last operation it received from it, strataCommGetPeerState).
// The store, not the communicator: a late rank is the expected failure here,
// and it must not leave the communicator timed out.
#include <c10/util/Exception.h>

#include <chrono>
#include <string>
#include <vector>

#include "backend.h"

namespace strata_torch {

namespace {

using Clock = std::chrono::steady_clock;

std::string keyOf(uint64_t call, const std::string& what) {
  return "strata/monitored_barrier/" + std::to_string(call) + "/" + what;
}

// Whether `key` appears in the store within `timeout` (a zero or negative
// timeout: whether it is there now).
bool appears(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return store.check({key});
  try {
    store.wait({key}, timeout);
    return true;
  } catch (const c10::Error&) {  // the store's timeout (DistStoreError)
    return store.check({key});
  }
}

std::string joined(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

const char* operationName(strataStatColl_t c) {
  static const char* names[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                "reduce",     "all_to_all",     "send/recv",  "barrier"};
  return unsigned(c) < strataNumStatColls ? names[c] : "an operation";
}

// "last seen by rank 0 (which has started 7 strata operations): rank 1 in
// all_gather #7, rank 2 not yet (...)", from this rank's communicator.
std::string lastSeenDetail(strataComm_t comm, int rank, const std::vector<int>& missing) {
  std::string peers;
  uint64_t started = 0;
  for (int r : missing) {
    strataPeerState_t st;
    if (strataCommGetPeerState(comm, r, &st) != strataSuccess) return "";
    started = st.thisRankSeq;
    peers += (peers.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) +
             (st.lastSeq ? std::string(" in ") + operationName(st.lastColl) + " #" + std::to_string(st.lastSeq)
                         : std::string(" not yet (rank ") + std::to_string(rank) +
                               " has received no operation from it directly)");
  }
  return "; last seen by rank " + std::to_string(rank) + " (which has started " + std::to_string(started) +
         " strata operations): " + peers;
}

}  // namespace

void StrataBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  TORCH_CHECK(store_, "strata: monitoredBarrier needs the process group's store");
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(opts.timeout);
  const uint64_t call = monitoredBarriers_++;
  const std::string passed = keyOf(call, "passed");
  if (rank_ != 0) {
    store_->set(keyOf(call, std::to_string(rank_)), std::vector<uint8_t>{1});
    if (!appears(*store_, passed, timeout))
      C10_THROW_ERROR(DistBackendError,
                      "Rank " + std::to_string(rank_) +
                          " successfully reached monitoredBarrier, but received errors while waiting for "
                          "send/recv from rank 0. Please check rank 0 logs for faulty rank. (strata: rank 0 "
                          "did not release the barrier within " + std::to_string(timeout.count()) + " ms)");
    return;
  }
  const auto deadline = Clock::now() + timeout;
  std::vector<int> missing, arrived;
  for (int r = 1; r < size_; ++r) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!waitAllRanks && left.count() <= 0)
      C10_THROW_ERROR(DistBackendError, "Rank 0 timed out in monitoredBarrier after " +
                                            std::to_string(timeout.count()) + " ms. Successfully processed ranks: " +
                                            (arrived.empty() ? "none" : joined(arrived)) + "; ranks not checked yet: " + std::to_string(r) +
                                            " to " + std::to_string(size_ - 1));
    if (appears(*store_, keyOf(call, std::to_string(r)), left)) {
      arrived.push_back(r);
      continue;
    }
    missing.push_back(r);
    if (!waitAllRanks) break;
  }
  if (!missing.empty())
    C10_THROW_ERROR(DistBackendError, std::string(waitAllRanks ? "Ranks " : "Rank ") + joined(missing) +
                                          " failed to pass monitoredBarrier in " + std::to_string(timeout.count()) +
                                          " ms (strata: " + (missing.size() == 1 ? "it" : "they") + " did not arrive; ranks that did: 0" +
                                          (arrived.empty() ? "" : ", " + joined(arrived)) +
                                          lastSeenDetail(comm_, rank_, missing) + ")");
  store_->set(passed, std::vector<uint8_t>{1});
}

}  // namespace strata_torch
