// How the executor's Waiter waits (src/exec/waiter.h): a rank with a core of
// its own spins before it yields, so a short wait is not a wait at all; where
// ranks outnumber their machine's CPUs (LinkSet::coresShared) it yields from
// its first idle call, since spinning only holds back the peer it waits for.
// The probe's idle time shows which: a wait counts from the first yield.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "exec/exec_probe.h"
#include "exec/link_set.h"
#include "exec/waiter.h"

namespace strata {
namespace {

// A rank with no links, whose cores are shared or not.
class NoLinks : public LinkSet {
 public:
  explicit NoLinks(bool shared) : shared_(shared) {}
  int rank() const override { return 0; }
  int timeoutMs() const override { return 60000; }
  void connect(const std::vector<int>&) override {}
  Channel& channel(int) override { throw std::logic_error("no links"); }
  const std::vector<Channel*>& links() const override { return links_; }
  uint8_t* scratch(size_t) override { return nullptr; }
  size_t linkCapacity() const override { return 0; }
  bool coresShared() const override { return shared_; }

 private:
  bool shared_;
  std::vector<Channel*> links_;
};

// Idle time the probe records for one idle call, then `ms` without progress.
int64_t waitAfterOneIdleCall(bool coresShared, int ms) {
  NoLinks links(coresShared);
  ExecProbe probe;
  Waiter waiter(links, links.timeoutMs(), &probe, nullptr);
  waiter.idle([] { return WaitState{"nothing", false}; });
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  waiter.progressed();
  return probe.waitUs;
}

TEST(Waiter, WithACoreOfItsOwnARankSpinsBeforeItYields) {
  EXPECT_EQ(waitAfterOneIdleCall(false, 5), 0) << "the first idle call was a spin, not a wait";
}

TEST(Waiter, WhereRanksOutnumberCpusTheFirstIdleCallYields) {
  EXPECT_GE(waitAfterOneIdleCall(true, 5), 4000) << "the wait did not start at the first idle call";
}

}  // namespace
}  // namespace strata
