// How the executor waits when no flow can move: spin briefly (latency), then
// yield the core (ranks may outnumber cores), and after 2 ms take 50 us naps.
// While waiting it pumps TCP links, checks every link's sockets about once a
// millisecond (a dead or aborting peer throws at once) and enforces the
// communicator's timeout.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace strata {

class LinkSet;

class Waiter {
 public:
  Waiter(LinkSet& comm, int timeoutMs) : comm_(comm), timeoutMs_(timeoutMs) {}
  void progressed() { idleCount_ = 0; }
  // `describe` says what this rank is waiting for, for the timeout message.
  void idle(const std::function<std::string()>& describe);

 private:
  void pollLinks(int timeoutMs);
  LinkSet& comm_;
  int timeoutMs_;
  uint64_t idleCount_ = 0;
  int64_t idleSinceUs_ = 0;
  int64_t lastPollUs_ = 0;
};

}  // namespace strata
