"""ember.multiprocessing.spawn: workers per rank, their failures re-raised, nothing left behind."""

from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import ember
import ember.distributed as dist
import ember.multiprocessing as mp

from ._harness import SPAWN_TIMEOUT, WORLD_SIZE, free_port, needs_mpi


def _fail_on_rank_1(rank: int, port: int) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", world_size=2, rank=rank)
    if rank == 1:
        raise ValueError("rank 1 gave up")
    dist.all_reduce(ember.ones(1))  # rank 0 waits here for ever: spawn must end it


def _killed_on_rank_1(rank: int, port: int) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", world_size=2, rank=rank)
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(ember.ones(1))  # rank 0 waits here for a rank that is gone


def _alone(rank: int, port: int, as_rank: int) -> None:
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        world_size=2,
        rank=as_rank,
        timeout=datetime.timedelta(seconds=1),
    )


def _sleep(rank: int) -> None:
    time.sleep(600)


def _exit_with_3(rank: int) -> None:
    os._exit(3 if rank == 1 else 0)


def _environment(rank: int, out_dir: str) -> None:
    names = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    with open(os.path.join(out_dir, f"env{rank}"), "w") as f:
        f.write(" ".join(os.environ[name] for name in names))


def _join_and_leave(rank: int) -> None:
    dist.init_process_group("gloo")
    dist.barrier()
    dist.destroy_process_group()


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except (OSError, ValueError):
            continue
    return found


def test_a_raising_rank_is_reraised_in_the_parent_with_its_traceback():
    needs_mpi()
    began = time.monotonic()
    with pytest.raises(mp.ProcessRaisedException, match="rank 1 gave up") as info:
        mp.spawn(_fail_on_rank_1, args=(free_port(),), nprocs=2, timeout=SPAWN_TIMEOUT)
    assert time.monotonic() - began < SPAWN_TIMEOUT / 2
    assert info.value.error_index == 1
    assert "Process 1 terminated with the following error" in str(info.value)
    assert "_fail_on_rank_1" in str(info.value)  # the worker's traceback


def test_a_killed_rank_fails_the_others_within_the_timeout():
    needs_mpi()
    began = time.monotonic()
    with pytest.raises(mp.ProcessExitedException, match="killed by signal SIGKILL") as info:
        mp.spawn(_killed_on_rank_1, args=(free_port(),), nprocs=2, timeout=SPAWN_TIMEOUT)
    assert time.monotonic() - began < SPAWN_TIMEOUT / 2  # noticed at once, not at the timeout
    assert info.value.error_index == 1 and info.value.signal_name == "SIGKILL"
    assert "process 1 terminated" in str(info.value)


@pytest.mark.parametrize(
    "as_rank, message",
    [
        (0, "DistStoreError: .* timed out after 1 seconds waiting for clients. 1/2 clients joined"),
        (1, "DistNetworkError: .* rank 1 could not reach rank 0 at 127.0.0.1:.* within 1 seconds"),
    ],
)
def test_a_missing_peer_is_a_clear_error_after_the_timeout(as_rank, message):
    needs_mpi()
    began = time.monotonic()
    with pytest.raises(mp.ProcessRaisedException, match=message):
        mp.spawn(_alone, args=(free_port(), as_rank), nprocs=1, timeout=SPAWN_TIMEOUT)
    assert time.monotonic() - began < 15


def test_workers_past_the_timeout_are_terminated():
    context = mp.spawn(_sleep, nprocs=2, join=False, timeout=1)
    began = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 1 seconds"):
        context.join()
    assert time.monotonic() - began < 15
    assert all(p.poll() is not None for p in context.processes)
    assert _processes_mentioning(context._payload) == []


def test_a_worker_exit_code_is_reported():
    with pytest.raises(mp.ProcessExitedException, match="process 1 terminated with exit code 3"):
        mp.spawn(_exit_with_3, nprocs=2, timeout=SPAWN_TIMEOUT)


def test_workers_get_the_env_rendezvous_variables(tmp_path, monkeypatch):
    monkeypatch.delenv("MASTER_PORT", raising=False)
    mp.spawn(_environment, args=(str(tmp_path),), nprocs=2, timeout=SPAWN_TIMEOUT)
    seen = [(tmp_path / f"env{r}").read_text().split() for r in range(2)]
    assert [s[:3] for s in seen] == [["0", "0", "2"], ["1", "1", "2"]]
    assert seen[0][3:] == seen[1][3:] and seen[0][3] == "127.0.0.1"


def test_destroy_process_group_leaves_nothing_running(monkeypatch):
    needs_mpi()
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    context = mp.spawn(_join_and_leave, nprocs=WORLD_SIZE, join=False, timeout=SPAWN_TIMEOUT)
    assert context.join(SPAWN_TIMEOUT)
    assert _processes_mentioning(context._payload) == []


SEEDS_EXAMPLE = """
import ember as torch
import ember.distributed as dist
import ember.multiprocessing as mp
import ember.nn as nn
import ember.optim as optim
from ember.nn.parallel import DistributedDataParallel as DDP


def setup(rank, world_size):
    dist.init_process_group(
        "gloo", init_method="tcp://127.0.0.1:PORT", world_size=world_size, rank=rank
    )


def cleanup():
    dist.destroy_process_group()


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_basic(rank, world_size):
    setup(rank, world_size)
    model = ToyModel()
    ddp_model = DDP(model)
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
    for _ in range(3):
        optimizer.zero_grad()
        outputs = ddp_model(torch.randn(20, 10))
        labels = torch.randn(20, 5)
        loss_fn(outputs, labels).backward()
        optimizer.step()
    weights = [None] * world_size
    dist.all_gather_object(weights, model.net1.weight.tolist())
    assert weights[0] == weights[1]
    print(f"rank {rank} of {dist.get_world_size()} trained in step", flush=True)
    cleanup()


if __name__ == "__main__":
    world_size = 2
    mp.spawn(demo_basic, args=(world_size,), nprocs=world_size, join=True)
"""


def test_the_seeds_process_group_example_runs_as_written(tmp_path):
    needs_mpi()
    script = tmp_path / "ddp_example.py"
    script.write_text(textwrap.dedent(SEEDS_EXAMPLE).replace("PORT", str(free_port())))
    env = dict(os.environ, EMBER_SPAWN_TIMEOUT=str(SPAWN_TIMEOUT))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=SPAWN_TIMEOUT + 30,  # spawn itself gives up after SPAWN_TIMEOUT
    )
    assert done.returncode == 0, done.stderr + done.stdout
    for rank in range(2):
        assert f"rank {rank} of 2 trained in step" in done.stdout
