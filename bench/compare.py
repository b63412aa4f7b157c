#!/usr/bin/env python3
"""Side-by-side comparison of strata with the libraries users would pick instead,
measured in one run, written to docs/benchmarks/<scenario>.md with PNG plots.

Scenarios:
  local  N ranks on this host: strata-perf, Open MPI (mpi-perf under mpirun,
         shared memory), Gloo (torch.distributed "gloo"); plus this core's
         memcpy / add bandwidth from strata-micro, and before every launch
         a cache line's round trip between two cores (the VM's state).
  netns  2 ranks in two network namespaces joined by veth through a bridge
         (optionally shaped: --rate 2gbit): strata-perf, Open MPI over TCP
         (mpirun in one namespace, an rsh agent enters the other), Gloo, and
         iperf3 --bidir between the same namespaces.
  gpu    N ranks sharing this host's GPU(s), buffers on the device:
         strata-perf -G 1, NCCL (PyTorch's, through gloo_perf.py
         --backend nccl -G 1) and Gloo on CUDA tensors; plus the device's own
         copy bandwidth from strata-gpu-kernels. NCCL refuses two ranks on one
         GPU, so with more ranks than GPUs its column says so (--np 1 on a
         one-GPU machine compares with it). Writes gpu.md for --np 1,
         gpu-np<N>.md otherwise.

Every (library, collective) sweep is repeated --reps times with the library
order alternating run by run, so drift on a shared machine hits all alike.
Tables give the median busbw (min–max) and strata / best other. Small sizes
(<= 64 KiB) run many iterations, so their latencies are not dominated by the
skew of ranks leaving the preceding barrier.
"""
import argparse
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, os.environ.get("STRATA_BUILD_DIR", "build"), "bench")  # build-gpu on the GPU machine
PY = os.path.join(ROOT, ".venv", "bin", "python")
if not os.path.exists(PY):  # a machine with torch installed, no project venv (the GPU machine)
    PY = sys.executable
COLLECTIVES = ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "alltoall"]
SMALL = ("8", "64K", "1000", "100")  # min, max, iterations, warmup
LARGE = ("256K", "64M", "20", "3")
# strata with its buffers from strataMemAlloc (strata-perf -M 1): large sizes only,
# since lending starts at 64 KiB.
MAPPED = "strata (strataMemAlloc)"
ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+-?\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def run(cmd, env=None, timeout=900):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        sys.exit(f"command failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out.stdout


def parse_rows(text, bandwidth="busbw"):
    """{bytes: (time_us, busbw)} from a strata-perf / mpi-perf / gloo-perf table (or algbw)."""
    rows = {}
    column = 5 if bandwidth == "busbw" else 4
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m.group(1))] = (float(m.group(3)), float(m.group(column)))
    return rows


def bandwidth_of(args):
    """With one rank busbw is 0 by definition (nccl-tests'), so the tables give algbw."""
    return "algbw" if args.scenario == "gpu" and args.np == 1 else "busbw"


def sweep_args(coll, rng):
    lo, hi, iters, warm = rng
    return [coll, "-b", lo, "-e", hi, "-f", "4", "-n", iters, "-w", warm, "-c", "0"]


def machine():
    cpu = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB memory, {platform.platform()}"


def available_libraries():
    """strata plus every baseline that is built / installed here."""
    libs = ["strata"]
    if os.path.exists(os.path.join(BENCH, "mpi-perf")):
        libs.append("Open MPI")
    if os.path.exists(PY):
        libs.append("Gloo")
    return libs


