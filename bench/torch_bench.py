#!/usr/bin/env python3
"""strata's torch.distributed backend against gloo, as PyTorch users meet them,
in one run on this host (2 ranks, CPU tensors):

  1. dist.all_reduce of float32 tensors, 1 KiB .. 64 MiB and DDP's 25 MiB
     bucket, through bench/baselines/gloo_perf.py --backend strata / gloo;
  2. examples/ddp_train.py under torchrun --nproc-per-node 2, median step time.

Each measurement is repeated --reps times with the backend order alternating.
Writes docs/benchmarks/torch.md, torch.json and torch-all_reduce.png.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ROOT, machine, parse_rows  # noqa: E402

BACKENDS = ["strata", "gloo"]
PERF = os.path.join(ROOT, "bench", "baselines", "gloo_perf.py")
EXAMPLE = os.path.join(ROOT, "examples", "ddp_train.py")
STEP = re.compile(r"median step ([\d.]+) ms")


def run(cmd):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out.stdout


def all_reduce_rows(backend, ranks):
    rows = parse_rows(run([sys.executable, PERF, "all_reduce", "--backend", backend, "-np", str(ranks),
                           "-b", "1K", "-e", "64M", "-f", "4", "-n", "20", "-w", "3"]))
    rows.update(parse_rows(run([sys.executable, PERF, "all_reduce", "--backend", backend, "-np", str(ranks),
                                "-b", "25M", "-e", "25M", "-n", "20", "-w", "3"])))
    return rows


def ddp_step_ms(backend, ranks, steps):
    out = run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks), EXAMPLE,
               "--backend", backend, "--steps", str(steps)])
    return float(STEP.search(out).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks"))
    p.add_argument("--from-json", help="rewrite the report from a saved torch.json")
    a = p.parse_args()
    if a.from_json:
        return report(a, json.load(open(a.from_json)))
    import torch
    ar = {b: {} for b in BACKENDS}
    ddp = {b: [] for b in BACKENDS}
    started = time.time()
    for rep in range(a.reps):
        order = BACKENDS if rep % 2 == 0 else BACKENDS[::-1]
        for b in order:
            for size, (t, bw) in all_reduce_rows(b, a.ranks).items():
                ar[b].setdefault(str(size), {"time": [], "bus": []})
                ar[b][str(size)]["time"].append(t)
                ar[b][str(size)]["bus"].append(bw)
        for b in order:
            ddp[b].append(ddp_step_ms(b, a.ranks, a.steps))
        print(f"rep {rep + 1}/{a.reps} done after {time.time() - started:.0f} s", file=sys.stderr)
    saved = {"date": time.strftime("%Y-%m-%d"), "argv": " ".join(sys.argv[1:]), "machine": machine(),
             "torch": torch.__version__, "ranks": a.ranks, "all_reduce": ar, "ddp_step_ms": ddp}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "torch.json"), "w") as f:
        json.dump(saved, f, indent=1)
    report(a, saved)


def fmt_size(n):
    for unit, s in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= unit:
            v = n / unit
            return f"{v:g} {s}"
    return f"{n} B"


def report(a, saved):
    ar, ddp = saved["all_reduce"], saved["ddp_step_ms"]
    med = {b: {int(s): statistics.median(d["bus"]) for s, d in ar[b].items()} for b in BACKENDS}
    sizes = sorted(med["strata"])
    m = saved["machine"]
    lines = [f"# strata's torch.distributed backend vs gloo: {saved['ranks']} ranks, CPU tensors", "",
             f"Measured {saved['date']} on {m}, torch {saved['torch']}.", "",
             f"Command: `.venv/bin/python bench/torch_bench.py {saved['argv']}`", "",
             "Both backends run as PyTorch users meet them: `dist.init_process_group(backend)` then "
             "`dist.all_reduce` on float32 CPU tensors (bench/baselines/gloo_perf.py, the slowest rank's mean of "
             "20 calls), and DDP training (examples/ddp_train.py under torchrun). Every figure is the median of "
             f"{len(ddp['strata'])} runs, the backend order alternating run by run.", "",
             "## all_reduce bus bandwidth (GB/s)", "",
             "| size | strata | gloo | strata / gloo |", "| ---: | ---: | ---: | ---: |"]
    for s in sizes:
        if s in med["gloo"]:
            bold = "**" if s == 25 << 20 else ""
            lines.append(f"| {bold}{fmt_size(s)}{bold} | {med['strata'][s]:.3f} | {med['gloo'][s]:.3f} | "
                         f"{bold}{med['strata'][s] / med['gloo'][s]:.2f}x{bold} |")
    d = {b: statistics.median(ddp[b]) for b in BACKENDS}
    lines += ["", "## DDP training step (examples/ddp_train.py, median step time)", "",
              "| backend | runs (ms) | median (ms) |", "| --- | --- | ---: |"]
    for b in BACKENDS:
        lines.append(f"| {b} | {', '.join(f'{x:.1f}' for x in ddp[b])} | {d[b]:.1f} |")
    lines += ["", f"strata / gloo step time: **{d['strata'] / d['gloo']:.2f}**; "
              f"25 MiB all_reduce strata / gloo busbw: **{med['strata'][25 << 20] / med['gloo'][25 << 20]:.2f}x**.", ""]
    with open(os.path.join(a.out, "torch.md"), "w") as f:
        f.write("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        for b in BACKENDS:
            xs = [s for s in sizes if s != 25 << 20]
            ax.plot(xs, [med[b][s] for s in xs], marker="o", label=b)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(f"dist.all_reduce, {saved['ranks']} ranks, CPU float32")
        ax.legend()
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "torch-all_reduce.png"), dpi=110)
    except ImportError:
        pass
    print("\n".join(lines))


if __name__ == "__main__":
    main()
