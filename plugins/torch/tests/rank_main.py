"""One rank of a strata_torch test scenario (launched by launch.py like torchrun).

Each check runs an operation through strata, through gloo on the same random
inputs (where gloo supports it), and against a float64 reference computed
on the CPU from every rank's inputs (each rank can regenerate any rank's
inputs). STRATA_TEST_DEVICE=cuda runs the checks on CUDA tensors (every rank
on cuda:LOCAL_RANK modulo the GPUs there are), against the reference only.
Shared helpers are in rank_common.py, the failure scenarios in rank_faults.py,
frameworks on top (Accelerate, DeepSpeed) in rank_frameworks.py.
"""
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import strata_torch  # noqa: F401  (registers "strata")
from rank_common import (DEVICE, DTYPES, ON_CUDA, OPS, RANK, WORLD, close, close_tol, failures, inputs,  # noqa: F401
                         params_close, reduce_ref)
from rank_faults import (scenario_dead_peer, scenario_elastic, scenario_monitored_barrier,  # noqa: F401
                         scenario_silent_peer)
import rank_frameworks
from rank_frameworks import scenario_accelerate, scenario_deepspeed  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))


def both(name, fn, want=None, gloo_ok=True):
    """Runs fn(group) with strata and gloo; compares each with want (if given) and strata with gloo."""
    got = fn(STRATA)
    if want is not None:
        for i, (g, w) in enumerate(zip(got, want)):
            close(f"{name}[{i}] strata vs float64 reference", g, w)
    if gloo_ok and not ON_CUDA:
        try:
            ref = fn(GLOO)
        except (RuntimeError, ValueError, TypeError):
            return  # gloo does not support this case; the float64 reference still checked strata
        for i, (g, r) in enumerate(zip(got, ref)):
            close(f"{name}[{i}] strata vs gloo", g, r)


def op_of(name):
    return getattr(dist.ReduceOp, name)


# ---------------------------------------------------------------- collectives
def check_all_reduce():
    for dtype in DTYPES:
        for op in OPS:
            if dtype == torch.bool and op == "AVG":
                continue
            for count in (0, 1, 7, 1031):
                tag = f"allreduce-{dtype}-{op}-{count}"
                want = reduce_ref(op, [inputs(tag, r, (count,), dtype) for r in range(WORLD)], dtype)

                def run(group, tag=tag, op=op, dtype=dtype, count=count):
                    t = inputs(tag, RANK, (count,), dtype)
                    dist.all_reduce(t, op=op_of(op), group=group)
                    return [t]
                both(tag, run, [want], gloo_ok=op != "AVG")
    # A non-contiguous tensor (a transposed view) is reduced in place through a copy.
    base = inputs("nc", RANK, (7, 5), torch.float32)
    t = base.t()
    dist.all_reduce(t, group=STRATA)
    close("allreduce non-contiguous", base.t(), reduce_ref("SUM", [inputs("nc", r, (7, 5), torch.float32).t()
                                                                    for r in range(WORLD)], torch.float32))
    # PREMUL_SUM: every input scaled, then summed.
    t = inputs("premul", RANK, (1031,), torch.float32)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.25), group=STRATA)
    want = reduce_ref("SUM", [inputs("premul", r, (1031,), torch.float32) * 0.25 for r in range(WORLD)], torch.float32)
    close("allreduce PREMUL_SUM", t, want)


def sparse_input(rank, shape, dtype):
    """A COO tensor with duplicate and unsorted entries, a different number of them on each rank."""
    g = torch.Generator().manual_seed(4242 + rank)
    nnz = 3 + 5 * rank
    indices = torch.stack([torch.randint(0, n, (nnz,), generator=g) for n in shape[:2]])
    values = torch.randn((nnz,) + tuple(shape[2:]), generator=g, dtype=torch.float64).to(dtype)
    return torch.sparse_coo_tensor(indices, values, shape, check_invariants=True)


