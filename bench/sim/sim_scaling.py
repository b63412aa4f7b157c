#!/usr/bin/env python3
"""strata-sim at 8 to 4096 nodes: every algorithm of all-reduce, reduce-scatter,
all-gather, broadcast and all-to-all replayed on a two-level fat-tree (full
bisection) with strata-model's default links (NVLink class inside a node,
15 us / 50 GB/s per node between nodes), beside the model's prediction.
Writes docs/benchmarks/sim-scaling.json; bench/model/scaling.py puts it beside
the model in docs/scaling.md.

    python3 bench/sim/sim_scaling.py [--nodes 8,64,512,4096] [--per-node 8]
        [--sizes 64K,1M,16M,256M] [--rails 1] [--max-messages 2e6] [--check-reduced 64]
        [--colls all_reduce,...] [--keep-from OLD.json] [--refresh-model]
        [--algos NAME,..] [--replay-reduced [--symmetric]]

--refresh-model: after a change to the cost model alone (no plan changed, so
every replay stays as it was), recompute the model's column and the
selector's choice of the saved rows with strata-model (the same functions;
both take the size in bytes), and replay only the scenarios and FSDP layers
whose choice changed (a layer's choice: the step on that node count). After
plans changed, replay their rows first (--algos) and add --rerun-extras to
replay every scenario and the FSDP step too.

Counts are bytes (uint8), so 64 KiB splits into blocks even on 32768 ranks.
Replays that would send more than --max-messages fragments (rings over
thousands of ranks) are reduced: strata-sim extrapolates them from full
replays on 1/2, 1/4 and 1/8 of the nodes (or of the whole cluster in coarser
fragments, where those move other bytes per step), unless every node's plan is
node 0's moved by a shift or an exclusive or of the node indices: then node 0's
ranks are replayed alone (strata-sim's symmetric replay, bench/sim/symmetry.h).
--check-reduced N replays every cell on N nodes both ways (--reduce), to show how
far the reduction is off; every run also replays the cells of N nodes as
symmetric replays where they are, beside their full replays.

--replay-reduced --symmetric: after symmetric replay came to strata-sim,
replay the reduced or skipped rows that a symmetric replay stands for (the
others stay as they were) and add the symmetric check.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "build", "bench", "strata-model")
SIM = os.environ.get("STRATA_SIM", os.path.join(ROOT, "build", "bench", "strata-sim"))
COLLS = ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "alltoall"]
# What a user at scale asks about, on 64 x 8 ranks with the selector's choice.
SCENARIOS = [("as built", []), ("node 0's NIC at half speed", ["--slow-node", "0,0.5"]),
             ("rank 0 calls 1 ms late", ["--late-rank", "0,1000"]),
             ("fat-tree uplinks tapered 2:1", ["--taper", "2"])]


DEFAULT_NODES = "8,64,512,4096"
DEFAULT_SIZES = "64K,1M,16M,256M"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", default=DEFAULT_NODES)
    p.add_argument("--per-node", default="8")
    p.add_argument("--sizes", default=DEFAULT_SIZES)
    p.add_argument("--rails", default="1", help="the links each node's network is made of (strata-sim --rails)")
    p.add_argument("--max-messages", default="2e6")
    p.add_argument("--check-reduced", default="64")
    p.add_argument("--scenario-nodes", default="64")
    p.add_argument("--fsdp-nodes", default="8,64,512,4096")
    p.add_argument("--colls", default=",".join(COLLS))
    p.add_argument("--no-extras", action="store_true", help="only the rows: no reduction check, scenarios or FSDP step")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "sim-scaling.json"))
    p.add_argument("--keep-from", help="a previous run's JSON whose rows of the collectives not in --colls are kept "
                   "(to replay only the collectives whose plans changed); scenarios and the FSDP step are re-run")
    p.add_argument("--refresh-model", action="store_true", help="recompute the model column, the choice and the "
                   "offered algorithms of --out's rows (no replay); replay the scenarios and FSDP layers whose "
                   "choice changed")
    p.add_argument("--rerun-extras", action="store_true", help="with --refresh-model, after a change to plans: "
                   "replay every scenario and the whole FSDP step again, whatever the choice")
    p.add_argument("--algos", help="replay only these algorithms (comma-separated) of --colls at every scale and "
                   "size, and merge their rows into --out, replacing the same cells (an algorithm added or changed)")
    p.add_argument("--replay-reduced", action="store_true", help="after a change to strata-sim's reduction alone: "
                   "replay again the rows of --out that were reduced or skipped, and the reduction check")
    p.add_argument("--symmetric", action="store_true", help="with --replay-reduced: only the rows a symmetric "
                   "replay stands for, as symmetric replays; the reduction check stays, the symmetric check is added")
    args = p.parse_args()
    if args.refresh_model:
        return refresh_model(args)
    if args.replay_reduced:
        return replay_reduced(args)
    if args.algos:
        return replay_algorithms(args)
    started = time.time()
    result = {"argv": " ".join(sys.argv[1:]), "per_node": int(args.per_node), "rows": [], "reduced_check": [],
              "scenarios": []}
    if args.keep_from:
        old = json.load(open(args.keep_from))
        colls = args.colls.split(",")
        for key in ("rows", "reduced_check"):
            result[key] = [r for r in old[key] if r["coll"] not in colls]
        result["kept"] = {"argv": old["argv"], "wall_s": old.get("wall_s", 0),
                          "colls": sorted({r["coll"] for r in result["rows"]})}

    def run(key, nodes, extra=()):
        for coll in args.colls.split(","):
            for size in args.sizes.split(","):
                t0 = time.time()
                out = subprocess.run([SIM, coll, "--nodes", nodes, "--per-node", args.per_node, "-d", "uint8",
                                      "-b", size, "-e", size, "--algo", "all", "--rails", args.rails,
                                      "--max-messages", args.max_messages, "--json", *extra],
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"strata-sim failed: {out.stderr}")
                got = json.loads(out.stdout)
                result[key] += got
                print(f"{key}: {coll} {nodes} x {args.per_node} {size}: {len(got)} algorithms, "
                      f"{time.time() - t0:.0f} s", flush=True)
                result["wall_s"] = time.time() - started
                json.dump(result, open(args.out, "w"), indent=0)

    for nodes in args.nodes.split(","):
        run("rows", nodes)
    if args.no_extras:
        return
    if args.check_reduced:
        run("reduced_check", args.check_reduced, ["--reduce"])
        result["symmetric_check"] = symmetric_check(saved_run_sim(result, args), args.check_reduced)
    for coll in ["all_reduce", "all_gather", "reduce_scatter"]:
        for size in ["1M", "64M"]:
            for name, extra in SCENARIOS:
                out = subprocess.run([SIM, coll, "--nodes", args.scenario_nodes, "--per-node", args.per_node,
                                      "-d", "uint8", "-b", size, "-e", size, "--algo", "auto", "--rails", args.rails,
                                      "--max-messages", args.max_messages, "--json", *extra],
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"strata-sim failed: {out.stderr}")
                for r in json.loads(out.stdout):
                    r["scenario"] = name
                    result["scenarios"].append(r)
                print(f"scenario {coll} {size} {name}", flush=True)
                json.dump(result, open(args.out, "w"), indent=0)
    # One FSDP step: per layer (1, 4, 16, 64 MiB) an all-gather and a reduce-scatter.
    out = subprocess.run([SIM, "all_gather", "--fsdp-step", "--nodes", args.fsdp_nodes, "--per-node", args.per_node,
                          "-d", "uint8", "-b", "1M", "-e", "64M", "-f", "4", "--rails", args.rails,
                          "--max-messages", args.max_messages,
                          "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"strata-sim failed: {out.stderr}")
    result["fsdp"] = json.loads(out.stdout)
    result["wall_s"] = time.time() - started
    json.dump(result, open(args.out, "w"), indent=0)


def saved_run_sim(saved, args):
    """strata-sim for one cell of a saved run (its ranks per node, rails and uint8 counts): the rows it prints,
    or None where it refuses the algorithm (not one of that collective's)."""
    argv = saved.get("argv", "").split()
    rails = argv[argv.index("--rails") + 1] if "--rails" in argv else "1"

    def sim(coll, nodes, size, algo, extra=()):
        out = subprocess.run([SIM, coll, "--nodes", str(nodes), "--per-node", str(saved["per_node"]), "-d", "uint8",
                              "-b", str(size), "-e", str(size), "--algo", algo, "--rails", rails, "--max-messages",
                              args.max_messages, "--json", *extra], capture_output=True, text=True)
        return json.loads(out.stdout) if out.returncode == 0 else None
    return sim


def symmetric_check(sim, nodes):
    """Every cell of 64 KiB-16 MiB on `nodes` nodes replayed whole and as a symmetric replay (node 0's ranks
    alone) where one stands for the cluster, both now: how far the symmetric replay is off."""
    out = []
    for coll in COLLS:
        for size in ("64K", "1M", "16M"):
            mirrored = {r["algorithm"]: r for r in sim(coll, nodes, size, "all", ["--symmetric"]) or []
                        if not r["skipped"]}
            if not mirrored:
                continue
            for r in sim(coll, nodes, size, "all", ["--max-messages", "1e15"]) or []:
                if r["algorithm"] in mirrored and not r["skipped"]:
                    out.append({"coll": coll, "nodes": r["nodes"], "bytes": r["bytes"], "algorithm": r["algorithm"],
                                "full_us": r["sim_us"], "symmetric_us": mirrored[r["algorithm"]]["sim_us"],
                                "how": mirrored[r["algorithm"]]["reduced"]})
            print(f"symmetric check: {coll} {nodes} {size}", flush=True)
    return out


def replay_reduced(args):
    """Replays again the saved rows that were reduced or skipped (each alone, --algo NAME) and the reduction
    check, with the saved run's rails; every other row, scenario and FSDP step stays as it was. With
    --symmetric, only the rows a symmetric replay stands for, and the symmetric check instead."""
    saved = json.load(open(args.out))
    sim = saved_run_sim(saved, args)
    started = time.time()
    redo = [i for i, r in enumerate(saved["rows"]) if r["reduced"] or r["skipped"]]
    kept = 0
    for n, i in enumerate(redo):
        r = saved["rows"][i]
        t0 = time.time()
        fresh = sim(r["coll"], r["nodes"], r["bytes"], r["algorithm"], ["--symmetric"] if args.symmetric else [])
        if fresh is None:
            sys.exit(f"strata-sim refused {r['coll']} {r['algorithm']}")
        if args.symmetric and fresh[0]["skipped"]:  # no symmetric replay stands for it: as it was
            kept += 1
            continue
        fresh[0]["chosen"] = r["chosen"]  # the choice is the selector's, unchanged by a replay
        saved["rows"][i] = fresh[0]
        print(f"{n + 1}/{len(redo)} {r['coll']} {r['nodes']} {r['bytes']} {r['algorithm']}: {r['sim_us']:.1f} -> "
              f"{fresh[0]['sim_us']:.1f} us ({time.time() - t0:.0f} s)", flush=True)
        json.dump(saved, open(args.out, "w"), indent=0)
    if args.symmetric:
        check_nodes = sorted({r["nodes"] for r in saved["reduced_check"]}) or [64]
        saved["symmetric_check"] = symmetric_check(sim, check_nodes[0])
        saved.setdefault("notes", []).append(
            f"The {len(redo) - kept} of the {len(redo)} reduced or skipped rows that a symmetric replay stands for "
            f"(node 0's ranks alone, every node's plan node 0's moved by a shift or an exclusive or of the node "
            f"indices: strata-sim, bench/sim/symmetry.h) replayed so (`sim_scaling.py --replay-reduced --symmetric`, "
            f"{time.strftime('%Y-%m-%d')}, {(time.time() - started) / 60:.0f} minutes); the other {kept} as they "
            f"were; the other rows, scenarios and FSDP step as they were.")
        json.dump(saved, open(args.out, "w"), indent=0)
        return
    check = []
    for nodes in sorted({r["nodes"] for r in saved["reduced_check"]}):
        for coll in sorted({r["coll"] for r in saved["reduced_check"]}):
            for size in sorted({r["bytes"] for r in saved["reduced_check"] if r["coll"] == coll}):
                check += sim(coll, nodes, size, "all", ["--reduce"]) or []
    saved["reduced_check"] = check
    saved.setdefault("notes", []).append(
        f"The {len(redo)} rows that were reduced or skipped, and the reduction check, replayed again after a change "
        f"to strata-sim's reduction (`sim_scaling.py --replay-reduced`, {time.strftime('%Y-%m-%d')}, "
        f"{(time.time() - started) / 60:.0f} minutes); the other rows, scenarios and FSDP step as they were.")
    json.dump(saved, open(args.out, "w"), indent=0)


def replay_algorithms(args):
    """Replays the --algos of --colls at --nodes x --sizes with the saved run's rails and merges the rows into
    --out (the reduction check too, at its node count); other rows, scenarios and the FSDP step stay."""
    saved = json.load(open(args.out))
    sim = saved_run_sim(saved, args)
    started = time.time()
    algos = args.algos.split(",")
    check_nodes = [str(n) for n in sorted({r["nodes"] for r in saved["reduced_check"]})]
    for key, node_list, extra in (("rows", args.nodes.split(","), []), ("reduced_check", check_nodes, ["--reduce"])):
        for nodes in node_list:
            for coll in args.colls.split(","):
                for size in args.sizes.split(","):
                    for algo in algos:
                        t0 = time.time()
                        fresh = sim(coll, nodes, size, algo, extra)
                        if fresh is None:  # not an algorithm of this collective
                            continue
                        cells = {(r["coll"], r["nodes"], r["bytes"], r["algorithm"]) for r in fresh}
                        saved[key] = [r for r in saved[key]
                                      if (r["coll"], r["nodes"], r["bytes"], r["algorithm"]) not in cells] + fresh
                        print(f"{key}: {coll} {nodes} {size} {algo}: {time.time() - t0:.0f} s", flush=True)
                        json.dump(saved, open(args.out, "w"), indent=0)
    saved.setdefault("notes", []).append(
        f"Rows of {', '.join(algos)} ({', '.join(args.colls.split(','))}) replayed and added "
        f"(`sim_scaling.py --algos {args.algos} --colls {args.colls}"
        f"{f' --rails {args.rails}' if args.rails != '1' else ''}"
        f"{f' --nodes {args.nodes}' if args.nodes != DEFAULT_NODES else ''}"
        f"{f' --sizes {args.sizes}' if args.sizes != DEFAULT_SIZES else ''}`, {time.strftime('%Y-%m-%d')}, "
        f"{(time.time() - started) / 60:.0f} minutes); the other rows, scenarios and FSDP step as they were.")
    json.dump(saved, open(args.out, "w"), indent=0)


def model_row(coll, nodes, per_node, rails, size):
    """strata-model's candidates, choice and forced-only algorithms for one cell, with the defaults strata-sim uses."""
    out = subprocess.run([MODEL, coll, "--nodes", str(nodes), "--per-node", str(per_node), "--rails", str(rails),
                          "-b", str(size), "-e", str(size), "--json"], capture_output=True, text=True, check=True)
    row = json.loads(out.stdout)[0]
    return row["candidates"], row["chosen"], row.get("forced_only", [])


def refresh_model(args):
    saved = json.load(open(args.out))
    rails = args.rails
    cache, was, now = {}, {}, {}

    def model(coll, nodes, size):
        key = (coll, nodes, size)
        if key not in cache:
            cache[key] = model_row(coll, nodes, saved["per_node"], rails, size)
        return cache[key]

    for key in ("rows", "reduced_check"):
        for r in saved[key]:
            cands, choice, forced_only = model(r["coll"], r["nodes"], r["bytes"])
            if r["algorithm"] not in cands:
                continue
            cell = f"{r['coll']} {r['nodes']} x {r['per_node']} {r['bytes'] >> 20 or r['bytes']}" + \
                (" MiB" if r["bytes"] >> 20 else " B")
            if key == "rows" and r["chosen"]:
                was[cell] = r["algorithm"]
            now[cell] = choice
            r["model_us"] = cands[r["algorithm"]]
            r["chosen"] = r["algorithm"] == choice
            r["offered"] = r["algorithm"] not in forced_only
    changed = [f"{cell}: {was[cell]} -> {now[cell]}" for cell in was if was[cell] != now[cell]]
    stale = []
    for r in saved["scenarios"]:
        cands, choice, _ = model(r["coll"], r["nodes"], r["bytes"])
        if choice != r["algorithm"] or args.rerun_extras:
            stale.append((r["coll"], r["bytes"], r["scenario"]))
        r["model_us"] = cands.get(r["algorithm"], r["model_us"])
    for coll, size, name in stale:
        extra = dict(SCENARIOS)[name]
        t0 = time.time()
        out = subprocess.run([SIM, coll, "--nodes", args.scenario_nodes, "--per-node", str(saved["per_node"]),
                              "-d", "uint8", "-b", str(size), "-e", str(size), "--algo", "auto", "--rails", rails,
                              "--max-messages", args.max_messages, "--json", *extra], capture_output=True, text=True,
                             check=True)
        fresh = json.loads(out.stdout)
        for r in fresh:
            r["scenario"] = name
        saved["scenarios"] = [r for r in saved["scenarios"]
                              if (r["coll"], r["bytes"], r["scenario"]) != (coll, size, name)] + fresh
        json.dump(saved, open(args.out, "w"), indent=0)  # a stopped re-run keeps the cells it finished
        print(f"scenario {name}: {coll} {size} B: {time.time() - t0:.0f} s", flush=True)
    # The FSDP step's layers (1, 4, 16, 64 MiB), each an all-gather then a reduce-scatter.
    fsdp_stale = []
    for step in saved.get("fsdp", []):
        now = [model(c, step["nodes"], size << 20)[1] for size in (1, 4, 16, 64)
               for c in ("all_gather", "reduce_scatter")]
        if now != step["algorithms"].split(",") or args.rerun_extras:
            fsdp_stale.append(str(step["nodes"]))
    if fsdp_stale:
        out = subprocess.run([SIM, "all_gather", "--fsdp-step", "--nodes", ",".join(fsdp_stale), "--per-node",
                              str(saved["per_node"]), "-d", "uint8", "-b", "1M", "-e", "64M", "-f", "4", "--rails",
                              rails, "--max-messages", args.max_messages, "--json"], capture_output=True, text=True,
                             check=True)
        fresh = {str(step["nodes"]): step for step in json.loads(out.stdout)}
        saved["fsdp"] = [fresh.get(str(step["nodes"]), step) for step in saved["fsdp"]]
    notes = saved.setdefault("notes", [])
    notes.append(f"Model column, selector's choice and the algorithms offered to it recomputed with strata-model "
                 f"after a cost-model or selector change "
                 f"(`sim_scaling.py --refresh-model{' --rerun-extras' if args.rerun_extras else ''}`, "
                 f"{time.strftime('%Y-%m-%d')}); replays unchanged"
                 + (f"; choices changed: {'; '.join(changed)}" if changed else "; no choice changed")
                 + (f"; scenarios re-run: {len(stale)}" if stale else "")
                 + (f"; the FSDP step re-run on {', '.join(fsdp_stale)} nodes" if fsdp_stale else "") + ".")
    json.dump(saved, open(args.out, "w"), indent=0)
    print("\n".join(changed) or "no choice changed")
    print(f"scenarios re-run: {stale}; FSDP step re-run on nodes: {fsdp_stale}")


if __name__ == "__main__":
    main()
