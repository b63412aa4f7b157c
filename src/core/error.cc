#include "core/error.h"

#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <vector>

namespace strata {

static std::string vformat(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? size_t(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  return out;
}

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vformat(fmt, args);
  va_end(args);
  return s;
}

void fail(strataResult_t code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vformat(fmt, args);
  va_end(args);
  throw Error(code, std::move(s));
}

void failErrno(const char* what) {
  int e = errno;
  throw Error(strataSystemError, format("%s failed: %s", what, std::strerror(e)));
}

}  // namespace strata
