#!/usr/bin/env python3
"""strata-sim against reality: the 8-namespace-node measurements of
docs/benchmarks/scale.json (bench/scale_bench.py: 8 x 1 and 4 x 2 ranks, each
node's link shaped to 200 Mbit/s with tbf, every algorithm in one launch)
replayed on a platform shaped like that cluster: one switch (the bridge),
each node's NIC at the link rate and latency the library measured at init,
shared memory inside a node at the hop latency it measured (with every rank
busy) and its default bandwidth. Each launch of scale_bench.py recorded the
link parameters its automatic communicator measured; every size is replayed
with those of the launch that measured it. Writes
docs/benchmarks/sim-calibration.md and .json.

    python3 bench/sim/calibration.py [--scale docs/benchmarks/scale.json]
"""
import argparse
import json
import os
import statistics
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM = os.path.join(ROOT, "build", "bench", "strata-sim")
INTRA_GBPS = "8"    # defaultIntraLink's bandwidth for shm (src/core/link_probe.cc): not measured
MEMORY = "20"       # Topology::memoryGbps's default
PLACEMENT = {"8 x 1": (8, 1), "4 x 2": (4, 2)}


def size_bytes(text):
    """'64K' -> 65536, as strata-perf reads -b / -e."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def links_args(l):
    """strata-sim's --intra and --inter for one launch's measured links."""
    return (f"{l['intra_alpha_us']:.3f},{INTRA_GBPS}",
            f"{l['alpha_us']:.3f},{l['gbps']:.5f},{l['gap_us']:.3f},{l['latency_hidden']:.3f}")


def simulate(coll, nodes, per, links, lo, hi):
    intra, inter = links_args(links)
    out = subprocess.run([SIM, coll, "--nodes", str(nodes), "--per-node", str(per), "--platform", "switch",
                          "--intra", intra, "--inter", inter, "--memory", MEMORY, "-b", lo, "-e", hi, "-f", "4",
                          "--algo", "all", "--json"], capture_output=True, text=True, check=True).stdout
    return {(r["bytes"], r["algorithm"]): r for r in json.loads(out)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", default=os.path.join(ROOT, "docs", "benchmarks", "scale.json"))
    args = p.parse_args()
    scale = json.load(open(args.scale))
    results, fits = [], {}
    for placement, (nodes, per) in PLACEMENT.items():
        runs = {k.split("|")[0]: v for k, v in scale["runs"].items() if k.endswith("|" + placement)}
        for coll, run in runs.items():
            for lo, hi, links in run["links"]:
                if not links:
                    raise SystemExit(f"{coll} {placement} {lo}-{hi}: the launch recorded no link parameters "
                                     "(re-run bench/scale_bench.py)")
                if size_bytes(hi) < (1 << 20):  # compared at 1 MiB and above only
                    continue
                sim = simulate(coll, nodes, per, links, lo, hi)
                fits[f"{coll} {placement} {lo}-{hi}"] = links
                for size, times in run["times"].items():
                    for algo, ts in times.items():
                        if algo == "auto" or (int(size), algo) not in sim or int(size) < (1 << 20):
                            continue
                        s = sim[(int(size), algo)]
                        results.append({"coll": coll, "placement": placement, "bytes": int(size),
                                        "algorithm": algo, "measured_us": statistics.median(ts),
                                        "sim_us": s["sim_us"], "model_us": s["model_us"]})
    json.dump({"source": os.path.relpath(args.scale, ROOT), "links": fits, "rows": results},
              open(os.path.join(ROOT, "docs", "benchmarks", "sim-calibration.json"), "w"), indent=1)
    write_report(fits, results, os.path.relpath(args.scale, ROOT))


def write_report(fits, rows, source):
    lines = ["# strata-sim against the 8-namespace-node measurements", "",
             f"The measured times of `{source}` (bench/scale_bench.py: 8 network namespaces on a bridge, each "
             "node's link shaped to 200 Mbit/s with tbf, TCP reno; every algorithm forced in one launch per "
             "placement; medians over the rounds) beside strata-sim's replay of the same plans on a platform "
             "shaped like that cluster (`--platform switch`: one crossbar, each node's NIC at the measured link "
             "parameters, shared memory inside a node at its measured hop latency and the default 8 GB/s) and the "
             "cost model's prediction. Simulated and modelled times are predictions, not measurements.", "",
             "Command: `python3 bench/sim/calibration.py` (seconds; runs strata-sim only).", "",
             "## Link parameters", "",
             "What each launch's automatic communicator measured at init (scale_bench.py records it; "
             "src/core/link_probe.cc): the latency of a hop inside a node with every rank busy, the network's "
             "latency, bandwidth and per-message gap, and the share of the latency between steps that the link "
             "hides behind bytes (tbf's burst; the model uses it, the replay's links hide none):", "",
             "| launch | intra latency (us) | latency (us) | bandwidth (MB/s) | gap (us) | latency hidden |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for launch, l in fits.items():
        lines.append(f"| {launch} | {l['intra_alpha_us']:.1f} | {l['alpha_us']:.1f} | {l['gbps'] * 1000:.1f} | "
                     f"{l['gap_us']:.1f} | {l['latency_hidden']:.2f} |")
    lines += ["", "## Measured, simulated and modelled at 1 MiB and above", "",
              "| collective | placement | size | algorithm | measured (ms) | simulated (ms) | sim / measured | "
              "model / measured |", "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['coll']} | {r['placement']} | {r['bytes'] >> 20} MiB | {r['algorithm']} | "
                     f"{r['measured_us'] / 1e3:.2f} | {r['sim_us'] / 1e3:.2f} | {r['sim_us'] / r['measured_us']:.3f} | "
                     f"{r['model_us'] / r['measured_us']:.3f} |")
    worst_sim = max(rows, key=lambda r: abs(r["sim_us"] / r["measured_us"] - 1))
    worst_model = max(rows, key=lambda r: abs(r["model_us"] / r["measured_us"] - 1))
    within = sum(1 for r in rows if abs(r["sim_us"] / r["measured_us"] - 1) <= 0.25)
    lines += ["", f"Simulated within 25% of measured: {within} of {len(rows)} rows. Worst simulated: "
              f"{worst_sim['coll']} {worst_sim['placement']} {worst_sim['bytes'] >> 20} MiB {worst_sim['algorithm']}, "
              f"{worst_sim['sim_us'] / worst_sim['measured_us']:.3f}x measured; worst modelled: {worst_model['coll']} "
              f"{worst_model['placement']} {worst_model['bytes'] >> 20} MiB {worst_model['algorithm']}, "
              f"{worst_model['model_us'] / worst_model['measured_us']:.3f}x.", ""]
    open(os.path.join(ROOT, "docs", "benchmarks", "sim-calibration.md"), "w").write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