def check_sparse_all_reduce():
    """Sparse COO tensors (gloo's semantics: the coalesced sum on every rank), a sparse dimension of 2
    with and without a dense dimension, against the float64 dense sum and gloo; a rank with no entries."""
    for dtype, shape in ((torch.float32, (7, 11)), (torch.float64, (5, 3, 4))):
        want = sum(sparse_input(r, shape, torch.float64).to_dense() for r in range(WORLD)).to(dtype)
        for group, name in ((STRATA, "strata"), (GLOO, "gloo")):
            if group is GLOO and ON_CUDA:
                continue
            t = sparse_input(RANK, shape, dtype)
            dist.all_reduce(t, group=group)
            if not t.is_sparse or not t.is_coalesced():
                failures.append(f"sparse allreduce {name} {dtype}: the result is not a coalesced sparse tensor")
            close(f"sparse allreduce {name} {dtype}{shape} vs float64 dense sum", t.to_dense(), want)
            if group is STRATA:
                mine = t
            else:
                close(f"sparse allreduce {dtype} strata vs gloo (values)", mine.to_dense(), t.to_dense())
        # identical on every rank: gather the coalesced indices / values
        got = [None] * WORLD
        dist.all_gather_object(got, (mine.indices().tolist(), mine.values().double().tolist()), group=STRATA)
        if any(g != got[0] for g in got):
            failures.append(f"sparse allreduce {dtype}: the ranks' results differ")
    empty = torch.sparse_coo_tensor(torch.zeros((2, 0), dtype=torch.long), torch.zeros(0), (4, 4), check_invariants=True)
    t = empty if RANK == 0 else sparse_input(RANK, (4, 4), torch.float32)
    dist.all_reduce(t, group=STRATA)
    want = sum(sparse_input(r, (4, 4), torch.float64).to_dense() for r in range(1, WORLD)).float()
    close("sparse allreduce with an empty rank", t.to_dense(), want)


def check_async_and_future():
    t = inputs("async", RANK, (1 << 20,), torch.float32)
    work = dist.all_reduce(t, group=STRATA, async_op=True)
    fut = work.get_future()
    work.wait()
    if ON_CUDA:
        torch.cuda.synchronize()  # wait() only ordered the current stream after it
    if not work.is_completed():
        failures.append("async all_reduce: not completed after wait()")
    out = fut.wait()
    want = reduce_ref("SUM", [inputs("async", r, (1 << 20,), torch.float32) for r in range(WORLD)], torch.float32)
    close("async all_reduce future value", out[0], want)
    close("async all_reduce tensor", t, want)
    # Several in flight at once complete in order, each with its own result.
    ts = [inputs(f"multi{i}", RANK, (4099,), torch.float64) for i in range(6)]
    works = [dist.all_reduce(x, group=STRATA, async_op=True) for x in ts]
    for i, (x, w) in enumerate(zip(ts, works)):
        w.wait()
        close(f"in-flight all_reduce {i}", x,
              reduce_ref("SUM", [inputs(f"multi{i}", r, (4099,), torch.float64) for r in range(WORLD)], torch.float64))


def check_coalesced():
    shapes = [(3,), (17, 2), (1,), (0,), (101,)]
    for op in ("SUM", "MAX"):
        tag = f"coalesced-{op}"

        def run(group, tag=tag, op=op):
            ts = [inputs(f"{tag}{i}", RANK, s, torch.float32) for i, s in enumerate(shapes)]
            with dist._coalescing_manager(group=group, device=DEVICE):
                for t in ts:
                    dist.all_reduce(t, op=op_of(op), group=group)
            return ts
        want = [reduce_ref(op, [inputs(f"{tag}{i}", r, s, torch.float32) for r in range(WORLD)], torch.float32)
                for i, s in enumerate(shapes)]
        both(tag, run, want, gloo_ok=False)  # gloo has no coalescing; the reference checks strata


def check_broadcast_reduce():
    for dtype in DTYPES:
        for root in range(WORLD):
            for count in (0, 1031):
                tag = f"bcast-{dtype}-{root}-{count}"

                def run(group, tag=tag, dtype=dtype, root=root, count=count):
                    t = inputs(tag, RANK, (count,), dtype)
                    dist.broadcast(t, src=root, group=group)
                    return [t]
                both(tag, run, [inputs(tag, root, (count,), dtype)])
    for dtype in (torch.float32, torch.int32, torch.bfloat16):
        for op in ("SUM", "MAX"):
            for root in range(WORLD):
                tag = f"reduce-{dtype}-{op}-{root}"
                t = inputs(tag, RANK, (1031,), dtype)
                dist.reduce(t, dst=root, op=op_of(op), group=STRATA)
                if RANK == root:
                    close(tag, t, reduce_ref(op, [inputs(tag, r, (1031,), dtype) for r in range(WORLD)], dtype))


