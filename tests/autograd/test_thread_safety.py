"""Backward passes running in several threads at once, sharing leaves."""

import threading

import numpy as np

import ember


def _run_threads(count: int, target) -> None:
    barrier = threading.Barrier(count)
    errors = []

    def run():
        try:
            barrier.wait()
            target()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_threads_sharing_a_leaf_lose_no_accumulation():
    # Large enough that NumPy releases the GIL inside the in-place add.
    weight = ember.zeros(200_000, requires_grad=True)
    passes = 300

    def train():
        for _ in range(passes):
            (weight * 2.0).sum().backward()

    _run_threads(4, train)
    expected = np.full(200_000, 2.0 * 4 * passes, dtype=np.float32)
    np.testing.assert_array_equal(weight.grad.numpy(), expected)


def test_threads_sharing_a_leaf_from_its_first_gradient():
    # Every thread may find grad None at once: exactly one creates it, the others add to it.
    for _ in range(20):
        weight = ember.zeros(1000, requires_grad=True)

        def once():
            (weight * 1.0).sum().backward()

        _run_threads(4, once)
        np.testing.assert_array_equal(weight.grad.numpy(), np.full(1000, 4.0, np.float32))


def test_threads_on_separate_leaves_do_not_interfere():
    weights = [ember.zeros(50_000, requires_grad=True) for _ in range(4)]
    index = iter(range(4))
    lock = threading.Lock()

    def train():
        with lock:
            w = weights[next(index)]
        for _ in range(100):
            (w * 3.0).sum().backward()

    _run_threads(4, train)
    for w in weights:
        np.testing.assert_array_equal(w.grad.numpy(), np.full(50_000, 300.0, np.float32))
