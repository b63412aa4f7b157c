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


def _creator(name):
    """torch.distributed's extended creator of strata process groups whose profiler events are
    named "<name>:<op>" ("strata:all_reduce"): pass another name when registering strata under it."""

    def create(dist_backend_opts, backend_options):
        return _C.create_backend(dist_backend_opts.store, dist_backend_opts.group_rank,
                                 dist_backend_opts.group_size, dist_backend_opts.timeout.total_seconds(),
                                 profiling_name=name)

    return create


_create_backend = _creator(BACKEND_NAME)  # one strata communicator per process group


if BACKEND_NAME not in dist.Backend.backend_list:
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, extended_api=True, devices=["cpu", "cuda"])
