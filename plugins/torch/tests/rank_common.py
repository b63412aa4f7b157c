"""What every rank of a strata_torch test scenario shares (rank_main.py,
rank_faults.py): the rank and world from torchrun's, Open MPI's or Slurm's variables,
the device (STRATA_TEST_DEVICE=cuda: cuda:LOCAL_RANK modulo the GPUs), the
random inputs any rank can regenerate for any other, the float64 reference
reduction, and the comparisons that record failures (the rank's exit status
reports them).
"""
import os
import zlib

import torch

# torchrun-style variables, or Open MPI's under mpirun, or Slurm's under srun.
RANK = int(os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("SLURM_PROCID", "0"))))
WORLD = int(os.environ.get("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1"))))
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8, torch.int32,
          torch.int64, torch.bool]
OPS = ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]
TOL = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 4e-3, torch.bfloat16: 3e-2}
failures = []


def test_device():
    if os.environ.get("STRATA_TEST_DEVICE", "cpu") != "cuda":
        return torch.device("cpu")
    return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())


DEVICE = test_device()
ON_CUDA = DEVICE.type == "cuda"
if ON_CUDA:
    torch.cuda.set_device(DEVICE)
    torch.set_default_device(DEVICE)  # the checks' torch.empty / full / ones
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def inputs(tag, rank, shape, dtype):
    """Random (never all-zero) input of `rank` for check `tag`: the same on every process."""
    g = torch.Generator().manual_seed(zlib.crc32(tag.encode()) * 64 + rank)
    if dtype == torch.bool:
        x = torch.randint(0, 2, shape, generator=g, device="cpu").bool()
    elif dtype.is_floating_point:
        x = torch.randn(shape, generator=g, dtype=torch.float64, device="cpu").to(dtype)
    else:
        lo, hi = (0, 8) if dtype == torch.uint8 else (-5, 6)
        x = torch.randint(lo, hi, shape, generator=g, dtype=torch.int64, device="cpu").to(dtype)
    return x.to(DEVICE)


def reduce_ref(op, parts, dtype):
    """float64 reduction of `parts` (tensors of dtype), as strata defines it; returns dtype."""
    x = torch.stack([p.cpu().double() for p in parts])
    if dtype == torch.bool:
        r = {"SUM": x.amax(0), "MAX": x.amax(0), "PRODUCT": x.amin(0), "MIN": x.amin(0)}[op]
        return r.bool()
    r = {"SUM": lambda: x.sum(0), "PRODUCT": lambda: x.prod(0), "MIN": lambda: x.amin(0),
         "MAX": lambda: x.amax(0), "AVG": lambda: x.sum(0) / len(parts)}[op]()
    if op == "AVG" and not dtype.is_floating_point:
        r = torch.trunc(r)
    return r.to(dtype)


def close(name, got, want):
    """Records a failure unless got matches want (exactly for integers and bool)."""
    got, want = got.cpu(), want.cpu()
    try:
        if got.dtype != want.dtype or got.shape != want.shape:
            raise AssertionError(f"dtype/shape {got.dtype}{tuple(got.shape)} != {want.dtype}{tuple(want.shape)}")
        if want.dtype.is_floating_point:
            tol = TOL[want.dtype]
            torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol * 4)
        elif not torch.equal(got, want):
            raise AssertionError(f"{(got != want).sum().item()} of {want.numel()} elements differ")
    except AssertionError as e:
        failures.append(f"{name}: {str(e)[:400]}")


def params_close(name, a, b, rtol, atol):
    for (n, x), y in zip(a.named_parameters(), b.parameters()):
        close_tol(f"{name} {n}", x.detach(), y.detach(), rtol, atol)


def close_tol(name, got, want, rtol, atol):
    got, want = got.cpu(), want.cpu()
    try:
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
    except AssertionError as e:
        failures.append(f"{name}: {str(e)[:300]}")