def check_gathers():
    for dtype in DTYPES:
        for count in (0, 1, 1031):
            tag = f"ag-{dtype}-{count}"
            want = [inputs(tag, r, (count,), dtype) for r in range(WORLD)]

            def run(group, tag=tag, dtype=dtype, count=count):
                outs = [torch.empty(count, dtype=dtype) for _ in range(WORLD)]
                dist.all_gather(outs, inputs(tag, RANK, (count,), dtype), group=group)
                return outs
            both(tag + " list", run, want)

            def run_tensor(group, tag=tag, dtype=dtype, count=count):
                out = torch.empty(WORLD * count, dtype=dtype)
                dist.all_gather_into_tensor(out, inputs(tag, RANK, (count,), dtype), group=group)
                return [out]
            both(tag + " into tensor", run_tensor, [torch.cat(want)])
    # Coalesced all_gather_into_tensor (FSDP's path).
    shapes = [(5,), (1031,), (1,)]

    def run_coalesced(group):
        outs = [torch.empty(WORLD * s[0]) for s in shapes]
        with dist._coalescing_manager(group=group, device=DEVICE):
            for i, s in enumerate(shapes):
                dist.all_gather_into_tensor(outs[i], inputs(f"agc{i}", RANK, s, torch.float32), group=group)
        return outs
    both("all_gather_into_tensor coalesced", run_coalesced,
         [torch.cat([inputs(f"agc{i}", r, s, torch.float32) for r in range(WORLD)]) for i, s in enumerate(shapes)],
         gloo_ok=False)
    # gather and scatter, every root.
    for root in range(WORLD):
        tag = f"gather-{root}"
        t = inputs(tag, RANK, (13, 3), torch.float32)
        outs = [torch.empty(13, 3) for _ in range(WORLD)] if RANK == root else None
        dist.gather(t, outs, dst=root, group=STRATA)
        if RANK == root:
            for r in range(WORLD):
                close(f"{tag} from {r}", outs[r], inputs(tag, r, (13, 3), torch.float32))
        tag = f"scatter-{root}"
        parts = [inputs(tag, p, (11,), torch.int64) for p in range(WORLD)] if RANK == root else None
        out = torch.empty(11, dtype=torch.int64)
        dist.scatter(out, parts, src=root, group=STRATA)
        close(tag, out, inputs(tag, RANK, (11,), torch.int64))


