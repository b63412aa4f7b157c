"""strata_torch against gloo and a float64 reference, on 2 and 3 local ranks.

The tests named test_cuda_* need a CUDA GPU (the ranks share it); without one
they are reported as skipped. scripts/gpu-check.sh runs them on a GPU machine.
"""
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from launch import free_port, run

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CUDA = {"STRATA_TEST_DEVICE": "cuda"}


def _gpus():
    import torch
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


needs_gpu = pytest.mark.skipif(_gpus() == 0, reason="no CUDA GPU is visible; scripts/gpu-check.sh runs the CUDA "
                                                    "tests on a GPU machine")


# STRATA_TORCH_OVERLAP: 1 runs operations on the backend's worker thread, 0 on the caller's.
@pytest.mark.parametrize("overlap", ["1", "0"])
@pytest.mark.parametrize("world", [2, 3])
def test_collectives_match_gloo_and_reference(world, overlap):
    run("collectives", world, timeout=900, env={"STRATA_TORCH_OVERLAP": overlap}).check()


@pytest.mark.parametrize("overlap", ["1", "0"])
@pytest.mark.parametrize("world", [2, 3])
def test_training_ddp_zero_fsdp2_match_gloo(world, overlap):
    run("training", world, timeout=900, env={"STRATA_TORCH_OVERLAP": overlap}).check()


@pytest.mark.parametrize("world", [2, 3])
def test_monitored_barrier_names_missing_ranks_and_sequence_numbers_agree(world):
    run("monitored_barrier", world, timeout=300).check()


def test_overlap_setting_is_checked():
    res = run("init_method", 2, "env", timeout=120, env={"STRATA_TORCH_OVERLAP": "sometimes"})
    assert all(c != 0 for c in res.codes)
    assert "STRATA_TORCH_OVERLAP='sometimes'" in res.outputs[0], res.outputs[0][-2000:]


@pytest.mark.parametrize("method", ["env", "tcp", "file", "cpu_cuda"])
def test_init_methods(method, tmp_path):
    run("init_method", 2, method, timeout=120, env={"STRATA_TEST_FILE": str(tmp_path / "rendezvous")}).check()


@needs_gpu
@pytest.mark.parametrize("world", [2, 3])
def test_cuda_collectives_and_stream_rules(world):
    """Every check above on CUDA tensors against the float64 reference, plus ProcessGroupNCCL's stream
    rules: ordering after the current stream, wait() on a side stream, futures, freed inputs."""
    run("collectives", world, timeout=420, env=dict(CUDA, STRATA_TORCH_OVERLAP="1")).check()


@needs_gpu
def test_cuda_ddp_and_fsdp2_match_cpu_gloo():
    run("cuda_training", 2, timeout=300, env=CUDA).check()


@needs_gpu
def test_cuda_dead_peer_raises_on_the_survivor_within_timeout():
    _check_dead_peer(2, CUDA)


@pytest.mark.parametrize("world", [2, 3])
def test_dead_peer_raises_on_every_other_rank_within_timeout(world):
    _check_dead_peer(world)


def _check_dead_peer(world, env=None):
    timeout_s = 20
    res = run("dead_peer", world, timeout_s, timeout=120, env=env)
    assert res.codes[-1] == 9, res.outputs[-1]
    for r in range(world - 1):
        assert res.codes[r] == 3, f"rank {r} (exit {res.codes[r]}):\n{res.outputs[r][-3000:]}"
        assert "RAISED DistBackendError" in res.outputs[r] and "strata" in res.outputs[r], res.outputs[r][-3000:]
    assert res.seconds < timeout_s + 30, f"took {res.seconds:.0f} s"


def test_silent_peer_times_out_with_torchs_words_for_it():
    # torch's own tests (and its error handling) match " (Timed out|closed|timeout) ".
    timeout_s = 5
    res = run("silent_peer", 2, timeout_s, timeout=120)
    assert res.codes[0] == 3, f"rank 0 (exit {res.codes[0]}):\n{res.outputs[0][-3000:]}"
    assert re.search(r"RAISED DistBackendError: .* (Timed out|closed|timeout) ", res.outputs[0]), res.outputs[0][-3000:]
    assert "strata" in res.outputs[0] and "rank 1" in res.outputs[0], res.outputs[0][-3000:]


