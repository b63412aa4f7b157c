// Logging to stderr or STRATA_DEBUG_FILE at the level set by STRATA_DEBUG
// (NONE, WARN, INFO, TRACE). Cheap when disabled: one integer compare.
#pragma once

namespace strata {

enum class LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

LogLevel logLevel();
void logMessage(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace strata

#define STRATA_LOG(level, ...)                                              \
  do {                                                                      \
    if (::strata::logLevel() >= ::strata::LogLevel::level)                 \
      ::strata::logMessage(::strata::LogLevel::level, __VA_ARGS__);         \
  } while (0)
#define STRATA_WARN(...) STRATA_LOG(kWarn, __VA_ARGS__)
#define STRATA_INFO(...) STRATA_LOG(kInfo, __VA_ARGS__)
#define STRATA_TRACE(...) STRATA_LOG(kTrace, __VA_ARGS__)
