"""DDP step time with DDP's default hook vs strata_torch.hooks, in one run.

    .venv/bin/python bench/ddp_hooks_bench.py [--reps 3] [--steps 30]

Runs examples/ddp_train.py under torchrun --nproc-per-node 2 with the strata
backend, once per hook per repetition (hooks in rotating order), and prints
the median of the runs' median step times (a markdown table).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
EXAMPLE = os.path.join(ROOT, "examples", "ddp_train.py")
STEP = re.compile(r"median step ([\d.]+) ms")
HOOKS = ["default", "fused", "bf16", "fp16"]


def step_ms(hook, steps):
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", EXAMPLE,
                          "--backend", "strata", "--steps", str(steps), "--comm-hook", hook],
                         env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=600)
    m = STEP.search(out.stdout)
    if out.returncode != 0 or not m:
        raise SystemExit(f"{hook}: failed\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return float(m.group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args()
    runs = {h: [] for h in HOOKS}
    for r in range(args.reps):
        for k in range(len(HOOKS)):
            h = HOOKS[(k + r) % len(HOOKS)]
            runs[h].append(step_ms(h, args.steps))
    base = statistics.median(runs["default"])
    print("| DDP comm hook (strata backend) | runs (ms) | median step (ms) | vs default hook |")
    print("| --- | --- | ---: | ---: |")
    for h in HOOKS:
        med = statistics.median(runs[h])
        print(f"| {h} | {', '.join(f'{x:.1f}' for x in runs[h])} | {med:.1f} | {med / base:.3f} |")


if __name__ == "__main__":
    main()
