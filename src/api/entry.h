// The one place where C++ errors become C results. Every extern "C" function
// runs its body through guarded(): strata::Error keeps its code, anything
// else becomes strataInternalError / strataSystemError, and the sentence is
// stored as the thread's and the communicator's last error. A failure that
// leaves the communicator unusable (peer lost, timeout, mismatch) marks it
// failed and tells the other ranks.
#pragma once

#include <string>

#include "core/comm.h"
#include "core/error.h"
#include "strata/strata.h"

namespace strata {

void setThreadLastError(const std::string& s);
const char* threadLastError();

// Live communicators; a handle not in here is rejected (destroyed, aborted, garbage).
void registerComm(Comm* c);
void unregisterComm(Comm* c);
// Throws strataInvalidArgument unless `handle` is a live communicator.
Comm* liveComm(strataComm_t handle, const char* fn);

// Dumps the flight recorder of every live communicator (SIGUSR1).
void dumpAllComms();

strataResult_t reportError(const char* fn, Comm* comm, strataResult_t code, const std::string& what);

// `comm` is read after the body ran, so the body may set it (liveComm).
template <class Body>
strataResult_t guarded(const char* fn, Comm*& comm, Body&& body) noexcept {
  try {
    body();
    return strataSuccess;
  } catch (const Error& e) {
    return reportError(fn, comm, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return reportError(fn, comm, strataSystemError, "out of memory");
  } catch (const std::exception& e) {
    return reportError(fn, comm, strataInternalError, e.what());
  } catch (...) {
    return reportError(fn, comm, strataInternalError, "unknown exception");
  }
}

}  // namespace strata
