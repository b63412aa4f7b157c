#include "api/entry.h"

#include <atomic>
#include <mutex>
#include <unordered_set>

#include "core/error.h"
#include "core/log.h"

namespace strata {

namespace {

thread_local std::string tlsLastError = "no error";

// The live set, plus a generation bumped on every change so that a thread can
// trust the handle it validated last without taking the lock again.
struct CommRegistry {
  std::mutex mu;
  std::unordered_set<Comm*> live;
  std::atomic<uint64_t> generation{1};
};
// The handle this thread validated last, and the registry's generation then:
// one thread-local object, so that the check costs one TLS lookup (a call
// to __tls_get_addr in a shared library), not one per variable.
struct LastValidated {
  Comm* comm = nullptr;
  uint64_t generation = 0;
};
thread_local LastValidated tlsLast;
CommRegistry& registry() {
  static CommRegistry* r = new CommRegistry();  // outlives static destructors
  return *r;
}

bool breaksComm(strataResult_t code) {
  return code == strataRemoteError || code == strataTimeout || code == strataMismatch ||
         code == strataSystemError || code == strataInternalError;
}

}  // namespace

void setThreadLastError(const std::string& s) { tlsLastError = s; }
const char* threadLastError() { return tlsLastError.c_str(); }

void registerComm(Comm* c) {
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().live.insert(c);
  registry().generation.fetch_add(1);
}

void unregisterComm(Comm* c) {
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().live.erase(c);
  registry().generation.fetch_add(1);
}

Comm* liveComm(strataComm_t handle, const char* fn) {
  if (!handle) fail(strataInvalidArgument, "%s: the communicator is NULL", fn);
  Comm* c = reinterpret_cast<Comm*>(handle);
  uint64_t gen = registry().generation.load(std::memory_order_acquire);
  LastValidated& last = tlsLast;
  if (c == last.comm && gen == last.generation) return c;
  std::lock_guard<std::mutex> lock(registry().mu);
  last.comm = nullptr;
  if (registry().live.count(c)) {
    last.comm = c;
    last.generation = registry().generation.load();
  } else
    fail(strataInvalidArgument, "%s: %p is not a live communicator (destroyed, aborted, or never created)",
         fn, static_cast<void*>(handle));
  return c;
}

void dumpAllComms() {
  std::lock_guard<std::mutex> lock(registry().mu);
  for (Comm* c : registry().live) c->dumpFlightRecorder("SIGUSR1");
}

strataResult_t reportError(const char* fn, Comm* comm, strataResult_t code, const std::string& what) {
  std::string sentence = what.rfind(fn, 0) == 0 ? what : std::string(fn) + ": " + what;
  if (comm) {
    sentence = format("%s (rank %d of %d)", sentence.c_str(), comm->rank(), comm->nranks());
    comm->setLastError(sentence);
    if (breaksComm(code)) comm->markFailed(code, what);
  }
  setThreadLastError(sentence);
  STRATA_WARN("%s", sentence.c_str());
  return code;
}

}  // namespace strata
