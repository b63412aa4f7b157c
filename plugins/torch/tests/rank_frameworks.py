"""Frameworks on top of torch.distributed, on strata (one rank of a scenario
of rank_main.py): Hugging Face Accelerate and DeepSpeed ZeRO train a small
model on CPU, and rank 0 saves the final parameters, so that the test can
compare a strata run with a gloo run.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F

from rank_common import RANK, WORLD, failures


# Set by a scenario whose process group is gloo (the reference run): its rank leaves with os._exit once it has
# printed its verdict, skipping the interpreter's shutdown. gloo's worker thread frees a finished operation's
# tensors after the caller has gone on; when that is the final all-gather and the caller is already shutting the
# interpreter down, the thread cannot take the GIL and the process aborts ("terminate called without an active
# exception" from ProcessGroupGloo::runLoop, in ~AsyncAllgatherWork; about 1 run in 15 of the Accelerate
# scenario here, and once in CI). A torch race (pytorch/pytorch PR 179291 describes it), not strata's: strata's
# runs still shut down in full.
gloo_reference_run = []


def save_trained(params, before, what, out_path):
    """Records a failure if training left the parameters as they were; rank 0 saves them for the test."""
    if all(torch.equal(a, b) for a, b in zip(params, before)):
        failures.append(f"{what} left the parameters unchanged")
    if RANK == 0:
        torch.save(params, out_path)


def scenario_accelerate(backend, out_path):
    """Accelerate (CPU, MULTI_CPU) on a process group of `backend` made first: Accelerate then uses it as
    its own (it makes one only when none exists). 12 steps of a small CNN, the data sharded by Accelerate."""
    from accelerate import Accelerator
    from torch.utils.data import DataLoader, TensorDataset

    import strata_torch  # noqa: F401  (registers "strata")
    from rank_main import small_model

    dist.init_process_group(backend, timeout=timedelta(seconds=60))
    gloo_reference_run.append(backend == "gloo")
    accelerator = Accelerator(cpu=True)
    if accelerator.num_processes != WORLD or accelerator.process_index != RANK:
        failures.append(f"Accelerate sees {accelerator.num_processes} processes, this one as "
                        f"{accelerator.process_index}; want {WORLD}, {RANK}")
    if dist.get_backend() != backend:
        failures.append(f"the default process group is {dist.get_backend()} under Accelerate, want {backend}")
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(7)  # the same dataset on every rank; Accelerate gives each its shard
    data = TensorDataset(torch.randn(12 * 4 * WORLD, 3, 32, 32, generator=g),
                         torch.randint(0, 10, (12 * 4 * WORLD,), generator=g))
    model = small_model()
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model, opt, loader = accelerator.prepare(model, opt, DataLoader(data, batch_size=4, shuffle=False))
    steps = 0
    for x, y in loader:
        opt.zero_grad(set_to_none=True)
        accelerator.backward(F.cross_entropy(model(x), y))
        opt.step()
        steps += 1
    if steps != 12:
        failures.append(f"Accelerate gave this rank {steps} batches, want 12")
    params = [p.detach().clone() for p in accelerator.unwrap_model(model).parameters()]
    flat = torch.cat([p.flatten() for p in params])
    everyone = [torch.empty_like(flat) for _ in range(WORLD)]
    dist.all_gather(everyone, flat)
    if any(not torch.equal(everyone[0], other) for other in everyone[1:]):
        failures.append("the ranks' parameters differ after training under Accelerate")
    save_trained(params, before, "training under Accelerate", out_path)
    accelerator.end_training()  # destroys the process group too


def scenario_deepspeed(backend, stage, out_path):
    """DeepSpeed ZeRO stage 1, 2 or 3 on CPU (deepspeed.init_distributed(dist_backend=backend)): 6 steps of a
    small CNN with SGD; ZeRO's reduce-scatters, all-gathers and broadcasts go through the backend."""
    import deepspeed

    import strata_torch  # noqa: F401  (registers "strata")
    from rank_main import small_model

    deepspeed.init_distributed(dist_backend=backend, timeout=timedelta(seconds=60))
    gloo_reference_run.append(backend == "gloo")
    if dist.get_backend() != backend:
        failures.append(f"DeepSpeed's process group is {dist.get_backend()}, want {backend}")
    torch.set_num_threads(1)
    model = small_model()
    before = [p.detach().clone() for p in model.parameters()]
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
              "zero_allow_untested_optimizer": True, "zero_optimization": {"stage": int(stage)}}
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.01,
                                                                                  momentum=0.9), config=config)
    for step in range(6):
        g = torch.Generator().manual_seed(1000 * step + RANK)
        x, y = torch.randn(4, 3, 32, 32, generator=g), torch.randint(0, 10, (4,), generator=g)
        engine.backward(F.cross_entropy(engine(x), y))
        engine.step()
    with deepspeed.zero.GatheredParameters(list(engine.module.parameters()), enabled=int(stage) == 3):
        params = [p.detach().clone() for p in engine.module.parameters()]
    save_trained(params, before, f"ZeRO stage {stage}", out_path)
    dist.destroy_process_group()
