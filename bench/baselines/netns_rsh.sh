#!/usr/bin/env bash
# An rsh agent for mpirun (plm_rsh_agent) that "logs in" to a host that is a
# network namespace: STRATA_NETNS_MAP="198.18.10.2=strataNNNh1 ..." maps each
# host address to its namespace. Usage (by mpirun): netns_rsh.sh HOST COMMAND...
host=$1
shift
for pair in $STRATA_NETNS_MAP; do
  if [ "${pair%%=*}" = "$host" ]; then
    exec ip netns exec "${pair#*=}" /bin/sh -c "$*"
  fi
done
echo "netns_rsh: no namespace for host $host" >&2
exit 1
