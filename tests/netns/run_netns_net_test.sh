#!/usr/bin/env bash
# Multi-host test of the libfabric and UCX transports: ranks in network
# namespaces joined by veth through a bridge, the links between "nodes" over
# STRATA_NET=ofi (FI_PROVIDER=tcp) and STRATA_NET=ucx (UCX_TLS=tcp); ranks on
# one node use shared memory. World sizes 2, 3 and 4 run the whole collective
# matrix against the reference; then a rank is killed mid-collective and every
# survivor must report an error within 10 s. Exit 77 (skipped) only when
# namespaces cannot be made.
set -u
rank_bin=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/netns_lib.sh"

if ! netns_available; then
  echo "SKIP: network namespaces need root and iproute2 (ip netns add failed)"
  exit 77
fi
netns_setup 3
# Ports below 32768, outside Linux's ephemeral range, so that no other rank's
# listener or outgoing connection in the same namespace can already hold it.
port=$(( 20000 + $$ % 12000 ))
failed=0

# run_layout NET SETTING NAME KILL HOSTS...: rank r on host HOSTS[r]; KILL is
# the rank to kill ("" runs the collective matrix).
run_layout() {
  local net=$1 setting=$2 name=$3 kill=$4; shift 4
  local hosts=("$@") n=$#
  local root_addr; root_addr=$(netns_addr "${hosts[0]}")
  port=$((port + 1))
  echo "== $net ($setting): $name: $n ranks on hosts ${hosts[*]}"
  local pids=()
  for ((r = 0; r < n; r++)); do
    local h=${hosts[$r]}
    ip netns exec "$(netns_name "$h")" env RANK=$r WORLD_SIZE=$n STRATA_COMM_ID="$root_addr:$port" \
      STRATA_HOSTID="node$h" STRATA_NET="$net" "$setting" NETNS_KILL_RANK="$kill" \
      STRATA_TIMEOUT_MS=60000 STRATA_DEBUG=${STRATA_DEBUG:-WARN} timeout 240 "$rank_bin" &
    pids+=($!)
  done
  local rc=0
  for ((r = 0; r < n; r++)); do
    wait "${pids[$r]}"; local code=$?
    if [ -n "$kill" ] && [ "$r" = "$kill" ]; then
      [ $code -eq 137 ] || { echo "rank $r (the victim) exited $code, not killed"; rc=1; }
    elif [ $code -ne 0 ]; then
      echo "rank $r exited $code"; rc=1
    fi
  done
  if [ $rc -ne 0 ]; then echo "FAILED: $net $name"; failed=1; else echo "ok: $net $name"; fi
}

for pair in "ofi FI_PROVIDER=tcp" "ucx UCX_TLS=tcp"; do
  set -- $pair
  run_layout "$1" "$2" "two nodes" "" 0 1
  run_layout "$1" "$2" "three nodes" "" 0 1 2
  run_layout "$1" "$2" "two nodes x 2 ranks (shm inside, $1 between)" "" 0 1 0 1
  run_layout "$1" "$2" "three nodes, rank 2 killed mid-collective" 2 0 1 2
done
if [ $failed -ne 0 ]; then exit 1; fi
echo "netns network-transport test passed"
