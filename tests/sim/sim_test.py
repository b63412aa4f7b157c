#!/usr/bin/env python3
"""strata-sim at CI size: the replay of the planner's own plans.

- Times a hand can work out (no cost model involved): a pipelined chain, a
  full-duplex exchange, a slow NIC, a late root, a tapered fat-tree, a node's
  network in rails, a per-message cost, a fan-out inside nodes.
- Every algorithm the selector offers, for every collective, replays to the
  end (no stalled rank) on odd layouts: one node of 3, 5 nodes of 1, 3 nodes
  of 2, 2 nodes of 3; odd counts.
- A reduced replay (for clusters too large to replay whole) agrees with the
  full replay within 5% where both run; a symmetric replay (node 0's ranks
  alone) within 0.1%, and is refused, with the reason, where it does not
  stand for the cluster.
- Bad flags: one sentence naming the problem and exit status 2.

Usage: sim_test.py PATH/TO/strata-sim
"""
import json
import subprocess
import sys

SIM = sys.argv[1]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def sim(*args):
    p = subprocess.run([SIM, *args, "--json"], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"strata-sim {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return json.loads(p.stdout)


def one(*args):
    rows = sim(*args)
    assert len(rows) == 1, rows
    return rows[0]


def near(got, want, rel):
    return abs(got - want) <= rel * want


# 1. Hand-computed times. Default links: inter 15 us + 50 GB/s per node.
ALPHA, GBPS = 15.0, 50.0
B = 64 << 20
r = one("broadcast", "--nodes", "2", "--per-node", "1", "-b", str(B), "-e", str(B), "--algo", "chain")
want = ALPHA + B / (GBPS * 1e3)  # slices stream back to back: one latency, then the link's rate
check(near(r["sim_us"], want, 0.005), f"chain broadcast of 64 MiB over 2 nodes: {r['sim_us']:.1f} us, by hand {want:.1f}")

r = one("broadcast", "--nodes", "2", "--per-node", "1", "-b", str(B), "-e", str(B), "--algo", "chain",
        "--late-rank", "0,1000")
check(near(r["sim_us"], want + 1000, 0.005), f"the same with the root 1 ms late: {r['sim_us']:.1f} us, by hand {want + 1000:.1f}")

A, MEM = 16 << 20, 1000.0
r = one("alltoall", "--nodes", "2", "--per-node", "1", "-b", str(A), "-e", str(A), "--algo", "pairwise",
        "--memory", str(MEM))
# The own block is copied first (its own phase: read + write at the memory's rate), then both
# directions at once: the NICs are full duplex.
copy = 2 * (A / 2) / (MEM * 1e3)
want = copy + ALPHA + (A / 2) / (GBPS * 1e3)
check(near(r["sim_us"], want, 0.005), f"all-to-all of 16 MiB on 2 nodes: {r['sim_us']:.1f} us, by hand {want:.1f}")

r = one("alltoall", "--nodes", "2", "--per-node", "1", "-b", str(A), "-e", str(A), "--algo", "pairwise",
        "--memory", str(MEM), "--slow-node", "0,0.5")
want = copy + ALPHA + (A / 2) / (GBPS * 0.5 * 1e3)
check(near(r["sim_us"], want, 0.005), f"the same with node 0's NIC at half speed: {r['sim_us']:.1f} us, by hand {want:.1f}")

# Bruck's all-to-all on 5 nodes of one rank, blocks of 1 MiB: it lays out the 5 blocks
# (5 copies in one phase, replayed as one copy of their total), then 3 steps moving
# 2, 2 and 1 blocks (one latency each, then the node's link), each copied back, and
# a rotation of all 5: 15 blocks read and written, 5 sent.
Bk = 1 << 20
r = one("alltoall", "--nodes", "5", "--per-node", "1", "-d", "uint8", "-b", str(5 * Bk), "-e", str(5 * Bk),
        "--algo", "bruck", "--memory", str(MEM))
want = 2 * 15 * Bk / (MEM * 1e3) + 3 * ALPHA + 5 * Bk / (GBPS * 1e3)
check(near(r["sim_us"], want, 0.005), f"Bruck all-to-all of 5 x 1 MiB on 5 nodes: {r['sim_us']:.1f} us, by hand {want:.1f}")

# A node's network in 4 rails (--rails 4): local rank i leaves its node through
# rail i % 4 only. One transfer gets a quarter of the node's bandwidth; four
# local ranks streaming at once (the hierarchical ring's columns) get all of it.
r = one("broadcast", "--nodes", "2", "--per-node", "1", "-b", str(B), "-e", str(B), "--algo", "chain", "--rails", "4")
want = ALPHA + B / (GBPS / 4 * 1e3)
check(near(r["sim_us"], want, 0.005),
      f"chain broadcast of 64 MiB over 2 nodes on 4 rails: {r['sim_us']:.1f} us, by hand {want:.1f}")
one_rail = one("all_gather", "--nodes", "2", "--per-node", "4", "-b", "256M", "-e", "256M", "--algo", "hier_ring")
four = one("all_gather", "--nodes", "2", "--per-node", "4", "-b", "256M", "-e", "256M", "--algo", "hier_ring",
           "--rails", "4")
check(near(four["sim_us"], one_rail["sim_us"], 0.01) and near(four["model_us"], one_rail["model_us"], 0.01),
      f"hier_ring all-gather of 256 MiB on 2 x 4, 4 rails vs 1: sim {four['sim_us']:.0f} vs {one_rail['sim_us']:.0f} us, "
      f"model {four['model_us']:.0f} vs {one_rail['model_us']:.0f} us")
flat = one("all_gather", "--nodes", "2", "--per-node", "4", "-b", "256M", "-e", "256M", "--algo", "ring", "--rails", "4")
check(flat["sim_us"] > 2 * one_rail["sim_us"] and near(flat["sim_us"], flat["model_us"], 0.25),
      f"the flat ring on the same 4 rails (one transfer crosses each node boundary): sim {flat['sim_us']:.0f} us, "
      f"model {flat['model_us']:.0f} us")

# The flat pairwise all-to-all on 8 x 8 ranks at 16 MiB: the ranks drift apart
# and each node's link stays busy, so it costs the link's bytes (8 ranks x 56
# blocks of 256 KiB leave each node) and a latency, as the model now says
# (its lockstep form, a latency and the shared bytes per step, was 1.4x).
pw = one("alltoall", "--nodes", "8", "--per-node", "8", "-b", "16M", "-e", "16M", "--algo", "pairwise")
want = ALPHA + 8 * 56 * (256 << 10) / (GBPS * 1e3)
check(near(pw["sim_us"], want, 0.02) and near(pw["model_us"], pw["sim_us"], 0.05),
      f"pairwise all-to-all of 16 MiB on 8 x 8: sim {pw['sim_us']:.0f} us, model {pw['model_us']:.0f} us, "
      f"by hand {want:.0f} us")

# The same on a rail per rank (2 x 8 ranks, 8 rails): the steps go node by
# node, all ranks at once, so 7 steps inside the node (2 us, 450 GB/s) and 8
# across, each a latency and a block at one rail's 6.25 GB/s (in rank order
# every rank of a node had started across nodes at the same receiver: 3.25x).
rail = one("alltoall", "--nodes", "2", "--per-node", "8", "--rails", "8", "-b", "16M", "-e", "16M", "--algo", "pairwise")
blk = (16 << 20) / 16
want = 7 * (2 + blk / 450e3) + 8 * (ALPHA + blk / (GBPS / 8 * 1e3))
check(near(rail["sim_us"], want, 0.02) and near(rail["model_us"], rail["sim_us"], 0.02),
      f"pairwise all-to-all of 16 MiB on 2 x 8, a rail per rank: sim {rail['sim_us']:.0f} us, model "
      f"{rail['model_us']:.0f} us, by hand {want:.0f} us")

# Two leaf switches of 32 nodes: with the uplinks tapered 2:1, the steps whose
# traffic crosses between leaves take twice as long, the others not at all.
full = one("alltoall", "--nodes", "64", "--per-node", "1", "-b", "64M", "-e", "64M", "--algo", "pairwise")
tapered = one("alltoall", "--nodes", "64", "--per-node", "1", "-b", "64M", "-e", "64M", "--algo", "pairwise",
              "--taper", "2")
ratio = tapered["sim_us"] / full["sim_us"]
check(1.2 < ratio < 2.0, f"all-to-all on 64 nodes, fat-tree tapered 2:1 vs full bisection: {ratio:.2f}x (between 1.2 and 2)")

# A per-message cost (--inter A,G,GAP): the flat radix all-gather on 8 x 1 is
# one step of 7 messages of 8 B from each node, injected GAP apart: 15 us + 6 x 2 us.
for gap, want in ((0, ALPHA), (2, ALPHA + 6 * 2)):
    rx = one("all_gather", "--nodes", "8", "--per-node", "1", "--inter", f"{ALPHA},{GBPS},{gap}", "-d", "uint8",
             "-b", "64", "-e", "64", "--algo", "hier_radix")
    check(near(rx["sim_us"], want, 0.01) and near(rx["model_us"], want, 0.01),
          f"radix all-gather of 64 B on 8 x 1 with a {gap} us gap: sim {rx['sim_us']:.1f} us, model "
          f"{rx['model_us']:.1f} us, by hand {want:.1f} us")

# The hierarchical all-gather's fan-out inside equal nodes (Sends trailing a
# Recv): 8 MiB on 2 x 4, two outer slices of one phase each. In a phase each
# carrier's 512 KiB crosses at a quarter of the node's link after a latency,
# in fragments of 256, 128, 64, 32 and 32 KiB (fragmentBytes); its own block
# and the fragments go on to the node's 3 others as they land, the last after
# the link is done (2 us + 3 x 32 KiB at 450 GB/s; with whole 256 KiB
# fragments to the end, 1.5 us more a phase).
fan = one("all_gather", "--nodes", "2", "--per-node", "4", "-d", "uint8", "-b", "8M", "-e", "8M", "--algo", "hier_radix")
want = 2 * (ALPHA + (512 << 10) / (GBPS / 4 * 1e3) + 2 + 3 * (32 << 10) / 450e3)
check(near(fan["sim_us"], want, 0.005) and near(fan["model_us"], want, 0.005),
      f"all-gather of 8 MiB on 2 x 4 fanned out inside the nodes: sim {fan['sim_us']:.1f} us, model "
      f"{fan['model_us']:.1f} us, by hand {want:.1f} us")

# 2. Every algorithm of every collective replays on odd layouts.
for coll in ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "alltoall"]:
    for nodes, per, rails in [(1, 3, 1), (5, 1, 1), (3, 2, 1), (2, 3, 1), (3, 3, 2)]:
        rows = sim(coll, "--nodes", str(nodes), "--per-node", str(per), "-b", "60", "-e", "4M", "-f", "37",
                   "--algo", "all", "--rails", str(rails))
        bad = [f"{x['algorithm']} {x['bytes']} B: {x['skipped'] or 'no time'}" for x in rows
               if x["skipped"] or not x["sim_us"] > 0]
        algos = sorted({x["algorithm"] for x in rows})
        chosen = all(sum(1 for x in rows if x["bytes"] == b and x["chosen"]) == 1 for b in {x["bytes"] for x in rows})
        check(rows and not bad and chosen,
              f"{coll} on {nodes} x {per} ({rails} rail{'s' if rails > 1 else ''}): {len(rows)} replays of {', '.join(algos)}" + (f"; {bad[:3]}" if bad else ""))

