"""DDP step time with DDP's default hook vs strata_torch.hooks, in one run.

    .venv/bin/python bench/ddp_hooks_bench.py [--reps 3] [--steps 30]
    sudo .venv/bin/python bench/ddp_hooks_bench.py --netns --rate 1gbit [--reps 3]

Runs examples/ddp_train.py with the strata backend on 2 ranks, once per hook
per repetition (hooks in rotating order), and prints the median of the runs'
median step times (a markdown table). By default the ranks run on this host
under torchrun (shared memory between them); with --netns each rank runs in
its own network namespace (veth through a bridge, shaped to --rate with tbf;
scripts/netns_lib.sh), so gradients cross a network link as between hosts.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the namespace harness)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
EXAMPLE = os.path.join(ROOT, "examples", "ddp_train.py")
STEP = re.compile(r"median step ([\d.]+) ms")
# Each variant's ddp_train.py arguments. "fused-hold" holds every bucket to the
# end of the backward pass (no eager send of large buckets), for comparison.
VARIANTS = {
    "default": ["--comm-hook", "default"],
    "fused": ["--comm-hook", "fused"],
    "fused-hold": ["--comm-hook", "fused", "--hook-eager-bytes", "0"],
    "bf16": ["--comm-hook", "bf16"],
    "fp16": ["--comm-hook", "fp16"],
}


def parse_step(name, returncode, out, err):
    m = STEP.search(out)
    if returncode != 0 or not m:
        raise SystemExit(f"{name}: failed\n{out[-2000:]}\n{err[-2000:]}")
    return float(m.group(1))


def step_ms_local(name, args):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", EXAMPLE, "--backend", "strata",
           "--steps", str(args.steps)] + VARIANTS[name] + args.extra.split()
    out = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True,
                         timeout=600)
    return parse_step(name, out.returncode, out.stdout, out.stderr)


def step_ms_netns(name, args, env_ns):
    env_ns.port += 2
    procs = []
    for r in (0, 1):
        env = dict(os.environ, OMP_NUM_THREADS="1", RANK=str(r), WORLD_SIZE="2", LOCAL_RANK="0",
                   LOCAL_WORLD_SIZE="1", MASTER_ADDR=env_ns.addr[0], MASTER_PORT=str(env_ns.port),
                   STRATA_HOSTID=f"node{r}")
        cmd = ["ip", "netns", "exec", env_ns.ns[r], sys.executable, EXAMPLE, "--backend", "strata",
               "--steps", str(args.steps)] + VARIANTS[name] + args.extra.split()
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    out, err = procs[0].communicate(timeout=900)
    err1 = procs[1].communicate(timeout=120)[1]
    if procs[1].returncode != 0:
        raise SystemExit(f"{name}: rank 1 failed\n{err1[-2000:]}")
    return parse_step(name, procs[0].returncode, out, err)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--variants", default="default,fused,bf16,fp16", help=f"comma-separated, of {','.join(VARIANTS)}")
    p.add_argument("--extra", default="", help="more ddp_train.py arguments, e.g. '--bucket-cap-mb 1'")
    p.add_argument("--netns", action="store_true", help="one rank per network namespace (needs root)")
    p.add_argument("--rate", default="", help="with --netns: tbf rate of the links, e.g. 1gbit (default unshaped)")
    args = p.parse_args()
    names = args.variants.split(",")
    for n in names:
        if n not in VARIANTS:
            raise SystemExit(f"unknown variant {n!r}; known: {', '.join(VARIANTS)}")
    env_ns = compare.Netns(args) if args.netns else None
    runs = {n: [] for n in names}
    try:
        for r in range(args.reps):
            for k in range(len(names)):
                n = names[(k + r) % len(names)]
                runs[n].append(step_ms_netns(n, args, env_ns) if env_ns else step_ms_local(n, args))
            print(f"rep {r + 1}/{args.reps} done", file=sys.stderr)
    finally:
        if env_ns:
            env_ns.close()
    where = (f"2 ranks in two network namespaces, links {'shaped to ' + args.rate if args.rate else 'unshaped'}"
             if args.netns else "2 ranks on this host (torchrun)")
    print(f"{where}; ddp_train.py --steps {args.steps} {args.extra}".rstrip())
    base = statistics.median(runs[names[0]])
    print(f"| DDP comm hook (strata backend) | runs (ms) | median step (ms) | vs {names[0]} |")
    print("| --- | --- | ---: | ---: |")
    for n in names:
        med = statistics.median(runs[n])
        print(f"| {n} | {', '.join(f'{x:.1f}' for x in runs[n])} | {med:.1f} | {med / base:.3f} |")


if __name__ == "__main__":
    main()
