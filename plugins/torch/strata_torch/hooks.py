"""DDP communication hooks that fuse gradients across DDP's buckets.

DDP hands its gradient buckets to a communication hook one at a time. These
hooks hold small buckets back until they add up to the fusion threshold (or
the iteration's last bucket, or a large one, arrives), then all-reduce them
together through one ``allreduce_coalesced`` call, which strata runs as one
fused collective over the buckets where they lie (no copy into a staging
buffer), averaging on the way (no separate division pass). A large bucket
(``eager_bytes``, 1 MiB by default) goes at once, taking the held ones along:
its transfer then overlaps the rest of the backward pass as DDP's own
all-reduce would, and a per-collective latency is nothing beside it. The compression variants cast each bucket to
bfloat16 / float16 first and back afterwards, halving the bytes on the wire.

    import strata_torch.hooks as hooks
    ddp.register_comm_hook(hooks.FusionState(), hooks.fused_allreduce_hook)
    ddp.register_comm_hook(hooks.FusionState(), hooks.bf16_compress_fused_hook)

The state is per DDP model (it holds the buckets not yet sent).
"""
import os

import torch
import torch.distributed as dist

__all__ = ["FusionState", "fused_allreduce_hook", "bf16_compress_fused_hook", "fp16_compress_fused_hook"]


def _default_threshold():
    value = os.environ.get("STRATA_FUSION_THRESHOLD", "")
    return int(value) if value.isdigit() else 64 << 20


class FusionState:
    """Buckets waiting to be fused, for one DDP model.

    process_group: the group DDP reduces over (None: the default group).
    threshold_bytes: send once the held buckets reach this many bytes
    (default: STRATA_FUSION_THRESHOLD, else 64 MiB); the last bucket of an
    iteration always sends.
    eager_bytes: a bucket at least this large (on the wire) sends at once with
    the held ones (default 1 MiB; 0 holds every bucket to the threshold).
    """

    def __init__(self, process_group=None, threshold_bytes=None, eager_bytes=1 << 20):
        self.process_group = process_group
        self.threshold_bytes = _default_threshold() if threshold_bytes is None else int(threshold_bytes)
        self.eager_bytes = int(eager_bytes)
        self._held = []  # (tensor to reduce, bucket buffer, future)
        self._bytes = 0

    def _group(self):
        return self.process_group if self.process_group is not None else dist.group.WORLD


def _flush(state):
    held, state._held, state._bytes = state._held, [], 0
    opts = dist.AllreduceCoalescedOptions()
    opts.reduceOp = dist.ReduceOp.AVG
    work = state._group().allreduce_coalesced([t for t, _, _ in held], opts)

    def done(fut):
        try:
            fut.value()
        except Exception as e:  # noqa: BLE001  (hand the failure to every waiting bucket)
            for _, _, out in held:
                out.set_exception(e)
            return
        for reduced, buffer, out in held:
            if reduced is not buffer:
                buffer.copy_(reduced)
            out.set_result(buffer)

    work.get_future().then(done)


def _hold(state, bucket, wire_dtype):
    buffer = bucket.buffer()
    reduced = buffer if wire_dtype is None else buffer.to(wire_dtype)
    # A CUDA bucket's future carries CUDA events, so DDP's stream waits for the copy back.
    out = torch.futures.Future(devices=[buffer.device]) if buffer.is_cuda else torch.futures.Future()
    state._held.append((reduced, buffer, out))
    nbytes = reduced.numel() * reduced.element_size()
    state._bytes += nbytes
    eager = 0 < state.eager_bytes <= nbytes
    if eager or state._bytes >= state.threshold_bytes or bucket.is_last():
        _flush(state)
    return out


def fused_allreduce_hook(state: FusionState, bucket) -> torch.futures.Future[torch.Tensor]:
    """Averages gradients like DDP's default hook, fusing buckets into one collective."""
    return _hold(state, bucket, None)


def bf16_compress_fused_hook(state: FusionState, bucket) -> torch.futures.Future[torch.Tensor]:
    """Casts each bucket to bfloat16, fused all-reduce (average), casts back."""
    return _hold(state, bucket, torch.bfloat16)


def fp16_compress_fused_hook(state: FusionState, bucket) -> torch.futures.Future[torch.Tensor]:
    """Casts each bucket to float16, fused all-reduce (average), casts back."""
    return _hold(state, bucket, torch.float16)
