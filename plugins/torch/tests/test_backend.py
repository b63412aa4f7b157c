"""strata_torch against gloo and a float64 reference, on 2 and 3 local ranks."""
import os
import shutil
import subprocess
import sys

import pytest

from launch import free_port, run

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


# STRATA_TORCH_OVERLAP: 1 runs operations on the backend's worker thread, 0 on the caller's.
@pytest.mark.parametrize("overlap", ["1", "0"])
@pytest.mark.parametrize("world", [2, 3])
def test_collectives_match_gloo_and_reference(world, overlap):
    run("collectives", world, timeout=900, env={"STRATA_TORCH_OVERLAP": overlap}).check()


@pytest.mark.parametrize("overlap", ["1", "0"])
@pytest.mark.parametrize("world", [2, 3])
def test_training_ddp_zero_fsdp2_match_gloo(world, overlap):
    run("training", world, timeout=900, env={"STRATA_TORCH_OVERLAP": overlap}).check()


def test_overlap_setting_is_checked():
    res = run("init_method", 2, "env", timeout=120, env={"STRATA_TORCH_OVERLAP": "sometimes"})
    assert all(c != 0 for c in res.codes)
    assert "STRATA_TORCH_OVERLAP='sometimes'" in res.outputs[0], res.outputs[0][-2000:]


@pytest.mark.parametrize("method", ["env", "tcp", "file", "cpu_cuda"])
def test_init_methods(method, tmp_path):
    run("init_method", 2, method, timeout=120, env={"STRATA_TEST_FILE": str(tmp_path / "rendezvous")}).check()


@pytest.mark.parametrize("world", [2, 3])
def test_dead_peer_raises_on_every_other_rank_within_timeout(world):
    timeout_s = 20
    res = run("dead_peer", world, timeout_s, timeout=120)
    assert res.codes[-1] == 9, res.outputs[-1]
    for r in range(world - 1):
        assert res.codes[r] == 3, f"rank {r} (exit {res.codes[r]}):\n{res.outputs[r][-3000:]}"
        assert "RAISED DistBackendError" in res.outputs[r] and "strata" in res.outputs[r], res.outputs[r][-3000:]
    assert res.seconds < timeout_s + 30, f"took {res.seconds:.0f} s"


@pytest.mark.parametrize("world", [3])
def test_survivors_recover_from_a_dead_rank_and_keep_training(world):
    res = run("elastic", world, 20, timeout=180)
    assert res.codes[-1] == 9, res.outputs[-1]
    for r in range(world - 1):
        assert res.codes[r] == 0, f"rank {r} (exit {res.codes[r]}):\n{res.outputs[r][-3000:]}"
        assert f"carried on as rank {r} of {world - 1}" in res.outputs[r], res.outputs[r][-3000:]


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs Open MPI's mpirun (scripts/setup.sh test installs it)")
def test_mpirun_with_master_addr():
    port = free_port()
    out = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x", "MASTER_ADDR=127.0.0.1",
                          "-x", f"MASTER_PORT={port}", "-x", "OMP_NUM_THREADS=1", sys.executable,
                          os.path.join(os.path.dirname(__file__), "rank_main.py"), "init_method", "mpi"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.count("OK") == 2, out.stdout[-3000:]


def test_torchrun_example():
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                          os.path.join(ROOT, "examples", "ddp_train.py"), "--backend", "strata", "--steps", "6",
                          "--warmup", "2"], env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "backend strata, hook default: world 2, median step" in out.stdout, out.stdout[-3000:]
