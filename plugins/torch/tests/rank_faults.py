"""Failure scenarios of rank_main.py: a rank that dies, one that stays silent,
monitored_barrier naming ranks that never arrive, and survivors that recover
from a dead rank and train on."""
import os
import re
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from rank_common import ON_CUDA, RANK, WORLD, close, failures, params_close


def scenario_dead_peer(timeout_s):
    """The last rank dies after a few steps; every other rank must raise a DistBackendError naming the problem.
    On CUDA each step reads its result back, as a training step reading its loss would: the
    collective itself returns once enqueued, and its failure surfaces at a later call."""
    dist.init_process_group("strata", timeout=timedelta(seconds=float(timeout_s)))
    t = torch.ones(1 << 16)
    for step in range(10_000):
        if step == 5 and RANK == WORLD - 1:
            print(f"rank {RANK}: exiting abruptly at step {step}", flush=True)
            os._exit(9)
        try:
            dist.all_reduce(t)
            if ON_CUDA:
                t.sum().item()
        except Exception as e:  # noqa: BLE001
            print(f"rank {RANK}: RAISED {type(e).__name__} at step {step}: {e}", flush=True)
            dist.destroy_process_group()
            sys.exit(3)
        t.fill_(1)
    failures.append("no error after the peer died")


def scenario_silent_peer(timeout_s):
    """The last rank stays alive but never calls the barrier; every other rank's
    barrier must raise after the process group's timeout, worded as torch's own
    checks match a timeout (" Timed out "), strata's detail after it."""
    dist.init_process_group("strata", timeout=timedelta(seconds=float(timeout_s)))
    dist.barrier()
    if RANK == WORLD - 1:
        time.sleep(float(timeout_s) * 3)
        os._exit(0)
    try:
        dist.barrier()
    except Exception as e:  # noqa: BLE001
        print(f"rank {RANK}: RAISED {type(e).__name__}: {e}", flush=True)
        os._exit(3)
    failures.append("the barrier returned without the silent rank")


def scenario_monitored_barrier():
    """monitored_barrier as gloo's: it passes when every rank comes (also with wait_all_ranks); rank 0
    names the first rank that never came (every such rank with wait_all_ranks) and the others hear
    that rank 0 did not release them, in gloo's words; the group keeps working after a failed one.
    The group's sequence number counts collectives alike on every rank."""
    dist.init_process_group("strata", timeout=timedelta(seconds=60))
    t = torch.ones(10) * RANK
    for _ in range(3):
        dist.all_reduce(t)
    dist.monitored_barrier(timeout=timedelta(seconds=30))
    dist.monitored_barrier(timeout=timedelta(seconds=30), wait_all_ranks=True)

    seq = dist.group.WORLD._get_sequence_number_for_group()
    seqs = [None] * WORLD
    dist.all_gather_object(seqs, seq)
    if len(set(seqs)) != 1 or seq < 3:
        failures.append(f"sequence numbers {seqs}: expected one value, at least the 3 all-reduces")
    if dist.group.WORLD._get_sequence_number_for_group() <= seq:
        failures.append("the sequence number did not grow with all_gather_object's collectives")

    def expect_error(words, **kwargs):
        try:
            dist.monitored_barrier(**kwargs)
            failures.append(f"rank {RANK}: monitored_barrier passed; expected '{words}'")
        except RuntimeError as e:
            if words not in str(e):
                failures.append(f"rank {RANK}: expected '{words}' in: {e}")

    def check_where_last_seen(late):
        # strata's detail after gloo's words: the late rank was in every collective rank 0 ran, so its
        # last one seen is rank 0's last (at 2 ranks rank 0 receives from it in every plan).
        try:
            dist.monitored_barrier(timeout=timedelta(seconds=1))
            failures.append("monitored_barrier passed without the late rank")
            return
        except RuntimeError as e:
            text = str(e)
        m = re.search(r"last seen by rank 0 \(which has started (\d+) strata operations\): rank (\d+) "
                      r"(in (\w+) #(\d+)|not yet)", text)
        if not m or int(m.group(2)) != late or int(m.group(1)) < 5:
            failures.append(f"no detail of where rank {late} was last seen: {text}")
        elif m.group(5) and m.group(5) != m.group(1):
            failures.append(f"rank {late} last seen at #{m.group(5)}, but it ran every operation rank 0 ran: {text}")
        elif WORLD == 2 and not m.group(5):
            failures.append(f"rank 0 receives from rank 1 in every plan, yet did not see it: {text}")

    late = WORLD - 1  # skips the next two barriers
    if RANK == 0:
        expect_error(f"Rank {late} failed to pass monitoredBarrier", timeout=timedelta(seconds=2))
        check_where_last_seen(late)
    elif RANK != late:
        for _ in range(2):
            expect_error(f"Rank {RANK} successfully reached monitoredBarrier, but received errors while waiting "
                         f"for send/recv from rank 0", timeout=timedelta(seconds=2))
    if RANK == 0:  # nobody else comes
        expect_error("Ranks " + ", ".join(str(r) for r in range(1, WORLD)) + " failed to pass monitoredBarrier",
                     timeout=timedelta(seconds=1), wait_all_ranks=True)
        expect_error("Rank 0 timed out in monitoredBarrier", timeout=timedelta(seconds=0))

    x = torch.full((5,), float(RANK + 1))
    dist.all_reduce(x)
    close("all_reduce after failed monitored barriers", x, torch.full((5,), float(WORLD * (WORLD + 1) / 2)))
    dist.destroy_process_group()


