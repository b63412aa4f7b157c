#!/usr/bin/env bash
# The sanitizer and fuzz jobs (scripts/test.sh runs them; CI with it):
#   build-asan/  clang, AddressSanitizer + UndefinedBehaviorSanitizer (every report
#                fatal) and libFuzzer: the unit tests, the multi-process tests over
#                every transport at 3 ranks, the hierarchical algorithms on pretend
#                nodes, large grouped send/recv, the failure, fusion, observability
#                and recovery tests, and each fuzz target for STRATA_FUZZ_SECONDS (30).
#   build-tsan/  ThreadSanitizer: the threaded parts (fusion contexts' threads, the
#                bootstrap root thread, the SIGUSR1 dump thread) and their callers.
# Both build the emulated device (STRATA_CUDA=EMULATED, kernels/cuda/emulated) and
# run the GPU tier's device-buffer tests on it (ctest -L emulated): the device
# path's queue, proxy thread, staging and cuda_ipc steps, without a GPU.
# Usage: scripts/sanitize.sh [asan|tsan]   (both by default)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
jobs=${1:-all}
clang_build() {  # dir, sanitizers, extra cmake args...
  local dir=$1 san=$2
  shift 2
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DSTRATA_SANITIZE="$san" -DSTRATA_BUILD_BENCH=OFF -DSTRATA_CUDA=EMULATED \
    "$@" >/dev/null
  cmake --build "$dir" --parallel "$(nproc)"
}
# A parameterized test's ctest name ends in " # GetParam() = ...": its label is followed by a space.
# CI's 30 minutes: ASan runs every forced algorithm of TopoFileAlgorithms on one placement each (both
# transports, both pretend-node shapes among them; the plain ctest run has all ten), and TSan the device
# path's threads on 2 and 3 ranks (the 4-rank and two-node device placements run in the plain and ASan tiers).
multiproc='Collectives.*/(shm_3ranks|tcp_3ranks_2sockets|ofi_3ranks_tcp|ucx_3ranks_tcp)( |$)'
multiproc+='|KilledRank.*/(shm_3|tcp_4|ofi_3_tcp|ucx_3_tcp)( |$)|GroupFusion.*/shm_3ranks( |$)|FusionContextTest.*/3ranks( |$)'
multiproc+='|^Forced/TopoFileAlgorithms\..*/(hier|hier_tree|hier_halving_shm|log_flat_shm_3nodes|hier_ring_tcp_3nodes|auto_tcp_3nodes)( |$)'
multiproc+='|^Sizes/RingShift\.|^Placements/MappedMemory.*/3ranks_cma_refused|^MappedMemory\.'
multiproc+='|^(BadInput|Kinds/Mismatch|SilentRank|Strangers|P2P|FusionContext|GroupFusion|FlightRecorder'
multiproc+='|Recovery|Stats|Trace|Barrier|RecvAnyErrors|Transports/RecvAny|Launchers/InitFromEnv|InitFromEnvErrors|TopoFileErrors)\.'
# No more parenthesised groups here: CMake's regular expressions are small
# (a tenth group failed to compile, and ctest then selected no test; now
# run_ctest.sh makes that an error).
multiproc+='|^TinyPath\.|^WorldSizes/TinyPath\..*/3ranks '
# One thread each and no clock in them: the planners' symbolic runs, the device
# kernels' CPU bodies, the fuzzers (a fixed time each). They run two at a time,
# a core each (ctest -j 2): under ASan they took 270 of the 316 s of 'unit|fuzz'.
# Every other test runs alone, as the tests that time a wait need.
paired='^(HierPlans|HierSweep|Radix|Layouts/HierExec|AllDtypesAndOps/CudaBodyTest)\.|^fuzz\.'
if [ "$jobs" = all ] || [ "$jobs" = asan ]; then
  clang_build build-asan address,undefined -DSTRATA_FUZZ=ON -DSTRATA_FUZZ_SECONDS="${STRATA_FUZZ_SECONDS:-30}"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
  export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  scripts/run_ctest.sh build-asan -L 'unit|fuzz' -R "$paired" -j 2
  scripts/run_ctest.sh build-asan -L 'unit|fuzz' -E "$paired"
  scripts/run_ctest.sh build-asan -L multiproc -R "$multiproc"
  scripts/run_ctest.sh build-asan -L emulated
fi
if [ "$jobs" = all ] || [ "$jobs" = tsan ]; then
  clang_build build-tsan thread
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp
  # (Less HierPlans' symbolic runs on clusters up to 64 x 8: one thread, nothing for TSan, 27 s.)
  scripts/run_ctest.sh build-tsan -L unit -R 'Fusion|Plan|FlightRecorder|Tiny' \
    -E '^HierPlans\.(EveryRankFinishesOnClusters|HierarchicalRingsSendTheMinimum)'
  # SigusrDump's forked case is left out: TSan cannot start threads in a child
  # of a multi-threaded process (it dies saying so), which is that case.
  scripts/run_ctest.sh build-tsan -L multiproc \
    -R '^(FusionContext|Recovery|Strangers|Stats)\.|^TinyPath\.[SR]|^Parent/SigusrDump\..*/Fresh( |$)|FusionContextTest.*/3ranks( |$)|Collectives.*/shm_3ranks( |$)'
  scripts/run_ctest.sh build-tsan -L emulated \
    -R '^Device(Streams|Ipc)\.|/DeviceCollectives\..*/(2ranks_ipc|3ranks_ipc_small_slots|2ranks_host_staging)( |$)'
fi