@pytest.mark.parametrize("world", [3])
def test_survivors_recover_from_a_dead_rank_and_keep_training(world):
    res = run("elastic", world, 20, timeout=180)
    assert res.codes[-1] == 9, res.outputs[-1]
    for r in range(world - 1):
        assert res.codes[r] == 0, f"rank {r} (exit {res.codes[r]}):\n{res.outputs[r][-3000:]}"
        assert f"carried on as rank {r} of {world - 1}" in res.outputs[r], res.outputs[r][-3000:]


WHEEL_RANK = """
import os, sys, torch, strata_torch, torch.distributed as dist
assert strata_torch.__file__.startswith(sys.prefix), strata_torch.__file__  # the wheel's, not the project's
dist.init_process_group("strata")
t = torch.full((5,), float(dist.get_rank() + 1))
dist.all_reduce(t)
assert t.tolist() == [3.0] * 5, t
dist.destroy_process_group()
print("WHEEL OK", strata_torch.__file__)
"""


def test_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    """pip wheel ./plugins/torch makes a wheel that installs into another environment with the same torch,
    building nothing there (no compiler or CMake on its PATH), and strata runs from it."""
    import torch
    wheels = tmp_path / "wheels"
    build = dict(os.environ, STRATA_BUILD_DIR=os.path.join(ROOT, "build"), MAX_JOBS="2")
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
                          "--disable-pip-version-check", "-w", str(wheels), os.path.join(ROOT, "plugins", "torch")],
                         env=build, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    wheel = [str(w) for w in wheels.glob("strata_torch-*.whl")]
    assert len(wheel) == 1, list(wheels.iterdir())
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    # The same torch without a 2 GB download: the fresh venv sees the project's packages after its own.
    purelib = subprocess.check_output([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                      text=True).strip()
    with open(os.path.join(purelib, "project_torch.pth"), "w") as f:
        f.write(os.path.dirname(os.path.dirname(torch.__file__)) + "\n")
    bare = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}  # libstrata from the wheel alone
    bare.update(PATH=str(venv / "bin"), CC="/nonexistent/cc", CXX="/nonexistent/c++")
    out = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-deps", "--ignore-installed",
                          "--disable-pip-version-check", wheel[0]],
                         env=bare, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Building" not in out.stdout, out.stdout
    port = str(free_port())
    procs = [subprocess.Popen([py, "-c", WHEEL_RANK], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=dict(bare, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port))
             for r in range(2)]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    for r, (p, o) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0 and "WHEEL OK " + str(venv) in o, f"rank {r} (exit {p.returncode}):\n{o[-3000:]}"


def _trains_as_over_gloo(scenario, *args, tmp_path):
    """Runs a training scenario of rank_frameworks.py over strata and over gloo (2 ranks); asserts that rank 0
    saved the same parameters."""
    import torch
    got = {}
    for backend in ("strata", "gloo"):
        out = tmp_path / f"{backend}.pt"
        run(scenario, 2, backend, *args, str(out), timeout=600).check()
        got[backend] = torch.load(out)
    for i, (s, g) in enumerate(zip(got["strata"], got["gloo"], strict=True)):
        assert torch.allclose(s, g, rtol=1e-6, atol=1e-7), f"parameter {i}: strata and gloo differ by {(s - g).abs().max()}"


def test_accelerate_trains_the_same_parameters_as_over_gloo(tmp_path):
    """Hugging Face Accelerate (CPU) on a strata process group ends with the parameters it reaches over gloo."""
    _trains_as_over_gloo("accelerate", tmp_path=tmp_path)


def _deepspeed_missing():
    try:
        import deepspeed  # noqa: F401
        return False
    except ImportError:
        return True


