#include "core/log.h"

#include <pthread.h>

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>

#include "core/config.h"

namespace strata {

namespace {

std::string expandPath(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') {
        char host[256] = {0};
        gethostname(host, sizeof(host) - 1);
        out += host;
      } else if (c == 'p') {
        out += std::to_string(getpid());
      } else {
        out += '%';
        out += c;
      }
    } else {
      out += pattern[i];
    }
  }
  return out;
}

struct Sink {
  std::mutex mu;
  FILE* file = stderr;
  Sink() {
    const std::string& path = globalConfig().debugFile;
    if (!path.empty()) {
      FILE* f = std::fopen(expandPath(path).c_str(), "a");
      if (f) file = f;
    }
  }
};

Sink* openSink();

Sink& sink() {
  static Sink* s = openSink();  // never destroyed: logging may run during exit
  return *s;
}

// In a forked child, at its first log call: settings read anew (the child
// may have changed its environment since) and the log file reopened (its
// name may hold the pid). The parent's sink is left alone (its mutex may be held).
Sink* childSink = nullptr;
bool forkedChild = false;
void afterFork() { forkedChild = true; }

Sink* openSink() {
  pthread_atfork(nullptr, nullptr, afterFork);
  return new Sink();
}

}  // namespace

LogLevel logLevel() {
  sink();  // registers the fork handler before any fork that matters
  if (forkedChild) {
    forkedChild = false;
    reloadGlobalConfig();
    childSink = new Sink();
  }
  return globalConfig().logLevel;
}

void logMessage(LogLevel level, const char* fmt, ...) {
  static const char* tags[] = {"", "WARN", "INFO", "TRACE"};
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  char body[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(body, sizeof(body), fmt, args);
  va_end(args);
  Sink& s = childSink ? *childSink : sink();
  std::lock_guard<std::mutex> lock(s.mu);
  std::fprintf(s.file, "%s:%d strata %s %s\n", host, int(getpid()), tags[int(level)], body);
  std::fflush(s.file);
}

}  // namespace strata
