#include "obs/trace_sink.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/config.h"
#include "core/error.h"

namespace strata {

namespace {

std::mutex& openMutex() {
  static std::mutex mu;
  return mu;
}
TraceSink* gSink = nullptr;

void flushAtExit() {
  if (gSink) gSink->flush();
}


}  // namespace

TraceSink::TraceSink(FILE* f, int pid, const std::string& path) : file_(f), pid_(pid), path_(path) {}

TraceSink& TraceSink::open(const std::string& pattern, int rank) {
  std::lock_guard<std::mutex> lock(openMutex());
  if (gSink) return *gSink;
  std::string path = expandFilePattern(pattern, rank);
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f)
    fail(strataSystemError, "STRATA_TRACE_FILE: cannot create %s: %s", path.c_str(), std::strerror(errno));
  std::fputs("[\n", f);
  gSink = new TraceSink(f, rank, path);  // lives until the process ends
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  gSink->write(format("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":"
                      "\"rank %d (pid %d, %s)\"}}",
                      rank, rank, int(getpid()), jsonEscape(host).c_str()));
  gSink->write(format("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":"
                      "{\"sort_index\":%d}}", rank, rank));
  std::atexit(flushAtExit);
  return *gSink;
}

int TraceSink::addThread(const std::string& name) {
  int tid;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tid = nextTid_++;
  }
  write(format("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
               pid_, tid, jsonEscape(name).c_str()));
  return tid;
}

void TraceSink::write(const std::string& eventJson) {
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(eventJson.data(), 1, eventJson.size(), file_);
  std::fputs(",\n", file_);
}

void TraceSink::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  std::fflush(file_);
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += format("\\u%04x", c);
        else out += c;
    }
  }
  return out;
}

}  // namespace strata
