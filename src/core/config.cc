#include "core/config.h"

#include <algorithm>
#include <cstdlib>
#include <strings.h>
#include <unistd.h>

#include "core/error.h"

namespace strata {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

std::string envString(const char* name) {
  const char* v = env(name);
  return v ? v : "";
}

long long envInt(const char* name, long long fallback) {
  const char* v = env(name);
  if (!v) return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || x < 0) {
    STRATA_WARN("ignoring %s=%s: not a non-negative integer", name, v);
    return fallback;
  }
  return x;
}

LogLevel parseLevel(const char* v) {
  if (!v) return LogLevel::kWarn;
  if (!strcasecmp(v, "NONE")) return LogLevel::kNone;
  if (!strcasecmp(v, "INFO")) return LogLevel::kInfo;
  if (!strcasecmp(v, "TRACE")) return LogLevel::kTrace;
  return LogLevel::kWarn;
}

// Fills rank/size from the first launcher whose variables are present.
void readLauncher(Config& c) {
  struct Launcher { const char* name; const char* rank; const char* size; const char* local; };
  static const Launcher launchers[] = {
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
  };
  for (const Launcher& l : launchers) {
    if (env(l.rank) && env(l.size)) {
      c.envLauncher = l.name;
      c.envRank = int(envInt(l.rank, -1));
      c.envSize = int(envInt(l.size, -1));
      c.envLocalRank = int(envInt(l.local, -1));
      return;
    }
  }
}

}  // namespace

namespace {
GlobalConfig readGlobal() {
  GlobalConfig c;
  c.logLevel = parseLevel(env("STRATA_DEBUG"));
  c.debugFile = envString("STRATA_DEBUG_FILE");
  return c;
}
GlobalConfig& global() {
  static GlobalConfig g = readGlobal();
  return g;
}
}  // namespace

const GlobalConfig& globalConfig() { return global(); }

// A forked child is a new process: it reads the logging settings anew (its
// environment may differ, and %p in the log file name is its own pid).
void reloadGlobalConfig() { global() = readGlobal(); }