@pytest.mark.skipif(_deepspeed_missing(), reason="DeepSpeed is not installed in the venv: a documented check, "
                    "not in CI (tests/README.md: DS_BUILD_OPS=0 .venv/bin/pip install --no-build-isolation deepspeed)")
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_deepspeed_zero_trains_the_same_parameters_as_over_gloo(stage, tmp_path):
    """DeepSpeed ZeRO (CPU) on strata ends with the parameters it reaches over gloo, at every stage."""
    _trains_as_over_gloo("deepspeed", stage, tmp_path=tmp_path)


@pytest.mark.parametrize("mode,world", [("plugin", 2), ("as-gloo", 2), ("as-gloo", 8)])
def test_torchs_own_suite(mode, world):
    """torch's distributed suite on strata_torch (torch_suite.py --ci: the whole at world size 2, the subgroup
    tests at 8): no failure beyond torch_suite_expected.txt's, none of those passing, every test
    torch_suite_ci.txt lists present in this torch and run."""
    suite = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_suite.py")
    env = {k: v for k, v in os.environ.items() if k not in ("BACKEND", "WORLD_SIZE", "TEMP_DIR")}
    out = subprocess.run([sys.executable, suite, "--mode", mode, "--ci"], capture_output=True, text=True,
                         timeout=900, cwd=os.path.dirname(suite), env=dict(env, WORLD_SIZE=str(world)))
    summary = [line for line in out.stdout.splitlines() if line.startswith("torch_suite:")]
    assert out.returncode == 0 and summary, "\n".join(summary) + "\n" + out.stderr[-6000:]
    print("\n".join(summary))


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs Open MPI's mpirun (scripts/setup.sh test installs it)")
def test_mpirun_with_master_addr():
    port = free_port()
    out = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x", "MASTER_ADDR=127.0.0.1",
                          "-x", f"MASTER_PORT={port}", "-x", "OMP_NUM_THREADS=1", sys.executable,
                          os.path.join(os.path.dirname(__file__), "rank_main.py"), "init_method", "mpi"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.count("OK") == 2, out.stdout[-3000:]


@pytest.mark.skipif(shutil.which("srun") is None, reason="needs Slurm (scripts/setup.sh test installs slurmctld, "
                                                           "slurmd, slurm-client and munge)")
@pytest.mark.parametrize("ntasks", [2, 3])
def test_srun_on_a_one_host_slurm_cluster(ntasks, tmp_path):
    """As an sbatch script would: MASTER_ADDR from the job's first node, ranks from SLURM_PROCID/NTASKS."""
    cluster = os.path.join(ROOT, "tests", "slurm", "slurm_cluster.sh")
    up = subprocess.run([cluster, "start", str(tmp_path)], capture_output=True, text=True, timeout=120)
    if up.returncode == 77:
        pytest.skip(up.stdout.strip())
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        env = dict(os.environ, SLURM_CONF=str(tmp_path / "slurm.conf"), MASTER_PORT=str(free_port()),
                   OMP_NUM_THREADS="1")
        for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"):
            env.pop(v, None)
        task = (f'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1) exec {sys.executable} '
                f'{os.path.join(os.path.dirname(__file__), "rank_main.py")} init_method slurm')
        out = subprocess.run(["srun", "-n", str(ntasks), "--overcommit", "bash", "-c", task], env=env,
                             capture_output=True, text=True, timeout=300)
    finally:
        subprocess.run([cluster, "stop", str(tmp_path)], timeout=60)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.count("OK") == ntasks, out.stdout[-3000:]


def test_torchrun_example():
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                          os.path.join(ROOT, "examples", "ddp_train.py"), "--backend", "strata", "--steps", "6",
                          "--warmup", "2"], env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "backend strata, hook default: world 2, median step" in out.stdout, out.stdout[-3000:]


# An elastic agent that prints every thread's Python stack on SIGUSR2 (so that a
# test that times out can say where each agent was), then runs torchrun.
AGENT_WITH_STACKS = ("import faulthandler, runpy, signal; faulthandler.register(signal.SIGUSR2, all_threads=True); "
                     "runpy.run_module('torch.distributed.run', run_name='__main__')")