# 2b. A reduced replay (extrapolated from full replays on a half, a quarter and
# an eighth of the nodes) agrees with the full one within 5%.
for coll, algo, size in [("all_reduce", "ring", "4M"), ("all_reduce", "hier_ring", "4M"),
                         ("all_reduce", "recursive_doubling", "16M"), ("all_gather", "ring", "1M"),
                         ("reduce_scatter", "hier_ring", "16M"), ("broadcast", "chain", "16M"),
                         ("alltoall", "pairwise", "4M")]:
    flags = [coll, "--nodes", "16", "--per-node", "2", "-b", size, "-e", size, "--algo", algo]
    whole = one(*flags)
    reduced = one(*flags, "--reduce")
    ratio = reduced["sim_us"] / whole["sim_us"]
    check(whole["reduced"] == "" and reduced["reduced"].startswith("extrapolated") and abs(ratio - 1) <= 0.05,
          f"{coll} {algo} {size} on 16 x 2, reduced / full replay: {ratio:.3f} ({reduced['reduced']})")

# A radix exchange takes its radix from the node count (the model's choice),
# so smaller clusters run other steps (a 256 MiB all-gather on 128 x 1: one
# step on 16-64 nodes, two on 128; the line through them came out at 0.88x):
# the whole cluster in coarser fragments instead.
flags = ["all_gather", "--nodes", "128", "--per-node", "1", "-b", "256M", "-e", "256M", "--algo", "hier_radix",
         "-d", "uint8"]
