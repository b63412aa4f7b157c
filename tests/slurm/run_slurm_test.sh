#!/usr/bin/env bash
# strata-perf launched by srun on a real (one-host) Slurm cluster, with no
# rendezvous variables: strataCommInitFromEnv reads SLURM_PROCID / NTASKS /
# LOCALID and derives rank 0's address and port from the step. Results are
# checked by strata-perf against its reference (#wrong 0); odd world size too.
set -uo pipefail
perf=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
"$here/slurm_cluster.sh" start "$dir"
rc=$?
if [ $rc != 0 ]; then rm -rf "$dir"; exit $rc; fi
trap '"$here/slurm_cluster.sh" stop "$dir"; rm -rf "$dir"' EXIT
export SLURM_CONF=$dir/slurm.conf
unset MASTER_ADDR MASTER_PORT STRATA_COMM_ID RANK WORLD_SIZE LOCAL_RANK
failed=0

# run NRANKS NAME SRUN_ARGS... -- PERF_ARGS...: one step, checked.
run() {
  local nranks=$1 name=$2; shift 2
  local srun_args=()
  while [ "$1" != -- ]; do srun_args+=("$1"); shift; done
  shift
  local out
  out=$(STRATA_TIMEOUT_MS=60000 timeout 180 srun "${srun_args[@]}" "$perf" "$@" 2>&1)
  local code=$?
  if [ $code = 0 ] && grep -q "Out of bounds values : 0 OK" <<<"$out" && grep -q ": $nranks ranks," <<<"$out"; then
    echo "ok: $name"
  else
    echo "$out" | tail -20
    echo "FAILED: $name (srun exit $code)"
    failed=1
  fi
}

run 2 "srun -n 2 strata-perf all_reduce" -n 2 -- all_reduce -b 8 -e 4M -f 16 -c 1
run 3 "srun -n 3 --overcommit strata-perf all_gather" -n 3 --overcommit -- all_gather -b 8 -e 1M -f 32 -c 1
run 3 "srun -n 3 --overcommit strata-perf reduce_scatter" -n 3 --overcommit -- reduce_scatter -b 8 -e 1M -f 32 -c 1
exit $failed
