"""ember.multiprocessing.spawn with tensors and queues among its arguments: workers get them
as multiprocessing's spawn gives them (shared memory, inherited pipes); the process-failure
semantics are tested in tests/distributed/test_spawn.py."""

from __future__ import annotations

import glob
import os
import sys

import pytest

import ember
import ember.multiprocessing as mp
from ember import _shared_memory

from ._timeout import hard_timeout  # noqa: F401

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shared memory")
TIME_LIMIT = 120


def _write_rank(rank, t, queue):
    t[rank] = float(rank + 1)
    queue.put((rank, t.is_shared(), tuple(t.shape)))


def _fail_on_rank_1(rank, t):
    if rank == 1:
        raise ValueError("rank 1 gave up")
    t[0] = 5.0


def _ours():
    return glob.glob(os.path.join(_shared_memory.SHM_DIR, f"ember_{os.getpid()}_*"))


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    previous = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(previous)


def test_workers_write_into_the_parents_tensor_and_talk_through_a_queue(strategy):
    t = ember.zeros(3)
    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(_write_rank, args=(t, queue), nprocs=2, timeout=90)
    assert t.tolist() == [1.0, 2.0, 0.0]
    assert sorted(queue.get() for _ in range(2)) == [(0, True, (3,)), (1, True, (3,))]
    del t
    assert _ours() == []


def test_a_failing_worker_leaves_no_segment_behind(strategy):
    t = ember.zeros(2)
    message = ""
    try:
        mp.spawn(_fail_on_rank_1, args=(t,), nprocs=2, timeout=90)
    except mp.ProcessRaisedException as error:  # not pytest.raises: its traceback would keep t
        message = str(error)
    assert "ValueError: rank 1 gave up" in message
    del t
    assert _ours() == []


def test_join_false_gives_a_process_context():
    t = ember.zeros(3)
    queue = mp.get_context("spawn").SimpleQueue()
    context = mp.spawn(_write_rank, args=(t, queue), nprocs=2, join=False, timeout=90)
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 2
    while not context.join(timeout=1):
        pass
    assert t.tolist() == [1.0, 2.0, 0.0]