def scenario_elastic(timeout_s):
    """Rank WORLD-1 dies mid-training; the survivors' DDP step raises, they abort
    the process group and form a smaller one over a new store (as torchrun's
    elastic agent would), then carry on training from where they stopped. Their
    parameters must match a single-process replay of the same steps."""
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("strata", timeout=timedelta(seconds=float(timeout_s)))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    initial = [p.detach().clone() for p in model.parameters()]

    def batch(rank, step):
        g = torch.Generator().manual_seed(1000 * step + rank)
        return torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)

    def train_steps(ddp, opt, rank, steps):
        for step in steps:
            x, y = batch(rank, step)
            opt.zero_grad()
            nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()

    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    failed_at = None
    for step in range(50):
        if step == 5 and RANK == WORLD - 1:
            os._exit(9)
        try:
            train_steps(ddp, opt, RANK, [step])
        except Exception as e:  # noqa: BLE001
            print(f"rank {RANK}: step {step} raised {type(e).__name__}: {str(e)[:200]}", flush=True)
            failed_at = step
            break
    if failed_at != 5:
        failures.append(f"the failure surfaced at step {failed_at}, not 5")
        return
    # Abort the broken group (no collective: the peer is gone), then a new one.
    dist.destroy_process_group()
    survivors = list(range(WORLD - 1))
    port = int(os.environ["MASTER_PORT"]) + 2
    dist.init_process_group("strata", init_method=f"tcp://127.0.0.1:{port}", rank=RANK,
                            world_size=len(survivors), timeout=timedelta(seconds=float(timeout_s)))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    train_steps(ddp, opt, RANK, range(5, 15))
    # Replay: steps 0-4 average all WORLD ranks' gradients, steps 5-14 the survivors'.
    ref = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    with torch.no_grad():
        for p, q in zip(ref.parameters(), initial):
            p.copy_(q)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(15):
        ranks = range(WORLD) if step < 5 else survivors
        ref_opt.zero_grad()
        for r in ranks:
            x, y = batch(r, step)
            (nn.functional.mse_loss(ref(x), y) / len(ranks)).backward()
        ref_opt.step()
    params_close("after recovery vs replay", model, ref, rtol=1e-5, atol=1e-6)
    print(f"rank {RANK}: carried on as rank {dist.get_rank()} of {dist.get_world_size()}", flush=True)
    dist.destroy_process_group()
