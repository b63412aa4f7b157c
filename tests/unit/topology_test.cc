// Topology: placement from host ids, detection of this host, the JSON dump
// and load (STRATA_TOPO_DUMP_FILE / STRATA_TOPO_FILE) and its error messages,
// the last-level cache and the outputs streamed past each rank's share of it,
// and the link-parameter syntax of STRATA_INTRA_LINK / STRATA_INTER_LINK.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "core/config.h"
#include "core/error.h"
#include "core/link_probe.h"
#include "topo/detect.h"
#include "topo/topo_json.h"
#include "topo/topology.h"

namespace strata {
namespace {

TEST(Topology, GroupsRanksByHostAndNumbersLocalRanks) {
  Topology t = Topology::fromNodeIds({77, 5, 77, 9, 5, 77});
  ASSERT_EQ(t.nnodes(), 3);
  EXPECT_EQ(t.node(0), (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(t.node(1), (std::vector<int>{1, 4}));
  EXPECT_EQ(t.node(2), (std::vector<int>{3}));
  EXPECT_EQ(t.place(5).local, 2);
  EXPECT_EQ(t.place(4).node, 1);
  EXPECT_EQ(t.maxLocal(), 3);
  EXPECT_FALSE(t.uniform());
  EXPECT_TRUE(Topology::singleNode(4).uniform());
}

TEST(Topology, DetectsThisHost) {
  const HostHardware& h = detectHostHardware();
  EXPECT_FALSE(h.hostname.empty());
  EXPECT_GE(h.cores, 1);
  EXPECT_LE(h.cores, int(std::thread::hardware_concurrency()));
  EXPECT_GE(h.numaNodes, 1);
  EXPECT_TRUE(h.gpuSource == "nvml" || h.gpuSource == "none");
  int numa = currentNumaNode();
  EXPECT_GE(numa, -1);
  EXPECT_LT(numa, 64);
}

// The last-level caches as sysfs lists them: per CPU, the caches of the
// highest level, each counted once (CPUs sharing one list the same set).
size_t lastLevelCacheBytesFromSysfs() {
  int top = 0;
  std::map<std::string, size_t> caches;  // shared_cpu_list -> bytes, at level `top`
  for (int cpu = 0; cpu < 4096; ++cpu) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/";
    std::ifstream probe(dir + "index0/level");
    if (!probe) break;
    for (int i = 0; i < 8; ++i) {
      std::ifstream level(dir + "index" + std::to_string(i) + "/level");
      std::ifstream type(dir + "index" + std::to_string(i) + "/type");
      std::ifstream size(dir + "index" + std::to_string(i) + "/size");
      std::ifstream shared(dir + "index" + std::to_string(i) + "/shared_cpu_list");
      int l = 0;
      std::string t, kib, cpus;
      if (!(level >> l) || !(type >> t) || !(size >> kib) || !std::getline(shared, cpus)) continue;
      if (t == "Instruction" || l < top) continue;
      if (l > top) {
        top = l;
        caches.clear();
      }
      caches[cpus] = size_t(std::stoull(kib)) << (kib.back() == 'M' ? 20 : 10);
    }
  }
  size_t total = 0;
  for (const auto& c : caches) total += c.second;
  return top >= 2 ? total : 0;
}

TEST(Topology, DetectsTheLastLevelCachesAsSysfsListsThem) {
  const size_t reference = lastLevelCacheBytesFromSysfs();
  if (reference == 0) GTEST_SKIP() << "this machine's sysfs lists no L2 or L3 cache to compare with";
  EXPECT_EQ(lastLevelCacheBytes(), reference);
}

// STRATA_STREAM_OUTPUT_BYTES, or each rank's share of the last-level cache.
TEST(Topology, OutputsLargerThanARanksShareOfTheCacheAreStreamed) {
  constexpr size_t kNever = ~size_t(0), MiB = size_t(1) << 20;
  Config c;
  EXPECT_EQ(streamedOutputBytesOf(c, 32 * MiB, 2), 16 * MiB);
  EXPECT_EQ(streamedOutputBytesOf(c, 96 * MiB, 3), 32 * MiB);
  EXPECT_EQ(streamedOutputBytesOf(c, 32 * MiB, 0), 32 * MiB) << "no ranks counted: the whole cache";
  EXPECT_EQ(streamedOutputBytesOf(c, 0, 2), kNever) << "an unknown cache: never";
  c.streamOutputBytes = 4096;
  EXPECT_EQ(streamedOutputBytesOf(c, 32 * MiB, 2), 4096u);
  EXPECT_EQ(streamedOutputBytesOf(c, 0, 2), 4096u);
  c.streamOutputBytes = 0;
  EXPECT_EQ(streamedOutputBytesOf(c, 32 * MiB, 2), kNever) << "0 turns it off";
}

TEST(TopologyJson, RoundTripsPlacementAndLinkParameters) {
  Topology t = Topology::fromNodeIds({0, 1, 0, 1, 2});
  t.setNuma(3, 1);
  t.intra = LinkParams{1.25, 9.5, "measured"};
  t.inter = LinkParams{31, 0.25, "configured"};
  t.inter.rails = 4;
  t.inter.latencyHidden = 0.8;
  t.inter.gapKnown = true;
  t.coresShared = true;
  t.host = detectHostHardware();
  Topology back = topologyFromJson(topologyToJson(t), 5, "test");
  ASSERT_EQ(back.nnodes(), 3);
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(back.nodeOf(r), t.nodeOf(r));
    EXPECT_EQ(back.place(r).local, t.place(r).local);
  }
  EXPECT_EQ(back.place(3).numa, 1);
  EXPECT_DOUBLE_EQ(back.intra.alphaUs, 1.25);
  EXPECT_DOUBLE_EQ(back.inter.gbps, 0.25);
  EXPECT_EQ(back.inter.rails, 4);
  EXPECT_EQ(back.intra.rails, 1);
  EXPECT_DOUBLE_EQ(back.inter.latencyHidden, 0.8);
  EXPECT_DOUBLE_EQ(back.intra.latencyHidden, 0);
  EXPECT_EQ(back.inter.source, "file");
  EXPECT_TRUE(back.inter.gapKnown);
  EXPECT_FALSE(back.intra.gapKnown);  // dumped as not measured
  EXPECT_TRUE(back.coresShared);
  EXPECT_NE(topologyToJson(t).find("\"nics\""), std::string::npos);
  // A gap the file states is known unless the file says otherwise; none stated, none known.
  auto withInter = [](const std::string& extra) {
    return R"({"ranks":[{"node":0}],"links":{"inter":{"alpha_us":1,"gbps":1)" + extra + "}}}";
  };
  EXPECT_TRUE(topologyFromJson(withInter(R"(,"gap_us":0)"), 1, "t").inter.gapKnown);
  EXPECT_FALSE(topologyFromJson(withInter(R"(,"gap_us":0,"gap_known":false)"), 1, "t").inter.gapKnown);
  EXPECT_FALSE(topologyFromJson(withInter(""), 1, "t").inter.gapKnown);
  EXPECT_FALSE(topologyFromJson(withInter(""), 1, "t").coresShared);
}

std::string loadError(const std::string& text, int n) {
  try {
    topologyFromJson(text, n, "topo.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), strataInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(TopologyJson, RejectsBadFilesWithASentence) {
  EXPECT_NE(loadError("{not json", 2).find("is not a JSON object"), std::string::npos);
  EXPECT_NE(loadError("{}", 2).find("no \"ranks\" array"), std::string::npos);
  EXPECT_NE(loadError(R"({"ranks":[{"node":0}]})", 2).find("describes 1 ranks but the communicator has 2"),
            std::string::npos);
  EXPECT_NE(loadError(R"({"ranks":[{"node":0},{"nod":1}]})", 2).find("ranks[1] needs an integer \"node\""),
            std::string::npos);
  EXPECT_NE(loadError(R"({"ranks":[{"node":0}],"links":{"inter":{"alpha_us":1,"gbps":0}}})", 1)
                .find("gbps > 0"),
            std::string::npos);
  EXPECT_NE(loadError(R"({"ranks":[{"node":0}],"links":{"inter":{"alpha_us":1,"gbps":1,"rails":0}}})", 1)
                .find("links.inter.rails must be a whole number of at least 1"),
            std::string::npos);
  EXPECT_NE(loadError(R"({"ranks":[{"node":0}],"links":{"inter":{"alpha_us":1,"gbps":1,"latency_hidden":2}}})", 1)
                .find("links.inter.latency_hidden must be a number from 0 to 1"),
            std::string::npos);
  EXPECT_NE(loadError(R"({"ranks":[{"node":0}],"links":{"inter":{"alpha_us":1,"gbps":1,"gap_known":1}}})", 1)
                .find("links.inter.gap_known must be true or false"),
            std::string::npos);
  EXPECT_NE(loadError(R"({"ranks":[{"node":0}],"cores_shared":"no"})", 1).find("\"cores_shared\" must be true or false"),
            std::string::npos);
  Topology ok = topologyFromJson(R"({"ranks":[{"node":3},{"node":3},{"node":1}]})", 3, "t");
  EXPECT_EQ(ok.nnodes(), 2);
  EXPECT_EQ(ok.intra.source, "");  // not in the file: the communicator fills in defaults
}

TEST(LinkParams, ParsesAlphaAndBandwidth) {
  LinkParams l = parseLinkParams("15,12.5", "STRATA_INTER_LINK");
  EXPECT_DOUBLE_EQ(l.alphaUs, 15);
  EXPECT_DOUBLE_EQ(l.gbps, 12.5);
  EXPECT_DOUBLE_EQ(l.us(12.5e3), 16);
  EXPECT_TRUE(l.gapKnown);  // configured: a gap left out is none
  LinkParams full = parseLinkParams("15,12.5,2,0.75", "STRATA_INTER_LINK");
  EXPECT_DOUBLE_EQ(full.gapUs, 2);
  EXPECT_DOUBLE_EQ(full.latencyHidden, 0.75);
  for (const char* bad : {"", "15", "15,", "15,0", "-1,3", "a,b", "1,2,x", "1,2,-1", "1,2,3,4", "1,2,3,-0.1",
                          "1,2,3,0.5,1", "1,2,3,0.5,"}) {
    try {
      parseLinkParams(bad, "STRATA_INTER_LINK");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), strataInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("STRATA_INTER_LINK"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace strata
