#!/usr/bin/env python3
"""Every reduce-scatter, all-gather, all-reduce and all-to-all algorithm on 8
nodes made of network namespaces (8 x 1 rank, and 4 x 2 ranks), links shaped
with tbf, beside the cost model's prediction, one launch per placement and
collective: strata-perf COLL -A auto,<every algorithm> makes one communicator
per algorithm in the same 8 processes and times them in alternating rounds
(on this shared 2-core VM one launch can run twice as slow as the next, so
only a comparison inside one launch isolates an algorithm). The automatic
communicator's INFO log gives the model's prediction for every candidate,
from the link parameters it measured at init. Writes docs/benchmarks/scale.md,
scale.json and scale-<collective>.png.

    sudo .venv/bin/python bench/scale_bench.py [--rate 200mbit] [--rounds 3]
    .venv/bin/python bench/scale_bench.py --from-json docs/benchmarks/scale.json

The links are shaped slowly (200 Mbit/s per node by default, 8 nodes moving
at most 200 MB/s through the kernel together) so that the network, not the
two cores, is what is measured; the report gives the CPU's busy share during
each launch as the check.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import BENCH, ROOT, machine  # noqa: E402
from hier_bench import Cluster, fmt_size  # noqa: E402

ALGOS = {
    "reduce_scatter": ["auto", "ring", "recursive_halving", "hier_ring", "hier_halving", "hier_radix"],
    "all_gather": ["auto", "ring", "recursive_doubling", "hier_ring", "hier_halving", "hier_radix"],
    "all_reduce": ["auto", "ring", "recursive_doubling", "hier_ring", "hier_halving", "hier_leader"],
    "alltoall": ["auto", "pairwise", "hier_pairwise", "bruck"],
}
# The log-step algorithms this benchmark is about, and the ring they replace.
NEW = {"reduce_scatter": ["recursive_halving", "hier_halving", "hier_radix"],
       "all_gather": ["recursive_doubling", "hier_halving", "hier_radix"],
       "all_reduce": ["hier_halving"], "alltoall": ["hier_pairwise", "bruck"]}
# Sizes are the whole array; these collectives cut it into one block per rank
# (8), so sizes under 32 B are count 0 for them (rows left empty).
BLOCKS = {"reduce_scatter": 8, "all_gather": 8, "alltoall": 8}
BASE = {"reduce_scatter": "ring", "all_gather": "ring", "all_reduce": "ring", "alltoall": "pairwise"}
LOG_NAME = {"reduce_scatter": "ReduceScatter", "all_gather": "AllGather", "all_reduce": "AllReduce",
            "alltoall": "AllToAll"}
PLACEMENTS = {"8 x 1": list(range(8)), "4 x 2": [r // 2 for r in range(8)]}
# (min, max, iterations, warm-up, rounds as a multiple of --rounds, untimed
# calls before each round); sizes x4 from 16 B, so 64 KiB and 64 MiB are
# rows. Small sizes get more rounds: their times move with the VM's scheduling from one round to the next (an 8 x 1
# 4 KiB all-reduce's rounds spread 384-912 us for one algorithm in one launch),
# and a round of 100 calls costs them well under a second. 12 rounds were not
# enough: on 4 x 2 hier_halving's one-part all-reduce and hier_leader (the same
# steps on 2-rank nodes) came out 304 / 348 us at 4 KiB and 247 / 284 at 256 B
# in one launch; in 48 rounds, 348.3 / 348.4 and 158.0 / 157.3 (16 B-4 KiB
# all within 2%). 16 and 64 KiB take 25 calls a round, so that 48 rounds of
# them cost what 12 of 100 did.
SMALL_ROUNDS = 16
# Each link's tbf keeps a burst of 1 Mbit (125,000 B, scripts/netns_lib.sh): a
# latency-bound round (the ring's 4 KiB all-reduce, 1 MB/s of a node's 25)
# leaves it full, a bandwidth-bound one empty, and the algorithm timed next
# starts with what the one before left. Full, it pays 125,000 B / 100 calls
# = 1,250 B of each 4 KiB call's 8 KiB: 50 us at 25 MB/s. On 4 x 2 the forced
# hier_halving (one part: hier_leader's steps), timed after hier_ring in five
# rotations of six, ran 302.6 us against hier_leader's 349.0 (48 rounds), and
# 303.1 / 348.6 in a 4 KiB launch of 16; the same launch with 100 untimed
# calls before each round timed hier_leader 348.9 and auto 348.7 (hier_halving
# there took two parts: 654.6). So from 16 B to 64 KiB every round starts
# after as many calls of its own algorithm as it times (enough to empty the
# burst where the algorithm can: steady state, what the model predicts); at
# 8 B and from 256 KiB up every algorithm leaves the link alike (full; empty)
# and the burst is under 1.5% of a round.
LINKS = re.compile(r"intra-node alpha ([\d.]+) us, ([\d.]+) GB/s .*?; inter-node alpha ([\d.]+) us, ([\d.]+) GB/s "
                   r"per node.*?, gap ([\d.]+) us, latency hidden ([\d.]+)")
RANGES = [("8", "8", "100", "10", SMALL_ROUNDS, "0"), ("16", "4K", "100", "10", SMALL_ROUNDS, "100"),
          ("16K", "64K", "25", "5", SMALL_ROUNDS, "25"), ("256K", "4M", "8", "2", 1, "0"),
          ("16M", "64M", "2", "1", 1, "0")]


# TCP congestion control in the namespaces. This host's default, bbr, stalls
# every flow for ~50 ms (the depth of tbf's queue) at random moments on these
# shaped veth links: the same launch ran a 1 MiB all-gather on 4 nodes in
# 47-88 ms one time and 33 ms the next, for every algorithm; with reno every
# algorithm runs within 5% of the link bound launch after launch (cubic is not
# allowed inside namespaces here). What is measured is the algorithms, so
# reno by default; --cc bbr repeats the run with bbr.
CONGESTION = "reno"


class CpuSampler:
    """The share of time the machine's CPUs were busy, sampled from /proc/stat once a second."""

    def __init__(self):
        self.samples, self.stop = [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    @staticmethod
    def read():
        f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return sum(f), f[3] + f[4]  # total, idle + iowait

    def run(self):
        total, idle = self.read()
        while not self.stop.wait(1.0):
            t, i = self.read()
            if t > total:
                self.samples.append(1 - (i - idle) / (t - total))
            total, idle = t, i

    def finish(self):
        self.stop.set()
        self.thread.join()
        return statistics.median(self.samples) if self.samples else None


def launch(cluster, coll, place, rng, rounds):
    """One strata-perf -A sweep; returns {size: {algo: [us per round]}}, {size: prediction dict}, {size: choice}
    and the link parameters the automatic communicator measured."""
    cluster.port += 2
    lo, hi, iters, warm, _, round_warm = rng
    algos = ALGOS[coll]
    n = len(place)
    outdir = "/tmp/strata_scale_bench"
    os.makedirs(outdir, exist_ok=True)
    jpath = os.path.join(outdir, "rows.json")
    procs = []
    for r, node in enumerate(place):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), STRATA_HOSTID=f"node{node}",
                   STRATA_COMM_ID=f"{cluster.addr[place[0]]}:{cluster.port}", STRATA_DEBUG="INFO" if r == 0 else "WARN",
                   STRATA_TIMEOUT_MS="300000")
        env.pop("STRATA_ALGO", None)
        cmd = ["ip", "netns", "exec", cluster.ns[node], os.path.join(BENCH, "strata-perf"), coll, "-b", lo, "-e", hi,
               "-f", "4", "-n", iters, "-w", warm, "-R", str(rounds), "-W", round_warm, "-A", ",".join(algos)]
        if r == 0:
            cmd += ["-J", jpath]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=3600) for p in procs]
    for r, p in enumerate(procs):
        if p.returncode != 0:
            sys.exit(f"rank {r} failed ({coll}, {place}):\n{outs[r][0][-1500:]}\n{outs[r][1][-1500:]}")
    rows = json.load(open(jpath))["rows"]
    times = {str(row["bytes"]): row["times_us"] for row in rows}
    per_rank = n if coll in ("reduce_scatter", "all_gather", "alltoall") else 1
    pattern = re.compile(LOG_NAME[coll] + r" count (\d+) float32: (\w+), predicted ([\d.-]+) us \((.*)\)")
    # The link parameters every communicator measured at init (rank 0's INFO
    # log: the launcher's own first, then one per algorithm in -A order).
    links = [{"intra_alpha_us": float(m.group(1)), "intra_gbps": float(m.group(2)), "alpha_us": float(m.group(3)),
              "gbps": float(m.group(4)), "gap_us": float(m.group(5)), "latency_hidden": float(m.group(6))}
             for m in LINKS.finditer(outs[0][1])]
    auto_links = links[1 + algos.index("auto")] if "auto" in algos and len(links) == len(algos) + 1 else None
    predicted, chosen = {}, {}
    for m in pattern.finditer(outs[0][1]):
        if "forced" in m.group(4):
            continue
        size = str(int(m.group(1)) * 4 * per_rank)
        chosen[size] = m.group(2)
        predicted[size] = {a: float(us) for a, us in re.findall(r"(\w+) ([\d.]+) us", m.group(4))}
    return times, predicted, chosen, auto_links


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", default="200mbit")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cc", default=CONGESTION, help="TCP congestion control inside the namespaces (see CONGESTION)")
    p.add_argument("--colls", default=",".join(ALGOS))
    p.add_argument("--placements", default=",".join(PLACEMENTS), help="comma-separated, e.g. '4 x 2'")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks"))
    p.add_argument("--from-json", help="rewrite the report from a saved scale.json")
    p.add_argument("--merge", metavar="WHY", help="keep the other collectives' runs from the scale.json in --out "
                   "and note that --colls were re-measured, and why")
    args = p.parse_args()
    if args.from_json:
        return report(json.load(open(args.from_json)), args.out)
    cluster = Cluster(8, args.rate)
    for ns in cluster.ns:
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv4.tcp_congestion_control={args.cc}"],
                       check=True)
    runs = {}
    started = time.time()
    try:
        for coll in args.colls.split(","):
            for pname in args.placements.split(","):
                place = PLACEMENTS[pname.strip()]
                pname = pname.strip()
                run = {"times": {}, "predicted": {}, "chosen": {}, "cpu_busy": [], "links": []}
                for rng in RANGES:
                    cpu = CpuSampler()
                    t, pr, ch, links = launch(cluster, coll, place, rng, args.rounds * rng[4])
                    run["links"].append([rng[0], rng[1], links])
                    busy = cpu.finish()
                    run["times"].update(t)
                    run["predicted"].update(pr)
                    run["chosen"].update(ch)
                    run["cpu_busy"].append([rng[0], rng[1], busy])
                runs[f"{coll}|{pname}"] = run
                print(f"{coll} {pname} done after {time.time() - started:.0f} s", file=sys.stderr)
    finally:
        cluster.close()
    saved = {"date": time.strftime("%Y-%m-%d"), "argv": " ".join(sys.argv[1:]), "machine": machine(),
             "rate": args.rate, "rounds": args.rounds, "small_rounds": args.rounds * SMALL_ROUNDS, "cc": args.cc,
             "round_warmup": {f"{r[0]}-{r[1]}": int(r[5]) for r in RANGES},
             "runs": runs}
    if args.merge:  # the earlier run's other collectives, in the usual order
        old = json.load(open(os.path.join(args.out, "scale.json")))
        merged = {**old["runs"], **runs}
        saved["runs"] = {k: merged[k] for c in ALGOS for pl in PLACEMENTS for k in [f"{c}|{pl}"] if k in merged}
        # A note per re-measurement; one about the same collectives before is out of date.
        remeasured = ", ".join(args.colls.split(","))
        if args.placements != ",".join(PLACEMENTS):
            remeasured += " at " + args.placements
        saved["notes"] = [n for n in old.get("notes", []) if not n.startswith(remeasured + " re-measured")] + [
            f"{remeasured} re-measured on {saved['date']} ({args.merge}); the other collectives as the notes "
            f"above say (`bench/scale_bench.py {old['argv']}`)."]
        saved["argv"] = old["argv"]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "scale.json"), "w") as f:
        json.dump(saved, f)
    report(saved, args.out)


