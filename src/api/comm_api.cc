// extern "C" entry points for versions, errors and communicator lifetime.
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "api/entry.h"
#include "device/device_ops.h"
#include "bootstrap/rendezvous.h"
#include "bootstrap/slurm_rendezvous.h"
#include "core/comm.h"
#include "core/error.h"
#include "core/log.h"
#include "obs/dump_signal.h"
#include "obs/op_record.h"

using namespace strata;

namespace {

Config configFor(const strataConfig_t* user) {
  Config cfg = readConfig();
  if (user) {
    if (user->size < sizeof(size_t) + 2 * sizeof(unsigned) || user->magic != STRATA_CONFIG_MAGIC)
      fail(strataInvalidArgument, "the config was not set from STRATA_CONFIG_INITIALIZER (bad size or magic)");
    if (user->version != STRATA_CONFIG_VERSION)
      fail(strataInvalidArgument, "the config has version %u; this library knows version %u",
           user->version, STRATA_CONFIG_VERSION);
    if (user->blocking != 1 && user->blocking != 0)
      fail(strataInvalidArgument, "config.blocking must be 0 or 1, not %d", user->blocking);
    if (user->timeoutMs == 0 || user->timeoutMs < -1)
      fail(strataInvalidArgument, "config.timeoutMs must be positive or -1 (default), not %d",
           user->timeoutMs);
    if (user->timeoutMs > 0) cfg.timeoutMs = user->timeoutMs;
  }
  if (cfg.timeoutMs <= 0) cfg.timeoutMs = 600000;
  return cfg;
}

// Listens for the rendezvous on `port` (0: ephemeral) and starts the root.
uint16_t startRoot(uint16_t port, const Secret& secret, int timeoutMs) {
  SockAddr bind;
  bind.port = port;
  Fd listener = listenOn(bind);
  uint16_t bound = localAddr(listener.get()).port;
  startRendezvousRoot(std::move(listener), secret, timeoutMs);
  return bound;
}

void initComm(strataComm_t* out, int nranks, const strataUniqueId& id, int rank,
              const strataConfig_t* user) {
  if (!out) fail(strataInvalidArgument, "the output communicator pointer is NULL");
  *out = nullptr;
  if (nranks < 1 || nranks > kMaxRanks)
    fail(strataInvalidArgument, "nranks must be between 1 and %d, not %d", kMaxRanks, nranks);
  if (rank < 0 || rank >= nranks)
    fail(strataInvalidArgument, "rank %d is out of range for nranks %d", rank, nranks);
  UniqueIdData data;
  std::string why;
  if (!decodeUniqueId(id, &data, &why)) fail(strataInvalidArgument, "%s", why.c_str());
  Config cfg = configFor(user);
  bool dumpOnSignal = cfg.dumpOnSignal && cfg.flightRecorderEntries > 0;
  Comm* c = new Comm(nranks, rank, data, std::move(cfg));
  registerComm(c);
  if (dumpOnSignal) installDumpSignal(dumpAllComms);
  *out = reinterpret_cast<strataComm_t>(c);
}

}  // namespace

