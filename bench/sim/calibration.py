#!/usr/bin/env python3
"""strata-sim against reality: the 8-namespace-node measurements of
docs/benchmarks/scale.json (bench/scale_bench.py: 8 x 1 and 4 x 2 ranks, each
node's link shaped to 200 Mbit/s with tbf, every algorithm in one launch)
replayed on a platform shaped like that cluster: one switch (the bridge),
each node's NIC at the link rate and latency the library measured at init,
shared memory inside a node at the library's own default for it.

The run did not record the link parameters its communicators measured, but
its INFO log recorded the cost model's prediction for every candidate, and
the model is a known function of them: the parameters are recovered by
fitting strata-model (the same code) to those predictions (latency and gap
by least squares for each bandwidth on a grid). Writes
docs/benchmarks/sim-calibration.md and .json.

    python3 bench/sim/calibration.py [--scale docs/benchmarks/scale.json]
"""
import argparse
import json
import os
import statistics
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "build", "bench", "strata-model")
SIM = os.path.join(ROOT, "build", "bench", "strata-sim")
INTRA = "1.5,8"     # defaultIntraLink for shm (src/core/link_probe.cc): what those runs used
MEMORY = "20"       # Topology::memoryGbps's default
PLACEMENT = {"8 x 1": (8, 1), "4 x 2": (4, 2)}


def model(coll, nodes, per, inter):
    out = subprocess.run([MODEL, coll, "--nodes", str(nodes), "--per-node", str(per), "--intra", INTRA,
                          "--inter", inter, "--memory", MEMORY, "-b", "64", "-e", "64M", "-f", "4", "--json"],
                         capture_output=True, text=True, check=True).stdout
    return {(r["bytes"], a): us for r in json.loads(out) for a, us in r["candidates"].items()}


def fit(coll, run, placement):
    """(alpha_us, GB/s, gap_us) that reproduce one launch's predictions best (each launch probed its links)."""
    nodes, per = PLACEMENT[placement]
    best = None
    for mbps in [x / 10 for x in range(200, 261)]:
        gbps = mbps / 1000
        rows = []
        b = model(coll, nodes, per, f"0,{gbps},0")
        a = model(coll, nodes, per, f"100,{gbps},0")
        g = model(coll, nodes, per, f"0,{gbps},100")
        for size, preds in run["predicted"].items():
            for algo, us in preds.items():
                k = (int(size), algo)
                if k in b:
                    rows.append((b[k], (a[k] - b[k]) / 100, (g[k] - b[k]) / 100, us))
        # least squares for alpha, gap (2 x 2 normal equations), relative errors
        saa = sag = sgg = sa = sg = 0.0
        for c0, ca, cg, y in rows:
            w = 1 / (y * y)
            r = y - c0
            saa += w * ca * ca; sag += w * ca * cg; sgg += w * cg * cg
            sa += w * ca * r; sg += w * cg * r
        det = saa * sgg - sag * sag
        alpha = (sa * sgg - sg * sag) / det if det else sa / saa
        gap = max(0.0, (saa * sg - sag * sa) / det) if det else 0.0
        err = max(abs(c0 + ca * alpha + cg * gap - y) / y for c0, ca, cg, y in rows)
        if best is None or err < best[3]:
            best = (alpha, gbps, gap, err)
    return best


def simulate(coll, nodes, per, inter):
    out = subprocess.run([SIM, coll, "--nodes", str(nodes), "--per-node", str(per), "--platform", "switch",
                          "--intra", INTRA, "--inter", inter, "--memory", MEMORY, "-b", "1M", "-e", "64M", "-f", "4",
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
            alpha, gbps, gap, err = fit(coll, run, placement)
            fits[f"{coll} {placement}"] = {"alpha_us": alpha, "gbps": gbps, "gap_us": gap, "worst_fit_error": err}
            sim = simulate(coll, nodes, per, f"{alpha:.3f},{gbps:.5f},{gap:.3f}")
            for size, times in run["times"].items():
                for algo, ts in times.items():
                    if algo == "auto" or (int(size), algo) not in sim or int(size) < (1 << 20):
                        continue
                    s = sim[(int(size), algo)]
                    measured = statistics.median(ts)
                    results.append({"coll": coll, "placement": placement, "bytes": int(size), "algorithm": algo,
                                    "measured_us": measured, "sim_us": s["sim_us"], "model_us": s["model_us"]})
    json.dump({"source": os.path.relpath(args.scale, ROOT), "fits": fits, "rows": results},
              open(os.path.join(ROOT, "docs", "benchmarks", "sim-calibration.json"), "w"), indent=1)
    write_report(fits, results, os.path.relpath(args.scale, ROOT))


def write_report(fits, rows, source):
    lines = ["# strata-sim against the 8-namespace-node measurements", "",
             f"The measured times of `{source}` (bench/scale_bench.py: 8 network namespaces on a bridge, each "
             "node's link shaped to 200 Mbit/s with tbf, TCP reno; every algorithm forced in one launch per "
             "placement; medians over the rounds) beside strata-sim's replay of the same plans on a platform "
             "shaped like that cluster (`--platform switch`: one crossbar, each node's NIC at the measured link "
             "parameters, shared memory inside a node at the library's default for it, 1.5 us and 8 GB/s) and the "
             "cost model's prediction. Simulated and modelled times are predictions, not measurements.", "",
             "Command: `python3 bench/sim/calibration.py` (minutes; runs strata-model and strata-sim only).", "",
             "## Link parameters", "",
             "Each launch (collective x placement) probed its links at init. Its parameters are recovered by fitting "
             "strata-model to the predictions that launch's INFO log recorded for every candidate and size (the run "
             "did not record the probe's figures); the last column is the largest relative difference between the "
             "recorded predictions and strata-model's with the fitted parameters:", "",
             "| launch | latency (us) | bandwidth (MB/s) | gap (us) | worst fit error |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for launch, f in fits.items():
        lines.append(f"| {launch} | {f['alpha_us']:.1f} | {f['gbps'] * 1000:.1f} | {f['gap_us']:.1f} | "
                     f"{100 * f['worst_fit_error']:.1f}% |")
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
