"""Launching scripts: ``python -m ember.distributed.run`` (torchrun's flags) and plain mpiexec."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from ._harness import SPAWN_TIMEOUT, free_port, needs_mpi

SCRIPT = """
import os
import signal
import sys
import ember
import ember.distributed as dist

dist.init_process_group("gloo")
t = ember.ones(2) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: {t.tolist()} {sys.argv[1:]}", flush=True)
if "--fail" in sys.argv and dist.get_rank() == 1:
    sys.exit(3)
if "--kill" in sys.argv and dist.get_rank() == 1:
    os.kill(os.getpid(), signal.SIGKILL)
if "--kill" in sys.argv:
    dist.all_reduce(t)  # rank 0 waits here for a rank that is gone
dist.destroy_process_group()
"""


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``command`` in its own session; on a timeout take the whole session down."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=SPAWN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        out, err = process.communicate(timeout=10)
        raise AssertionError(f"{command} did not finish:\n{out}\n{err}") from None
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(SCRIPT))
    return path


def _launch(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    return _run(
        [
            sys.executable,
            "-m",
            "ember.distributed.run",
            "--nproc-per-node",
            "2",
            "--master-port",
            str(free_port()),
            "--timeout",
            str(SPAWN_TIMEOUT - 10),
            str(_script(tmp_path)),
            *extra,
        ],
        tmp_path,
    )


def test_launcher_starts_one_process_per_rank_with_env_rendezvous(tmp_path):
    needs_mpi()
    done = _launch(tmp_path, "--lr", "0.1")
    assert done.returncode == 0, done.stderr + done.stdout
    for rank in range(2):
        assert f"rank {rank} of 2: [3.0, 3.0] ['--lr', '0.1']" in done.stdout


def test_launcher_fails_when_a_rank_fails(tmp_path):
    needs_mpi()
    done = _launch(tmp_path, "--fail")
    assert done.returncode == 1
    assert "process 1 terminated with exit code 3" in done.stderr


def test_launcher_fails_within_the_timeout_when_a_rank_is_killed(tmp_path):
    needs_mpi()
    began = time.monotonic()
    done = _launch(tmp_path, "--kill")
    assert time.monotonic() - began < SPAWN_TIMEOUT / 2  # noticed at once, not at the timeout
    assert done.returncode == 1
    assert "process 1 terminated with exit code 9" in done.stderr
    assert "killed by signal SIGKILL" in done.stderr


def test_ember_run_fails_when_a_rank_is_killed(tmp_path):
    needs_mpi()
    command = [sys.executable, "-m", "ember.cli", "run", "--nproc-per-node", "2"]
    command += ["--master-port", str(free_port()), "--timeout", str(SPAWN_TIMEOUT - 10)]
    done = _run([*command, str(_script(tmp_path)), "--kill"], tmp_path)
    assert done.returncode == 1
    assert "killed by signal SIGKILL" in done.stderr


def test_all_ranks_under_one_mpiexec_use_mpis_world(tmp_path):
    needs_mpi()
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        import pytest

        pytest.skip("no mpiexec next to this Python")
    env_free = ["env", "-u", "RANK", "-u", "WORLD_SIZE", "-u", "MASTER_ADDR", "-u", "MASTER_PORT"]
    done = _run(
        [*env_free, str(mpiexec), "-n", "2", sys.executable, str(_script(tmp_path))], tmp_path
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert "rank 0 of 2: [3.0, 3.0] []" in done.stdout
    assert "rank 1 of 2: [3.0, 3.0] []" in done.stdout
