#!/usr/bin/env python3
"""gloo-perf: torch.distributed's "gloo" backend as PyTorch users meet it, with
strata-perf's command line, sizes, definitions (algbw, busbw) and table.

  python bench/baselines/gloo_perf.py all_reduce -np 2 -b 8 -e 64M -f 4 -n 20 -w 5

-np N spawns N local ranks (torch.multiprocessing); without it, ranks come from
torchrun's environment. Time is the slowest rank's mean per call. Collectives
gloo does not support are reported as such, not hidden. --backend strata runs
the same through strata's torch.distributed backend (strata_torch), which is
how bench/torch_bench.py compares the two as PyTorch users meet them.

-G 1 puts the buffers on the GPU (rank r on cuda:r modulo the GPUs there are)
and, as nccl-tests does, waits for the device inside the timed interval.
--backend nccl (PyTorch's NCCL) needs it, and one GPU per rank: asked for more
ranks than GPUs it says so and exits with status 3.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

DTYPES = {"int8": torch.int8, "uint8": torch.uint8, "int32": torch.int32, "int64": torch.int64,
          "half": torch.float16, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float": torch.float32, "float32": torch.float32, "double": torch.float64, "float64": torch.float64}
OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}
BLOCKED = ("reduce_scatter", "all_gather", "alltoall")


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.upper().rstrip("B")
    return int(float(t[:-1]) * mult[t[-1]]) if t and t[-1] in mult else int(t)


def bus_factor(coll, n):
    if coll == "all_reduce":
        return 2 * (n - 1) / n
    if coll in BLOCKED:
        return (n - 1) / n
    return 1.0


def make_call(coll, count, n, rank, dtype, op, root, device):
    """Returns a function running one collective, with buffers made once."""
    blocked = count * n
    send = (torch.arange(blocked if coll in ("reduce_scatter", "alltoall") else count) % 5 + 1).to(device, dtype)
    recv = torch.empty(blocked if coll in ("all_gather", "alltoall") else count, dtype=dtype, device=device)
    if coll == "all_reduce":  # in place, as DDP calls it; the values drift, which timing does not mind
        recv.copy_(send)
        return lambda: dist.all_reduce(recv, op=op)
    if coll == "reduce_scatter":
        return lambda: dist.reduce_scatter_tensor(recv, send, op=op)
    if coll == "all_gather":
        return lambda: dist.all_gather_into_tensor(recv, send)
    if coll == "broadcast":
        return lambda: dist.broadcast(recv, src=root)
    if coll == "reduce":
        recv.copy_(send)
        return lambda: dist.reduce(recv, dst=root, op=op)
    if coll == "alltoall":
        return lambda: dist.all_to_all_single(recv, send)
    raise ValueError(coll)


def sizes(a):
    b = a.b
    while b <= a.e:
        yield b
        nb = b + a.i if a.i else int(b * a.f)
        b = nb if nb > b else b + 1


def device_of(rank, a):
    if not a.G:
        return torch.device("cpu")
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device


def settle(device):
    """Waits for the device's queued work (the timed interval ends after it, as in nccl-tests)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench(rank, n, a):
    dtype, op = DTYPES[a.d], OPS[a.o]
    device = device_of(rank, a)
    esize = torch.tensor([], dtype=dtype).element_size()
    if rank == 0:
        where = f", buffers on {torch.cuda.get_device_name(device)}" if device.type == "cuda" else ""
        print(f"# {a.backend}-perf {a.coll}: {n} ranks, dtype {a.d}, op {a.o}, root {a.r}, iters {a.n}, "
              f"warmup {a.w}, torch {torch.__version__}{where}")
        print(f"# {'size':>12} {'count':>12} {'type':>8} {'redop':>6} {'root':>5} {'time':>10} {'algbw':>8} "
              f"{'busbw':>8} {'#wrong':>7}")
    bus_sum, rows = 0.0, 0
    for size in sizes(a):
        count = size // esize // (n if a.coll in BLOCKED else 1)
        total = count * esize * (n if a.coll in BLOCKED else 1)
        try:
            call = make_call(a.coll, count, n, rank, dtype, op, a.r, device)
            for _ in range(a.w):
                call()
            settle(device)
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(a.n):
                call()
            settle(device)
            us = torch.tensor([(time.perf_counter() - t0) * 1e6 / a.n], dtype=torch.float64, device=device)
            dist.all_reduce(us, op=dist.ReduceOp.MAX)
            t = us.item()
            algbw = total / (t * 1e3)
            busbw = algbw * bus_factor(a.coll, n)
            bus_sum += busbw
            rows += 1
            if rank == 0:
                print(f"  {total:>12} {count:>12} {a.d:>8} {a.o:>6} {a.r:>5} {t:>10.3f} {algbw:>8.3f} "
                      f"{busbw:>8.3f} {'N/A':>7}", flush=True)
        except RuntimeError as e:  # gloo lacks some collectives / dtypes
            if rank == 0:
                print(f"  {total:>12} {count:>12} {a.d:>8} {a.o:>6} {a.r:>5} unsupported by {a.backend}: "
                      f"{str(e).splitlines()[0][:80]}", flush=True)
            break
    if rank == 0:
        print(f"# Avg bus bandwidth    : {bus_sum / rows if rows else 0:.4f}")


def init(backend, **kwargs):
    if backend == "strata":
        import strata_torch  # noqa: F401  (registers the backend)
    dist.init_process_group(backend, **kwargs)


def worker(rank, n, a, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    init(a.backend, rank=rank, world_size=n)
    try:
        bench(rank, n, a)
    finally:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("coll", choices=["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce",
                                    "alltoall"])
    p.add_argument("-np", type=int, default=0)
    p.add_argument("-b", type=parse_size, default=8)
    p.add_argument("-e", type=parse_size, default=64 << 20)
    p.add_argument("-f", type=float, default=2)
    p.add_argument("-i", type=parse_size, default=0)
    p.add_argument("-n", type=int, default=20)
    p.add_argument("-w", type=int, default=5)
    p.add_argument("-d", default="float", choices=sorted(DTYPES))
    p.add_argument("-o", default="sum", choices=sorted(OPS))
    p.add_argument("-r", type=int, default=0)
    p.add_argument("-c", type=int, default=0, help="accepted for symmetry; results are not checked")
    p.add_argument("-G", type=int, default=0, choices=[0, 1], help="1: buffers on the GPU")
    p.add_argument("--backend", default="gloo", choices=["gloo", "strata", "nccl"])
    a = p.parse_args()
    if a.G and not torch.cuda.is_available():
        sys.exit("gloo_perf: -G 1 needs a CUDA GPU, and torch sees none")
    if a.backend == "nccl":
        if not a.G:
            sys.exit("gloo_perf: --backend nccl needs -G 1 (NCCL takes device buffers only)")
        ranks = a.np or int(os.environ.get("WORLD_SIZE", "1"))
        if ranks > torch.cuda.device_count():
            print(f"gloo_perf: NCCL needs one GPU per rank: {ranks} ranks asked for, "
                  f"{torch.cuda.device_count()} GPU(s) visible", file=sys.stderr)
            return 3
    if a.np > 0:
        mp.spawn(worker, args=(a.np, a, 20000 + os.getpid() % 12000), nprocs=a.np, join=True)
    else:
        init(a.backend)
        try:
            bench(dist.get_rank(), dist.get_world_size(), a)
        finally:
            dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