whole = one(*flags)
reduced = one(*flags, "--reduce")
ratio = reduced["sim_us"] / whole["sim_us"]
check(whole["reduced"] == "" and "whole cluster in fragments" in reduced["reduced"] and abs(ratio - 1) <= 0.05,
      f"all_gather hier_radix 256 MiB on 128 x 1, reduced / full replay: {ratio:.3f} ({reduced['reduced']})")

# 2c. A symmetric replay (node 0's ranks alone, each message to another node
# out through node 0's NIC and back in as its mirror's) gives the full
# replay's time where every node's plan is node 0's moved by a shift (rings,
# radix exchanges) or an exclusive or (recursive doubling), across the leaf
# switches of a fat-tree too (64 nodes: two leaves of 32) and on rails; a
# radix reduce-scatter of two steps (128 nodes: radix 12) is the same phase
# for phase only.
for coll, algo, size, nodes, per, rails in [
        ("reduce_scatter", "hier_radix", "1M", 64, 2, 1), ("all_gather", "hier_radix", "16M", 64, 2, 1),
        ("reduce_scatter", "ring", "1M", 5, 3, 1), ("all_gather", "hier_halving", "4M", 16, 2, 1),
        ("all_reduce", "hier_ring", "4M", 8, 2, 1), ("alltoall", "pairwise", "1M", 6, 2, 1),
        ("reduce_scatter", "hier_radix", "4M", 12, 4, 2), ("reduce_scatter", "hier_radix", "1M", 128, 1, 1)]:
    flags = [coll, "--nodes", str(nodes), "--per-node", str(per), "-b", size, "-e", size, "--algo", algo,
             "--rails", str(rails), "-d", "uint8"]
    whole = one(*flags)
    mirrored = one(*flags, "--symmetric")
    ratio = mirrored["sim_us"] / whole["sim_us"] if mirrored["sim_us"] > 0 else 0
    # Flow for flow the same on every node: the same time; phase for phase (a node's blocks wrap past the
    # last node's and it cuts a message in two): within half a per cent (0.1-0.4% on 128-512 x 8).
    tolerance = 0.005 if "phase for phase" in mirrored["reduced"] else 0.001
    check(whole["reduced"] == "" and mirrored["reduced"].startswith("symmetric replay") and abs(ratio - 1) <= tolerance
          and mirrored["messages"] * nodes <= whole["messages"] + nodes,
          f"{coll} {algo} {size} on {nodes} x {per} ({rails} rail{'s' if rails > 1 else ''}), symmetric / full "
          f"replay: {ratio:.5f} ({mirrored['reduced'] or mirrored['skipped']})")
