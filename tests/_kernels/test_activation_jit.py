"""The compiled activation kernels (ember._kernels.activation_jit): each op against its NumPy
path (``jit.disabled()``) and against torch, forward and backward, over float32/float64, sizes
below and above the pool split, zero-size, 0-d, non-contiguous and non-finite inputs; float64
gradcheck and gradgradcheck through the kernels."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _backend
from ember._kernels import jit

from ..helpers import check_gradients, compare_with_torch

pytest.importorskip("numba")

OPS = {
    "gelu": lambda m, x: m.nn.functional.gelu(x),
    "gelu_tanh": lambda m, x: m.nn.functional.gelu(x, approximate="tanh"),
    "silu": lambda m, x: m.nn.functional.silu(x),
    "tanh": lambda m, x: m.tanh(x),
    "sigmoid": lambda m, x: m.sigmoid(x),
    "erf": lambda m, x: m.erf(x),
    "relu": lambda m, x: m.relu(x),
}
# the forward kernels whose arithmetic is the NumPy path's, operation for operation
BITWISE_FORWARD = {("gelu", "float32"), ("relu", "float32"), ("relu", "float64")}
# 2**17 + 3 elements: above the compiled tanh/sigmoid threshold, split over two threads
# output, gradient: the tolerances of the activations' float32 tests against torch (the NumPy
# float32 tanh-GELU gradient loses ~3e-6 to cancellation where it crosses zero)
FLOAT32_TOLERANCES = [dict(rtol=2e-5, atol=2e-6), dict(rtol=1e-4, atol=1e-5)]
SIZES = [(7,), (3, 5), (2**17 + 3,), (0,), (4, 0, 3), ()]


def _forward_backward(fn, x: np.ndarray, seed: int = 1):
    t = ember.tensor(x, requires_grad=True)
    out = fn(ember, t)
    grad = np.random.default_rng(seed).standard_normal(out.shape).astype(x.dtype)
    (g,) = ember.autograd.grad(out, t, ember.tensor(grad))
    return out.detach().numpy(), g.numpy()


def _inputs(shape, dtype, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SIZES)
def test_kernels_match_the_numpy_path(name, dtype, shape):
    x = _inputs(shape, dtype)
    fast = _forward_backward(OPS[name], x)
    with jit.disabled():
        slow = _forward_backward(OPS[name], x)
    for a, b, tolerance in zip(fast, slow, FLOAT32_TOLERANCES):
        assert a.dtype == b.dtype == np.dtype(dtype) and a.shape == b.shape == shape
        if a is fast[0] and (name, dtype) in BITWISE_FORWARD:
            np.testing.assert_array_equal(a, b)
        elif dtype == "float32":  # evaluated in float64 and rounded once vs NumPy's float32
            np.testing.assert_allclose(a, b, **tolerance)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("name", OPS)
def test_non_contiguous_inputs_match_the_numpy_path(name):
    x = _inputs((300, 2, 500), "float32")[:, 1, ::2].T  # strided, transposed
    fast = _forward_backward(OPS[name], x)
    with jit.disabled():
        slow = _forward_backward(OPS[name], x)
    for a, b, tolerance in zip(fast, slow, FLOAT32_TOLERANCES):
        np.testing.assert_allclose(a, b, **tolerance)


@pytest.mark.parametrize("name", OPS)
def test_large_float32_matches_torch(name):
    (x,) = [np.random.default_rng(2).uniform(-6, 6, (2**17 + 5,))]
    compare_with_torch(OPS[name], [x], dtype=np.float32, atol=2e-6, rtol=2e-5)


@pytest.mark.parametrize("name", OPS)
def test_non_finite_and_extreme_inputs_match_the_numpy_path(name):
    inf, nan = float("inf"), float("nan")
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-4, -1e-4, 20.0, -20.0, 90.0, -90.0, 800.0, -800.0]
    x = np.array(special + [inf, -inf, nan] * 2, dtype=np.float32)
    x = np.tile(x, 2**17 // x.size + 1)  # large enough for every compiled kernel
    with np.errstate(all="ignore"):
        fast = OPS[name](ember, ember.tensor(x)).numpy()
        with jit.disabled():
            slow = OPS[name](ember, ember.tensor(x)).numpy()
    np.testing.assert_allclose(fast, slow, rtol=2e-5, atol=2e-6, equal_nan=True)
    numbers = ~np.isnan(slow)  # -0 stays -0 (a NaN's sign bit is not part of its value)
    np.testing.assert_array_equal(np.signbit(fast[numbers]), np.signbit(slow[numbers]))


@pytest.mark.parametrize("name", OPS)
def test_float64_gradcheck_and_gradgradcheck_through_the_kernels(name):
    x = np.random.default_rng(3).uniform(-3, 3, (2, 3, 5))
    check_gradients(OPS[name], [x])


def test_float32_exp_is_within_two_ulps_and_saturates():
    from ember._kernels import activation_jit

    y = np.linspace(-87, 88, 200_001).astype(np.float32)
    got = np.array([activation_jit.exp_f32(v) for v in y[::50]])
    truth = np.exp(y[::50].astype(np.float64))
    ulp = np.spacing(truth.astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(got - truth) <= 2 * ulp)
    assert activation_jit.exp_f32(np.float32(-100)) == 0
    assert activation_jit.exp_f32(np.float32(100)) == np.inf
    assert np.isnan(activation_jit.exp_f32(np.float32("nan")))


def test_kernels_are_not_taken_for_mismatched_or_foreign_arrays():
    a = np.ones((4, 3), np.float32)
    if not jit.enabled():
        pytest.skip("compiled kernels are off (EMBER_JIT=0)")
    assert _backend.compiled_kernels("activation_jit", a) is not None
    assert _backend.compiled_kernels("activation_jit", a, np.ones((1, 3), np.float32)) is None
    assert _backend.compiled_kernels("activation_jit", a, np.ones((4, 3), np.float64)) is None
    assert _backend.compiled_kernels("activation_jit", a.astype(np.float16)) is None
    assert _backend.compiled_kernels("activation_jit", a.astype(np.int64)) is None
    with jit.disabled():
        assert _backend.compiled_kernels("activation_jit", a) is None


def test_broadcast_gradient_of_tanh_takes_the_numpy_path():
    x = ember.randn(2**17 + 1, requires_grad=True)
    y = x.tanh()
    y.sum().backward()  # the incoming gradient is a broadcast view of one element
    np.testing.assert_allclose(x.grad.numpy(), 1 - y.detach().numpy() ** 2, rtol=1e-6)


def test_float32_tanh_is_within_one_and_a_half_ulps_and_keeps_the_sign_of_zero():
    from ember._kernels import activation_jit

    x = np.concatenate([np.linspace(-12, 12, 200_001), [0.625, -0.625, 1e-30, -1e-30]])
    x = x.astype(np.float32)
    out = np.empty_like(x)
    activation_jit.tanh_float32(0, x.size, x, out)
    truth = np.tanh(x.astype(np.float64))
    ulp = np.spacing(np.abs(truth).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(out - truth) <= 1.5 * ulp)
    zeros = np.array([0.0, -0.0], np.float32)
    activation_jit.tanh_float32(0, 2, zeros, out)
    assert list(np.signbit(out[:2])) == [False, True]


@pytest.mark.parametrize("name", ["log", "exp", "sqrt", "sin"])
def test_large_float32_ops_without_a_kernel_keep_their_numpy_path(name):
    x = np.random.default_rng(4).uniform(0.5, 2.0, 2**21).astype(np.float32)
    got = getattr(ember, name)(ember.tensor(x)).numpy()
    np.testing.assert_array_equal(got, getattr(np, name)(x))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_kernels_run_and_equal_the_numpy_path_to_the_bit(dtype, monkeypatch):
    if not jit.enabled():
        pytest.skip("compiled kernels are off (EMBER_JIT=0)")
    from ember._kernels import activation_jit

    calls = []
    for name in ("relu", "relu_backward"):
        kernel = getattr(activation_jit, name)
        monkeypatch.setattr(
            activation_jit, name, lambda *a, k=kernel, n=name: calls.append(n) or k(*a)
        )
    x = _inputs((2**17 + 3,), dtype)
    x[::7], x[1::11], x[2::13] = np.nan, -0.0, 0.0
    fast = _forward_backward(OPS["relu"], x)
    assert set(calls) == {"relu", "relu_backward"}
    with jit.disabled():
        slow = _forward_backward(OPS["relu"], x)
    for a, b in zip(fast, slow):
        assert a.tobytes() == b.tobytes()


def test_relu_keeps_a_channels_last_layout():
    x = ember.randn(8, 16, 32, 32).contiguous(memory_format=ember.channels_last)
    y = ember.relu(x)
    assert y.is_contiguous(memory_format=ember.channels_last)
    np.testing.assert_array_equal(y.numpy(), np.maximum(x.numpy(), 0))
