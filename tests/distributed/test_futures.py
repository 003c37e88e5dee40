"""``ember.futures.Future`` against torch.futures (in one process, no MPI)."""

from __future__ import annotations

import threading

import pytest

from ember import futures


def _both(torch_mod):
    return [futures, torch_mod.futures]


def test_result_then_and_done_match_torch(torch_mod):
    for mod in _both(torch_mod):
        fut = mod.Future()
        chained = fut.then(lambda f: f.value() + 1)
        assert not fut.done() and not chained.done()
        fut.set_result(1)
        assert fut.done() and chained.done()
        assert (fut.wait(), fut.value(), chained.wait()) == (1, 1, 2)


def test_completing_twice_raises_torchs_error(torch_mod):
    for mod in _both(torch_mod):
        fut = mod.Future()
        fut.set_result(3)
        with pytest.raises(RuntimeError, match="Future can only be marked completed once"):
            fut.set_result(4)


def test_exception_reaches_wait_and_chained_futures(torch_mod):
    for mod in _both(torch_mod):
        fut = mod.Future()
        chained = fut.then(lambda f: f.value() * 2)
        fut.set_exception(ValueError("boom"))
        with pytest.raises(ValueError, match="boom"):
            fut.wait()
        with pytest.raises(RuntimeError, match="when running the callback: ValueError: boom"):
            chained.wait()


def test_a_failing_callback_fails_the_chained_future():
    fut = futures.Future()
    chained = fut.then(lambda f: 1 / 0)
    fut.set_result(0)
    with pytest.raises(RuntimeError, match="callback: ZeroDivisionError") as caught:
        chained.wait()
    assert isinstance(caught.value.__cause__, ZeroDivisionError)


def test_callbacks_on_a_completed_future_run_at_once():
    fut = futures.Future()
    fut.set_result("x")
    seen = []
    fut.add_done_callback(lambda f: seen.append(f.value()))
    assert seen == ["x"] and fut.then(lambda f: f.value() * 2).wait() == "xx"


def test_wait_blocks_until_another_thread_completes():
    fut = futures.Future()
    timer = threading.Timer(0.05, fut.set_result, args=(7,))
    timer.start()
    assert fut.wait() == 7
    timer.join()


def test_collect_all_and_wait_all_match_torch(torch_mod):
    for mod in _both(torch_mod):
        a, b = mod.Future(), mod.Future()
        combined = mod.collect_all([a, b])
        a.set_result(1)
        assert not combined.done()
        b.set_result(2)
        assert [f.value() for f in combined.wait()] == [1, 2]
        assert mod.wait_all([a, b]) == [1, 2]


def test_set_exception_needs_an_exception():
    with pytest.raises(TypeError, match="expects an exception"):
        futures.Future().set_exception("not an error")


def test_future_of_tensor_is_an_annotation():
    from ember import Tensor

    assert futures.Future[Tensor].__origin__ is futures.Future
