// The trace file of this process (STRATA_TRACE_FILE): Chrome / Perfetto JSON
// in the array format, one event per line, written as operations end. The
// first communicator with tracing on opens it (%r: its rank, %p: the pid);
// its rank is the process's row (pid) in the viewer, and every communicator
// gets its own thread row. The closing bracket is left off (the format allows
// it), so a file cut short by a crash still loads; tools/strata-trace merges
// the files of all ranks and reports stragglers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace strata {

class TraceSink {
 public:
  // The process's sink, opened on first use with `pattern` (later calls get the
  // same sink whatever their pattern). Throws strataSystemError if the file
  // cannot be created.
  static TraceSink& open(const std::string& pattern, int rank);
  int pid() const { return pid_; }
  // A new thread row named `name`; returns its tid.
  int addThread(const std::string& name);
  // Appends one event (a JSON object without a trailing comma).
  void write(const std::string& eventJson);
  void flush();

 private:
  TraceSink(FILE* f, int pid, const std::string& path);
  std::mutex mu_;
  FILE* file_;
  int pid_;
  int nextTid_ = 1;
  std::string path_;
};

// s with JSON string escapes (quotes not included).
std::string jsonEscape(const std::string& s);

}  // namespace strata