def fmt_us(us):
    return f"{us / 1e3:.4g} ms" if us >= 1000 else f"{us:.4g} µs"


def round_warmup_text(warmup):
    """The report's words for the saved {"MIN-MAX": untimed calls before each round}."""
    warmed = [f"{calls} at {sizes}" for sizes, calls in warmup.items() if calls]
    if not warmed:
        return ""
    return (", each round after untimed calls of its algorithm (" + ", ".join(warmed) + "), so that it does not "
            "start with the token bucket another algorithm's round left full")


def report(s, out):
    header = [f"# Log-step and aggregated collectives on 8 namespace nodes ({s['rate']} per node)", "",
             f"Measured {s['date']} on {s['machine']}.", "",
             f"Command: `sudo .venv/bin/python bench/scale_bench.py {s['argv']}` (root, for the namespaces).", ""]
    for note in s.get("notes", []):  # e.g. collectives re-measured after a change, merged in
        header += [note, ""]
    header += [
             "Eight network namespaces on a bridge, each node's link shaped with tbf to "
             f"{s['rate']} each way, TCP congestion control {s.get('cc', 'bbr')} (bbr, this host's default, stalls every "
             "flow for ~50 ms, the depth of tbf's queue, at random moments on these links: a 1 MiB all-gather on 4 nodes "
             "took 47-88 ms in one launch and 33 ms in the next, whatever the algorithm; with reno every algorithm runs "
             "within 5% of the link bound launch after launch); 8 ranks, placed 8 x 1 (a rank per node) and 4 x 2 (two per node, which use shared "
             "memory between them). Each collective and placement is one set of launches of `strata-perf COLL -A "
             "auto,<every algorithm>`: one communicator per algorithm in the same 8 processes, timed in "
             f"{s['rounds']} alternating rounds ({s.get('small_rounds', 2 * s['rounds'])} up to 64 KiB"
             + round_warmup_text(s.get("round_warmup", {})) + "); cells are the median time per call over the rounds. *predicted* is "
             "what the automatic communicator's cost model predicted for each algorithm from the links it measured "
             "at init (the model's prediction, not a measurement). float32 sum, out of place. Sizes are the whole "
             "array (nccl-tests' convention: for reduce-scatter, all-gather and all-to-all, 8 blocks). The links are "
             "shaped slowly so that the network, not the VM's two cores, is measured: the CPU's median busy share "
             "during each launch is listed at the end.", ""]
    lines, summary = [], []
    for key, run in s["runs"].items():
        coll, pl = key.split("|")
        algos = [a for a in ALGOS[coll] if a != "auto"]
        sizes = sorted(int(x) for x in run["times"])
        med = {sz: {a: statistics.median(v) for a, v in run["times"][str(sz)].items()} for sz in sizes}
        lines += [f"## {coll}, {pl}", "",
                  "| size | " + " | ".join(algos) + " | automatic (choice) | best / choice | new / " + BASE[coll] + " |",
                  "| ---: | " + " | ".join("---:" for _ in algos) + " | ---: | ---: | ---: |"]
        worst_choice, small_gain, model_dev = 1e9, [], {}
        for sz in sizes:
            m = med[sz]
            if sz // 4 // BLOCKS.get(coll, 1) == 0:  # count 0: nothing moves, only the call is timed
                lines.append(f"| {fmt_size(sz)} | " + " | ".join("–" for _ in algos) + " | – | – | – |")
                continue
            best = min(algos, key=lambda a: m[a])
            choice = run["chosen"].get(str(sz))
            ratio = m[best] / m[choice] if choice in m else None
            if ratio is not None:
                worst_choice = min(worst_choice, ratio)
            new_best = min(NEW[coll], key=lambda a: m[a])
            gain = m[BASE[coll]] / m[new_best]
            if sz <= 64 << 10:
                small_gain.append((gain, sz))
            cells = [f"**{fmt_us(m[a])}**" if a == best else fmt_us(m[a]) for a in algos]
            lines.append(f"| {fmt_size(sz)} | " + " | ".join(cells) + f" | {fmt_us(m['auto'])} ({choice or '?'}) | "
                         + (f"{ratio:.2f}" if ratio is not None else "?") + f" | {gain:.2f}x ({new_best}) |")
            pred = run["predicted"].get(str(sz), {})
            if sz >= 1 << 20:
                for a in algos:
                    if a in pred and pred[a] > 0:
                        model_dev.setdefault(a, []).append(m[a] / pred[a])
        lines += ["", "*best / choice*: the fastest forced algorithm's time over the time of the algorithm the "
                  "automatic communicator chose, timed as a forced one in the same launch (1.00: the best). "
                  f"*new / {BASE[coll]}*: how many times faster the best of the new algorithms "
                  f"({', '.join(NEW[coll])}) is than the {BASE[coll]}. –: count 0 (a size under one float32 "
                  "per rank), not measured.", "",
                  "Measured / predicted at 1 MiB and above:", "", "| algorithm | sizes | worst | median |",
                  "| --- | ---: | ---: | ---: |"]
        worst_dev = 0
        for a, r in model_dev.items():
            w = max(r, key=lambda x: abs(x - 1))
            worst_dev = max(worst_dev, abs(w - 1))
            lines.append(f"| {a} | {len(r)} | {w:.2f} | {statistics.median(r):.2f} |")
        lines.append("")
        summary.append((coll, pl, worst_dev, worst_choice, min(small_gain) if small_gain else None))
        plot(coll, pl, [sz for sz in sizes if sz // 4 // BLOCKS.get(coll, 1) > 0], med, run["predicted"], os.path.join(out, f"scale-{coll}-{pl.replace(' ', '')}.png"))
        lines += [f"![{coll} {pl}](scale-{coll}-{pl.replace(' ', '')}.png)", ""]
    head = ["## Summary", "", "| collective | placement | worst measured / predicted − 1 (≥ 1 MiB) | worst best / choice "
            "| smallest gain of the new algorithms over the ring at ≤ 64 KiB |", "| --- | --- | ---: | ---: | ---: |"]
    for coll, pl, dev, choice, gain in summary:
        head.append(f"| {coll} | {pl} | {dev:.0%} | {choice:.2f} | "
                    + (f"{gain[0]:.2f}x ({fmt_size(gain[1])})" if gain else "?") + " |")
    cpu = ["## CPU", "", "Median share of the two cores busy during each launch (sizes of the launch):", ""]
    for key, run in s["runs"].items():
        cpu.append(f"- {key.replace('|', ', ')}: " + ", ".join(
            f"{lo}-{hi}: {b:.0%}" for lo, hi, b in run["cpu_busy"] if b is not None))
    links = ["", "## Links measured at init", "",
             "What the automatic communicator of each launch measured (src/core/link_probe.cc): the latency of a hop "
             "inside a node with every rank busy, the network's latency, bandwidth and per-message gap, and the share "
             "of the latency between steps that the link hides behind bytes (tbf's 1 Mbit burst refunds a link's idle "
             "time; a NIC would not). The predictions above come from these.", "",
             "| collective, placement | sizes | intra alpha | inter alpha | GB/s | gap | latency hidden |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for key, run in s["runs"].items():
        for lo, hi, l in run.get("links", []):
            if l:
                links.append(f"| {key.replace('|', ', ')} | {lo}-{hi} | {l['intra_alpha_us']:.1f} µs | "
                             f"{l['alpha_us']:.1f} µs | {l['gbps']:.4f} | {l['gap_us']:.1f} µs | "
                             f"{l['latency_hidden']:.2f} |")
    lines = header + head + [""] + lines + cpu + (links if len(links) > 6 else []) + [""]
    path = os.path.join(out, "scale.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path}")


def plot(coll, pl, sizes, med, predicted, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    algos = [a for a in ALGOS[coll] if a != "auto"]
    for i, a in enumerate(algos):
        color = f"C{i}"
        ax.plot(sizes, [med[sz][a] for sz in sizes], marker="o", color=color, label=f"{a} (measured)")
        pts = [(sz, predicted[str(sz)][a]) for sz in sizes if a in predicted.get(str(sz), {})]
        if pts:
            ax.plot([x for x, _ in pts], [y for _, y in pts], linestyle="--", color=color, alpha=0.6)
    ax.plot(sizes, [med[sz]["auto"] for sz in sizes], marker="x", color="black", linestyle=":", label="automatic")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("time per call (µs); dashed: model's prediction")
    ax.set_title(f"{coll}, {pl} namespace nodes")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