Config readConfig() {
  Config c;
  c.timeoutMs = int(envInt("STRATA_TIMEOUT_MS", c.timeoutMs));
  c.algo = envString("STRATA_ALGO");
  c.transport = envString("STRATA_TRANSPORT");
  c.net = envString("STRATA_NET");
  c.ofiProvider = envString("STRATA_OFI_PROVIDER");
  c.ofiRails = int(std::max<long long>(0, std::min<long long>(envInt("STRATA_OFI_RAILS", 0), 16)));
  c.netSlotBytes = size_t(envInt("STRATA_NET_SLOT_BYTES", (long long)c.netSlotBytes));
  c.netSlots = int(envInt("STRATA_NET_SLOTS", c.netSlots));
  c.hostId = envString("STRATA_HOSTID");
  c.socketIfname = envString("STRATA_SOCKET_IFNAME");
  c.commId = envString("STRATA_COMM_ID");
  c.commSecret = envString("STRATA_COMM_SECRET");
  c.topoFile = envString("STRATA_TOPO_FILE");
  c.topoDumpFile = envString("STRATA_TOPO_DUMP_FILE");
  c.intraLink = envString("STRATA_INTRA_LINK");
  c.interLink = envString("STRATA_INTER_LINK");
  c.linkProbe = envInt("STRATA_LINK_PROBE", 1) != 0;
  c.chunkBytes = size_t(envInt("STRATA_CHUNK_BYTES", (long long)c.chunkBytes));
  c.tinyPath = envInt("STRATA_TINY_PATH", 1) != 0;
  c.shmSlotBytes = size_t(envInt("STRATA_SHM_SLOT_BYTES", (long long)c.shmSlotBytes));
  c.shmSlots = int(envInt("STRATA_SHM_SLOTS", c.shmSlots));
  c.shmSingleCopy = envInt("STRATA_SHM_SINGLE_COPY", 1) != 0;
  c.shmSingleCopyBytes = size_t(std::max<long long>(0, envInt("STRATA_SHM_SINGLE_COPY_BYTES", 0)));
  c.shmStreaming = int(std::min<long long>(envInt("STRATA_SHM_STREAMING", -1), 1));
  c.streamOutputBytes = std::max<long long>(-1, envInt("STRATA_STREAM_OUTPUT_BYTES", -1));
  c.tcpBufferBytes = size_t(envInt("STRATA_TCP_BUFFER_BYTES", (long long)c.tcpBufferBytes));
  c.tcpSockets = int(envInt("STRATA_TCP_SOCKETS", c.tcpSockets));
  c.fusionThresholdBytes =
      size_t(envInt("STRATA_FUSION_THRESHOLD", (long long)c.fusionThresholdBytes));
  c.fusionCycleUs = int(std::min<long long>(envInt("STRATA_FUSION_CYCLE_US", c.fusionCycleUs), 60000000));
  c.deviceStagingBytes = size_t(envInt("STRATA_DEVICE_STAGING_BYTES", (long long)c.deviceStagingBytes));
  c.deviceStagingSlots = int(envInt("STRATA_DEVICE_STAGING_SLOTS", c.deviceStagingSlots));
  c.cudaIpc = envInt("STRATA_CUDA_IPC", 1) != 0;
  c.deviceWaitKernel = envInt("STRATA_DEVICE_WAIT_KERNEL", 0) != 0;
  c.traceFile = envString("STRATA_TRACE_FILE");
  c.statsAtDestroy = envInt("STRATA_STATS", 0) != 0;
  c.flightRecorderEntries =
      int(std::min<long long>(envInt("STRATA_FLIGHT_RECORDER_ENTRIES", c.flightRecorderEntries), 1 << 20));
  c.flightRecorderFile = envString("STRATA_FLIGHT_RECORDER_FILE");
  c.dumpOnSignal = envInt("STRATA_FLIGHT_RECORDER_SIGNAL", 1) != 0;
  if (c.tcpSockets < 1) c.tcpSockets = 1;
  if (c.tcpSockets > 16) c.tcpSockets = 16;
  if (c.chunkBytes < 4096) c.chunkBytes = 4096;
  // At most 128 MiB: a slot's word holds its packet's length in 28 bits (shm_ring.h).
  c.shmSlotBytes = std::min<size_t>(std::max<size_t>(c.shmSlotBytes, 4096), size_t(128) << 20);
  if (c.shmSlots < 2) c.shmSlots = 2;
  c.deviceStagingBytes = std::min<size_t>(std::max<size_t>(c.deviceStagingBytes, 4096), size_t(1) << 30);
  c.deviceStagingSlots = std::min(std::max(c.deviceStagingSlots, 2), 64);
  if (c.tcpBufferBytes < (1 << 16)) c.tcpBufferBytes = 1 << 16;
  c.netSlotBytes = std::min<size_t>(std::max<size_t>(c.netSlotBytes, 4096), size_t(64) << 20);
  c.netSlots = std::min(std::max(c.netSlots, 2), 4096);
  readLauncher(c);
  c.masterAddr = envString("MASTER_ADDR");
  c.masterPort = envString("MASTER_PORT");
  return c;
}

std::string expandFilePattern(std::string path, int rank) {
  for (size_t at; (at = path.find("%r")) != std::string::npos;) path.replace(at, 2, std::to_string(rank));
  for (size_t at; (at = path.find("%p")) != std::string::npos;) path.replace(at, 2, std::to_string(getpid()));
  return path;
}