# Above --max-messages a symmetric replay is taken before a reduced one.
flags = ["all_gather", "--nodes", "32", "--per-node", "2", "-b", "1M", "-e", "1M", "--algo", "hier_radix"]
whole = one(*flags)
auto = one(*flags, "--max-messages", str(whole["messages"] - 1))
check(auto["reduced"].startswith("symmetric replay") and near(auto["sim_us"], whole["sim_us"], 0.001),
      f"all_gather hier_radix 1M on 32 x 2 above --max-messages: {auto['reduced']}, "
      f"{auto['sim_us']:.2f} us against {whole['sim_us']:.2f}")
# Refused, with the reason, where node 0 does not stand for every node.
for coll, algo, extra, words in [("broadcast", "chain", [], "no symmetric replay: rank"),  # rooted
                                 ("all_reduce", "hier_ring", ["--nodes", "7", "--per-node", "2", "-b", "4M", "-e",
                                                              "4M"], "moves other bytes"),  # 4 MiB / 14: uneven
                                 ("all_gather", "ring", ["--taper", "2"], "may limit a flow"),
                                 ("all_gather", "ring", ["--slow-node", "3"], "not alike"),
                                 ("all_gather", "ring", ["--late-rank", "5"], "not alike")]:
    r = one(coll, "--nodes", "64", "--per-node", "1", "-b", "1M", "-e", "1M", "--algo", algo, "--symmetric", *extra)
    check(r["sim_us"] < 0 and words in r["skipped"],
          f"{coll} {algo} {' '.join(extra)} --symmetric refused: {r['skipped'][:120]}")

