#!/usr/bin/env python3
"""What tracing costs when it is off: strata-perf all_reduce (2 local ranks) at
8 B and 64 MiB with three builds of the same machine, run alternately in one
go: this tree (tracing built in, STRATA_TRACE_FILE unset), this tree with
-DSTRATA_TRACING=OFF (tracing compiled out), and, when --base names a commit,
that commit (e.g. the last one before observability: no flight recorder, no
statistics either). Also this tree with STRATA_TRACE_FILE set, for what tracing
costs when on. Writes docs/benchmarks/tracing.md.

  .venv/bin/python bench/tracing_overhead.py --base 62ddcc2 --reps 7
"""
import argparse
import os
import platform
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(src, out, *flags, configure=True):
    if configure:
        subprocess.run(["cmake", "-S", src, "-B", out, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DSTRATA_BUILD_TESTS=OFF", *flags], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", out, "--target", "strata-perf"], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(out, "bench", "strata-perf")


def run_perf(binary, size, iters, warmup, env):
    cmd = [binary, "all_reduce", "-np", "2", "-b", size, "-e", size, "-n", str(iters), "-w", str(warmup)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=dict(os.environ, **env)).stdout
    rows = [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]
    return float(rows[-1][5]), float(rows[-1][7])  # out-of-place time (us), busbw (GB/s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="a commit to build as the baseline without observability")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "tracing.md"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="strata-tracing-")
    # This tree: the project's own build/ (scripts/build.sh configured it).
    variants = {"tracing built in, off": (build(ROOT, os.path.join(ROOT, "build"), configure=False), {})}
    variants["tracing compiled out"] = (build(ROOT, os.path.join(work, "notrace"), "-DSTRATA_TRACING=OFF"), {})
    if args.base:
        tree = os.path.join(work, "base-src")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, args.base], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        variants[f"commit {args.base} (no observability)"] = (build(tree, os.path.join(work, "base")), {})
    variants["tracing on (STRATA_TRACE_FILE)"] = (variants["tracing built in, off"][0],
                                                 {"STRATA_TRACE_FILE": os.path.join(work, "trace-%r.json")})
    sizes = [("8", 20000, 1000), ("64M", 20, 3)]
    results = {(v, s[0]): [] for v in variants for s in sizes}
    names = list(variants)
    for rep in range(args.reps):
        order = names if rep % 2 == 0 else names[::-1]
        for size, iters, warmup in sizes:
            for v in order:
                binary, env = variants[v]
                results[(v, size)].append(run_perf(binary, size, iters, warmup, env))
        print(f"rep {rep + 1}/{args.reps} done", flush=True)
    if args.base:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree], check=False)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    ref = names[0]
    lines = ["# What tracing costs", "",
             f"Machine: {os.cpu_count()} cores, {cpu}, {platform.platform()}. Command: "
             f"`bench/tracing_overhead.py{' --base ' + args.base if args.base else ''} --reps {args.reps}` "
             "(strata-perf all_reduce -np 2, float32; 8 B: 20000 iterations, 64 MiB: 20; each rep runs "
             "every variant, the order alternating). Median over reps (min - max), out-of-place time.", "",
             "| variant | 8 B time (us) | vs first | 64 MiB busbw (GB/s) | vs first |", "|---|---|---|---|---|"]
    for v in names:
        t8 = [t for t, _ in results[(v, "8")]]
        bw = [b for _, b in results[(v, "64M")]]
        r8 = statistics.median(t8) / statistics.median([t for t, _ in results[(ref, "8")]])
        rb = statistics.median(bw) / statistics.median([b for _, b in results[(ref, "64M")]])
        lines.append(f"| {v} | {statistics.median(t8):.2f} ({min(t8):.2f} - {max(t8):.2f}) | {r8:.3f} | "
                     f"{statistics.median(bw):.3f} ({min(bw):.3f} - {max(bw):.3f}) | {rb:.3f} |")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
