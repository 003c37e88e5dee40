"""Small NumPy GEMMs run on one OpenBLAS thread (a woken second thread spins after the call
and takes a core from ember's own threaded kernels); the thread count comes back after."""

from __future__ import annotations

import types

import numpy as np
import pytest

from ember import _backend
from ember.ops import linalg


def _threads_seen(a, b):
    seen = []

    def matmul(x, y):
        seen.append(_backend.numpy_blas().get_num_threads())
        return np.matmul(x, y)

    out = linalg.gemm(types.SimpleNamespace(__name__="numpy", matmul=matmul), a, b)
    np.testing.assert_array_equal(out, np.matmul(a, b))
    return seen[0]


@pytest.fixture
def two_blas_threads():
    blas = _backend.numpy_blas()
    if blas is None:
        pytest.skip("NumPy's OpenBLAS cannot be reached here")
    before = blas.get_num_threads()
    blas.set_num_threads(2)
    yield blas
    blas.set_num_threads(before)


def test_a_small_product_runs_on_one_thread_and_restores_the_count(two_blas_threads):
    a, b = np.ones((64, 1600), np.float32), np.ones((1600, 10), np.float32)  # 1M multiply-adds
    assert _threads_seen(a, b) == 1
    assert two_blas_threads.get_num_threads() == 2


def test_large_and_tiny_products_keep_the_thread_count(two_blas_threads):
    large = np.ones((256, 256), np.float32)  # 16.8M multiply-adds: threaded
    assert _threads_seen(large, large) == 2
    tiny = np.ones((8, 8))  # OpenBLAS keeps it on one thread itself: no switching
    assert _threads_seen(tiny, tiny) == 2
