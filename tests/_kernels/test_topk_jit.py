"""The compiled topk (ember._kernels.topk_jit, a few of many along a dim): values, indices and
gradients equal to the NumPy path's (``jit.disabled``) and to a stable argsort, ties and NaNs
included, along every dim, for float and integer dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._kernels import jit, topk_jit

SHAPE = (64, 4096)  # 2^18 elements: the kernel's sizes


def _stable_top(a, k, axis, largest):
    key = -a.astype(np.float64) if largest else a
    order = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(a, idx, axis=axis), idx


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.uint8])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 5, 64])
def test_kernel_equals_a_stable_argsort_cut_to_k(dtype, largest, k):
    rng = np.random.default_rng(k)
    if np.dtype(dtype).kind == "f":
        a = rng.standard_normal(SHAPE).astype(dtype)
        a[:, ::7] = a[:, 3:4]  # many ties, across blocks
    else:
        a = rng.integers(0, 50, SHAPE).astype(dtype)  # ties everywhere
    values, indices = topk_jit.topk(a, 1, k, largest)
    want_values, want_indices = _stable_top(a, k, 1, largest)
    np.testing.assert_array_equal(values, want_values)
    np.testing.assert_array_equal(indices, want_indices)
    assert values.dtype == a.dtype and indices.dtype == np.int64


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_any_dim_and_odd_sizes(dim):
    a = np.random.default_rng(dim).standard_normal((37, 301, 29)).astype(np.float32)
    values, indices = topk_jit.topk(a, dim, 3, True)
    want_values, want_indices = _stable_top(a, 3, dim, True)
    np.testing.assert_array_equal(values, want_values)
    np.testing.assert_array_equal(indices, want_indices)
    assert values.flags.c_contiguous


def test_a_nan_hands_the_line_back():
    a = np.random.default_rng(0).standard_normal(SHAPE)
    a[5, 100] = np.nan
    assert topk_jit.topk(a, 1, 4, True) is None


@pytest.mark.parametrize("largest", [True, False])
def test_ember_topk_matches_the_numpy_path_with_gradients(largest):
    a = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    x = ember.tensor(a, requires_grad=True)
    values, indices = ember.topk(x, 8, dim=1, largest=largest)
    (values * ember.arange(8.0)).sum().backward()
    with jit.disabled():
        y = ember.tensor(a, requires_grad=True)
        ref_values, ref_indices = ember.topk(y, 8, dim=1, largest=largest)
        (ref_values * ember.arange(8.0)).sum().backward()
    assert values.grad_fn.name() == ref_values.grad_fn.name() == "TopkBackward0"
    np.testing.assert_array_equal(values.detach().numpy(), ref_values.detach().numpy())
    np.testing.assert_array_equal(indices.numpy(), ref_indices.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), y.grad.numpy())


def test_ember_topk_with_a_nan_sorts_as_the_numpy_path():
    a = np.random.default_rng(2).standard_normal(SHAPE)
    a[0, 10] = np.nan
    values, indices = ember.topk(ember.tensor(a), 3)
    with jit.disabled():
        ref_values, ref_indices = ember.topk(ember.tensor(a), 3)
    np.testing.assert_array_equal(values.numpy(), ref_values.numpy())
    np.testing.assert_array_equal(indices.numpy(), ref_indices.numpy())
    assert np.isnan(values.numpy()[0, 0])


def test_matches_torch(torch_mod):
    a = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)
    a[:, 1::9] = 0.5  # ties at the top
    got = ember.topk(ember.tensor(a), 6, dim=1)
    want = torch_mod.topk(torch_mod.tensor(a), 6, dim=1)
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
