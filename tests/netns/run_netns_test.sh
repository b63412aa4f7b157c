#!/usr/bin/env bash
# Multi-host test: ranks on two (and three) "hosts" made of network namespaces
# joined by veth through a bridge, talking TCP; runs the whole collective
# matrix on each layout. Exit 77 (skipped) only when namespaces cannot be made.
set -u
rank_bin=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/netns_lib.sh"

if ! netns_available; then
  echo "SKIP: network namespaces need root and iproute2 (ip netns add failed)"
  exit 77
fi
netns_setup 3
port=$(( 30000 + $$ % 20000 ))
failed=0

# run_layout NAME HOSTS...: rank r runs on host HOSTS[r].
run_layout() {
  local name=$1; shift
  local hosts=("$@") n=$#
  local root_addr; root_addr=$(netns_addr "${hosts[0]}")
  port=$((port + 1))
  echo "== $name: $n ranks on hosts ${hosts[*]}"
  local pids=()
  for ((r = 0; r < n; r++)); do
    local h=${hosts[$r]}
    ip netns exec "$(netns_name "$h")" env RANK=$r WORLD_SIZE=$n STRATA_COMM_ID="$root_addr:$port" \
      STRATA_HOSTID="node$h" STRATA_TIMEOUT_MS=60000 STRATA_DEBUG=${STRATA_DEBUG:-WARN} timeout 240 "$rank_bin" &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  if [ $rc -ne 0 ]; then echo "FAILED: $name"; failed=1; else echo "ok: $name"; fi
}

run_layout "two hosts, one rank each" 0 1
run_layout "two hosts, 2 + 1 ranks (shm inside, tcp across)" 0 0 1
run_layout "three hosts, round-robin placement" 0 1 2 0
if [ $failed -ne 0 ]; then exit 1; fi
echo "netns test passed"
