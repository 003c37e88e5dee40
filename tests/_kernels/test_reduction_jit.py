"""The compiled sum over an axis that is not the last (ember._kernels.reduction_jit): NumPy's
result to the bit (the NumPy path under ``jit.disabled()``), through ember.sum / mean and their
gradients, on either side of the thread split; torch's values within float tolerance."""

import numpy as np
import pytest

import ember
from ember._kernels import jit

from ..helpers import check_gradients

pytest.importorskip("numba")
if not jit.enabled():
    pytest.skip("compiled kernels are switched off (EMBER_JIT=0)", allow_module_level=True)
kernels = jit.module("reduction_jit")

DTYPES = ["float32", "float64"]
CASES = [((13, 9, 17), 1), ((37, 29), 0), ((3, 4, 5, 11), 0), ((3, 4, 5, 11), 2), ((5, 1, 8), 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", CASES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_and_mean_equal_the_numpy_path_bit_for_bit(dtype, shape, axis, keepdim):
    x = ember.tensor((np.random.default_rng(0).standard_normal(shape) * 100).astype(dtype))
    assert kernels.sum_axis(x.numpy(), axis, keepdim) is not None  # the kernel runs here
    for op in (ember.sum, ember.mean):
        fast = op(x, axis, keepdim=keepdim).numpy()
        with jit.disabled():
            slow = op(x, axis, keepdim=keepdim).numpy()
        assert fast.dtype == slow.dtype and fast.shape == slow.shape
        np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_split_over_threads_equals_numpy(dtype, monkeypatch):
    monkeypatch.setattr(kernels, "PARALLEL_FROM", 64)  # split these small arrays too
    rng = np.random.default_rng(1)
    for shape, axis in [((40, 7, 33), 1), ((3, 50, 41), 1), ((60, 45), 0)]:
        x = rng.standard_normal(shape).astype(dtype)
        for threads in (1, 2, 3):
            with _threads(threads):
                np.testing.assert_array_equal(
                    kernels.sum_axis(x, axis, False), np.add.reduce(x, axis)
                )


class _threads:
    """ember's pool at ``n`` threads inside the block."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.before = ember.get_num_threads()
        ember.set_num_threads(self.n)

    def __exit__(self, *exc):
        ember.set_num_threads(self.before)


def test_layouts_and_sizes_the_kernel_leaves_to_numpy():
    x = np.ones((6, 4, 10), np.float32)
    assert kernels.sum_axis(x, 2, False) is None  # the last axis: NumPy sums pairwise
    assert kernels.sum_axis(x.transpose(1, 0, 2), 1, False) is None  # not C-contiguous
    assert kernels.sum_axis(np.ones((6, 4, 3), np.float32), 1, False) is None  # short rows
    assert kernels.sum_axis(np.ones((6, 0, 10), np.float32), 1, False) is None  # nothing summed
    assert kernels.sum_axis(np.ones((6, 4, 10), np.int64), 1, False) is None
    empty = kernels.sum_axis(np.ones((0, 4, 10), np.float64), 1, True)
    assert empty.shape == (0, 1, 10) and empty.dtype == np.float64
    t = ember.ones(2, 0, 9)
    assert ember.sum(t, 1).tolist() == [[0.0] * 9] * 2


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_and_zero_size_inputs_match_torch(dtype, torch_mod):
    rng = np.random.default_rng(2)
    base = rng.standard_normal((9, 12, 16)).astype(dtype)
    cases = [(base, 1), (base.transpose(1, 0, 2), 1), (base[:, ::2], 0), (base[:0], 1)]
    tol = 1e-5 if dtype == "float32" else 1e-12
    for array, axis in cases:
        mine = ember.tensor(array).mean(axis).numpy()
        theirs = torch_mod.tensor(np.ascontiguousarray(array)).mean(axis).numpy()
        np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol)


def test_sum_and_mean_gradients():
    check_gradients(lambda m, x: m.sum(x, 1) * m.mean(x, 0).sum(), [np.ones((4, 3, 8)) * 0.5])
