"""torch's own distributed test suite on strata_torch: the tests of
torch.testing._internal.distributed.distributed_test (the suite behind
test/distributed/test_distributed_spawn.py, shipped in the torch wheel), as
torch-ucc held UCC's backend to torch's behaviour.

    .venv/bin/python plugins/torch/tests/torch_suite.py [--mode plugin|as-gloo] [--ci] [--spawn] [-v] [-k PATTERN ...]

Mode "plugin": BACKEND=strata, strata declared as a plugin with gloo's CPU
features (DistTestCases.backend_feature "ddp", "subgroup"); the tests that
torch gates on the name "gloo" (monitored_barrier, timeouts, ...) skip.
Mode "as-gloo": BACKEND=gloo, and every process group the suite asks gloo for
is a strata one (gloo's registered creator replaced by strata's, naming its
profiler events "gloo:<op>", which the suite counts), so those tests run on
strata too; asserts on the backend's name then fail (torch-side).
Mode "gloo": torch's own gloo, unchanged: the baseline the two modes are
compared with (no expected failures).
World size 2 (WORLD_SIZE=8 in the environment runs the subgroup tests that
skip below 8), CPU only. Expected failures are listed per mode in
torch_suite_expected.txt with the reason for each; the run fails on any
other failure and on an expected failure that passes.

Each test's ranks are forked from this process, which has imported torch
once: a whole mode (285 tests, 66-90 of them running on CPU) takes under a
minute on a 2-core machine. --spawn starts them as torch's
test_distributed_spawn.py does (each rank a fresh interpreter importing
torch: about 11 minutes a mode here, the same results).
--ci is CI's run (test_backend.py's test_torchs_own_suite): at world size 2
the whole suite, at 8 the tests named *_group* (the subgroup tests that skip
below 8) and the world=8 lines of torch_suite_ci.txt; and every test
torch_suite_ci.txt lists for the mode and world size must be in this torch
and must run, not skip.

Not named test_*.py: pytest does not collect it (with --spawn each test's
processes import this file, which must stay importable on its own).
"""
import os
import sys
import unittest

if "--mode" in sys.argv:  # the spawned ranks inherit it through the environment
    os.environ["STRATA_TORCH_SUITE_MODE"] = sys.argv[sys.argv.index("--mode") + 1]
MODE = os.environ.setdefault("STRATA_TORCH_SUITE_MODE", "plugin")
assert MODE in ("plugin", "as-gloo", "gloo"), f"--mode {MODE}: plugin, as-gloo or gloo"
os.environ.setdefault("BACKEND", "strata" if MODE == "plugin" else "gloo")
os.environ.setdefault("WORLD_SIZE", "2")
os.environ.setdefault("TEMP_DIR", os.path.join("/tmp", f"strata-torch-suite-{os.getuid()}"))
os.makedirs(os.environ["TEMP_DIR"], exist_ok=True)

import strata_torch  # noqa: E402,F401  registers the backend "strata"
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing  # noqa: E402
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

if MODE == "gloo":  # the baseline: torch's own gloo, for the counts strata's modes are compared with
    pass
elif MODE == "plugin":
    for feature in ("ddp", "subgroup", "plugin"):  # gloo's CPU features, and "a plugin"
        DistTestCases.backend_feature[feature].add("strata")
else:  # process groups asked for "gloo" are made by strata
    dist.Backend._ensure_backend_registered("gloo")
    dist.Backend._plugins["GLOO"] = dist.Backend._plugins["GLOO"]._replace(creator_fn=strata_torch._creator("gloo"))
    # ...registered as a custom backend, not as torch's gloo type: DDP's logger
    # takes a GLOO-typed backend for a ProcessGroupGloo and crashes on strata's.
    dist.Backend.backend_type_map["gloo"] = dist.ProcessGroup.BackendType.CUSTOM

from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SPAWN = "--spawn" in sys.argv  # read by the runner only (its setUp starts the ranks)


class TestStrata(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        if SPAWN:
            self._spawn_processes()
        else:  # a fork inherits the imported torch: a tenth of spawn's time
            self._start_processes(torch.multiprocessing.get_context("fork").Process)


def expected_failures():
    """{test name: reason} of this mode from torch_suite_expected.txt ('mode name reason' per line, # comments)."""
    out = {}
    with open(os.path.join(HERE, "torch_suite_expected.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                mode, name, reason = line.split(None, 2)
                if mode == MODE or (mode == "both" and MODE != "gloo"):
                    out[name] = reason.strip()
    return out


def must_run():
    """The tests torch_suite_ci.txt lists for this mode and world size: CI's run fails if one is absent or
    skips. A line is
    '[MODE] [world=N] NAME' (# comments): no MODE, both modes; no world=, world size 2."""
    names = []
    with open(os.path.join(HERE, "torch_suite_ci.txt")) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            mode, world = None, "2"
            for w in words[:-1]:
                if w in ("plugin", "as-gloo") and mode is None:
                    mode = w
                elif w.startswith("world=") and w[6:].isdigit() and world == "2":
                    world = w[6:]
                else:
                    raise ValueError(f"torch_suite_ci.txt: '{line.strip()}' is not '[MODE] [world=N] NAME'")
            if mode in (None, MODE) and world == os.environ["WORLD_SIZE"]:
                names.append(words[-1])
    return names


def main(argv):
    patterns = [f"*{argv[i + 1]}*" for i, a in enumerate(argv) if a == "-k" and i + 1 < len(argv)]
    if "--ci" in argv and os.environ["WORLD_SIZE"] != "2":
        patterns += ["*_group*"] + [f"*.{name}" for name in must_run()]
    loader = unittest.TestLoader()
    if patterns:
        loader.testNamePatterns = patterns
    suite = loader.loadTestsFromTestCase(TestStrata)
    name = lambda test: test.id().rsplit(".", 1)[-1]  # noqa: E731
    every = {name(t) for t in suite}  # before running: a run lets go of its tests
    absent = sorted(set(must_run()) - every) if "--ci" in argv else []
    if absent:  # renamed or removed in this torch: the subset must be revised, not shrink silently
        print(f"torch_suite: torch_suite_ci.txt names tests this torch does not have: {', '.join(absent)}")
        return 1
    result = unittest.TextTestRunner(verbosity=2 if "-v" in argv else 1).run(suite)
    failed = {name(t) for t, _ in result.failures + result.errors}
    skipped = {name(t) for t, _ in result.skipped}
    ran = every - skipped
    expected = expected_failures()
    unexpected = sorted(failed - set(expected))
    now_passing = sorted(n for n in expected if n in ran and n not in failed)
    print(f"torch_suite: mode {MODE}: {len(ran)} ran ({len(ran) - len(failed)} passed, {len(failed)} failed, "
          f"{len(failed) - len(unexpected)} of them expected), {len(skipped)} skipped")
    for n in unexpected:
        print(f"torch_suite: UNEXPECTED FAILURE {n}")
    for n in now_passing:
        print(f"torch_suite: EXPECTED TO FAIL BUT PASSED {n} ({expected[n]}): remove it from torch_suite_expected.txt")
    # torch_suite_ci.txt lists tests that run in their mode: one that skips has stopped testing anything.
    skipped_in_ci = sorted(skipped & set(must_run())) if "--ci" in argv else []
    for n in skipped_in_ci:
        print(f"torch_suite: SKIPPED {n}, which torch_suite_ci.txt says must run: revise it or find why")
    return 1 if unexpected or now_passing or skipped_in_ci else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
