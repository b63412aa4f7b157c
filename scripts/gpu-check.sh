#!/usr/bin/env bash
# The GPU checks, for a machine with an NVIDIA GPU (the device tool's H100 or
# H200; carry .gpu-deps from scripts/gpu-deps.sh there):
#
#   scripts/gpu-check.sh [tests] [bench] [torch] [compare]   (no argument: all)
#
# Every run builds strata with CUDA into build-gpu/ (incrementally), then:
#   tests: the GPU tier (ctest -L gpu): every kernel x dtype x op against the
#          float64 reference and bit for bit against the kernel body on the
#          CPU, stream ordering, the multi-tensor copy, and device-buffer
#          collectives on 2, 3 and 4 ranks sharing the GPU; a skipped test is a
#          failure here. Then compute-sanitizer memcheck and racecheck on a
#          subset of the kernel tests.
#   bench: the kernel benchmark beside the device's own copy
#          (strata-gpu-kernels), and device-buffer collectives (strata-perf -G 1,
#          ranks sharing the GPU, over cuda_ipc and staged through the host),
#          checked (-c 1) and timed.
#   torch: strata_torch built against the machine's torch, and its CUDA tests
#          (pytest -k cuda: every collective on CUDA tensors, ProcessGroupNCCL's
#          stream rules, DDP and FSDP2, a dead peer).
#   compare: bench/compare.py's gpu scenario (strata, NCCL and Gloo on device
#          buffers, side by side) with 1 rank (NCCL takes one rank per GPU) and
#          with 2 sharing the GPU: docs/benchmarks/gpu.md and gpu-np2.md
#          (GPU_CHECK_COMPARE_NP="1" runs the first alone; GPU_CHECK_COMPARE_REPS
#          and GPU_CHECK_COMPARE_COLLECTIVES shorten it for a short lease).
# Each part replaces its own section of the report, docs/benchmarks/gpu-check.md (or
# $STRATA_GPU_REPORT), so parts run in separate calls add up to one report. A
# part rewrites its section after each of its steps, and a part stopped by a
# time limit (SIGTERM: the device tool's, or `timeout`) leaves its section
# with what it had done, marked as cut short.
# With the device tool's $OUT set, the report, logs.tgz (every step's output)
# and reports.tgz (docs/benchmarks/gpu*) are left there.
# Exit 77 when no GPU is visible.
set -euo pipefail
cd "$(dirname "$0")/.."
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(tests bench torch compare)
for part in "${parts[@]}"; do
  case $part in tests|bench|torch|compare) ;;
    *) echo "gpu-check: unknown part '$part' (tests, bench, torch, compare)" >&2; exit 2;; esac
done
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU visible (nvidia-smi -L failed); run this on a GPU machine" >&2
  exit 77
fi
export PATH="$PATH:/usr/local/cuda/bin"  # nvcc and compute-sanitizer, where PATH lacks them
report=${STRATA_GPU_REPORT:-docs/benchmarks/gpu-check.md}
deps=$PWD/.gpu-deps/root
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON)
if [ -d "$deps" ]; then  # carried packages (scripts/gpu-deps.sh)
  cmake_args+=(-DCMAKE_PREFIX_PATH="$deps/usr")
  # hwloc.pc names prefix=/usr; where the machine has pkg-config it must point here.
  sed -i "s|^prefix=.*|prefix=$deps/usr|" "$deps/usr/lib/x86_64-linux-gnu/pkgconfig/hwloc.pc"
  libs="$deps/usr/lib/x86_64-linux-gnu"
  # libhwloc needs libudev.so.1: the machine's own where it has one, else the carried one.
  ldconfig -p 2>/dev/null | grep 'libudev\.so\.1 ' >/dev/null || libs+=":$PWD/.gpu-deps/fallback"
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
log=$(mktemp -d)
# On any exit (a part's failure, or the device tool's time limit), bring back
# what there is: the report so far and every step's log.
part_now=""  # the part running, whose section the trap writes from what it has if time runs out
bring_back() {
  if [ -n "$part_now" ] && declare -F "report_$part_now" >/dev/null; then
    cut_short=1 "report_$part_now" 2>/dev/null || true
  fi
  if [ -n "${OUT:-}" ]; then  # the device tool brings back few files: the report, then two archives
    cp "$report" "$OUT/gpu-check.md" 2>/dev/null || true
    tar czf "$OUT/logs.tgz" -C "$log" . 2>/dev/null || true
    tar czf "$OUT/reports.tgz" docs/benchmarks/gpu* 2>/dev/null || true
  fi
  rm -rf "$log"
}
trap bring_back EXIT
step() { echo "== gpu-check [${SECONDS}s]: $*" >&2; }

