#!/usr/bin/env bash
# Multi-host test: ranks on 2 to 4 "nodes" made of network namespaces joined
# by veth through a bridge, each node's link shaped to 2 Gbit/s with tbf (so
# the network is slower than shared memory, as between real nodes); runs the
# whole collective matrix on each layout, with hierarchical and flat
# algorithms forced and with the cost model's choice. Exit 77 (skipped) only
# when namespaces cannot be made.
set -u
rank_bin=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/netns_lib.sh"

if ! netns_available; then
  echo "SKIP: network namespaces need root and iproute2 (ip netns add failed)"
  exit 77
fi
netns_setup 4 2gbit
# Ports below 32768, outside Linux's ephemeral range, so that no other rank's
# listener or outgoing connection in the same namespace can already hold it.
port=$(( 20000 + $$ % 12000 ))
failed=0

# run_layout NAME ALGO HOSTS...: rank r runs on host HOSTS[r]; ALGO is
# STRATA_ALGO ("" = the cost model's choice).
run_layout() {
  local name=$1 algo=$2; shift 2
  local hosts=("$@") n=$#
  local root_addr; root_addr=$(netns_addr "${hosts[0]}")
  port=$((port + 1))
  echo "== $name: $n ranks on hosts ${hosts[*]}, algorithm ${algo:-auto}"
  local pids=()
  for ((r = 0; r < n; r++)); do
    local h=${hosts[$r]}
    ip netns exec "$(netns_name "$h")" env RANK=$r WORLD_SIZE=$n STRATA_COMM_ID="$root_addr:$port" \
      STRATA_HOSTID="node$h" STRATA_ALGO="$algo" STRATA_TIMEOUT_MS=60000 STRATA_DEBUG=${STRATA_DEBUG:-WARN} timeout 240 "$rank_bin" &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  if [ $rc -ne 0 ]; then echo "FAILED: $name"; failed=1; else echo "ok: $name"; fi
}

run_layout "two nodes, one rank each" "" 0 1
run_layout "two nodes x 2 ranks, hierarchical rings/chains" hier 0 0 1 1
run_layout "two nodes x 2 ranks, hierarchical trees" hier_tree 0 0 1 1
run_layout "two nodes x 2 ranks round-robin, flat rings/chains" ring 0 1 0 1
run_layout "two nodes x 2 ranks round-robin, flat trees / recursive doubling" tree 0 1 0 1
run_layout "uneven 3 + 1, hierarchical rings/chains" hier 0 0 0 1
run_layout "uneven 3 + 1, hierarchical trees" hier_tree 0 1 0 0
run_layout "three nodes, round-robin placement, cost model" "" 0 1 2 0 1
run_layout "four nodes x 2 ranks round-robin, hierarchical" hier 0 1 2 3 0 1 2 3
run_layout "three nodes x 2 ranks, log-step across nodes (Bruck patterns)" hier_halving 0 0 1 1 2 2
run_layout "uneven 2 + 1 + 2 interleaved, log-step across nodes" hier_halving 0 1 2 0 2
run_layout "four nodes, uneven 2 + 1 + 2 + 1, radix-k across nodes (3 partners at once)" hier_radix 0 1 2 3 0 2
run_layout "four nodes x 2 ranks, cost model" "" 0 0 1 1 2 2 3 3
if [ $failed -ne 0 ]; then exit 1; fi
echo "netns test passed"
