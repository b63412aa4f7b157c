#include "topo/detect.h"

#include <dirent.h>
#include <dlfcn.h>
#include <hwloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>

namespace strata {

namespace {

// The hwloc topology of this machine, loaded once (a few milliseconds).
hwloc_topology_t machine() {
  static hwloc_topology_t topo = [] {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0) return hwloc_topology_t(nullptr);
    if (hwloc_topology_load(t) != 0) {
      hwloc_topology_destroy(t);
      return hwloc_topology_t(nullptr);
    }
    return t;
  }();
  return topo;
}

std::string readLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

int readInt(const std::string& path, int fallback) {
  std::string s = readLine(path);
  if (s.empty()) return fallback;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  return end == s.c_str() ? fallback : int(v);
}

// Physical network interfaces (those backed by a device) and veth pairs; not
// loopback, bridges or tunnels.
std::vector<Nic> detectNics() {
  std::vector<Nic> nics;
  DIR* dir = opendir("/sys/class/net");
  if (!dir) return nics;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name == "lo") continue;
    std::string base = "/sys/class/net/" + name;
    bool hasDevice = access((base + "/device").c_str(), F_OK) == 0;
    bool isVeth = readLine(base + "/uevent").find("veth") != std::string::npos ||
                  name.rfind("veth", 0) == 0;
    if (!hasDevice && !isVeth) continue;
    Nic n;
    n.name = name;
    int mbits = readInt(base + "/speed", -1);  // Mb/s; -1 or error when unknown
    n.gbps = mbits > 0 ? mbits / 8000.0 : 0;
    n.numa = hasDevice ? readInt(base + "/device/numa_node", -1) : -1;
    nics.push_back(n);
  }
  closedir(dir);
  return nics;
}

// NVML, loaded only if the driver is installed. Prototypes from nvml.h.
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr int kNvmlP2PRead = 0, kNvmlP2PNvlink = 2;

void detectGpus(HostHardware& hw) {
  hw.gpuSource = "none";
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib) return;
  using InitFn = int (*)();
  using CountFn = int (*)(unsigned*);
  using HandleFn = int (*)(unsigned, void**);
  using PciFn = int (*)(void*, NvmlPciInfo*);
  using P2PFn = int (*)(void*, void*, int, int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "nvmlDeviceGetCount_v2"));
  auto handle = reinterpret_cast<HandleFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto pci = reinterpret_cast<PciFn>(dlsym(lib, "nvmlDeviceGetPciInfo_v3"));
  auto p2p = reinterpret_cast<P2PFn>(dlsym(lib, "nvmlDeviceGetP2PStatus"));
  unsigned n = 0;
  if (!init || !count || !handle || init() != 0 || count(&n) != 0) return;
  hw.gpuSource = "nvml";
  std::vector<void*> devs(n, nullptr);
  for (unsigned i = 0; i < n; ++i) {
    Gpu g;
    g.index = int(i);
    if (handle(i, &devs[i]) != 0) continue;
    NvmlPciInfo info{};
    if (pci && pci(devs[i], &info) == 0) {
      char id[32];
      std::snprintf(id, sizeof(id), "%04x:%02x:%02x.0", info.domain, info.bus, info.device);
      g.busId = id;
      g.numa = readInt("/sys/bus/pci/devices/" + g.busId + "/numa_node", -1);
    }
    hw.gpus.push_back(g);
  }
  for (unsigned a = 0; p2p && a < n; ++a)
    for (unsigned b = a + 1; b < n; ++b) {
      int status = -1;
      if (p2p(devs[a], devs[b], kNvmlP2PNvlink, &status) == 0 && status == 0)
        hw.nvlinkPairs.emplace_back(int(a), int(b));
      if (p2p(devs[a], devs[b], kNvmlP2PRead, &status) == 0 && status == 0)
        hw.peerAccessPairs.emplace_back(int(a), int(b));
    }
}

}  // namespace

const HostHardware& detectHostHardware() {
  static const HostHardware hw = [] {
    HostHardware h;
    char name[256] = {0};
    gethostname(name, sizeof(name) - 1);
    h.hostname = name;
    if (hwloc_topology_t t = machine()) {
      h.numaNodes = std::max(1, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE));
      h.cores = std::max(1, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE));
    } else {
      h.cores = int(sysconf(_SC_NPROCESSORS_ONLN));
    }
    h.nics = detectNics();
    detectGpus(h);
    return h;
  }();
  return hw;
}

int currentNumaNode() {
  hwloc_topology_t t = machine();
  if (!t) return -1;
  hwloc_bitmap_t cpu = hwloc_bitmap_alloc();
  int numa = -1;
  if (hwloc_get_last_cpu_location(t, cpu, HWLOC_CPUBIND_THREAD) == 0) {
    hwloc_obj_t node = nullptr;
    while ((node = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, node)) != nullptr)
      if (hwloc_bitmap_intersects(node->cpuset, cpu)) {
        numa = int(node->os_index);
        break;
      }
  }
  hwloc_bitmap_free(cpu);
  return numa;
}

size_t lastLevelCacheBytes() {
  static const size_t bytes = [] {
    hwloc_topology_t t = machine();
    if (!t) return size_t(0);
    for (hwloc_obj_type_t level : {HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L2CACHE}) {
      size_t total = 0;
      const int n = hwloc_get_nbobjs_by_type(t, level);
      for (int i = 0; i < n; ++i) total += size_t(hwloc_get_obj_by_type(t, level, unsigned(i))->attr->cache.size);
      if (total) return total;
    }
    return size_t(0);
  }();
  return bytes;
}

}  // namespace strata