step "build (build-gpu/)"
cmake -S . -B build-gpu "${cmake_args[@]}" >"$log/configure.txt" 2>&1 || { tail -40 "$log/configure.txt"; exit 1; }
# Only what the parts use: the GPU tests, the two benchmarks and libstrata.so.
cmake --build build-gpu --parallel "$(nproc)" --target strata gpu_tests gpu_multiproc_tests strata-perf \
  strata-gpu-kernels strata-gpu-staging >"$log/build.txt" 2>&1 || { tail -40 "$log/build.txt"; exit 1; }

status=0
machine="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1); $(nproc) CPU cores; $(nvcc --version | tail -1 | sed 's/^Build //')"

# section NAME: the report's section NAME becomes stdin (kept between markers).
section() {
  python3 scripts/report_section.py "$report" "$1" "# GPU checks and benchmarks (scripts/gpu-check.sh)"
}

# The kernel tests compute-sanitizer runs: the stream and multi-copy tests and five kernel cases.
subset='CudaKernelStream.*:CudaMultiCopy.*'
for c in float32_sum bfloat16_avg float16_max int8_prod uint64_min; do
  subset+=":AllDtypesAndOps/CudaKernelTest.EveryCaseMatchesTheReference/$c"
done

run_tests() {
  step "GPU tier (ctest -L gpu)"
  # The kernel tests (one process each) side by side; the multi-process ones,
  # whose ranks share the GPU and time out dead peers, one at a time.
  ctest --test-dir build-gpu -L gpu -E '^(Device|SharedGpu)' -j 8 --output-on-failure \
    >"$log/ctest.txt" 2>&1 || status=1
  # A short communicator timeout, so that a device step that never finishes
  # is an error naming where it waits, well inside the test's own limit.
  STRATA_TIMEOUT_MS=${STRATA_TIMEOUT_MS:-30000} ctest --test-dir build-gpu -L gpu -R '^(Device|SharedGpu)' \
    --output-on-failure >>"$log/ctest.txt" 2>&1 || status=1
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|\*\*\*|Total Test time" "$log/ctest.txt" >&2 || true
  if grep -q "No tests were found\|CMake Error" "$log/ctest.txt"; then
    echo "gpu-check: ctest found no GPU tests (see the log's CMake errors)" >&2
    status=1
  fi
  if grep -q "Not Run\|Skipped" "$log/ctest.txt"; then
    echo "gpu-check: GPU tests were skipped on a machine with a GPU" >&2
    status=1
  fi
  report_tests
  step "compute-sanitizer memcheck and racecheck"
  local sanitizer tool
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
  for tool in memcheck racecheck; do
    if [ -z "$sanitizer" ]; then
      echo "compute-sanitizer not found" >"$log/$tool.txt"
      status=1
      continue
    fi
    "$sanitizer" --tool "$tool" --error-exitcode 3 build-gpu/tests/gpu_tests --gtest_filter="$subset" \
      >"$log/$tool.txt" 2>&1 || status=1
    tail -3 "$log/$tool.txt" >&2
  done
  report_tests
}

# The note a section gets when its part's time ran out (the trap writes it).
cut_short_note() {
  if [ -n "${cut_short:-}" ]; then
    echo
    echo "**Cut short:** this part's time ran out after $SECONDS s; what follows is what it had done."
  fi
}

