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
