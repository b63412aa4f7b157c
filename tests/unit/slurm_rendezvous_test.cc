// Where srun's tasks meet without MASTER_ADDR: the first node of Slurm's
// compressed host lists, a port every task derives alike, and rank 0 refusing
// to listen on a node that is not the one the others will call.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>
#include <string>

#include "bootstrap/slurm_rendezvous.h"
#include "core/error.h"

namespace strata {
namespace {

TEST(SlurmHostList, TheFirstHostOfEachForm) {
  EXPECT_EQ(firstHostOfSlurmList("vm"), "vm");
  EXPECT_EQ(firstHostOfSlurmList("a1,b2"), "a1");
  EXPECT_EQ(firstHostOfSlurmList("gpu[07-09,12]"), "gpu07");
  EXPECT_EQ(firstHostOfSlurmList("gpu[3,5-6],cpu[1-2]"), "gpu3");
  EXPECT_EQ(firstHostOfSlurmList("rack[010-020]-ib"), "rack010-ib");
  EXPECT_EQ(firstHostOfSlurmList("node-1.cluster,node-2.cluster"), "node-1.cluster");
}

TEST(SlurmHostList, TextThatIsNotAListGivesNothing) {
  for (const char* bad : {"", "gpu[07-09", "gpu07]", "[1-2]", "gpu[]", "gpu[x-y]"})
    EXPECT_EQ(firstHostOfSlurmList(bad), "") << bad;
}

TEST(SlurmRendezvousPort, DistinctPerStepAndBelowTheEphemeralRange) {
  std::set<int> ports;
  for (unsigned long long job : {1ull, 999ull, 1001ull, 123456ull})
    for (unsigned long long step = 0; step < 15; ++step) {
      int p = slurmRendezvousPort(job, step);
      EXPECT_GE(p, 17000);
      EXPECT_LT(p, 32768);
      ports.insert(p);
    }
  EXPECT_EQ(ports.size(), 3u * 15u);  // job 1001 wraps onto job 1's ports, the others do not meet
  EXPECT_NE(slurmRendezvousPort(41, 0), slurmRendezvousPort(42, 0));
}

struct SlurmEnv {
  SlurmEnv(const char* list, const char* node) {
    setenv("SLURM_STEP_NODELIST", list, 1);
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_STEP_ID", "3", 1);
    setenv("SLURMD_NODENAME", node, 1);
  }
  ~SlurmEnv() {
    for (const char* v : {"SLURM_STEP_NODELIST", "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURMD_NODENAME"}) unsetenv(v);
  }
};

TEST(SlurmRendezvous, EveryTaskDerivesRankZerosNodeAndThePort) {
  SlurmEnv env("n[04-05]", "n05");
  const std::string want = "n04:" + std::to_string(slurmRendezvousPort(4242, 3));
  EXPECT_EQ(slurmRendezvous(1), want);
  setenv("SLURMD_NODENAME", "n04", 1);
  EXPECT_EQ(slurmRendezvous(0), want);
}

TEST(SlurmRendezvous, RankZeroOnAnotherNodeIsToldToSetMasterAddr) {
  SlurmEnv env("n[04-05]", "n05");
  try {
    slurmRendezvous(0);
    ADD_FAILURE() << "rank 0 on n05 accepted n04 as its address";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), strataInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("set MASTER_ADDR"), std::string::npos) << e.what();
  }
}

TEST(SlurmRendezvous, NothingOutsideSrun) { EXPECT_EQ(slurmRendezvous(0), ""); }

}  // namespace
}  // namespace strata
