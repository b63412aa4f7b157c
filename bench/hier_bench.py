#!/usr/bin/env python3
"""Topology-aware all-reduce on a shaped multi-node setup, in one run:
every forced algorithm and the cost model's choice, with ranks placed node by
node and round-robin, on NODES network namespaces x PER_NODE ranks whose
links are shaped with tbf (default 2 nodes x 2 ranks at 2 Gbit/s each way).
Writes docs/benchmarks/hier.md, hier.json and hier-all_reduce.png.

For every size it reports the median busbw per algorithm, the automatic
choice against the best forced algorithm, the link bound (each node must send
2(N-1)/N x S bytes over its link), and the cost model's prediction (read from
the INFO log of the automatic run, computed from the link parameters that run
measured at init) next to the measured time.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import BENCH, ROOT, machine, med, parse_rows  # noqa: E402

ALGOS = ["auto", "ring", "recursive_doubling", "hier_ring", "hier_leader"]
RANGES = [("8", "32K", "1000", "50"), ("128K", "2M", "20", "3"), ("8M", "128M", "3", "1"), ("64M", "64M", "3", "1"),
          ("256M", "256M", "2", "1")]
PRED = re.compile(r"AllReduce count (\d+) float32: (\w+), predicted ([\d.-]+) us \((.*)\)")


class Cluster:
    """NODES namespaces on a bridge, each link shaped to RATE."""

    def __init__(self, nodes, rate):
        script = f"""
set -e
source {os.path.join(ROOT, 'scripts', 'netns_lib.sh')}
netns_setup {nodes} {rate}
for ((i = 0; i < {nodes}; i++)); do echo "$(netns_name $i) $(netns_addr $i)"; done
sleep 1000000 & wait $!
"""
        self.helper = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True,
                                       start_new_session=True)
        self.ns, self.addr = [], []
        for _ in range(nodes):
            name, addr = self.helper.stdout.readline().split()
            self.ns.append(name)
            self.addr.append(addr)
        self.port = 31500

    def run(self, placement, algo, rng):
        """One strata-perf sweep; rank r on node placement[r]. Returns rows and rank 0's log."""
        self.port += 2
        n = len(placement)
        lo, hi, iters, warm = rng
        procs = []
        for r, node in enumerate(placement):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), STRATA_HOSTID=f"node{node}",
                       STRATA_COMM_ID=f"{self.addr[placement[0]]}:{self.port}",
                       STRATA_ALGO="" if algo == "auto" else algo, STRATA_DEBUG="INFO" if r == 0 else "WARN")
            cmd = ["ip", "netns", "exec", self.ns[node], os.path.join(BENCH, "strata-perf"), "all_reduce",
                   "-b", lo, "-e", hi, "-f", "4", "-n", iters, "-w", warm, "-c", "0"]
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=900) for p in procs]
        for r, p in enumerate(procs):
            if p.returncode != 0:
                sys.exit(f"rank {r} failed ({algo}, {placement}):\n{outs[r][0][-1500:]}\n{outs[r][1][-1500:]}")
        return parse_rows(outs[0][0]), outs[0][1]

    def close(self):
        os.killpg(self.helper.pid, 15)  # its EXIT trap removes the namespaces
        self.helper.wait()


