#include "api/entry.h"

#include "api/live_registry.h"
#include "core/error.h"
#include "core/log.h"

namespace strata {

namespace {

thread_local std::string tlsLastError = "no error";

using CommRegistry = LiveRegistry<Comm>;

bool breaksComm(strataResult_t code) {
  return code == strataRemoteError || code == strataTimeout || code == strataMismatch ||
         code == strataSystemError || code == strataInternalError;
}

}  // namespace

void setThreadLastError(const std::string& s) { tlsLastError = s; }
const char* threadLastError() { return tlsLastError.c_str(); }

void registerComm(Comm* c) { CommRegistry::get().insert(c); }

void unregisterComm(Comm* c) { CommRegistry::get().erase(c); }

Comm* liveComm(strataComm_t handle, const char* fn) {
  if (!handle) fail(strataInvalidArgument, "%s: the communicator is NULL", fn);
  Comm* c = reinterpret_cast<Comm*>(handle);
  if (!CommRegistry::get().isLive(c))
    fail(strataInvalidArgument, "%s: %p is not a live communicator (destroyed, aborted, or never created)",
         fn, static_cast<void*>(handle));
  return c;
}

void dumpAllComms() {
  CommRegistry::get().forEach([](Comm* c) { c->dumpFlightRecorder("SIGUSR1"); });
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