report_tests() {
  local tool
  {
    echo "## GPU tests"
    cut_short_note
    echo
    echo "$(date -u +%Y-%m-%d), $machine."
    echo
    echo "\`ctest --test-dir build-gpu -L gpu\`:"
    echo
    echo '```'
    grep -m 30 -E "tests passed|tests failed|\(Failed\)|\(Skipped\)|\(Timeout\)|Total Test time" "$log/ctest.txt" 2>/dev/null || true
    echo '```'
    echo
    echo "compute-sanitizer (\`--gtest_filter=$subset\`):"
    echo
    for tool in memcheck racecheck; do
      if [ -f "$log/$tool.txt" ]; then
        echo "- $tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|not found" "$log/$tool.txt" | tail -n 1 || true)"
      else
        echo "- $tool: did not run"
      fi
    done
  } | section tests
}

run_bench() {
  step "kernel benchmark (strata-gpu-kernels)"
  build-gpu/bench/strata-gpu-kernels -s 256 -r 20 -J "$log/kernels.json" >"$log/kernels.md" || status=1
  step "host staging's hand-overs (strata-gpu-staging)"
  timeout 60 build-gpu/bench/strata-gpu-staging -n 500 >"$log/staging.md" || status=1
  report_bench
  step "device-buffer collectives (strata-perf -G 1)"
  local np coll
  # Each run bounded (a hang costs two minutes, not the lease) and its output
  # line-buffered, so that what it printed before a kill is kept.
  # GPU_CHECK_PERF_SECONDS and STRATA_TIMEOUT_MS shorten both for a short lease.
  run_perf() {
    STRATA_TIMEOUT_MS=${STRATA_TIMEOUT_MS:-30000} timeout -k 5 "${GPU_CHECK_PERF_SECONDS:-120}" \
      stdbuf -oL build-gpu/bench/strata-perf "$@"
  }
  for np in 2 4; do
    for coll in all_reduce reduce_scatter all_gather; do
      STRATA_CUDA_IPC=1 run_perf "$coll" -np "$np" -G 1 -b 8 -e 256M -f 4 -n 10 -w 3 -c 1 \
        >"$log/perf_${coll}_${np}_ipc.txt" 2>&1 || status=1
      report_bench
    done
    STRATA_CUDA_IPC=0 run_perf all_reduce -np "$np" -G 1 -b 8 -e 256M -f 4 -n 10 -w 3 -c 1 \
      >"$log/perf_all_reduce_${np}_host_staging.txt" 2>&1 || status=1
    report_bench
    [ "$np" = 2 ] || continue
    # The staged path's wait for the host, the driver's stream wait against a polling kernel.
    STRATA_CUDA_IPC=0 STRATA_DEVICE_WAIT_KERNEL=1 run_perf all_reduce -np 2 -G 1 -b 8 -e 1M -f 4 -n 10 -w 3 -c 1 \
      >"$log/perf_all_reduce_2_host_staging_wait_kernel.txt" 2>&1 || status=1
    report_bench
  done
}

