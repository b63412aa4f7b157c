#!/usr/bin/env bash
# A private one-host Slurm cluster for tests: its own munge daemon and key,
# slurmctld and slurmd on free ports, all state under DIR, nothing in /etc.
#   tests/slurm/slurm_cluster.sh start DIR   # then: SLURM_CONF=DIR/slurm.conf srun ...
#   tests/slurm/slurm_cluster.sh stop DIR
# start exits 77 when Slurm or munge is not installed (scripts/setup.sh installs
# slurmctld, slurmd, slurm-client and munge) or the daemons need root and this is not.
set -euo pipefail
cmd=$1
dir=$2

stop() {
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  # Wait for them to go, so that the next cluster can have the ports.
  for _ in $(seq 50); do
    alive=0
    for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
      [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && alive=1
    done
    [ $alive = 0 ] && return 0
    sleep 0.1
  done
}

# A port below Linux's ephemeral range that nothing listens on.
free_port() {
  local p
  for ((p = $1; p < 32000; p += 7)); do
    if ! ss -Htln "sport = :$p" | grep -q .; then echo $p; return; fi
  done
  return 1
}

if [ "$cmd" = stop ]; then stop; exit 0; fi

for prog in munged slurmctld slurmd srun; do
  command -v "$prog" >/dev/null || { echo "SKIP: $prog is not installed (scripts/setup.sh installs Slurm and munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: this test's slurmd runs as root"; exit 77; }
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
head -c 1024 /dev/urandom >"$dir/munge.key"
chmod 600 "$dir/munge.key"
munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munge.seed"
ctld_port=$(free_port $((18000 + $$ % 6000)))
slurmd_port=$(free_port $((ctld_port + 1)))
host=$(hostname -s)
cat >"$dir/slurm.conf" <<CONF
ClusterName=strata-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -i
slurmd
for _ in $(seq 100); do  # the node registers within a few seconds
  if sinfo -h -o %t 2>/dev/null | grep -qx idle; then echo "slurm: one-host cluster up ($dir)"; exit 0; fi
  sleep 0.2
done
echo "slurm: the node did not come up; logs:"
tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" || true
stop
exit 1