def placements(nodes, per):
    return {"node by node": [r // per for r in range(nodes * per)],
            "round-robin": [r % nodes for r in range(nodes * per)]}


def link_bound_busbw(gbps, nodes, n):
    """busbw when each node's link carries 2(N-1)/N x S at gbps (GB/s)."""
    return gbps * nodes / (2.0 * (nodes - 1)) * 2.0 * (n - 1) / n


def parse_rate(rate):
    m = re.match(r"([\d.]+)([gm])bit", rate)
    return float(m.group(1)) * (1e9 if m.group(2) == "g" else 1e6) / 8e9


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("hier_bench.py: terminated"))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--per-node", type=int, default=2)
    p.add_argument("--rate", default="2gbit")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks"))
    p.add_argument("--from-json", help="rewrite the report from a saved hier.json")
    p.add_argument("--small-only", action="store_true",
                   help="re-measure only sizes up to 2 MiB (--reps times) into the saved hier.json; on a "
                        "shared VM their latency varies from launch to launch, so they need more launches")
    args = p.parse_args()
    if args.from_json:
        saved = json.load(open(args.from_json))
        return report(args, saved)
    ranges = RANGES[:2] if args.small_only else RANGES
    cluster = Cluster(args.nodes, args.rate)
    results, predictions, chosen, choices = {}, {}, {}, {}
    started = time.time()
    try:
        for rep in range(args.reps):
            for pname, place in placements(args.nodes, args.per_node).items():
                order = ALGOS if rep % 2 == 0 else list(reversed(ALGOS))
                for algo in order:
                    for rng in ranges:
                        rows, log = cluster.run(place, algo, rng)
                        for size, (t, bw) in rows.items():
                            d = results.setdefault(f"{pname}|{algo}", {}).setdefault(str(size), {"time": [], "bus": []})
                            d["time"].append(t)
                            d["bus"].append(bw)
                        if algo != "auto":
                            continue
                        for m in PRED.finditer(log):
                            size = str(int(m.group(1)) * 4)
                            chosen.setdefault(pname, {})[size] = m.group(2)
                            choices.setdefault(pname, {}).setdefault(size, []).append(m.group(2))
                            cands = dict((a, float(us)) for a, us in re.findall(r"(\w+) ([\d.]+) us", m.group(4)))
                            predictions.setdefault(pname, {}).setdefault(size, []).append(cands)
            print(f"rep {rep + 1}/{args.reps} done after {time.time() - started:.0f} s", file=sys.stderr)
    finally:
        cluster.close()
    saved = {"date": time.strftime("%Y-%m-%d"), "argv": " ".join(sys.argv[1:]), "machine": machine(),
             "nodes": args.nodes, "per_node": args.per_node, "rate": args.rate, "results": results,
             "predictions": predictions, "chosen": chosen, "choices": choices}
    if args.small_only:  # replace the small sizes of the saved run, keep the rest
        old = json.load(open(os.path.join(args.out, "hier.json")))
        for key, d in results.items():
            old["results"].setdefault(key, {}).update(d)
        for pl in chosen:
            old["chosen"].setdefault(pl, {}).update(chosen[pl])
            old.setdefault("choices", {}).setdefault(pl, {}).update(choices[pl])
        old["argv"] += f"; then {' '.join(sys.argv[1:])}"
        saved = old
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "hier.json"), "w") as f:
        json.dump(saved, f)
    report(args, saved)


def fmt_size(b):
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= k:
            return f"{b // k} {unit}"
    return f"{b} B"


