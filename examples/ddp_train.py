"""Data-parallel training with torch.distributed's DDP over strata (or any backend).

    torchrun --nproc-per-node 2 examples/ddp_train.py --backend strata
    torchrun --nproc-per-node 2 examples/ddp_train.py --backend gloo
    torchrun --nproc-per-node 2 examples/ddp_train.py --backend strata --comm-hook fused

--comm-hook picks DDP's communication hook: "default" (DDP's own all-reduce
per bucket), or strata_torch.hooks' "fused" / "bf16" / "fp16" (buckets fused
into one collective; the last two compress to 16 bits on the wire).

A small CNN on synthetic images (the same on every run), CPU tensors. Prints
each step's time on rank 0 and, at the end, the median step time and a
checksum of the parameters (equal across backends up to float rounding).
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

try:
    import strata_torch  # noqa: F401  (registers the "strata" backend)
except ImportError:
    strata_torch = None


class SmallCNN(nn.Module):
    """Two conv layers and a wide classifier head: about 4.3 M parameters (17 MiB of gradients)."""

    def __init__(self, width=32, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.fc1 = nn.Linear(2 * width * 8 * 8, 1024)
        self.fc2 = nn.Linear(1024, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def synthetic_batch(step, rank, batch):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(batch, 3, 32, 32, generator=g), torch.randint(0, 10, (batch,), generator=g)


def train(model, steps, batch, rank, hook=None, process_group=None, verbose=False, hook_state=None,
          bucket_cap_mb=None):
    """Trains `model` wrapped in DDP for `steps` steps; returns the step times (s)."""
    kwargs = {} if bucket_cap_mb is None else {"bucket_cap_mb": bucket_cap_mb}
    ddp = DDP(model, process_group=process_group, **kwargs)
    if hook is not None:
        ddp.register_comm_hook(process_group if hook_state is None else hook_state, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    times = []
    for step in range(steps):
        x, y = synthetic_batch(step, rank, batch)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(ddp(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        if verbose:
            print(f"step {step:3d}: {times[-1] * 1e3:8.1f} ms", flush=True)
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="strata")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the median")
    p.add_argument("--comm-hook", default="default", choices=["default", "fused", "bf16", "fp16"])
    p.add_argument("--bucket-cap-mb", type=float, help="DDP's bucket size (default: DDP's 25)")
    p.add_argument("--hook-eager-bytes", type=int, default=1 << 20,
                   help="strata hooks: a bucket this large sends at once (0: hold every bucket to the threshold)")
    p.add_argument("--save", help="write the trained parameters to this file (rank 0)")
    args = p.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = SmallCNN()
    hook = state = None
    if args.comm_hook != "default":
        import strata_torch.hooks as hooks
        hook = {"fused": hooks.fused_allreduce_hook, "bf16": hooks.bf16_compress_fused_hook,
                "fp16": hooks.fp16_compress_fused_hook}[args.comm_hook]
        state = hooks.FusionState(eager_bytes=args.hook_eager_bytes)
    times = train(model, args.steps, args.batch, rank, hook=hook, hook_state=state, verbose=rank == 0,
                  bucket_cap_mb=args.bucket_cap_mb)
    if args.save and rank == 0:
        torch.save(model.state_dict(), args.save)
    checksum = sum(p.double().sum().item() for p in model.parameters())
    if rank == 0:
        median = statistics.median(times[args.warmup:]) if len(times) > args.warmup else statistics.median(times)
        print(f"backend {args.backend}, hook {args.comm_hook}: world {dist.get_world_size()}, median step {median * 1e3:.1f} ms "
              f"(steps {args.warmup}..{args.steps - 1}), parameter checksum {checksum:.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