def check_reduce_scatters():
    for dtype in DTYPES:
        for op in ("SUM", "MAX", "MIN", "PRODUCT"):
            for count in (0, 1, 257):
                tag = f"rs-{dtype}-{op}-{count}"
                full = [inputs(tag, r, (WORLD * count,), dtype) for r in range(WORLD)]
                want = reduce_ref(op, full, dtype)[RANK * count:(RANK + 1) * count]

                def run_tensor(group, tag=tag, dtype=dtype, op=op, count=count):
                    out = torch.empty(count, dtype=dtype)
                    dist.reduce_scatter_tensor(out, inputs(tag, RANK, (WORLD * count,), dtype), op=op_of(op),
                                               group=group)
                    return [out]
                both(tag + " tensor", run_tensor, [want])

                def run_list(group, tag=tag, dtype=dtype, op=op, count=count):
                    out = torch.empty(count, dtype=dtype)
                    dist.reduce_scatter(out, list(inputs(tag, RANK, (WORLD * count,), dtype).chunk(WORLD))
                                        if count else [torch.empty(0, dtype=dtype)] * WORLD, op=op_of(op), group=group)
                    return [out]
                both(tag + " list", run_list, [want])
    shapes = [(WORLD * 3,), (WORLD * 101,)]

    def run_coalesced(group):
        outs = [torch.empty(s[0] // WORLD) for s in shapes]
        with dist._coalescing_manager(group=group, device=DEVICE):
            for i, s in enumerate(shapes):
                dist.reduce_scatter_tensor(outs[i], inputs(f"rsc{i}", RANK, s, torch.float32), group=group)
        return outs
    want = []
    for i, s in enumerate(shapes):
        n = s[0] // WORLD
        want.append(reduce_ref("SUM", [inputs(f"rsc{i}", r, s, torch.float32) for r in range(WORLD)],
                               torch.float32)[RANK * n:(RANK + 1) * n])
    both("reduce_scatter_tensor coalesced", run_coalesced, want, gloo_ok=False)


def check_all_to_all():
    for dtype in (torch.float32, torch.int8, torch.bool):
        tag = f"a2a-{dtype}"
        count = 5
        want = torch.cat([inputs(tag, r, (WORLD * count,), dtype)[RANK * count:(RANK + 1) * count]
                          for r in range(WORLD)])

        def run(group, tag=tag, dtype=dtype):
            out = torch.empty(WORLD * count, dtype=dtype)
            dist.all_to_all_single(out, inputs(tag, RANK, (WORLD * count,), dtype), group=group)
            return [out]
        both(tag + " even", run, [want])
    # Uneven splits: rank r sends (r + p + 1) rows of 3 to rank p.
    rows = lambda src, dst: src + dst + 1  # noqa: E731
    send_splits = [rows(RANK, p) for p in range(WORLD)]
    recv_splits = [rows(p, RANK) for p in range(WORLD)]
    inp = inputs("a2av", RANK, (sum(send_splits), 3), torch.float64)
    want = []
    for p in range(WORLD):
        theirs = inputs("a2av", p, (sum(rows(p, q) for q in range(WORLD)), 3), torch.float64)
        off = sum(rows(p, q) for q in range(RANK))
        want.append(theirs[off:off + rows(p, RANK)])

    def run_uneven(group):
        out = torch.empty(sum(recv_splits), 3, dtype=torch.float64)
        dist.all_to_all_single(out, inp, recv_splits, send_splits, group=group)
        return [out]
    both("all_to_all_single uneven", run_uneven, [torch.cat(want)])

    def run_list(group):
        ins = [inputs(f"a2al-{RANK}-{p}", 0, (rows(RANK, p),), torch.int32) for p in range(WORLD)]
        outs = [torch.empty(rows(p, RANK), dtype=torch.int32) for p in range(WORLD)]
        dist.all_to_all(outs, ins, group=group)
        return outs
    both("all_to_all list", run_list, [inputs(f"a2al-{p}-{RANK}", 0, (rows(p, RANK),), torch.int32)
                                       for p in range(WORLD)])


def check_p2p():
    nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    # A ring exchange with batch_isend_irecv: every rank sends and receives at once.
    send = inputs("ring", RANK, (1 << 18,), torch.float32)
    recv = torch.empty(1 << 18)
    ops = [dist.P2POp(dist.isend, send, nxt, group=STRATA), dist.P2POp(dist.irecv, recv, prv, group=STRATA)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    close("batch_isend_irecv ring", recv, inputs("ring", prv, (1 << 18,), torch.float32))
    # Blocking send / recv between 0 and 1.
    if RANK == 0:
        dist.send(inputs("p2p", 0, (1031,), torch.int64), dst=1, group=STRATA)
    elif RANK == 1:
        t = torch.empty(1031, dtype=torch.int64)
        dist.recv(t, src=0, group=STRATA)
        close("send/recv", t, inputs("p2p", 0, (1031,), torch.int64))
    dist.barrier(group=STRATA)
    if ON_CUDA:
        try:
            dist.recv(torch.empty(3), group=STRATA)
            failures.append("recv from any source into a CUDA tensor: no error")
        except ValueError as e:
            if "name the source rank" not in str(e):
                failures.append(f"recv from any source into a CUDA tensor: message '{e}'")
        return
    # Receive from any source (src=None): rank 0 takes every other rank's send once.
    if RANK == 0:
        seen = []
        for _ in range(WORLD - 1):
            t = torch.empty(2003, dtype=torch.bfloat16)
            src = dist.recv(t, group=STRATA)
            seen.append(src)
            close(f"recv from any source (from rank {src})", t, inputs("any", src, (2003,), torch.bfloat16))
        if sorted(seen) != list(range(1, WORLD)):
            failures.append(f"recv from any source: sources {seen}, expected each of 1..{WORLD - 1} once")
    else:
        time.sleep(0.05 * (WORLD - RANK))  # the highest rank first
        dist.send(inputs("any", RANK, (2003,), torch.bfloat16), dst=0, group=STRATA)
    dist.barrier(group=STRATA)


def check_groups():
    # new_group over the first WORLD-1 ranks (all of them when WORLD is 2), with the strata backend.
    members = list(range(max(2, WORLD - 1)))
    sub = dist.new_group(members, backend="strata")
    if RANK in members:
        t = inputs("sub", RANK, (1031,), torch.float32)
        dist.all_reduce(t, group=sub)
        close("new_group all_reduce", t, reduce_ref("SUM", [inputs("sub", r, (1031,), torch.float32)
                                                            for r in members], torch.float32))
        out = torch.empty(len(members) * 3, dtype=torch.int32)
        dist.all_gather_into_tensor(out, torch.full((3,), RANK, dtype=torch.int32), group=sub)
        close("new_group all_gather (global ranks)", out,
              torch.tensor([r for r in members for _ in range(3)], dtype=torch.int32))
    # split_group: pairs (0,1), (2) ...
    splits = [list(range(i, min(i + 2, WORLD))) for i in range(0, WORLD, 2)]
    part = dist.split_group(STRATA, splits)
    mine = next(s for s in splits if RANK in s)
    t = inputs("split", RANK, (257,), torch.float64)
    dist.all_reduce(t, group=part)
    close("split_group all_reduce", t, reduce_ref("SUM", [inputs("split", r, (257,), torch.float64) for r in mine],
                                                  torch.float64))


def check_errors():
    def expect(name, fn, words):
        try:
            fn()
        except (RuntimeError, ValueError, TypeError) as e:
            if not all(w.lower() in str(e).lower() for w in words):
                failures.append(f"{name}: message '{e}' lacks {words}")
            return
        failures.append(f"{name}: no error raised")
    expect("int16 dtype", lambda: dist.all_reduce(torch.ones(3, dtype=torch.int16), group=STRATA), ["dtype"])
    # complex SUM works: torch hands the backend the real view.
    z = torch.complex(inputs("cplx", RANK, (9,), torch.float32), inputs("cplx-im", RANK, (9,), torch.float32))
    dist.all_reduce(z, group=STRATA)
    want = sum(torch.complex(inputs("cplx", r, (9,), torch.float32), inputs("cplx-im", r, (9,), torch.float32))
               for r in range(WORLD))
    close("complex all_reduce (real view)", torch.view_as_real(z), torch.view_as_real(want))
    expect("BAND", lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.BAND, group=STRATA),
           ["ReduceOp"])
    expect("all_gather_into_tensor size", lambda: dist.all_gather_into_tensor(torch.empty(WORLD * 3 + 1),
                                                                              torch.ones(3), group=STRATA),
           ["elements"])
    dist.barrier(group=STRATA)  # still usable after argument errors


def check_cuda_streams():
    """ProcessGroupNCCL's stream rules on CUDA tensors (ON_CUDA only)."""
    n = 1 << 20
    want = reduce_ref("SUM", [inputs("stream", r, (n,), torch.float32) for r in range(WORLD)], torch.float32)
    src = inputs("stream", RANK, (n,), torch.float32)
    # 1. The call is ordered after the caller's current stream and does not block the host: the
    #    input is written by a copy queued behind a kernel that spins for about a second.
    t = torch.zeros(n)
    torch.cuda._sleep(2_000_000_000)
    t.copy_(src)
    start = time.time()
    dist.all_reduce(t, group=STRATA)
    returned = time.time() - start
    torch.cuda.synchronize()
    if returned > 0.25:
        failures.append(f"all_reduce on CUDA held the host {returned:.2f} s while its stream was busy")
    close("all_reduce after a busy current stream", t, want)
    # 2. async_op on a side stream: wait() makes that stream wait; the kernel queued right after
    #    it must see the result (the host never waits).
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = src.clone()
        work = dist.all_reduce(t, group=STRATA, async_op=True)
        work.wait()
        doubled = t * 2
    torch.cuda.synchronize()
    close("kernel after wait() on a side stream", doubled, want * 2)
    # 3. The future's callbacks see the result.
    t = src.clone()
    fut = dist.all_reduce(t, group=STRATA, async_op=True).get_future()
    tripled = fut.then(lambda f: f.value()[0] * 3).wait()
    torch.cuda.synchronize()
    close("future.then on CUDA", tripled, want * 3)
    # 4. A tensor freed while its operation is in flight keeps its memory until the operation is
    #    done: tensors allocated right after must not be overwritten by its result.
    t = src.clone()
    work = dist.all_reduce(t, group=STRATA, async_op=True)
    del t, work  # the Work holds its outputs: drop both
    fresh = [torch.full((n,), 7.0) for _ in range(4)]
    torch.cuda.synchronize()
    for i, f in enumerate(fresh):
        close(f"tensor {i} allocated while a freed input was in flight", f, torch.full((n,), 7.0))
    # 5. is_completed turns true once the GPU has run it; a CPU operation after CUDA ones keeps order.
    t = src.clone()
    work = dist.all_reduce(t, group=STRATA, async_op=True)
    torch.cuda.synchronize()
    if not work.is_completed():
        failures.append("is_completed() false after the device finished")
    host = inputs("after-cuda", RANK, (1031,), torch.float32).cpu()
    dist.all_reduce(host, group=STRATA)
    close("CPU all_reduce after CUDA ones", host, reduce_ref("SUM", [inputs("after-cuda", r, (1031,), torch.float32)
                                                                     for r in range(WORLD)], torch.float32))


def check_functional_and_dtensor():
    """torch's functional collectives, DeviceMesh and DTensor over strata (the default group), against float64."""
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
    mesh = init_device_mesh(DEVICE.type, (WORLD,))
    if dist.get_backend(mesh.get_group()) != "strata":
        failures.append(f"DeviceMesh's group is {dist.get_backend(mesh.get_group())}, want strata")
    parts = [inputs("funcol", r, (37,), torch.float32) for r in range(WORLD)]
    close("funcol.all_reduce sum", funcol.all_reduce(parts[RANK], "sum", mesh).wait(),
          reduce_ref("SUM", parts, torch.float32))
    close("funcol.all_gather_single", funcol.all_gather_single(parts[RANK], 0, mesh).wait(), torch.cat(parts))
    rs_parts = [inputs("funcol-rs", r, (WORLD * 5,), torch.float32) for r in range(WORLD)]
    close("funcol.reduce_scatter_single sum", funcol.reduce_scatter_single(rs_parts[RANK], "sum", 0, mesh).wait(),
          reduce_ref("SUM", rs_parts, torch.float32)[RANK * 5:(RANK + 1) * 5])
    full = inputs("dtensor", 0, (7, 3), torch.float32)  # 7 rows: uneven shards on 2 and 3 ranks
    sharded = distribute_tensor(full, mesh, [Shard(0)])
    close("DTensor Shard(0) -> full_tensor", sharded.full_tensor(), full)
    partial = DTensor.from_local(parts[RANK], mesh, [Partial()])
    close("DTensor Partial -> Replicate", partial.redistribute(mesh, [Replicate()]).to_local(),
          reduce_ref("SUM", parts, torch.float32))
    summed = partial.redistribute(mesh, [Shard(0)]).full_tensor()  # a reduce-scatter, then an all-gather
    close("DTensor Partial -> Shard(0) -> full", summed, reduce_ref("SUM", parts, torch.float32))


def check_profiler_events():
    """Each operation is one asynchronous 'strata:<op>' event of torch's profiler, with its inputs' shapes
    (complex tensors as their real views), as gloo's 'gloo:<op>' events are."""
    real = inputs("prof", RANK, (7, 3), torch.float32).to(DEVICE)
    cplx = inputs("prof-c", RANK, (5,), torch.float32).to(DEVICE).to(torch.complex64)
    outs = [torch.empty_like(real) for _ in range(WORLD)]
    a2a_in = inputs("prof-a2a", RANK, (WORLD * 4,), torch.float32).to(DEVICE)
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        dist.all_reduce(real, group=STRATA)
        dist.all_reduce(cplx, group=STRATA)
        dist.broadcast(real, src=0, group=STRATA, async_op=True).wait()
        dist.all_gather(outs, real, group=STRATA)
        dist.all_to_all_single(torch.empty_like(a2a_in), a2a_in, group=STRATA)
        dist.barrier(group=STRATA)
    want = {"strata:all_reduce": [[[7, 3]], [[5, 2]]], "strata:broadcast": [[[7, 3]]],
            "strata:all_gather": [[[7, 3]]], "strata:all_to_all": [[[WORLD * 4]]], "strata:barrier": [[]]}
    events = [e for e in prof.function_events if e.name.startswith("strata:")]
    for name, shapes in want.items():
        got = [e for e in events if e.name == name]
        if sorted(e.input_shapes for e in got) != sorted(shapes):
            failures.append(f"profiler: {name} events with input shapes {[e.input_shapes for e in got]}, "
                            f"want {shapes}")
        for e in got:
            if not e.is_async or e.count != 1 or e.cpu_time < 0:
                failures.append(f"profiler: {name} event async={e.is_async} count={e.count} cpu_time={e.cpu_time}")
    extra = sorted({e.name for e in events} - set(want))
    if extra:
        failures.append(f"profiler: unexpected strata events {extra}")


def scenario_collectives():
    global STRATA, GLOO
    dist.init_process_group("strata", timeout=timedelta(seconds=60))
    STRATA = dist.group.WORLD
    GLOO = dist.new_group(backend="gloo")
    checks = [check_all_reduce, check_sparse_all_reduce, check_async_and_future, check_coalesced, check_broadcast_reduce, check_gathers,
              check_reduce_scatters, check_all_to_all, check_p2p, check_groups, check_errors, check_profiler_events,
              check_functional_and_dtensor]
    if ON_CUDA:
        checks.append(check_cuda_streams)
    for check in checks:
        t0 = time.time()
        check()
        print(f"rank {RANK}: {check.__name__} done in {time.time() - t0:.1f} s", flush=True)
    dist.destroy_process_group()


def scenario_init_method(method):
    """init_process_group("strata") through env://, tcp:// or file://; one all_reduce."""
    if method == "env":
        dist.init_process_group("strata", init_method="env://")
    elif method == "tcp":
        dist.init_process_group("strata", init_method=f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}",
                                rank=RANK, world_size=WORLD)
    elif method == "file":
        dist.init_process_group("strata", init_method=f"file://{os.environ['STRATA_TEST_FILE']}",
                                rank=RANK, world_size=WORLD)
    elif method in ("mpi", "slurm"):  # mpirun / srun: ranks from the launcher, the store at MASTER_ADDR/PORT
        dist.init_process_group("strata", init_method="env://", rank=RANK, world_size=WORLD)
    elif method == "cpu_cuda":
        dist.init_process_group("cpu:strata,cuda:strata")
    t = torch.full((5,), float(RANK + 1))
    dist.all_reduce(t)
    close(f"init {method}", t, torch.full((5,), float(WORLD * (WORLD + 1) / 2)))
    dist.destroy_process_group()


# ---------------------------------------------------------------- training
def small_model():
    from ddp_train import SmallCNN
    torch.manual_seed(0)
    return SmallCNN(width=8)


def scenario_training():
    from ddp_train import train
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    global STRATA, GLOO
    dist.init_process_group("strata", timeout=timedelta(seconds=60))
    STRATA, GLOO = dist.group.WORLD, dist.new_group(backend="gloo")
    torch.set_num_threads(1)
    # DDP, float32: the same parameters as with gloo. Two ranks' sums are
    # exactly alike; three ranks' depend on the order each library adds them
    # in, and with torch 2.15.0 gloo's no longer matched strata's: after 20
    # steps the parameters differed by up to 3.7e-6, roundings compounded. A
    # sum that lost or doubled a rank's gradient would change every update by
    # a third or more.
    a, b = small_model(), small_model()
    train(a, 20, 8, RANK, process_group=STRATA)
    train(b, 20, 8, RANK, process_group=GLOO)
    exact = WORLD <= 2
    params_close("DDP strata vs gloo", a, b, rtol=1e-6 if exact else 1e-4, atol=1e-7 if exact else 2e-5)
    changed = any(not torch.equal(x, y) for x, y in zip(a.parameters(), small_model().parameters()))
    if not changed:
        failures.append("DDP: training left the parameters unchanged")
    # DDP with the bf16 compression hook, against gloo with the same hook.
    a, b = small_model(), small_model()
    train(a, 20, 8, RANK, hook=default_hooks.bf16_compress_hook, process_group=STRATA)
    train(b, 20, 8, RANK, hook=default_hooks.bf16_compress_hook, process_group=GLOO)
    params_close("DDP bf16 hook strata vs gloo", a, b, rtol=1e-2, atol=1e-3)
    # strata_torch.hooks: buckets fused across DDP's buckets (tiny buckets, so there are several),
    # the same parameters as DDP's default hook on gloo (bf16 / fp16 within their rounding).
    import strata_torch.hooks as hooks
    want = small_model()
    train(want, 20, 8, RANK, process_group=GLOO, bucket_cap_mb=0.01)
    # fused: averaging sums before dividing (DDP's hook divides first): float32 rounding apart.
    # "fused eager": every bucket counts as large (eager_bytes=1), so each goes at once.
    for name, hook, eager, rtol, atol in (("fused", hooks.fused_allreduce_hook, 1 << 20, 1e-4, 1e-5),
                                          ("fused eager", hooks.fused_allreduce_hook, 1, 1e-4, 1e-5),
                                          ("bf16", hooks.bf16_compress_fused_hook, 1 << 20, 2e-2, 2e-3),
                                          ("fp16", hooks.fp16_compress_fused_hook, 1 << 20, 5e-3, 5e-4)):
        got = small_model()
        state = hooks.FusionState(STRATA, threshold_bytes=1 << 20, eager_bytes=eager)
        train(got, 20, 8, RANK, hook=hook, hook_state=state, process_group=STRATA, bucket_cap_mb=0.01)
        params_close(f"DDP strata_torch.hooks {name} vs gloo default", got, want, rtol=rtol, atol=atol)
    print(f"rank {RANK}: DDP done", flush=True)
    check_zero()
    print(f"rank {RANK}: ZeroRedundancyOptimizer done", flush=True)
    check_fsdp2()
    print(f"rank {RANK}: FSDP2 done", flush=True)
    dist.destroy_process_group()


def check_zero():
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel as DDP
    import torch.nn.functional as F
    from ddp_train import synthetic_batch
    results = []
    for group in (STRATA, GLOO):
        model = small_model()
        ddp = DDP(model, process_group=group)
        # SGD with momentum: Adam would turn the last-bit differences of summing 3 ranks' gradients in
        # another order into visible ones wherever a gradient is near Adam's epsilon.
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.SGD, lr=0.01, momentum=0.9,
                                      process_group=group)
        for step in range(8):
            x, y = synthetic_batch(step, RANK, 8)
            opt.zero_grad()
            F.cross_entropy(ddp(x), y).backward()
            opt.step()
        results.append(model)
    params_close("ZeroRedundancyOptimizer strata vs gloo", results[0], results[1], rtol=1e-6, atol=1e-7)


