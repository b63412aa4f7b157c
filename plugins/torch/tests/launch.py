"""Runs a scenario of rank_main.py on N local ranks (one process each, env://
rendezvous on a free port), the way torchrun would, and reports each rank's
exit status and output."""
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Result:
    def __init__(self, codes, outputs, seconds):
        self.codes, self.outputs, self.seconds = codes, outputs, seconds

    def check(self):
        """Raises with every failing rank's output unless all exited 0."""
        bad = [r for r, c in enumerate(self.codes) if c != 0]
        if bad:
            text = "\n".join(f"--- rank {r} (exit {self.codes[r]}) ---\n{self.outputs[r][-6000:]}" for r in bad)
            raise AssertionError(f"ranks {bad} failed:\n{text}")
        return self


def run(scenario, world, *args, timeout=600, env=None):
    port = free_port()
    procs = []
    start = time.time()
    for rank in range(world):
        e = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        e.update(env or {})
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "rank_main.py"), scenario, *map(str, args)],
                                      env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=max(1, timeout - (time.time() - start)))[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return Result([p.returncode for p in procs], outputs, time.time() - start)
