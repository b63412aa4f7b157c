// Per-transport micro-benchmarks through the C API with a forked peer:
// ping-pong (one round trip per iteration; one-way latency is half) and
// streaming bandwidth (back-to-back sends the peer drains), over shm and
// over forced TCP on this host.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "strata/strata.h"

namespace {

constexpr uint8_t kStop = 0xFF;

// Rank 1: echoes (ping-pong) or drains (stream) until a message starts with kStop.
[[noreturn]] void peer(const strataUniqueId& id, size_t bytes, bool echo) {
  strataComm_t comm;
  if (strataCommInitRank(&comm, 2, id, 1) != strataSuccess) _exit(1);
  std::vector<uint8_t> buf(bytes ? bytes : 1);
  for (;;) {
    if (strataRecv(buf.data(), bytes, strataUint8, 0, comm, nullptr) != strataSuccess) _exit(2);
    if (bytes == 0 || buf[0] == kStop) break;
    if (echo && strataSend(buf.data(), bytes, strataUint8, 0, comm, nullptr) != strataSuccess) _exit(3);
  }
  strataCommDestroy(comm);
  _exit(0);
}

void run(benchmark::State& state, const char* transport, bool echo) {
  const size_t bytes = size_t(state.range(0));
  setenv("STRATA_TRANSPORT", transport, 1);
  strataUniqueId id;
  strataComm_t comm;
  if (strataGetUniqueId(&id) != strataSuccess) return state.SkipWithError("no unique id");
  pid_t pid = fork();
  if (pid == 0) peer(id, bytes, echo);
  if (strataCommInitRank(&comm, 2, id, 0) != strataSuccess) return state.SkipWithError("init failed");
  std::vector<uint8_t> buf(bytes, 1);
  for (auto _ : state) {
    strataSend(buf.data(), bytes, strataUint8, 1, comm, nullptr);
    if (echo) strataRecv(buf.data(), bytes, strataUint8, 1, comm, nullptr);
  }
  buf[0] = kStop;
  strataSend(buf.data(), bytes, strataUint8, 1, comm, nullptr);
  waitpid(pid, nullptr, 0);
  strataCommDestroy(comm);
  unsetenv("STRATA_TRANSPORT");
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes) * (echo ? 2 : 1));
  state.SetLabel(std::string(transport) + (echo ? " ping-pong (time = round trip)" : " stream"));
}

void BM_PingPongShm(benchmark::State& s) { run(s, "shm", true); }
void BM_PingPongTcp(benchmark::State& s) { run(s, "tcp", true); }
void BM_StreamShm(benchmark::State& s) { run(s, "shm", false); }
void BM_StreamTcp(benchmark::State& s) { run(s, "tcp", false); }
BENCHMARK(BM_PingPongShm)->Arg(8)->Arg(4096)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_PingPongTcp)->Arg(8)->Arg(4096)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_StreamShm)->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)->UseRealTime();
BENCHMARK(BM_StreamTcp)->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)->UseRealTime();

}  // namespace