def test_torchrun_elastic_restart_continues_on_the_surviving_nodes(tmp_path):
    """Three torchrun agents (one worker each, --nnodes 2:3, c10d rendezvous).
    At step 5 the third node is lost (its worker kills its agent and exits).
    The other workers' step fails with strata's error, their agents restart
    them on a world of 2, and training resumes from the checkpoint. The final
    parameters must equal a one-process replay of the same 15 steps."""
    import signal
    import torch
    from elastic_worker import batch, make_model

    steps, kill_at = 15, 5
    port = free_port()
    agents, logs = [], []
    try:
        for node in range(3):
            conf = (f"is_host={1 if node == 0 else 0},last_call_timeout=1,keep_alive_interval=1,"
                    "keep_alive_max_attempt=2,join_timeout=60")
            log = open(tmp_path / f"agent{node}.log", "w+")
            logs.append(log)
            agents.append(subprocess.Popen(
                [sys.executable, "-c", AGENT_WITH_STACKS, "--nnodes", "2:3", "--nproc-per-node", "1",
                 "--max-restarts", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
                 "--rdzv-conf", conf, "--monitor-interval", "0.2",
                 os.path.join(os.path.dirname(__file__), "elastic_worker.py"), str(tmp_path), str(steps),
                 str(kill_at)],
                env=dict(os.environ, OMP_NUM_THREADS="1", ELASTIC_VICTIM="1" if node == 2 else "0"),
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True))  # its workers join its group
            if node == 0:  # the rendezvous store's host starts first
                time.sleep(1.0)
        deadline = time.time() + 240
        codes = []
        for a in agents:
            try:
                codes.append(a.wait(timeout=max(1.0, deadline - time.time())))
            except subprocess.TimeoutExpired:
                codes.append(None)  # still running at the deadline: reported with its log below
        if None in codes:  # where is everyone? Python stacks (SIGUSR2) and strata's flight recorders (SIGUSR1)
            tree = subprocess.run(["ps", "-ww", "-eo", "pid,ppid,pgid,etime,stat,wchan:24,args"], capture_output=True,
                                  text=True).stdout
            groups = {a.pid for a in agents}
            tree = "\n".join(line for line in tree.splitlines()[1:] if int(line.split()[2]) in groups)
            for a in agents:
                try:
                    os.killpg(a.pid, signal.SIGUSR2)
                except ProcessLookupError:
                    pass
            time.sleep(2)
            for line in tree.splitlines():  # the workers (not the agents, which SIGUSR1 would end)
                if "elastic_worker.py" in line:
                    try:
                        os.kill(int(line.split()[0]), signal.SIGUSR1)
                    except ProcessLookupError:
                        pass
            time.sleep(2)
    finally:
        for a in agents:  # the agent and the workers it left behind
            try:
                os.killpg(a.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            a.wait()
    out = []
    for log in logs:
        log.seek(0)
        out.append(log.read())
        log.close()
    if None in codes:
        pytest.fail(f"agents still running at the 240 s deadline (exit codes {codes}, None: still running). Their processes:\n"
                    f"{tree}\n" + "\n".join(f"--- agent {n} ---\n{o[-12000:]}" for n, o in enumerate(out)))
    assert codes[2] == -9, f"the lost node's agent was not killed (exit {codes[2]}):\n{out[2][-3000:]}"
    for node in range(2):
        assert codes[node] == 0, f"agent {node} exit {codes[node]}:\n{out[node][-6000:]}"
        assert "DistBackendError: strata" in out[node], out[node][-6000:]
        assert "restart 1" in out[node] and f"finished {steps} steps" in out[node], out[node][-6000:]
        assert f"resuming at step {kill_at} with world 2" in out[node], out[node][-6000:]

    final = torch.load(tmp_path / "final.pt")
    assert final["worlds"] == [3] * kill_at + [2] * (steps - kill_at), final["worlds"]
    ref = make_model()
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step, world in enumerate(final["worlds"]):
        opt.zero_grad()
        for r in range(world):
            x, y = batch(r, step)
            (torch.nn.functional.mse_loss(ref(x), y) / world).backward()
        opt.step()
    for name, want in ref.state_dict().items():
        torch.testing.assert_close(final["model"][name], want, rtol=1e-5, atol=1e-6, msg=lambda m: f"{name}: {m}")
