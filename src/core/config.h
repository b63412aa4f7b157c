// Every environment variable strata reads is read here, and only here.
// docs/ENVIRONMENT.md lists them; at STRATA_DEBUG=INFO, init prints them.
#pragma once

#include <cstddef>
#include <string>

#include "core/log.h"

namespace strata {

// Process-wide settings fixed at first use (logging).
struct GlobalConfig {
  LogLevel logLevel = LogLevel::kWarn;  // STRATA_DEBUG
  std::string debugFile;                // STRATA_DEBUG_FILE (%h host, %p pid)
};
const GlobalConfig& globalConfig();
// Reads STRATA_DEBUG / STRATA_DEBUG_FILE again (log.cc calls it in a forked child).
void reloadGlobalConfig();

// Settings read anew at each communicator init, so that a process (or a
// forked test rank) can change them between communicators.
struct Config {
  int timeoutMs = 600000;          // STRATA_TIMEOUT_MS (the config struct wins when set)
  std::string algo;                // STRATA_ALGO: ring | recursive_doubling | tree | chain
  std::string transport;           // STRATA_TRANSPORT: "" (auto) | shm | tcp | ofi | ucx (every link)
  std::string net;                 // STRATA_NET: "" (auto) | tcp | ofi | ucx (links between hosts)
  std::string ofiProvider;         // STRATA_OFI_PROVIDER: libfabric provider (efa, verbs, tcp, shm, ...)
  int ofiRails = 0;                // STRATA_OFI_RAILS: endpoints (NICs) per rank; 0: every efa/verbs NIC
  size_t netSlotBytes = 262144;    // STRATA_NET_SLOT_BYTES: packet size of ofi / ucx links
  int netSlots = 16;               // STRATA_NET_SLOTS: packets in flight per ofi / ucx link
  std::string hostId;              // STRATA_HOSTID: overrides hostname+boot id
  std::string socketIfname;        // STRATA_SOCKET_IFNAME: interface for data sockets
  std::string commId;              // STRATA_COMM_ID: host:port of the rendezvous root
  std::string commSecret;          // STRATA_COMM_SECRET: shared secret for env init
  std::string topoFile;            // STRATA_TOPO_FILE: load the topology instead of detecting it
  std::string topoDumpFile;        // STRATA_TOPO_DUMP_FILE: write the topology as JSON (%r: rank)
  std::string intraLink;           // STRATA_INTRA_LINK: "alpha_us,GB/s" for links inside a node
  std::string interLink;           // STRATA_INTER_LINK: "alpha_us,GB/s" for a node's network link
  bool linkProbe = true;           // STRATA_LINK_PROBE: measure the network link at init (0: don't)
  size_t chunkBytes = 524288;      // STRATA_CHUNK_BYTES: pipeline slice per ring step
  bool tinyPath = true;            // STRATA_TINY_PATH=0: one-packet plans run as any other (exec/tiny_run.h)
  size_t shmSlotBytes = 524288;    // STRATA_SHM_SLOT_BYTES
  int shmSlots = 8;                // STRATA_SHM_SLOTS
  // Single copy between ranks of one host (transports/shm/single_copy.h).
  bool shmSingleCopy = true;       // STRATA_SHM_SINGLE_COPY=0: always through the ring
  size_t shmSingleCopyBytes = 0;   // STRATA_SHM_SINGLE_COPY_BYTES: from this packet size (0: measured)
  // STRATA_SHM_STREAMING: how large packets are stored into the ring
  // (transports/shm/store_mode.h): -1 (unset) measured per link, 0 cached, 1 streaming.
  int shmStreaming = -1;
  // STRATA_STREAM_OUTPUT_BYTES: a call touching at least this many bytes on a
  // rank (its output, and its input apart from it: bytesTouched) writes its
  // output with streaming stores where no flow reads it again
  // (exec/executor.cc); -1 (unset): this rank's share of the host's
  // last-level cache; 0: never.
  long long streamOutputBytes = -1;
  size_t tcpBufferBytes = 4 << 20; // STRATA_TCP_BUFFER_BYTES: user-space staging per socket
  int tcpSockets = 2;              // STRATA_TCP_SOCKETS: connections per peer (1..16)
  // STRATA_FUSION_THRESHOLD: largest fused buffer (0: no fusion of grouped collectives).
  size_t fusionThresholdBytes = size_t(64) << 20;
  int fusionCycleUs = 1000;        // STRATA_FUSION_CYCLE_US: fusion context flush period
  // Device buffers (src/device): pinned host staging, a ring of slots.
  size_t deviceStagingBytes = size_t(8) << 20;  // STRATA_DEVICE_STAGING_BYTES: one slot (a pipeline chunk)
  int deviceStagingSlots = 4;                   // STRATA_DEVICE_STAGING_SLOTS: chunks in flight
  // STRATA_CUDA_IPC=0: collectives on device buffers of a one-host communicator
  // stage through the host too, instead of reading each other's slots over CUDA IPC.
  bool cudaIpc = true;
  // STRATA_DEVICE_WAIT_KERNEL=1: a device step's stream waits for the host
  // with a one-thread polling kernel instead of the driver's stream wait.
  bool deviceWaitKernel = false;
  // Observability (src/obs).
  std::string traceFile;           // STRATA_TRACE_FILE: Chrome trace per process (%r rank, %p pid)
  bool statsAtDestroy = false;     // STRATA_STATS=1: print the statistics at destroy
  int flightRecorderEntries = 256; // STRATA_FLIGHT_RECORDER_ENTRIES: operations kept (0: off)
  std::string flightRecorderFile;  // STRATA_FLIGHT_RECORDER_FILE: dump target (%r, %p); "" = stderr
  bool dumpOnSignal = true;        // STRATA_FLIGHT_RECORDER_SIGNAL=0: no SIGUSR1 handler

  // Launcher variables (torchrun, Open MPI, Slurm) for strataCommInitFromEnv.
  int envRank = -1, envSize = -1, envLocalRank = -1;
  std::string envLauncher;         // which launcher the values came from
  std::string masterAddr, masterPort;

  std::string describe() const;    // one line per variable, for INFO logs
};
Config readConfig();
// The smallest output written with streaming stores (LinkSet::streamedOutputBytes)
// under `c` on a host whose last-level caches hold `cacheBytes` (0: unknown)
// for `ranksOnHost` ranks: STRATA_STREAM_OUTPUT_BYTES, or this rank's share
// of the cache; ~0 (never) for 0 or an unknown cache.
size_t streamedOutputBytesOf(const Config& c, size_t cacheBytes, size_t ranksOnHost);
// Bytes a link buffers each way under `c`: the smallest over the transports
// (shm slots, network slots, TCP socket buffers); ring plans must fit in it.
size_t linkCapacityOf(const Config& c);
// A file name from a setting with its placeholders filled: %r the rank, %p the pid.
std::string expandFilePattern(std::string pattern, int rank);

}  // namespace strata