# The bench section from the logs there are so far.
report_bench() {
  local f
  {
    echo "## Benchmarks"
    cut_short_note
    echo
    echo "$(date -u +%Y-%m-%d), $machine."
    echo
    echo "### Reduction kernel vs the device's own copy (\`build-gpu/bench/strata-gpu-kernels -s 256 -r 20\`)"
    echo
    cat "$log/kernels.md" 2>/dev/null || echo "(did not run)"
    echo
    echo "Target (issue 6): the reduction (two inputs, one output, float32 and bfloat16, 256 MiB) at >= 90% of"
    echo "the device-to-device copy's bandwidth, both counting bytes read and written."
    echo
    echo "### Host staging's hand-overs (\`build-gpu/bench/strata-gpu-staging -n 500\`)"
    echo
    cat "$log/staging.md" 2>/dev/null || echo "(did not run)"
    echo
    echo "### Device-buffer collectives (\`strata-perf COLL -np N -G 1 -b 8 -e 256M -f 4 -n 10 -w 3 -c 1\`)"
    echo
    echo "Ranks share the one GPU. \`_ipc\`: STRATA_CUDA_IPC=1, the ranks reduce in each other's device slots"
    echo "(cuda_ipc); \`_host_staging\`: STRATA_CUDA_IPC=0, each piece is staged through pinned host memory and"
    echo "reduced over the host transports (shared memory); \`_wait_kernel\`: the same with"
    echo "STRATA_DEVICE_WAIT_KERNEL=1 (the stream waits for the host with a polling kernel, not"
    echo "cuStreamWaitValue64). One GPU's memory, not NVLink."
    echo
    echo "Target (issue 6): all_reduce at 256 MiB over cuda_ipc >= 5x the busbw of torch's gloo on CUDA"
    echo "tensors (the compare part below), 8 B latency <= 30 us."
    for f in "$log"/perf_*.txt; do
      [ -f "$f" ] || continue
      echo
      echo "$(basename "$f" .txt):"
      echo
      echo '```'
      cat "$f"
      echo '```'
    done
  } | section bench
}

run_torch() {
  step "strata_torch against this machine's torch, and its CUDA tests (pytest -k cuda)"
  local python=${PYTHON:-python3}
  torch_version=$("$python" -c 'import torch; print(torch.__version__)')
  STRATA_BUILD_DIR=build-gpu MAX_JOBS=$(nproc) "$python" -m pip install -q --no-build-isolation --no-deps \
    --disable-pip-version-check ./plugins/torch >"$log/torch_build.txt" 2>&1 || {
    tail -30 "$log/torch_build.txt"
    status=1
    report_torch
    return
  }
  # -v: a line per test as it ends, so a run cut short still says which passed.
  (cd plugins/torch/tests && "$python" -m pytest test_backend.py -k cuda -rs -v -p no:cacheprovider) \
    >"$log/torch_tests.txt" 2>&1 || status=1
  tail -5 "$log/torch_tests.txt" >&2
  if grep -qi "skipped" "$log/torch_tests.txt"; then
    echo "gpu-check: strata_torch CUDA tests were skipped on a machine with a GPU" >&2
    status=1
  fi
  report_torch
}

report_torch() {
  {
    echo "## strata_torch on CUDA tensors"
    cut_short_note
    echo
    echo "$(date -u +%Y-%m-%d), $machine; torch ${torch_version:-?}."
    echo
    if grep -q "error" "$log/torch_build.txt" 2>/dev/null; then
      echo "The plugin did not build (\`pip install ./plugins/torch\`):"
      echo
      echo '```'
      grep -m 10 "error" "$log/torch_build.txt" || true
      echo '```'
    else
      echo "\`pytest plugins/torch/tests/test_backend.py -k cuda -v\`:"
      echo
      echo '```'
      grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$log/torch_tests.txt" 2>/dev/null | tail -20 || true
      echo '```'
    fi
  } | section torch
}

run_compare() {
  step "side by side with NCCL and Gloo (bench/compare.py gpu)"
  local np
  for np in ${GPU_CHECK_COMPARE_NP:-1 2}; do
    STRATA_BUILD_DIR=build-gpu "${PYTHON:-python3}" bench/compare.py gpu --np "$np" --reps "${GPU_CHECK_COMPARE_REPS:-2}" \
      --collectives "${GPU_CHECK_COMPARE_COLLECTIVES:-all_reduce,reduce_scatter,all_gather}" \
      >"$log/compare_$np.txt" 2>&1 || { tail -20 "$log/compare_$np.txt"; status=1; }
  done
  {
    echo "## Side by side with NCCL and Gloo"
    echo
    echo "bench/compare.py gpu (docs/benchmarks/gpu.md: 1 rank, where NCCL runs; gpu-np2.md: 2 ranks sharing the GPU)."
  } | section compare
}

for part in "${parts[@]}"; do
  part_now=$part
  "run_$part"
  part_now=""
  step "$part done (status so far $status)"
done
step "report: $report (status $status)"
exit $status