extern "C" {

strataResult_t strataGetVersion(int* version) {
  Comm* none = nullptr;
  return guarded("strataGetVersion", none, [&] {
    if (!version) fail(strataInvalidArgument, "the version pointer is NULL");
    *version = STRATA_VERSION_CODE;
  });
}

const char* strataGetErrorString(strataResult_t result) {
  switch (result) {
    case strataSuccess: return "no error";
    case strataInProgress: return "operation in progress";
    case strataInvalidArgument: return "invalid argument";
    case strataInvalidUsage: return "invalid usage";
    case strataSystemError: return "system error (socket, shared memory or memory)";
    case strataRemoteError: return "remote error (a peer failed, exited or aborted)";
    case strataTimeout: return "timeout waiting for a peer";
    case strataMismatch: return "ranks called mismatched operations";
    case strataUnsupported: return "unsupported";
    case strataInternalError: return "internal error";
    default: return "unknown result code";
  }
}

const char* strataGetLastError(strataComm_t comm) {
  if (!comm) return threadLastError();
  try {
    return liveComm(comm, "strataGetLastError")->lastError();
  } catch (...) {
    return "strataGetLastError: not a live communicator";
  }
}

strataResult_t strataGetUniqueId(strataUniqueId* uniqueId) {
  Comm* none = nullptr;
  return guarded("strataGetUniqueId", none, [&] {
    if (!uniqueId) fail(strataInvalidArgument, "the unique id pointer is NULL");
    Config cfg = configFor(nullptr);
    UniqueIdData d;
    d.secret = randomSecret();
    if (!cfg.commId.empty()) {
      d.root = parseHostPort(cfg.commId);
      startRoot(d.root.port, d.secret, cfg.timeoutMs);
    } else {
      d.root = cfg.socketIfname.empty() ? defaultHostAddr() : interfaceAddr(cfg.socketIfname);
      d.root.port = startRoot(0, d.secret, cfg.timeoutMs);
    }
    encodeUniqueId(d, uniqueId);
  });
}

strataResult_t strataCommInitRank(strataComm_t* comm, int nranks, strataUniqueId id, int rank) {
  Comm* none = nullptr;
  return guarded("strataCommInitRank", none, [&] { initComm(comm, nranks, id, rank, nullptr); });
}

strataResult_t strataCommInitRankConfig(strataComm_t* comm, int nranks, strataUniqueId id, int rank,
                                        strataConfig_t* config) {
  Comm* none = nullptr;
  return guarded("strataCommInitRankConfig", none,
                 [&] { initComm(comm, nranks, id, rank, config); });
}

strataResult_t strataCommInitFromEnv(strataComm_t* comm) {
  Comm* none = nullptr;
  return guarded("strataCommInitFromEnv", none, [&] {
    Config cfg = configFor(nullptr);
    if (cfg.envRank < 0 || cfg.envSize < 1)
      fail(strataInvalidUsage,
           "no launcher variables found: set RANK and WORLD_SIZE (torchrun), run under mpirun "
           "(OMPI_COMM_WORLD_RANK/SIZE) or srun (SLURM_PROCID/SLURM_NTASKS)");
    std::string rootText = cfg.commId;
    if (rootText.empty() && cfg.masterAddr.empty() && cfg.envLauncher == "slurm") {
      rootText = slurmRendezvous(cfg.envRank);
      if (!rootText.empty() && cfg.envRank == 0)
        STRATA_INFO("rendezvous at %s, from the srun step (first node, job and step ids)", rootText.c_str());
    }
    if (rootText.empty()) {
      if (cfg.masterAddr.empty() || cfg.masterPort.empty())
        fail(strataInvalidUsage, "no rendezvous address: set STRATA_COMM_ID=host:port or MASTER_ADDR and MASTER_PORT "
                                 "(under srun they are derived from the step's variables)");
      // MASTER_PORT itself belongs to torch's store under torchrun: use the next one.
      int port = std::atoi(cfg.masterPort.c_str());
      if (port <= 0 || port >= 65535) fail(strataInvalidArgument, "MASTER_PORT=%s is not a port", cfg.masterPort.c_str());
      rootText = cfg.masterAddr + ":" + std::to_string(port + 1);
    }
    UniqueIdData d;
    d.root = parseHostPort(rootText);
    d.secret = secretFromText(cfg.commSecret.empty() ? "strata-env:" + rootText : cfg.commSecret);
    if (cfg.envRank == 0) startRoot(d.root.port, d.secret, cfg.timeoutMs);
    strataUniqueId id;
    encodeUniqueId(d, &id);
    initComm(comm, cfg.envSize, id, cfg.envRank, nullptr);
  });
}

strataResult_t strataCommDestroy(strataComm_t comm) {
  Comm* c = nullptr;
  return guarded("strataCommDestroy", c, [&] {
    Comm* live = liveComm(comm, "strataCommDestroy");
    if (live->fusionContexts > 0)
      fail(strataInvalidUsage, "strataCommDestroy: destroy this communicator's fusion contexts first "
           "(strataFusionDestroy)");
    unregisterComm(live);
    delete live;
  });
}

strataResult_t strataCommAbort(strataComm_t comm) {
  Comm* c = nullptr;
  return guarded("strataCommAbort", c, [&] {
    Comm* live = liveComm(comm, "strataCommAbort");
    unregisterComm(live);
    live->abort();
    delete live;
  });
}

strataResult_t strataCommShrink(strataComm_t comm, const int* excludeRanks, int excludeCount,
                                strataComm_t* newcomm) {
  Comm* c = nullptr;
  return guarded("strataCommShrink", c, [&] {
    Comm* live = liveComm(comm, "strataCommShrink");
    if (!newcomm) fail(strataInvalidArgument, "the output communicator pointer is NULL");
    *newcomm = nullptr;
    if (excludeCount < 0 || (excludeCount > 0 && !excludeRanks))
      fail(strataInvalidArgument, "excludeRanks must list excludeCount (%d) ranks", excludeCount);
    std::vector<int> excluded(excludeRanks, excludeRanks + excludeCount);
    std::sort(excluded.begin(), excluded.end());
    for (size_t i = 0; i < excluded.size(); ++i) {
      int r = excluded[i];
      if (r < 0 || r >= live->nranks())
        fail(strataInvalidArgument, "excluded rank %d is out of range for %d ranks", r, live->nranks());
      if (i > 0 && excluded[i - 1] == r) fail(strataInvalidArgument, "rank %d is excluded twice", r);
      if (r == live->rank())
        fail(strataInvalidArgument, "rank %d excludes itself; only surviving ranks call strataCommShrink", r);
    }
    if (live->fusionBusy)
      fail(strataInvalidUsage, "a fusion context on this communicator has tensors in flight");
    if (!live->failed()) drainDeviceQueue(*live);
    Comm* made = live->shrink(excluded);
    registerComm(made);
    *newcomm = reinterpret_cast<strataComm_t>(made);
  });
}

strataResult_t strataCommGetStats(const strataComm_t comm, strataStats_t* stats) {
  Comm* c = nullptr;
  return guarded("strataCommGetStats", c, [&] {
    Comm* live = liveComm(comm, "strataCommGetStats");
    if (!stats) fail(strataInvalidArgument, "the stats pointer is NULL");
    *stats = live->observer().stats();
  });
}

strataResult_t strataCommGetPeerState(const strataComm_t comm, int peer, strataPeerState_t* state) {
  Comm* c = nullptr;
  return guarded("strataCommGetPeerState", c, [&] {
    Comm* live = liveComm(comm, "strataCommGetPeerState");
    if (!state) fail(strataInvalidArgument, "the state pointer is NULL");
    if (peer < 0 || peer >= live->nranks())
      fail(strataInvalidArgument, "peer %d is not a rank of this communicator (0..%d)", peer, live->nranks() - 1);
    auto [seq, coll] = live->lastSeenFromAnyThread(peer);
    state->lastSeq = seq;
    state->lastColl = seq ? statCollOf(coll) : strataStatAllReduce;
    state->thisRankSeq = live->seq();
  });
}

strataResult_t strataCommGetAsyncError(strataComm_t comm, strataResult_t* asyncError) {
  Comm* c = nullptr;
  return guarded("strataCommGetAsyncError", c, [&] {
    Comm* live = liveComm(comm, "strataCommGetAsyncError");
    if (!asyncError) fail(strataInvalidArgument, "the asyncError pointer is NULL");
    *asyncError = live->failCode();
    if (live->failed()) {  // the sentence for strataGetLastError(comm), from this thread
      try {
        live->throwFailed();
      } catch (const Error& e) {
        live->setLastError(e.what());
      }
    }
  });
}

strataResult_t strataCommCount(const strataComm_t comm, int* count) {
  Comm* c = nullptr;
  return guarded("strataCommCount", c, [&] {
    Comm* live = liveComm(comm, "strataCommCount");
    if (!count) fail(strataInvalidArgument, "the count pointer is NULL");
    *count = live->nranks();
  });
}

strataResult_t strataCommUserRank(const strataComm_t comm, int* rank) {
  Comm* c = nullptr;
  return guarded("strataCommUserRank", c, [&] {
    Comm* live = liveComm(comm, "strataCommUserRank");
    if (!rank) fail(strataInvalidArgument, "the rank pointer is NULL");
    *rank = live->rank();
  });
}

}  // extern "C"