# 2d. One FSDP step (an all-gather and a reduce-scatter per layer, one after the
# other): never slower than the same calls replayed alone.
p = subprocess.run([SIM, "all_gather", "--fsdp-step", "--nodes", "3", "--per-node", "2", "-b", "64K", "-e", "4M",
                    "-f", "8", "--json"], capture_output=True, text=True, timeout=600)
step = json.loads(p.stdout)[0] if p.returncode == 0 else {}
check(p.returncode == 0 and step["layers"] == 3 and 0 < step["step_us"] <= step["alone_us"] * 1.001,
      f"FSDP step on 3 x 2: {step.get('layers')} layers, step {step.get('step_us', 0):.1f} us, "
      f"calls alone {step.get('alone_us', 0):.1f} us")
# The same step on 16 x 2 as a symmetric replay: the full replay's time.
steps = []
for extra in ([], ["--symmetric"]):
    p = subprocess.run([SIM, "all_gather", "--fsdp-step", "--nodes", "16", "--per-node", "2", "-b", "64K", "-e", "4M",
                        "-f", "8", "-d", "uint8", "--json", *extra], capture_output=True, text=True, timeout=600)
    steps.append(json.loads(p.stdout)[0] if p.returncode == 0 else {"step_us": -1, "reduced": p.stderr})
check(steps[1]["reduced"].startswith("symmetric replay") and near(steps[1]["step_us"], steps[0]["step_us"], 0.001),
      f"FSDP step on 16 x 2, symmetric / full replay: {steps[1]['step_us']:.2f} / {steps[0]['step_us']:.2f} us "
      f"({steps[1]['reduced'][:60]})")

# 3. Bad flags.
for args, words in [(["bogus"], "unknown collective"),
                    (["all_reduce", "--algo", "pairwise"], "unknown algorithm"),
                    (["all_reduce", "--nodes", "0"], "--nodes"),
                    (["all_reduce", "--rails", "0"], "--rails"),
                    (["all_reduce", "--nodes", "40"], "fat-tree"),
                    (["all_reduce", "-d", "float7"], "-d"),
                    (["all_reduce", "--platform", "/nonexistent.xml"], "platform"),
                    (["all_reduce", "--frobnicate"], "unknown flag")]:
    p = subprocess.run([SIM, *args], capture_output=True, text=True, timeout=60)
    first = p.stderr.splitlines()[0] if p.stderr else ""
    check(p.returncode == 2 and first.startswith("strata-sim: ") and words in first and "terminate" not in p.stderr,
          f"strata-sim {' '.join(args)}: exit {p.returncode}, '{first}'")

bad_xml = "/tmp/strata-sim-test-bad-platform.xml"
with open(bad_xml, "w") as f:
    f.write("<platform version='4.1'><zone id='z' routing='Full'><host id='a' speed='1Gf'/></zone>\n")
p = subprocess.run([SIM, "all_reduce", "--platform", bad_xml, "--nodes", "2", "--per-node", "1"],
                   capture_output=True, text=True, timeout=60)
first = p.stderr.splitlines()[0] if p.stderr else ""
check(p.returncode == 2 and first.startswith("strata-sim: ") and bad_xml in first,
      f"a platform file that does not parse: exit {p.returncode}, '{first}'")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
