"""Run checks on 2 ranks in one spawn and read their outcomes back, one per named case.

Starting a world costs about a second on this machine, so each test module starts one: the
worker runs every case, records "ok" or the traceback per case, and the tests assert per case.
"""

from __future__ import annotations

import json
import os
import socket
import traceback

import pytest

WORLD_SIZE = 2
SPAWN_TIMEOUT = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def needs_mpi():
    import ember.distributed as dist

    if not dist.is_available():
        pytest.skip("mpi4py is not installed")


def run_cases(rank: int, out_dir: str, cases: dict) -> None:
    """Run ``cases`` (name -> callable(rank)) and write their outcomes to ``out_dir``."""
    outcomes = {}
    for name, case in cases.items():
        try:
            case(rank)
            outcomes[name] = "ok"
        except Exception:
            outcomes[name] = traceback.format_exc()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(outcomes, f)


def read_outcomes(out_dir: str) -> list[dict]:
    outcomes = []
    for rank in range(WORLD_SIZE):
        with open(os.path.join(out_dir, f"rank{rank}.json")) as f:
            outcomes.append(json.load(f))
    return outcomes


def assert_case(outcomes: list[dict], name: str) -> None:
    for rank, per_rank in enumerate(outcomes):
        assert name in per_rank, f"case {name} did not run on rank {rank}"
        assert per_rank[name] == "ok", f"rank {rank}, {name}:\n{per_rank[name]}"


def collect_cases(namespace: dict) -> dict:
    """The module's ``case_*`` functions by name (without the prefix), in name order."""
    return {
        name[len("case_") :]: fn
        for name, fn in sorted(namespace.items())
        if name.startswith("case_")
    }


def _world_worker(rank: int, out_dir: str, module_name: str, backend: str) -> None:
    import importlib

    import ember.distributed as dist

    module = importlib.import_module(module_name)
    if hasattr(module, "before_init"):
        module.before_init()
    dist.init_process_group(backend)  # env:// from spawn's variables
    if hasattr(module, "after_init"):
        module.after_init()
    run_cases(rank, out_dir, module.CASES)
    dist.destroy_process_group()


def spawn_world(tmp_path_factory, module_name: str, backend: str = "gloo") -> list[dict]:
    """Start WORLD_SIZE ranks that run ``CASES`` of the test module ``module_name`` (its
    optional ``before_init``/``after_init`` around ``init_process_group``); their outcomes."""
    import ember.multiprocessing as mp

    needs_mpi()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MASTER_PORT", str(free_port()))
        out_dir = str(tmp_path_factory.mktemp(module_name.rsplit(".", 1)[-1]))
        mp.spawn(
            _world_worker,
            args=(out_dir, module_name, backend),
            nprocs=WORLD_SIZE,
            timeout=SPAWN_TIMEOUT,
        )
    return read_outcomes(out_dir)


# --- the small data-parallel problem several test modules train ------------------------------
BATCH = 8  # the whole batch; each rank trains on BATCH / WORLD_SIZE of it


def tiny_model(seed: int):
    import ember
    import ember.nn as nn

    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).double()


def whole_batch(seed: int = 7):
    import numpy as np

    import ember

    rng = np.random.default_rng(seed)
    x = ember.from_numpy(rng.standard_normal((BATCH, 6)))
    y = ember.from_numpy(rng.standard_normal((BATCH, 3)))
    return x, y


def share(t, rank: int):
    """Rank ``rank``'s rows of the whole batch."""
    n = BATCH // WORLD_SIZE
    return t[rank * n : (rank + 1) * n]


# --- ranks that nobody watches together, as ranks on separate machines ------------------------
def _port_below_the_ephemeral_range() -> int:
    """A free port that no ``bind(0)`` will take before rank 0 listens on it: several worlds start
    at once here, and each rank 0 binds ephemeral ports of its own (the liveness links)."""
    import random

    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return free_port()
    for _ in range(100):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return free_port()


def start_unwatched_ranks(script: str, world_size: int, env: dict) -> list:
    """Start ``script`` once per rank, each under its own ``mpiexec -n 1`` and in its own session
    (no launcher that would stop the others when one dies); env:// rendezvous."""
    import subprocess
    import sys
    from pathlib import Path

    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        pytest.skip("no mpiexec next to this Python")
    shared = dict(
        os.environ,
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_port_below_the_ephemeral_range()),
        WORLD_SIZE=str(world_size),
        **env,
    )
    return [
        subprocess.Popen(
            [str(mpiexec), "-n", "1", sys.executable, script],
            env=dict(shared, RANK=str(rank)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for rank in range(world_size)
    ]


def collect_ranks(ranks: list, wanted: list[int], timeout: float = SPAWN_TIMEOUT) -> dict:
    """Wait for the ranks in ``wanted``, then end every rank still running (with what it
    started). Rank -> (exit code, stdout, stderr) of each wanted one; the exit code is None for
    one that ran past ``timeout``."""
    import signal
    import subprocess
    import time

    deadline = time.monotonic() + timeout
    found = {}
    for rank in wanted:
        try:
            out, err = ranks[rank].communicate(timeout=max(0.1, deadline - time.monotonic()))
            found[rank] = (ranks[rank].returncode, out, err)
        except subprocess.TimeoutExpired:
            pass
    for rank, process in enumerate(ranks):
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        out, err = process.communicate()  # what is left (all of it, after a timeout)
        if rank in wanted and rank not in found:
            found[rank] = (None, out, err)
    return found
