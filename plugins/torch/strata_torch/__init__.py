"""strata as a torch.distributed backend.

    import strata_torch
    torch.distributed.init_process_group("strata")

Importing this package registers the backend "strata" for CPU and CUDA
devices; it bootstraps through the store torch.distributed hands it, so every
init method (env://, tcp://, file://, torchrun, mpirun with MASTER_ADDR/PORT)
works. CPU and CUDA tensors: an operation on CUDA tensors follows
ProcessGroupNCCL's rules (it runs on the backend's own stream after the
caller's current stream; wait() makes the current stream wait for it).
"""
import torch
import torch.distributed as dist

from . import _C

__all__ = ["BACKEND_NAME", "version"]

BACKEND_NAME = "strata"


def version():
    """strata's version as major * 10000 + minor * 100 + patch."""
    return _C.version()


def _create_backend(dist_backend_opts, backend_options):
    """torch.distributed's extended creator: one strata communicator per process group."""
    return _C.create_backend(dist_backend_opts.store, dist_backend_opts.group_rank, dist_backend_opts.group_size,
                             dist_backend_opts.timeout.total_seconds())


if BACKEND_NAME not in dist.Backend.backend_list:
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, extended_api=True, devices=["cpu", "cuda"])
