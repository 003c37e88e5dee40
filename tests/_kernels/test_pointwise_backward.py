"""Backward kernels fed the gradient ``sum()`` and ``mean()`` hand down (one value broadcast,
``ember._kernels.pointwise_backward``): the same values as with that gradient as an array, as
the NumPy path and as torch, for float32 and float64, contiguous or not."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember._kernels.pointwise_backward import constant_value
from ember.autograd import gradcheck, gradgradcheck

pytest.importorskip("numba")

OPS = {
    "leaky_relu": lambda m, x: m.nn.functional.leaky_relu(x, 0.1),
    "hardswish": lambda m, x: m.nn.functional.hardswish(x),
    "hardsigmoid": lambda m, x: m.nn.functional.hardsigmoid(x),
    "elu": lambda m, x: m.nn.functional.elu(x, 0.7),
    "softplus": lambda m, x: m.nn.functional.softplus(x),
    "mish": lambda m, x: m.nn.functional.mish(x),
    "logsigmoid": lambda m, x: m.nn.functional.logsigmoid(x),
    "glu": lambda m, x: m.nn.functional.glu(x, -1),
    "glu_dim0": lambda m, x: m.nn.functional.glu(x, 0),
    "square": lambda m, x: x.pow(2),
    "cube": lambda m, x: x.pow(3),
    "cube_float": lambda m, x: x**3.0,
}
REDUCTIONS = {
    "sum": lambda y: y.sum(),
    "scaled_sum": lambda y: y.sum() * 2.5,
    "mean": lambda y: y.mean(),
}


@pytest.fixture(autouse=True)
def kernels_for_small_arrays(monkeypatch):
    monkeypatch.setattr(jit, "MIN_WORK", 1)


def _x(dtype, transposed=False):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((24, 40)) * 4).astype(dtype)
    x[0, :6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 3.0]
    return x.T if transposed else x


def _grad(name, x_np, reduce, m=ember, disabled=False):
    x = m.tensor(x_np, requires_grad=True)
    with jit.disabled() if disabled else contextlib.nullcontext():
        y = OPS[name](m, x)
        reduce(y).backward()
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("transposed", [False, True])
def test_constant_gradient_gives_what_the_gradient_as_an_array_gives(name, dtype, transposed):
    x = _x(dtype, transposed)
    _, got = _grad(name, x, REDUCTIONS["scaled_sum"])
    # the same value as a real array: the kernels' array form, the same formula per element
    _, want = _grad(name, x, lambda y: (y * ember.ones(y.shape, dtype=y.dtype)).sum() * 2.5)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_constant_gradient_matches_the_numpy_path(name, dtype, reduction):
    x = _x(dtype)
    got = _grad(name, x, REDUCTIONS[reduction])
    want = _grad(name, x, REDUCTIONS[reduction], disabled=True)
    # float32: the kernels' exp/log1p/tanh against NumPy's, a few ulps (times the gradient 2.5)
    rtol = 2e-6 if dtype == "float32" else 1e-15
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6 if dtype == "float32" else 0)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_constant_gradient_matches_torch(name, reduction):
    torch = pytest.importorskip("torch")
    x = _x("float32")[2:]  # finite inputs (torch's gradients at the infinities differ)
    got, want = _grad(name, x, REDUCTIONS[reduction]), _grad(name, x, REDUCTIONS[reduction], torch)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", OPS)
def test_float64_gradcheck_through_the_kernels(name):
    x = np.random.default_rng(2).standard_normal((4, 6)) * 4
    x[np.abs(np.abs(x) - 3) < 1e-2] = 0.5  # off hardswish's breaks
    t = ember.tensor(x, requires_grad=True)
    assert gradcheck(lambda t: OPS[name](ember, t).sum() * 1.5, (t,))
    if name not in ("leaky_relu", "hardsigmoid"):
        assert gradgradcheck(lambda t: OPS[name](ember, t), (t,))


def test_pow3_of_a_large_tensor_is_one_pass_and_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(5).standard_normal((70, 1000)).astype("float32")
    got = _grad("cube", x, REDUCTIONS["sum"])
    want = _grad("cube", x, REDUCTIONS["sum"], torch)
    np.testing.assert_array_equal(got[0], x * x * x)  # the NumPy path's products, in order
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_constant_value_is_the_broadcast_element_only():
    assert constant_value(np.broadcast_to(np.float32(2.5), (3, 4))) == np.float32(2.5)
    assert constant_value(np.broadcast_to(np.float32(2.5), (3, 4))).dtype == np.float32
    assert constant_value(np.ones((3, 4), np.float32)) is None  # a real array
    assert constant_value(np.broadcast_to(np.arange(4.0), (3, 4))) is None  # stride 0 in one dim
    assert constant_value(np.broadcast_to(np.float32(1), (0, 4))) is None  # empty
    assert constant_value([1.0]) is None
