// Error policy: inside strata, failures are thrown as strata::Error (a result
// code plus a sentence). Every extern "C" entry point catches them once (see
// src/api/entry.h) and turns them into a strataResult_t plus last-error text.
// Nothing throws across the C boundary; destructors never throw.
#pragma once

#include <stdexcept>
#include <string>

#include "strata/strata.h"

namespace strata {

class Error : public std::runtime_error {
 public:
  Error(strataResult_t code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}
  strataResult_t code() const { return code_; }

 private:
  strataResult_t code_;
};

// A peer's ABORT frame, rethrown here with its code. Callers that know what
// this rank was waiting for add it, so a chain of waits names the culprit.
class PeerAbort : public Error {
 public:
  using Error::Error;
};

// Formats like printf into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

[[noreturn]] void fail(strataResult_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Throws strataSystemError naming `what` and errno's text.
[[noreturn]] void failErrno(const char* what);

}  // namespace strata
