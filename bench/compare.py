#!/usr/bin/env python3
"""Side-by-side comparison of strata with the baselines, in one run.

Scenarios:
  local  N ranks on this host: strata-perf vs Open MPI's mpi-perf (shared memory)
  netns  2 ranks in two network namespaces joined by veth (optionally shaped,
         --rate 2gbit): strata-perf vs iperf3 --bidir between the same namespaces

Each measurement is repeated --reps times, libraries alternating run by run so
that drift on a shared machine hits all alike; tables give the median with
min and max, and the ratio of medians. Python standard library only.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "bench")
ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+-?\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def run(cmd, env=None, timeout=600):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        sys.exit(f"command failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    return out.stdout


def parse_rows(text):
    """{bytes: (time_us, busbw)} from a strata-perf / mpi-perf table (out-of-place columns)."""
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m.group(1))] = (float(m.group(3)), float(m.group(5)))
    return rows


def perf_args(coll, size, iters, warmup):
    return [coll, "-b", str(size), "-e", str(size), "-n", str(iters), "-w", str(warmup), "-c", "0"]


def stats(values):
    return statistics.median(values), min(values), max(values)


def fmt(values, unit):
    med, lo, hi = stats(values)
    return f"{med:.3g} {unit} ({lo:.3g}–{hi:.3g})"


def machine():
    cpu = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, {platform.platform()}"


def local(args):
    sizes = [(8, args.small_iters, 1000), (64 << 20, args.large_iters, 2)]
    results = {}
    for rep in range(args.reps):
        for lib in (["strata", "openmpi"] if rep % 2 == 0 else ["openmpi", "strata"]):
            for size, iters, warm in sizes:
                pa = perf_args("all_reduce", size, iters, warm)
                if lib == "strata":
                    text = run([os.path.join(BUILD, "strata-perf")] + pa + ["-np", str(args.np)])
                else:
                    text = run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.np),
                                "--bind-to", "core", "--mca", "btl", "self,vader",
                                os.path.join(BUILD, "mpi-perf")] + pa)
                t, bw = parse_rows(text)[size]
                results.setdefault((lib, size), []).append((t, bw))
    print(f"## local: all_reduce float32 sum, {args.np} ranks on one host\n")
    print(f"Machine: {machine()}. Repetitions: {args.reps}, alternating.\n")
    print("| size | metric | strata | Open MPI | strata / Open MPI |")
    print("| ---: | --- | --- | --- | ---: |")
    for size, _, _ in sizes:
        s, o = results[("strata", size)], results[("openmpi", size)]
        if size <= 4096:
            st, ot = [x[0] for x in s], [x[0] for x in o]
            print(f"| {size} B | latency | {fmt(st, 'µs')} | {fmt(ot, 'µs')} | "
                  f"{statistics.median(st) / statistics.median(ot):.2f}× the time |")
        else:
            sb, ob = [x[1] for x in s], [x[1] for x in o]
            print(f"| {size >> 20} MiB | busbw | {fmt(sb, 'GB/s')} | {fmt(ob, 'GB/s')} | "
                  f"{statistics.median(sb) / statistics.median(ob):.2f}× the bandwidth |")


def sh(cmd):
    subprocess.run(["bash", "-c", cmd], check=True)


def iperf_bidir(ns, server_addr, seconds):
    """iperf3 --bidir from namespace ns to the server: GB/s of the slower direction."""
    last = ""
    for _ in range(50):  # the server may not listen yet
        res = subprocess.run(["ip", "netns", "exec", ns, "iperf3", "-c", server_addr, "-p", "5299",
                              "--bidir", "-t", str(seconds), "-J"], capture_output=True, text=True)
        if res.returncode == 0:
            end = json.loads(res.stdout)["end"]
            fwd = end["sum_received"]["bits_per_second"]
            rev = end["sum_received_bidir_reverse"]["bits_per_second"]
            return min(fwd, rev) / 8e9
        last = res.stdout[-500:] + res.stderr[-500:]
        subprocess.run(["sleep", "0.2"])
    sys.exit(f"iperf3 --bidir to {server_addr} kept failing: {last}")


def netns(args):
    lib = os.path.join(ROOT, "scripts", "netns_lib.sh")
    script = f"""
set -e
source {lib}
netns_setup 2 {args.rate or ''}
a=$(netns_addr 0); b=$(netns_addr 1)
echo "$(netns_name 0) $(netns_name 1) $a $b"
sleep {10**6} & wait $!  # in the background, so SIGTERM runs the cleanup trap at once
"""
    # Keep the namespaces alive in a helper shell for the whole comparison.
    helper = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    server = None
    try:
        ns0, ns1, a, b = helper.stdout.readline().split()
        server = subprocess.Popen(["ip", "netns", "exec", ns1, "iperf3", "-s", "-p", "5299"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        size = 64 << 20
        iperf, strata = [], []
        for rep in range(args.reps):
            order = ["iperf3", "strata"] if rep % 2 == 0 else ["strata", "iperf3"]
            for what in order:
                if what == "iperf3":
                    iperf.append(iperf_bidir(ns0, b, args.iperf_seconds))
                else:
                    port = 29600 + rep
                    procs = []
                    for r, ns in enumerate((ns0, ns1)):
                        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", STRATA_COMM_ID=f"{a}:{port}",
                                   STRATA_HOSTID=f"node{r}")
                        procs.append(subprocess.Popen(["ip", "netns", "exec", ns, os.path.join(BUILD, "strata-perf")]
                                                      + perf_args("all_reduce", size, args.large_iters, 2),
                                                      env=env, stdout=subprocess.PIPE, text=True))
                    text = procs[0].communicate(timeout=600)[0]
                    procs[1].wait(timeout=60)
                    strata.append(parse_rows(text)[size][1])
        rate = f", links shaped to {args.rate} with tbf" if args.rate else ", unshaped veth"
        print(f"## netns: all_reduce float32 sum 64 MiB, 2 ranks in two namespaces{rate}\n")
        print(f"Machine: {machine()}. Repetitions: {args.reps}, alternating.\n")
        print("| what | per-direction throughput | strata / iperf3 |")
        print("| --- | --- | ---: |")
        print(f"| iperf3 --bidir (both directions busy) | {fmt(iperf, 'GB/s')} | |")
        print(f"| strata all_reduce busbw | {fmt(strata, 'GB/s')} | "
              f"{statistics.median(strata) / statistics.median(iperf):.2f} |")
    finally:
        if server:
            server.kill()
            server.wait()
        os.killpg(helper.pid, 15)  # the helper's EXIT trap removes the namespaces
        helper.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", choices=["local", "netns"])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--small-iters", type=int, default=20000)
    p.add_argument("--large-iters", type=int, default=10)
    p.add_argument("--rate", default="", help="tbf rate for netns links, e.g. 2gbit")
    p.add_argument("--iperf-seconds", type=int, default=5)
    args = p.parse_args()
    local(args) if args.scenario == "local" else netns(args)


if __name__ == "__main__":
    main()
