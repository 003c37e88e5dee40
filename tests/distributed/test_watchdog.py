"""The watchdog: a rank whose peer was killed, with no launcher watching, ends after the timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ._harness import SPAWN_TIMEOUT, free_port, needs_mpi

SCRIPT = """
import datetime
import os
import signal
import ember
import ember.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
if dist.get_rank() == 1:
    os.kill(os.getpid(), signal.SIGKILL)
dist.all_reduce(ember.ones(4))  # rank 1 never comes
print("all_reduce returned", flush=True)
"""


def test_a_rank_whose_peer_was_killed_ends_after_the_timeout(tmp_path):
    needs_mpi()
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        pytest.skip("no mpiexec next to this Python")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE="2")
    # each rank under its own mpiexec and nobody watching both, as ranks on two nodes would be
    ranks = [
        subprocess.Popen(
            [str(mpiexec), "-n", "1", sys.executable, str(script)],
            env=dict(env, RANK=str(rank)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for rank in range(2)
    ]
    began = time.monotonic()
    try:
        out, err = ranks[0].communicate(timeout=SPAWN_TIMEOUT)
    finally:
        for process in ranks:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert time.monotonic() - began < SPAWN_TIMEOUT / 2
    assert ranks[0].returncode == 1
    assert "all_reduce returned" not in out
    assert "ember.distributed: rank 0 waited" in err
    assert "in all_reduce, past the process group's timeout of 2 seconds" in err
