#!/usr/bin/env python3
"""strata's network transports side by side: 2 ranks in two network namespaces
(veth through a bridge, optionally shaped with --rate), strata-perf all_reduce
over STRATA_NET=tcp (strata's own sockets), ofi (libfabric, FI_PROVIDER=tcp)
and ucx (UCX_TLS=tcp), and iperf3 --bidir between the same namespaces. Each
transport's sweep is repeated --reps times with the order alternating;
writes docs/benchmarks/net.md (+ net.json, net-all_reduce.png).

    sudo .venv/bin/python bench/net_bench.py [--reps 5] [--rate 2gbit]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the namespace harness, parsing and plotting)

NETS = {"tcp": {}, "ofi": {"FI_PROVIDER": "tcp"}, "ucx": {"UCX_TLS": "tcp"}}
SWEEP = ("1M", "64M", "20", "3")


class NetTransports(compare.Netns):
    def libraries(self):
        return list(NETS)

    def command(self, lib, coll, rng):
        setting = " ".join(f"{k}={v}" for k, v in NETS[lib].items())
        return ["ip", "netns", "exec", "<ns r>", "env",
                f"RANK=r WORLD_SIZE=2 STRATA_COMM_ID=<ns0>:port STRATA_HOSTID=node<r> STRATA_NET={lib} {setting}".strip(),
                os.path.join(compare.BENCH, "strata-perf")] + compare.sweep_args(coll, rng)

    def measure(self, lib, coll, rng):
        self.port += 2
        procs = []
        for r in (0, 1):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", STRATA_COMM_ID=f"{self.addr[0]}:{self.port}",
                       STRATA_HOSTID=f"node{r}", STRATA_NET=lib, **NETS[lib])
            procs.append(subprocess.Popen(["ip", "netns", "exec", self.ns[r], os.path.join(compare.BENCH, "strata-perf")]
                                          + compare.sweep_args(coll, rng), env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        out, err = procs[0].communicate(timeout=600)
        err1 = procs[1].communicate(timeout=120)[1]
        if procs[0].returncode or procs[1].returncode:
            sys.exit(f"strata over {lib} failed:\n{out[-1500:]}\n{err[-1500:]}\n{err1[-1500:]}")
        return compare.parse_rows(out)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for lib in NETS:
        data = results[(lib, "all_reduce")]
        sizes = sorted(data)
        ax.plot(sizes, [compare.med(data[s]["bus"]) for s in sizes], marker="o", label=f"strata over {lib}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s, median)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax.set_title("all_reduce, 2 ranks in two namespaces")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--rate", default="")
    p.add_argument("--out", default=os.path.join(compare.ROOT, "docs", "benchmarks"))
    p.add_argument("--from-json", help="rewrite the report from a saved net.json, measuring nothing")
    args = p.parse_args()
    if args.from_json:
        saved = json.load(open(args.from_json))
        results = {tuple(k.split("|")): {int(sz): v for sz, v in d.items()} for k, d in saved["results"].items()}
        return report(args, results, saved["limits"], saved["commands"], saved["date"], saved.get("argv", ""))
    env = NetTransports(args)
    results = {}
    try:
        for rep in range(args.reps):
            order = list(NETS) if rep % 2 == 0 else list(reversed(NETS))
            for lib in order:
                for size, (t, bw) in env.measure(lib, "all_reduce", SWEEP).items():
                    d = results.setdefault((lib, "all_reduce"), {}).setdefault(size, {"time": [], "bus": []})
                    d["time"].append(t)
                    d["bus"].append(bw)
            print(f"rep {rep + 1}/{args.reps} done", file=sys.stderr)
        limits = env.limits()
        commands = [" ".join(env.command(lib, "all_reduce", SWEEP)) for lib in NETS]
    finally:
        env.close()
    os.makedirs(args.out, exist_ok=True)
    date, argv = time.strftime("%Y-%m-%d"), " ".join(sys.argv[1:])
    with open(os.path.join(args.out, "net.json"), "w") as f:
        json.dump({"date": date, "argv": argv, "limits": limits, "commands": commands,
                   "results": {f"{lib}|{coll}": {str(s): v for s, v in d.items()} for (lib, coll), d in results.items()}}, f)
    report(args, results, limits, commands, date, argv)


def report(args, results, limits, commands, date, argv):
    plot(results, os.path.join(args.out, "net-all_reduce.png"))
    sizes = sorted(results[("tcp", "all_reduce")])
    lines = ["# Benchmark: strata's network transports", "",
             f"2 ranks in two network namespaces joined by veth through a bridge"
             f"{', links shaped to ' + args.rate + ' (tbf)' if args.rate else ', unshaped'}; all_reduce, float32, sum,"
             f" out-of-place. Generated by `bench/net_bench.py {argv}` on {date}.", "",
             f"- Machine: {compare.machine()}",
             f"- {args.reps} repetitions per transport, order alternating; cells are median busbw in GB/s "
             "(min–max); busbw = algbw (2 ranks: 2(n−1)/n = 1).",
             "- Commands:", ""] + [f"      {c}" for c in commands] + [""]
    for name, v in limits:
        lines.append(f"- {name}: **{v:.3g} GB/s** (median of 3)")
    lines += ["", "| size | tcp (strata sockets) | ofi (libfabric tcp) | ucx (UCX tcp) | ofi / tcp | ucx / tcp |",
              "| ---: | --- | --- | --- | ---: | ---: |"]
    for s in sizes:
        cells = [compare.cell(results[(lib, "all_reduce")].get(s, {}).get("bus")) for lib in NETS]
        med = {lib: compare.med(results[(lib, "all_reduce")].get(s, {}).get("bus")) for lib in NETS}
        ratio = lambda lib: f"{med[lib] / med['tcp']:.2f}" if med[lib] and med["tcp"] else "—"
        lines.append(f"| {s} | " + " | ".join(cells) + f" | {ratio('ofi')} | {ratio('ucx')} |")
    lines += ["", "![busbw and latency by transport](net-all_reduce.png)", ""]
    with open(os.path.join(args.out, "net.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
