#!/usr/bin/env bash
# Installs what strata needs on a Debian machine, idempotently: only missing
# packages are installed, so a second run takes a second.
# Usage: scripts/setup.sh [test|bench]   (bench adds iperf3)
set -euo pipefail
# openmpi-bin + libopenmpi-dev: strataCommInitMPI and the PyTorch backend are tested under mpirun.
# libfabric-dev, libucx-dev: the headers of the ofi and ucx transports (the libraries load at run time).
# clang + libclang-rt-14-dev: the sanitizer and libFuzzer builds of scripts/sanitize.sh.
# libsimgrid-dev: strata-sim (bench/sim), the planner's plans replayed on simulated clusters.
# slurmctld, slurmd, slurm-client, munge: srun launches on a one-host Slurm cluster (tests/slurm).
want=(build-essential cmake ninja-build pkg-config libgtest-dev libgmock-dev libbenchmark-dev iproute2 libhwloc-dev
      nlohmann-json3-dev openmpi-bin libopenmpi-dev libfabric-dev libucx-dev clang libclang-rt-14-dev libsimgrid-dev
      slurmctld slurmd slurm-client munge)
if [ "${1:-test}" = bench ]; then
  want+=(libopenmpi-dev iperf3)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