std::string Config::describe() const {
  return format(
      "STRATA_TIMEOUT_MS=%d STRATA_ALGO=%s STRATA_TRANSPORT=%s STRATA_HOSTID=%s "
      "STRATA_SOCKET_IFNAME=%s STRATA_COMM_ID=%s STRATA_TOPO_FILE=%s STRATA_INTRA_LINK=%s "
      "STRATA_INTER_LINK=%s STRATA_LINK_PROBE=%d STRATA_CHUNK_BYTES=%zu STRATA_TINY_PATH=%d "
      "STRATA_SHM_SLOT_BYTES=%zu STRATA_SHM_SLOTS=%d STRATA_SHM_SINGLE_COPY=%d "
      "STRATA_SHM_SINGLE_COPY_BYTES=%s STRATA_SHM_STREAMING=%s STRATA_STREAM_OUTPUT_BYTES=%s "
      "STRATA_TCP_BUFFER_BYTES=%zu STRATA_TCP_SOCKETS=%d "
      "STRATA_FUSION_THRESHOLD=%zu STRATA_FUSION_CYCLE_US=%d STRATA_NET=%s STRATA_OFI_PROVIDER=%s "
      "STRATA_OFI_RAILS=%d STRATA_NET_SLOT_BYTES=%zu STRATA_NET_SLOTS=%d STRATA_TRACE_FILE=%s "
      "STRATA_STATS=%d STRATA_FLIGHT_RECORDER_ENTRIES=%d STRATA_FLIGHT_RECORDER_FILE=%s "
      "STRATA_FLIGHT_RECORDER_SIGNAL=%d STRATA_DEVICE_STAGING_BYTES=%zu STRATA_DEVICE_STAGING_SLOTS=%d "
      "STRATA_CUDA_IPC=%d STRATA_DEVICE_WAIT_KERNEL=%d",
      timeoutMs, algo.empty() ? "auto" : algo.c_str(),
      transport.empty() ? "auto" : transport.c_str(), hostId.empty() ? "(detected)" : hostId.c_str(),
      socketIfname.empty() ? "(any)" : socketIfname.c_str(),
      commId.empty() ? "(unset)" : commId.c_str(), topoFile.empty() ? "(detect)" : topoFile.c_str(),
      intraLink.empty() ? "(default)" : intraLink.c_str(), interLink.empty() ? "(probe)" : interLink.c_str(),
      int(linkProbe), chunkBytes, int(tinyPath), shmSlotBytes, shmSlots, int(shmSingleCopy),
      shmSingleCopyBytes ? std::to_string(shmSingleCopyBytes).c_str() : "(measured)",
      shmStreaming < 0 ? "(measured)" : shmStreaming ? "1" : "0",
      streamOutputBytes < 0 ? "(cache)" : std::to_string(streamOutputBytes).c_str(),
      tcpBufferBytes, tcpSockets, fusionThresholdBytes, fusionCycleUs,
      net.empty() ? "auto" : net.c_str(), ofiProvider.empty() ? "(preference)" : ofiProvider.c_str(),
      ofiRails, netSlotBytes, netSlots, traceFile.empty() ? "(off)" : traceFile.c_str(),
      int(statsAtDestroy), flightRecorderEntries,
      flightRecorderFile.empty() ? "(stderr)" : flightRecorderFile.c_str(), int(dumpOnSignal),
      deviceStagingBytes, deviceStagingSlots, int(cudaIpc), int(deviceWaitKernel));
}

size_t streamedOutputBytesOf(const Config& c, size_t cacheBytes, size_t ranksOnHost) {
  constexpr size_t kNever = ~size_t(0);
  if (c.streamOutputBytes >= 0) return c.streamOutputBytes ? size_t(c.streamOutputBytes) : kNever;
  if (cacheBytes == 0) return kNever;
  return std::max<size_t>(1, cacheBytes / std::max<size_t>(1, ranksOnHost));
}

size_t linkCapacityOf(const Config& c) {
  const size_t shm = c.shmSlotBytes * size_t(c.shmSlots);
  const size_t net = c.netSlotBytes * size_t(c.netSlots);
  return std::min({shm, net, c.tcpBufferBytes});
}

}  // namespace strata