def report(args, s):
    nodes, per, n = s["nodes"], s["per_node"], s["nodes"] * s["per_node"]
    gbps = parse_rate(s["rate"])
    bound = link_bound_busbw(gbps, nodes, n)
    res = s["results"]
    sizes = sorted({int(k) for d in res.values() for k in d})
    forced = [a for a in ALGOS if a != "auto"]
    bus = lambda pl, a, sz: med(res.get(f"{pl}|{a}", {}).get(str(sz), {}).get("bus", []))
    tim = lambda pl, a, sz: med(res.get(f"{pl}|{a}", {}).get(str(sz), {}).get("time", []))
    lines = [f"# Topology-aware all-reduce: {nodes} nodes x {per} ranks, links shaped to {s['rate']}", "",
             f"Measured {s['date']} on {s['machine']}.", "",
             "Command: `sudo .venv/bin/python bench/hier_bench.py " + s["argv"] + "` (root, for the namespaces).",
             "", f"Each node is a network namespace on a bridge; each node's link is shaped with tbf to {s['rate']} "
             f"each way ({gbps:.3f} GB/s), so the network is the bottleneck, as between real nodes. Ranks on one node "
             "use shared memory. Every cell is the median busbw (GB/s) of "
             f"{args.reps if not args.from_json else 'the saved'} runs; algorithms alternate order run by run. "
             f"Link bound: each node must send 2(N-1)/N x S over its link, which caps busbw at {bound:.3f} GB/s.", ""]
    key = 64 << 20
    lines += ["## 64 MiB", "", "| placement | automatic (choice) | hier_ring | flat ring (rank order) | "
              "automatic / link bound | automatic / flat ring |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for pl in placements(nodes, per):
        a, h, r = bus(pl, "auto", key), bus(pl, "hier_ring", key), bus(pl, "ring", key)
        if a is None:
            continue
        lines.append(f"| {pl} | {a:.3f} ({s['chosen'].get(pl, {}).get(str(key), '?')}) | {h:.3f} | {r:.3f} | "
                     f"{a / bound:.0%} | {a / r:.2f}x |")
    a1, a2 = bus("node by node", "auto", key), bus("round-robin", "auto", key)
    r1, r2 = bus("node by node", "ring", key), bus("round-robin", "ring", key)
    if a1 and a2:
        lines += ["", f"Placement: automatic round-robin / node-by-node = {a2 / a1:.2f}; flat ring round-robin / "
                  f"node-by-node = {r2 / r1:.2f}.", ""]
    for pl in placements(nodes, per):
        lines += [f"## Every size, {pl} placement", "",
                  "Median time per call (µs below 1 MiB, ms from 1 MiB); bold: the fastest forced algorithm. "
                  "*best / automatic* divides the best forced time by the automatic runs' own median, so it carries "
                  "the launch-to-launch spread of small messages on this VM (one launch runs at ~25 µs, the next at "
                  "~50 µs, whatever the algorithm); *best / choice* divides it by the forced median of the "
                  "algorithm(s) the automatic runs chose (launches x choice), which isolates the choice.", "",
                  "| size | " + " | ".join(forced) + " | automatic (choice) | best / automatic | best / choice |",
                  "| ---: | " + " | ".join("---:" for _ in forced) + " | ---: | ---: | ---: |"]
        for sz in sizes:
            vals = {a: tim(pl, a, sz) for a in forced}
            best = min(v for v in vals.values() if v is not None)
            a = tim(pl, "auto", sz)
            scale, unit = (1e3, " ms") if sz >= (1 << 20) else (1, "")
            cells = " | ".join(f"**{v / scale:.4g}**" if v == best else f"{v / scale:.4g}" for v in vals.values())
            picks = s.get("choices", {}).get(pl, {}).get(str(sz)) or [s["chosen"].get(pl, {}).get(str(sz), "?")]
            named = ", ".join(f"{c} x{picks.count(c)}" if len(picks) > 1 else c for c in sorted(set(picks)))
            worst_pick = max((vals.get(c) or 0) for c in set(picks))
            lines.append(f"| {fmt_size(sz)} | {cells} | {a / scale:.4g} ({named}) | {best / a:.2f} | "
                         f"{best / worst_pick:.2f} |" if worst_pick else f"| {fmt_size(sz)} | {cells} | "
                         f"{a / scale:.4g} ({named}) | {best / a:.2f} | ? |")
        lines.append("")
    lines += ["## Cost model: predicted vs measured time", "",
              "Predictions are the cost model's, from the link parameters the automatic run measured at init "
              "(the same numbers the selector used); measured is the median time of that algorithm forced.", ""]
    for pl in placements(nodes, per):
        lines += [f"### {pl}", "", "| size | algorithm | predicted (ms) | measured (ms) | measured / predicted |",
                  "| ---: | --- | ---: | ---: | ---: |"]
        for sz in sizes:
            if sz < (1 << 20):
                continue
            preds = s["predictions"].get(pl, {}).get(str(sz), [])
            for alg in forced:
                pv = [p[alg] for p in preds if alg in p]
                t = tim(pl, alg, sz)
                if pv and t:
                    pr = statistics.median(pv)
                    lines.append(f"| {fmt_size(sz)} | {alg} | {pr / 1e3:.2f} | {t / 1e3:.2f} | {t / pr:.2f} |")
        lines.append("")
    lines += ["![busbw vs size](hier-all_reduce.png)", ""]
    with open(os.path.join(args.out, "hier.md"), "w") as f:
        f.write("\n".join(lines))
    plot(s, sizes, forced, bound, os.path.join(args.out, "hier-all_reduce.png"))
    print("\n".join(lines))


def plot(s, sizes, forced, bound, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pls = list(placements(s["nodes"], s["per_node"]))
    fig, axes = plt.subplots(1, len(pls), figsize=(12, 4.2), sharey=True)
    for ax, pl in zip(axes, pls):
        for a in ["auto"] + forced:
            d = s["results"].get(f"{pl}|{a}", {})
            xs = [sz for sz in sizes if d.get(str(sz), {}).get("bus")]
            ax.plot(xs, [med(d[str(x)]["bus"]) for x in xs], marker="o", label=a,
                    linewidth=2.5 if a == "auto" else 1.2)
        ax.axhline(bound, color="gray", linestyle="--", label="link bound")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_title(f"all_reduce, {pl}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("busbw (GB/s, median)")
    axes[0].legend()
    fig.suptitle(f"{s['nodes']} nodes x {s['per_node']} ranks, links {s['rate']}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
