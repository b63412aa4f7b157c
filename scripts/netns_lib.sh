# Helpers for tests and benchmarks that place ranks on "hosts" made of network
# namespaces. Source it, call netns_setup NAME N [RATE], and the EXIT trap
# removes every namespace it made, even when the caller fails.
# Addresses: 198.18.<subnet>.<host+1>/24 (benchmarking range 198.18.0.0/15).
# Hosts hang off a bridge in a hub namespace; RATE (e.g. 2gbit) shapes each
# host's link with tbf in both directions.

NETNS_PREFIX="strata$$"
NETNS_CREATED=()

netns_cleanup() {
  for ns in "${NETNS_CREATED[@]}"; do ip netns del "$ns" 2>/dev/null; done
  NETNS_CREATED=()
}
trap netns_cleanup EXIT INT TERM

# netns_available: 0 if we may create namespaces here (root and iproute2).
netns_available() {
  [ "$(id -u)" = 0 ] && command -v ip >/dev/null && ip netns add "${NETNS_PREFIX}probe" 2>/dev/null &&
    ip netns del "${NETNS_PREFIX}probe"
}

# netns_setup N [RATE]: hosts ${NETNS_PREFIX}h0..h(N-1) with 198.18.<sub>.1..N.
netns_setup() {
  local n=$1 rate=${2:-}
  local sub=$(( ($$ % 200) + 10 ))
  NETNS_HUB="${NETNS_PREFIX}hub"
  ip netns add "$NETNS_HUB"; NETNS_CREATED+=("$NETNS_HUB")
  ip -n "$NETNS_HUB" link add br0 type bridge
  ip -n "$NETNS_HUB" link set br0 up
  ip -n "$NETNS_HUB" link set lo up
  for ((i = 0; i < n; i++)); do
    local ns="${NETNS_PREFIX}h$i"
    ip netns add "$ns"; NETNS_CREATED+=("$ns")
    ip link add "veth$$h$i" netns "$ns" type veth peer name "port$i" netns "$NETNS_HUB"
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "198.18.$sub.$((i + 1))/24" dev "veth$$h$i"
    ip -n "$ns" link set "veth$$h$i" up
    ip -n "$NETNS_HUB" link set "port$i" master br0
    ip -n "$NETNS_HUB" link set "port$i" up
    if [ -n "$rate" ]; then
      ip netns exec "$ns" tc qdisc add dev "veth$$h$i" root tbf rate "$rate" burst 1mbit latency 50ms
      ip netns exec "$NETNS_HUB" tc qdisc add dev "port$i" root tbf rate "$rate" burst 1mbit latency 50ms
    fi
  done
  NETNS_SUBNET=$sub
}

netns_name() { echo "${NETNS_PREFIX}h$1"; }
netns_addr() { echo "198.18.$NETNS_SUBNET.$(( $1 + 1 ))"; }
netns_ifname() { echo "veth$$h$1"; }
