"""One worker of torchrun's elastic restart test (test_elastic.py).

Trains a small model with DDP over strata, checkpointing after every step
(rank 0 writes; every rank holds the same parameters). On its first round, the
worker whose agent was started with ELASTIC_VICTIM=1 SIGKILLs its own agent at
step KILL_AT and exits: that node is gone for good. The other workers' step then
fails with strata's error, they exit, their agents re-rendezvous without the
lost node, and the restarted workers resume from the checkpoint on a smaller
world until step STEPS. Rank 0 finally saves the parameters with the world size
of every step, so the test can replay the same steps in one process.

    elastic_worker.py CHECKPOINT_DIR STEPS KILL_AT
"""
import faulthandler
import os
import signal
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import strata_torch  # noqa: F401  (registers "strata")


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))


def batch(rank, step):
    """The batch of `rank` at `step`: the same on every run."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)


def save_atomically(obj, path):
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def main():
    faulthandler.register(signal.SIGUSR2, all_threads=True)  # the test asks for stacks when it times out
    ckpt_dir, steps, kill_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    dist.init_process_group("strata", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"worker pid {os.getpid()}: rank {rank} of {world}, restart {restart}", flush=True)

    model = make_model()
    ckpt_path = os.path.join(ckpt_dir, "checkpoint.pt")
    start, worlds = 0, []
    if os.path.exists(ckpt_path):
        ckpt = torch.load(ckpt_path)
        model.load_state_dict(ckpt["model"])
        start, worlds = ckpt["step"], ckpt["worlds"]
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    print(f"rank {rank}: resuming at step {start} with world {world}", flush=True)

    for step in range(start, steps):
        if step == kill_at and restart == 0 and os.environ.get("ELASTIC_VICTIM") == "1":
            print(f"rank {rank}: killing my agent (pid {os.getppid()}) and exiting at step {step}", flush=True)
            os.kill(os.getppid(), signal.SIGKILL)
            os._exit(9)
        x, y = batch(rank, step)
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        worlds.append(world)
        if rank == 0:
            save_atomically({"model": model.state_dict(), "step": step + 1, "worlds": worlds}, ckpt_path)

    if rank == 0:
        save_atomically({"model": model.state_dict(), "worlds": worlds}, os.path.join(ckpt_dir, "final.pt"))
    print(f"rank {rank}: finished {steps} steps as rank {rank} of {world}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
