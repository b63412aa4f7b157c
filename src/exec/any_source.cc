#include "exec/any_source.h"

#include <vector>

#include "core/error.h"
#include "exec/waiter.h"

namespace strata {

namespace {

// Whether `peer`'s link holds the header of a send at its head.
bool sendIsWaiting(Channel& ch) {
  ConstSpan s = ch.peekRecv();
  if (s.size < kOpDescBytes) return false;
  OpDesc d;
  return decodeOpDesc(s.data, &d) && d.coll == Coll::kSend;
}

}  // namespace

int awaitAnySender(Comm& comm) {
  const int n = comm.nranks(), me = comm.rank();
  std::vector<int> others;
  for (int p = 0; p < n; ++p)
    if (p != me) others.push_back(p);
  if (others.empty())
    fail(strataInvalidArgument, "strataRecvAny: the communicator has one rank, so no rank can send to it");
  std::vector<bool> gone(size_t(n), false);
  size_t goneCount = 0;
  Waiter waiter(comm, comm.timeoutMs(), nullptr, nullptr);
  for (size_t round = 0;; ++round) {
    if (comm.failed()) comm.throwFailed();
    bool unlinked = false;
    for (size_t i = 0; i < others.size(); ++i) {
      int p = others[(round + i) % others.size()];  // no peer is always asked first
      if (gone[size_t(p)]) continue;
      if (!comm.connected(p)) {
        unlinked = true;
        continue;
      }
      try {
        if (sendIsWaiting(comm.channel(p))) return p;
      } catch (const Error&) {
        // A rank that left is no sender; an error only if every rank left.
        gone[size_t(p)] = true;
        if (++goneCount == others.size()) throw;
      }
    }
    if (unlinked) comm.connectStep(others);
    waiter.idle([&] {
      return WaitState{"was in strataRecvAny waiting for a send from any rank", false};
    });
  }
}

}  // namespace strata