class Local:
    """Libraries on one host."""

    # memcpy's rate moves with this VM's memory state as the collectives' do (29-52 GB/s from one
    # run to the next), so it is measured after every repetition and the bound takes the median:
    # measured once, it could land in the other state from the runs it bounds.
    limits_every_rep = True

    def __init__(self, args):
        self.np = args.np
        self.probes = []  # one per launch: {lib, coll, sizes, round_trip_ns}

    def libraries(self):
        libs = available_libraries()
        return libs[:1] + [MAPPED] + libs[1:]

    def ranges(self, lib):
        return (LARGE,) if lib == MAPPED else (SMALL, LARGE)

    def command(self, lib, coll, rng):
        a = sweep_args(coll, rng)
        if lib == "strata":
            return [os.path.join(BENCH, "strata-perf")] + a + ["-np", str(self.np)]
        if lib == MAPPED:
            return [os.path.join(BENCH, "strata-perf")] + a + ["-np", str(self.np), "-M", "1"]
        if lib == "Open MPI":
            return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(self.np), "--bind-to", "core",
                    "--mca", "btl", "self,vader", os.path.join(BENCH, "mpi-perf")] + a
        return [PY, os.path.join(ROOT, "bench", "baselines", "gloo_perf.py")] + a + ["-np", str(self.np)]

    # Before each launch, a cache line's round trip between the first two cores
    # (strata-micro's BM_LineRoundTrip, a tenth of a second): this VM's slow state, in
    # which shared-memory hand-overs cost 3-4x, shows there as 380-460 ns against
    # 97-101 (docs/benchmarks/tiny-calls.md), and it comes and goes within a run.
    SLOW_ROUND_TRIP_NS = 250

    def measure(self, lib, coll, rng):
        self.probes.append({"lib": lib, "coll": coll, "sizes": f"{rng[0]}-{rng[1]}",
                            "round_trip_ns": self.line_round_trip()})
        return parse_rows(run(self.command(lib, coll, rng)))

    def line_round_trip(self):
        micro = os.path.join(BENCH, "strata-micro")
        if not os.path.exists(micro):
            return None
        out = run([micro, "--benchmark_filter=BM_LineRoundTrip", "--benchmark_min_time=0.1",
                   "--benchmark_format=json"])
        runs = [b for b in json.loads(out)["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
        return runs[0]["real_time"] if runs and runs[0].get("time_unit") == "ns" else None

    def limits(self):
        micro = os.path.join(BENCH, "strata-micro")
        if not os.path.exists(micro):
            return []
        out = run([micro, "--benchmark_filter=BM_Memcpy|BM_StreamingCopy|BM_Reduce/8/0/", "--benchmark_repetitions=5",
                   "--benchmark_report_aggregates_only=true", "--benchmark_format=json"])
        res = {b["run_name"]: b["bytes_per_second"] / 1e9 for b in json.loads(out)["benchmarks"]
               if b.get("aggregate_name") == "median"}
        names = {"BM_Memcpy/real_time": ONE_CORE_MEMCPY,
                 "BM_Memcpy/real_time/threads:2": TWO_CORE_MEMCPY,
                 "BM_StreamingCopy/real_time": ONE_CORE_STREAMING,
                 "BM_StreamingCopy/real_time/threads:2": TWO_CORE_STREAMING,
                 "BM_Reduce/8/0/real_time": "float32 add a+b→c, one core (bytes read + written)"}
        return [(names[k], v) for k, v in res.items() if k in names]

    def close(self):
        pass


class Netns:
    """Two ranks in two network namespaces."""

    def __init__(self, args):
        self.rate = args.rate
        script = f"""
set -e
source {os.path.join(ROOT, 'scripts', 'netns_lib.sh')}
netns_setup 2 {self.rate}
echo "$(netns_name 0) $(netns_name 1) $(netns_addr 0) $(netns_addr 1) $(netns_ifname 0) $(netns_ifname 1)"
sleep 1000000 & wait $!  # in the background, so SIGTERM runs the cleanup trap at once
"""
        self.helper = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True,
                                       start_new_session=True)
        words = self.helper.stdout.readline().split()
        self.ns, self.addr, self.ifname = words[0:2], words[2:4], words[4:6]
        self.iperf = subprocess.Popen(["ip", "netns", "exec", self.ns[1], "iperf3", "-s", "-p", "5299"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.port = 29700

    def libraries(self):
        return available_libraries()

    def mpirun(self, coll, rng, shown=False):
        """mpirun inside namespace 0; an rsh agent enters namespace 1 for the second rank."""
        agent = os.path.join(ROOT, "bench", "baselines", "netns_rsh.sh")
        ns0, a0, a1 = ("<ns0>", "<addr0>", "<addr1>") if shown else (self.ns[0], self.addr[0], self.addr[1])
        return (["ip", "netns", "exec", ns0, "env", f"STRATA_NETNS_MAP={a1}={'<ns1>' if shown else self.ns[1]}",
                 "mpirun", "--allow-run-as-root", "-np", "2", "--host", f"{a0},{a1}", "--mca", "plm_rsh_agent", agent,
                 "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "198.18.0.0/15",
                 "--mca", "oob_tcp_if_include", "198.18.0.0/15", "--bind-to", "none",
                 os.path.join(BENCH, "mpi-perf")] + sweep_args(coll, rng))

    def command(self, lib, coll, rng):
        if lib == "Open MPI":
            return self.mpirun(coll, rng, shown=True)
        a = sweep_args(coll, rng)
        tool = ([os.path.join(BENCH, "strata-perf")] if lib == "strata"
                else [PY, os.path.join(ROOT, "bench", "baselines", "gloo_perf.py")])
        env = ("RANK=r WORLD_SIZE=2 STRATA_COMM_ID=<ns0>:port STRATA_HOSTID=node<r>" if lib == "strata"
               else "RANK=r WORLD_SIZE=2 MASTER_ADDR=<ns0> MASTER_PORT=port GLOO_SOCKET_IFNAME=<veth r>")
        return ["ip", "netns", "exec", "<ns r>", "env", env] + tool + a

    def measure(self, lib, coll, rng):
        if lib == "Open MPI":
            return parse_rows(run(self.mpirun(coll, rng)))
        self.port += 2
        procs = []
        for r in (0, 1):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE="2")
            if lib == "strata":
                env.update(STRATA_COMM_ID=f"{self.addr[0]}:{self.port}", STRATA_HOSTID=f"node{r}")
                tool = [os.path.join(BENCH, "strata-perf")]
            else:
                # Gloo finds its interface from the hostname unless told.
                env.update(MASTER_ADDR=self.addr[0], MASTER_PORT=str(self.port), GLOO_SOCKET_IFNAME=self.ifname[r])
                tool = [PY, os.path.join(ROOT, "bench", "baselines", "gloo_perf.py")]
            procs.append(subprocess.Popen(["ip", "netns", "exec", self.ns[r]] + tool + sweep_args(coll, rng),
                                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        try:
            out, err = procs[0].communicate(timeout=600)
            err1 = procs[1].communicate(timeout=120)[1]
        except subprocess.TimeoutExpired:
            for pr in procs:
                pr.kill()
            sys.exit(f"{lib} {coll} hung in the namespaces")
        if procs[1].returncode != 0:
            sys.exit(f"{lib} {coll} rank 1 failed in the namespaces:\n{err1[-1500:]}")
        if procs[0].returncode != 0:
            sys.exit(f"{lib} {coll} failed in the namespaces:\n{out[-1500:]}\n{err[-1500:]}")
        return parse_rows(out)

    def limits(self):
        vals = []
        for _ in range(3):
            for attempt in range(50):
                res = subprocess.run(["ip", "netns", "exec", self.ns[0], "iperf3", "-c", self.addr[1], "-p", "5299",
                                      "--bidir", "-t", "3", "-J"], capture_output=True, text=True)
                if res.returncode == 0:
                    end = json.loads(res.stdout)["end"]
                    vals.append(min(end["sum_received"]["bits_per_second"],
                                    end["sum_received_bidir_reverse"]["bits_per_second"]) / 8e9)
                    break
                time.sleep(0.2)
        return [("iperf3 --bidir between the namespaces, per direction (both busy)", statistics.median(vals))]

    def close(self):
        self.iperf.kill()
        self.iperf.wait()
        os.killpg(self.helper.pid, 15)  # its EXIT trap removes the namespaces
        self.helper.wait()


def med(v):
    return statistics.median(v) if v else None


def cell(v, unit=""):
    if not v:
        return "—"
    return f"{statistics.median(v):.3g}{unit} ({min(v):.3g}–{max(v):.3g})"


def plot(results, libs, coll, path, title, bandwidth="busbw"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    for lib in libs:
        data = results.get((lib, coll), {})
        sizes = sorted(s for s in data if data[s]["bus"])
        if not sizes:
            continue
        ax1.plot(sizes, [med(data[s]["bus"]) for s in sizes], marker="o", label=lib)
        small = [s for s in sizes if s <= 65536]
        ax2.plot(small, [med(data[s]["time"]) for s in small], marker="o", label=lib)
    for ax, ylabel in ((ax1, f"{bandwidth} (GB/s, median)"), (ax2, "time per call (µs, median)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    ax2.set_yscale("log")
    ax1.set_title(f"{coll}: {'bus' if bandwidth == 'busbw' else 'algorithm'} bandwidth")
    ax2.set_title(f"{coll}: small-message latency")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU ")) if out.returncode == 0 else 0


class Gpu:
    """Ranks sharing this host's GPU(s), buffers on the device."""

    def __init__(self, args):
        self.np = args.np
        self.gpus = gpu_count()
        if not self.gpus:
            sys.exit("compare.py gpu: no NVIDIA GPU is visible (nvidia-smi -L); run it on a GPU machine")
        self.notes = []

    def libraries(self):
        libs = ["strata", "NCCL", "Gloo"]
        if self.np > self.gpus:
            self.notes.append(f"NCCL was not run: it needs one GPU per rank, and this machine has {self.gpus} "
                              f"GPU(s) for {self.np} ranks (NCCL refuses ranks sharing a GPU). "
                              f"`--np {self.gpus}` compares with it.")
        return libs

    def command(self, lib, coll, rng):
        a = sweep_args(coll, rng) + ["-G", "1", "-np", str(self.np)]
        if lib == "strata":
            return [os.path.join(BENCH, "strata-perf")] + a
        backend = "nccl" if lib == "NCCL" else "gloo"
        return [PY, os.path.join(ROOT, "bench", "baselines", "gloo_perf.py")] + a + ["--backend", backend]

    def measure(self, lib, coll, rng):
        if lib == "NCCL" and self.np > self.gpus:
            return {}
        return parse_rows(run(self.command(lib, coll, rng)), "algbw" if self.np == 1 else "busbw")

    def limits(self):
        kernels = os.path.join(BENCH, "strata-gpu-kernels")
        if not os.path.exists(kernels):
            return []
        path = os.path.join(BENCH, "gpu_limits.json")
        run([kernels, "-s", "256", "-r", "10", "-J", path])
        saved = json.load(open(path))
        rows = {r["name"]: r for r in saved["rows"]}
        copy = rows.get("device-to-device copy (cudaMemcpyAsync)")
        if not copy:
            return []
        gbs = copy["bytes_moved"] / (statistics.median(copy["ms"]) * 1e6)
        return [(f"{saved['device']}: device-to-device copy, 256 MiB (bytes read + written)", gbs)]

    def close(self):
        pass


def report_name(args):
    if args.scenario == "gpu" and args.np != 1:
        return f"gpu-np{args.np}"
    return args.scenario


def main():
    # A SIGTERM must still run the cleanup (namespaces, servers) in finally blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("compare.py: terminated"))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", choices=["local", "netns", "gpu"])
    p.add_argument("--np", type=int, default=2, help="ranks for the local and gpu scenarios")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--rate", default="", help="tbf rate for the netns links, e.g. 2gbit")
    p.add_argument("--collectives", default=",".join(COLLECTIVES))
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks"))
    p.add_argument("--from-json", help="rewrite the report from a saved <scenario>.json, measuring nothing")
    args = p.parse_args()
    colls = args.collectives.split(",")
    if args.from_json:
        saved = json.load(open(args.from_json))
        results = {tuple(k.split("|")): {int(sz): v for sz, v in d.items()} for k, d in saved["results"].items()}
        return write_report(args, colls, saved["libs"], results, saved["limits"], saved["commands"],
                            saved["date"], saved["argv"], saved.get("notes", []), saved.get("probes", []))
    env = {"local": Local, "netns": Netns, "gpu": Gpu}[args.scenario](args)
    try:
        libs = env.libraries()
        results = {}  # (lib, coll) -> {size: {"time": [...], "bus": [...]}}
        started = time.time()
        rep_limits = []  # the physical limits of each repetition, where the scenario measures them each time
        for rep in range(args.reps):
            order = libs if rep % 2 == 0 else list(reversed(libs))
            for coll in colls:
                for lib in order:
                    for rng in ranges_of(env, lib):
                        for size, (t, bw) in env.measure(lib, coll, rng).items():
                            d = results.setdefault((lib, coll), {}).setdefault(size, {"time": [], "bus": []})
                            d["time"].append(t)
                            d["bus"].append(bw)
            if getattr(env, "limits_every_rep", False):
                rep_limits.append(env.limits())
            print(f"rep {rep + 1}/{args.reps} done after {time.time() - started:.0f} s", file=sys.stderr)
        limits = median_limits(rep_limits) if rep_limits else env.limits()
        commands = {lib: [" ".join(env.command(lib, "COLLECTIVE", rng))
                          for rng in ranges_of(env, lib)] for lib in libs}
    finally:
        env.close()
    # Save the raw measurements first: the report can be rebuilt from them.
    os.makedirs(args.out, exist_ok=True)
    date, argv = time.strftime("%Y-%m-%d"), " ".join(sys.argv[1:])
    notes = getattr(env, "notes", [])
    probes = getattr(env, "probes", [])
    with open(os.path.join(args.out, f"{report_name(args)}.json"), "w") as f:
        json.dump({"libs": libs, "limits": limits, "commands": commands, "date": date, "argv": argv,
                   "notes": notes, "probes": probes,
                   "results": {f"{lib}|{coll}": {str(sz): v for sz, v in d.items()}
                               for (lib, coll), d in results.items()}}, f)
    write_report(args, colls, libs, results, limits, commands, date, argv, notes, probes)


def table(results, libs, coll, sizes, key, heading, best, suffix):
    """Markdown rows of one metric ("bus" or "time") per library, with strata / best other (and
    strata on strataMemAlloc buffers / best other, where measured)."""
    mine = [lib for lib in ("strata", MAPPED) if lib in libs]
    out = ["| size | " + " | ".join(f"{lib} {heading}".strip() for lib in libs) + " | " +
           " | ".join(f"{lib} / best other" for lib in mine) + " |",
           "| ---: | " + " | ".join("---" for _ in libs) + " | " + " | ".join("---:" for _ in mine) + " |"]
    for s in sizes:
        cells, meds = [], {}
        for lib in libs:
            d = results.get((lib, coll), {}).get(s)
            cells.append(cell(d[key]) if d else "—")
            if d:
                meds[lib] = med(d[key])
        others = [v for k, v in meds.items() if not k.startswith("strata") and v]
        ratios = [f"{meds[lib] / best(others):.2f}{suffix}" if meds.get(lib) and others else "—" for lib in mine]
        out.append(f"| {s} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    return out


ONE_CORE_MEMCPY = "memcpy, one core (bytes read + written)"
TWO_CORE_MEMCPY = "memcpy, two cores at once (bytes read + written by both together)"
ONE_CORE_STREAMING = "copy with streaming stores, one core (bytes read + written)"
TWO_CORE_STREAMING = "copy with streaming stores, two cores at once (bytes read + written by both together)"


def median_limits(reps):
    """Each limit's median over the repetitions, with its min, max and count: [name, median, min, max, n]."""
    values = {}
    for rep in reps:
        for name, v in rep:
            values.setdefault(name, []).append(v)
    return [[name, med(v), min(v), max(v), len(v)] for name, v in values.items()]


def ranges_of(env, lib):
    """The sweeps a library runs in this scenario (all of them unless the scenario says)."""
    return env.ranges(lib) if hasattr(env, "ranges") else (SMALL, LARGE)


def single_copy_bound(results, libs, limits, n):
    """The all-gather single-copy bound (issue 26): each rank's core must move every byte of the
    output into its own buffer once (its own block from its send buffer, the others' from theirs),
    so it copies S bytes, reading and writing 2S at one core's copy rate M (bytes read + written):
    t >= 2S / M, and busbw = (S / t)(n-1)/n <= M (n-1) / (2n) (M / 4 on 2 ranks). M is the faster
    of the C library's memcpy and a copy with streaming stores, both measured in the run: the
    library's memcpy stores through the cache below its non-temporal threshold, which it derives
    from the cache size cpuid reports, and strata writes outputs larger than the cache streaming."""
    def fastest(*names):  # (rate, which) of the copies measured
        got = [(limits[k], k.split(",")[0]) for k in names if limits.get(k)]
        return max(got) if got else (None, None)

    one, how = fastest(ONE_CORE_MEMCPY, ONE_CORE_STREAMING)
    if not one:
        return []

    def bound_of(m):  # busbw <= M (n-1) / (2n)
        return m * (n - 1) / (2 * n)

    bound = bound_of(one)
    # Each library's 64 MiB all-gather busbw (median over the repetitions).
    measured = [(lib, med(d["bus"])) for lib in libs
                for d in [results.get((lib, "all_gather"), {}).get(67108864)] if d and d["bus"]]
    out = ["", f"All-gather single-copy bound: every rank's core copies each output byte once (its own "
           f"block and the others'), S bytes read and written at one core's copy rate M (the faster of "
           f"the measured copies, here the {how}: {one:.2f} GB/s): t ≥ 2S/M, "
           f"busbw ≤ M(n−1)/(2n) = {bound:.2f} GB/s here (n = {n}). At 64 MiB:", ""]
    out += [f"- {lib}: {bus:.2f} GB/s = {bus / bound:.0%} of the bound" for lib, bus in measured]
    both, how_both = fastest(TWO_CORE_MEMCPY, TWO_CORE_STREAMING)
    if both and n == 2:
        shared = bound_of(both / n)
        out += ["", f"That bound takes each core to copy at its own rate while the other copies too. Measured "
                f"with both cores copying at once ({how_both}), they move {both:.2f} GB/s together "
                f"({both / one:.2f}x one core's rate): M = {both / n:.2f} GB/s each, and the same formula gives "
                f"busbw ≤ {shared:.2f} GB/s. At 64 MiB:", ""]
        out += [f"- {lib}: {bus / shared:.0%} of it" for lib, bus in measured]
    return out


def machine_state(probes, libs):
    """Report lines on the line round trips timed before each launch (Local.measure): how many
    launches of each library met this VM's slow state."""
    times = [p["round_trip_ns"] for p in probes if p.get("round_trip_ns")]
    if not times:
        return []
    slow = Local.SLOW_ROUND_TRIP_NS
    per_lib = []
    for lib in libs:
        mine = [p["round_trip_ns"] for p in probes if p["lib"] == lib and p.get("round_trip_ns")]
        if mine:
            per_lib.append(f"{lib} {sum(t > slow for t in mine)} of {len(mine)}")
    return ["", f"The machine's state: a cache line's round trip between the first two cores "
            f"(strata-micro BM_LineRoundTrip), timed before each of the {len(times)} launches, took "
            f"{med(times):.0f} ns (median; {min(times):.0f}–{max(times):.0f}). Over {slow} ns is this VM's "
            f"slow state, in which shared-memory hand-overs cost 3-4x (docs/benchmarks/tiny-calls.md); "
            f"launches that met it: {', '.join(per_lib)}. The state can also change during a launch."]


def write_report(args, colls, libs, results, limits, commands, date, argv, notes=(), probes=()):
    os.makedirs(args.out, exist_ok=True)
    name = report_name(args)
    n = 2 if args.scenario == "netns" else args.np
    if args.scenario == "local":
        where = f"{n} ranks on one host"
    elif args.scenario == "gpu":
        where = f"{n} rank(s) sharing this host's GPU(s), buffers on the device"
    else:
        where = (f"2 ranks in two network namespaces joined by veth"
                 + (f", links shaped to {args.rate} (tbf)" if args.rate else ", unshaped"))
    lines = [f"# Benchmark: {name}", "",
             f"{where}; float32, sum; out-of-place. Generated by `scripts/bench.sh {argv}`"
             f" on {date}.", "",
             f"- Machine: {machine()}",
             f"- Repetitions: {args.reps} per library and collective, library order alternating run by run; "
             "cells are median (min–max) over the repetitions.",
             "- busbw follows nccl-tests: algbw × 2(n−1)/n for all_reduce, × (n−1)/n for reduce_scatter, "
             "all_gather and alltoall (size = the whole array), × 1 for broadcast and reduce.",
             "- Commands (one sweep each; small sizes with 1000 iterations, large with 20):"]
    for lib in libs:
        for cmd in commands[lib]:
            lines.append(f"  - {lib}: `{cmd}`")
    lines += [f"- {note}" for note in notes]
    if limits:
        lines += ["", "Physical limits measured in the same run:", ""]
        for what, val, *spread in limits:
            lines.append(f"- {what}: {val:.2f} GB/s" + (f" (median of {spread[2]}, one after each repetition: "
                                                          f"{spread[0]:.2f}–{spread[1]:.2f})" if spread else ""))
        lines += single_copy_bound(results, libs, {lim[0]: lim[1] for lim in limits}, n)
    lines += machine_state(probes, libs)
    for coll in colls:
        sizes = sorted({s for lib in libs for s in results.get((lib, coll), {})})
        lines += ["", f"## {coll}", "", f"![{coll}]({name}-{coll}.png)", ""]
        lines += table(results, libs, coll, sizes, "bus", f"{bandwidth_of(args)} GB/s", best=max, suffix="")
        lines += ["", "Small-message latency (µs per call):", ""]
        lines += table(results, libs, coll, [s for s in sizes if s <= 4096], "time", "", best=min,
                       suffix="× the time")
        plot(results, libs, coll, os.path.join(args.out, f"{name}-{coll}.png"), f"{name}: {where}",
             bandwidth_of(args))
    path = os.path.join(args.out, f"{name}.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
