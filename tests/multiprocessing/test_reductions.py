"""Tensors through multiprocessing's queues, pools and managers (ember.multiprocessing.reductions):
they arrive as views of the sender's shared memory, under fork, spawn and forkserver."""

from __future__ import annotations

import glob
import os
import sys

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember import _shared_memory

from ._timeout import hard_timeout  # noqa: F401

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shared memory")
TIME_LIMIT = 90
METHODS = ["fork", "spawn"]


def _add_ten_and_answer(inbox, outbox, done):
    t = inbox.get()
    t.add_(10)
    outbox.put((t, ember.full((2,), 7.0), ember.nn.Parameter(ember.ones(2))))
    done.wait(30)  # a descriptor is fetched from its sender: stay until the parent has it


def _double(t):
    t.mul_(2)
    return float(t.sum())


def _named_segments(pids) -> list[str]:
    return [
        path
        for pid in pids
        for path in glob.glob(os.path.join(_shared_memory.SHM_DIR, f"ember_{pid}_*"))
    ]


@pytest.fixture
def libraries():
    """ember, and torch beside it where it is importable."""
    try:
        import torch
    except ImportError:
        return [ember]
    return [ember, torch]


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    previous = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(previous)


@pytest.mark.parametrize("method", METHODS)
def test_a_child_writing_a_queued_tensor_is_seen_by_the_parent(method, strategy):
    context = mp.get_context(method)
    inbox, outbox, done = context.Queue(), context.Queue(), context.Event()
    sent = ember.zeros(3)
    child = context.Process(target=_add_ten_and_answer, args=(inbox, outbox, done))
    child.start()
    inbox.put(sent)
    back, made_there, parameter = outbox.get(timeout=30)
    done.set()
    child.join(30)
    assert child.exitcode == 0
    assert sent.is_shared()  # sending moved it to shared memory, as torch does
    assert sent.tolist() == [10.0, 10.0, 10.0]
    assert back._data.base is sent._data.base  # the same segment, mapped once
    back[0] = -1.0
    assert sent[0].item() == -1.0
    assert made_there.tolist() == [7.0, 7.0] and made_there.is_shared()
    assert type(parameter) is ember.nn.Parameter and parameter.requires_grad
    del sent, back, made_there, parameter
    assert _named_segments([os.getpid(), child.pid]) == []


def test_a_non_leaf_that_requires_grad_refuses_to_be_sent(libraries):
    for lib in libraries:
        x = lib.ones(2, requires_grad=True) * 2
        queue = lib.multiprocessing.SimpleQueue()
        with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
            queue.put(x)
        queue.put(x.detach())
        assert queue.get().tolist() == [2.0, 2.0]


def test_pool_map_writes_into_the_shared_tensors():
    tensors = [ember.full((3,), float(i)).share_memory_() for i in range(4)]
    with mp.get_context("fork").Pool(2) as pool:
        sums = pool.map(_double, tensors)
    assert sums == [0.0, 6.0, 12.0, 18.0]
    assert [t[0].item() for t in tensors] == [0.0, 2.0, 4.0, 6.0]


def test_joinable_queue_and_manager_carry_tensors():
    context = mp.get_context("fork")
    queue = context.JoinableQueue()
    queue.put(ember.arange(3.0))
    got = queue.get(timeout=10)
    queue.task_done()
    queue.join()
    assert got.tolist() == [0.0, 1.0, 2.0]
    with context.Manager() as manager:
        stored = manager.list([ember.ones(2)])
        assert stored[0].tolist() == [1.0, 1.0]


def test_sending_a_view_moves_its_base_to_shared_memory_as_torch(libraries):
    for lib in libraries:
        queue = lib.multiprocessing.SimpleQueue()
        t = lib.zeros(2, 4)
        queue.put(t[:, 1:3])
        assert t.is_shared()
        view = queue.get()
        view.fill_(5.0)
        np.testing.assert_array_equal(t.numpy(), [[0.0, 5.0, 5.0, 0.0]] * 2)


def test_the_module_is_multiprocessing_with_torch_additions(libraries):
    import multiprocessing

    for lib in libraries:
        for name in multiprocessing.__all__:
            assert hasattr(lib.multiprocessing, name), name
        for name in (
            "spawn",
            "start_processes",
            "ProcessRaisedException",
            "ProcessExitedException",
        ):
            assert hasattr(lib.multiprocessing, name), name
        assert lib.multiprocessing.get_all_sharing_strategies() == {
            "file_descriptor",
            "file_system",
        }
        assert lib.multiprocessing.get_sharing_strategy() == "file_descriptor"
    assert mp.Queue is multiprocessing.Queue and mp.Process is multiprocessing.Process
    assert set(mp.get_all_start_methods()) == set(multiprocessing.get_all_start_methods())


def test_an_unknown_sharing_strategy_raises_as_torch(libraries):
    for lib in libraries:
        with pytest.raises(AssertionError, match="invalid sharing strategy 'shm'"):
            lib.multiprocessing.set_sharing_strategy("shm")
    assert mp.get_sharing_strategy() == "file_descriptor"


def test_a_cuda_tensor_is_shared_as_torch_says_but_refuses_to_be_sent(monkeypatch):
    from tests import _fake_cupy

    _fake_cupy.install(monkeypatch)
    t = ember.ones(2, device="cuda")
    assert t.share_memory_() is t and t.is_shared()  # torch: a no-op, CUDA memory counts as shared
    with pytest.raises(RuntimeError, match="CUDA tensors cannot be sent to another process"):
        mp.SimpleQueue().put(t)


def test_spawn_context_is_torchs_old_name_for_the_process_context(libraries):
    for lib in libraries:
        assert issubclass(lib.multiprocessing.SpawnContext, lib.multiprocessing.ProcessContext)