def fsdp2_trained(device, group):
    """A small MLP sharded with FSDP2 over `group`, trained 6 steps on `device` from the same
    initial parameters and batches on every call; returns its full parameters on the CPU."""
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard
    import torch.nn as nn
    with torch.device("cpu"):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(37, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 5))
    model.to(device)
    mesh = DeviceMesh.from_group(group, device.type)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(6):
        with torch.device("cpu"):
            g = torch.Generator().manual_seed(step * 100 + RANK)
            x, y = torch.randn(16, 37, generator=g), torch.randn(16, 5, generator=g)
        opt.zero_grad()
        ((model(x.to(device)) - y.to(device)) ** 2).mean().backward()
        opt.step()
    return [p.full_tensor().detach().cpu() for p in model.parameters()]


def check_fsdp2():
    cpu = torch.device("cpu")
    for i, (x, y) in enumerate(zip(fsdp2_trained(cpu, STRATA), fsdp2_trained(cpu, GLOO))):
        close_tol(f"FSDP2 strata vs gloo param {i}", x, y, rtol=1e-6, atol=1e-7)


def scenario_cuda_training():
    """On CUDA tensors over strata: DDP (its default hook and strata_torch.hooks' fused one) and
    FSDP2 train to the same parameters as the same model on the CPU over gloo, from the same initial
    parameters and batches (TF32 off; GPU and CPU kernels differ only in rounding)."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    import torch.nn.functional as F
    import strata_torch.hooks as hooks
    from ddp_train import synthetic_batch
    global STRATA, GLOO
    dist.init_process_group("strata", timeout=timedelta(seconds=60))
    STRATA, GLOO = dist.group.WORLD, dist.new_group(backend="gloo")

    def ddp_trained(device, group, hook=None):
        with torch.device("cpu"):
            model = small_model()
        model.to(device)
        ddp = DDP(model, process_group=group, bucket_cap_mb=0.01,
                  device_ids=[device.index] if device.type == "cuda" else None)
        if hook is not None:
            ddp.register_comm_hook(hooks.FusionState(group, threshold_bytes=1 << 20), hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
        for step in range(8):
            with torch.device("cpu"):
                x, y = synthetic_batch(step, RANK, 8)
            opt.zero_grad()
            F.cross_entropy(ddp(x.to(device)), y.to(device)).backward()
            opt.step()
        return model

    want = ddp_trained(torch.device("cpu"), GLOO)
    params_close("DDP on CUDA (strata) vs CPU (gloo)", ddp_trained(DEVICE, STRATA), want, rtol=1e-4, atol=1e-5)
    params_close("DDP fused hook on CUDA (strata) vs CPU (gloo)",
                 ddp_trained(DEVICE, STRATA, hooks.fused_allreduce_hook), want, rtol=1e-4, atol=1e-5)
    print(f"rank {RANK}: DDP on CUDA done", flush=True)

    for i, (x, y) in enumerate(zip(fsdp2_trained(DEVICE, STRATA), fsdp2_trained(torch.device("cpu"), GLOO))):
        close_tol(f"FSDP2 on CUDA (strata) vs CPU (gloo) param {i}", x, y, rtol=1e-4, atol=1e-5)
    print(f"rank {RANK}: FSDP2 on CUDA done", flush=True)
    dist.destroy_process_group()


def main():
    scenario, args = sys.argv[1], sys.argv[2:]
    globals()[f"scenario_{scenario}"](*args)
    if failures:
        print(f"rank {RANK}: {len(failures)} failures:\n  " + "\n  ".join(failures[:40]), flush=True)
        sys.exit(1)
    print(f"rank {RANK}: OK", flush=True)
    if any(rank_frameworks.gloo_reference_run):
        sys.stderr.flush()
        os._exit(0)  # see rank_frameworks.gloo_reference_run


if __name__ == "__main__":
    main()
