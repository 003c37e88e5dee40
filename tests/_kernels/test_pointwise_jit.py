"""The compiled piecewise activations (``ember._kernels.pointwise_jit``) against the NumPy
path and PyTorch: values and gradients, with NaN, infinities, signed zeros and the breaks."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember.autograd import gradcheck, gradgradcheck

pytest.importorskip("numba")

F = ember.nn.functional

ACTIVATIONS = {
    "leaky_relu": lambda m, x: m.nn.functional.leaky_relu(x, 0.2),
    "leaky_relu_default": lambda m, x: m.nn.functional.leaky_relu(x),
    "hardswish": lambda m, x: m.nn.functional.hardswish(x),
    "hardsigmoid": lambda m, x: m.nn.functional.hardsigmoid(x),
    "elu": lambda m, x: m.nn.functional.elu(x, 0.7),
    "selu": lambda m, x: m.nn.functional.selu(x),
    "celu": lambda m, x: m.nn.functional.celu(x, 1.5),
    "softplus": lambda m, x: m.nn.functional.softplus(x),
    "softplus_beta": lambda m, x: m.nn.functional.softplus(x, 2.0, 5.0),
    "mish": lambda m, x: m.nn.functional.mish(x),
    "logsigmoid": lambda m, x: m.nn.functional.logsigmoid(x),
    "bce_with_logits": lambda m, x: m.nn.functional.binary_cross_entropy_with_logits(
        x, (x.detach() > 0.3).to(x.dtype) * 0.8, reduction="none"
    ),
}
EXACT = {"leaky_relu", "leaky_relu_default", "hardswish", "hardsigmoid"}  # no libm call


@pytest.fixture(autouse=True)
def kernels_for_small_arrays(monkeypatch):
    monkeypatch.setattr(jit, "MIN_WORK", 1)


def _inputs(dtype):
    rng = np.random.default_rng(0)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 3.0, -3.0, 2.9999, -3.0001, 1e-30, -1e-30]
    x = np.concatenate([rng.standard_normal(297) * 4, special]).astype(dtype)
    return x.reshape(-1, 11)


def _run(name, x_np, disabled=False, m=ember):
    x = m.tensor(x_np, requires_grad=True)
    weights = np.random.default_rng(1).standard_normal(x_np.shape).astype(x_np.dtype)

    def run():
        y = ACTIVATIONS[name](m, x)
        (y * m.tensor(weights)).sum().backward()
        return y.detach().numpy(), x.grad.numpy()

    if disabled:
        with jit.disabled():
            return run()
    return run()


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernels_match_the_numpy_path(name, dtype):
    x = _inputs(dtype)
    got, want = _run(name, x), _run(name, x, disabled=True)
    for a, b in zip(got, want):
        assert a.dtype == np.dtype(dtype)
        if name in EXACT:
            np.testing.assert_array_equal(a, b)
            assert np.array_equal(np.signbit(a), np.signbit(b))
        else:  # float32: the kernels' exp/expm1/log1p/tanh against NumPy's (a few ulps)
            rtol = 5e-7 if dtype == "float32" else 1e-15
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6 if dtype == "float32" else 0)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_kernels_match_torch(name):
    torch = pytest.importorskip("torch")
    x = _inputs("float32")[:-1]  # torch's hardswish gradient at NaN differs from ember's
    x = x[np.isfinite(x).all(axis=1)]
    got, want = _run(name, x), _run(name, x, m=torch)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_gradients_first_and_second_order(name):
    x = np.random.default_rng(2).standard_normal((3, 7)) * 4
    x = x[np.abs(np.abs(x) - 3) > 1e-3].reshape(-1)  # off hardswish's breaks
    t = ember.tensor(x, requires_grad=True)
    assert gradcheck(lambda t: ACTIVATIONS[name](ember, t), (t,))
    if name not in ("leaky_relu", "leaky_relu_default", "hardsigmoid"):
        assert gradgradcheck(lambda t: ACTIVATIONS[name](ember, t), (t,))


def test_integer_input_is_refused_as_before():
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.leaky_relu(ember.arange(5))


def test_float32_elu_within_two_ulps_of_the_exact_value():
    """Above -87 (below, e^x is subnormal in float32 and the kernels' exp gives 0)."""
    x = np.concatenate([-np.logspace(-8, 1.9, 2000), -np.linspace(0, 1, 2001)]).astype("float32")
    t = ember.tensor(x, requires_grad=True)
    y = F.elu(t)
    y.sum().backward()
    exact = x.astype(np.float64)
    for got, want in ((y.detach().numpy(), np.expm1(exact)), (t.grad.numpy(), np.exp(exact))):
        ulps = np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32))
        assert ulps.max() < 2.0


def test_float32_softplus_and_mish_within_a_few_ulps_of_the_exact_value():
    x = np.concatenate([np.linspace(-80, 25, 20001), -np.logspace(-8, 1.9, 2000)])
    x = x.astype("float32")
    exact = x.astype(np.float64)
    softplus = np.where(exact > 20, exact, np.log1p(np.exp(exact)))
    sigmoid = 1 / (1 + np.exp(-exact))
    for fn, want, bound in (
        (F.softplus, softplus, 4.0),
        (F.softplus, sigmoid, 4.0),  # its gradient
        (F.mish, exact * np.tanh(np.log1p(np.exp(exact))), 6.0),
    ):
        t = ember.tensor(x, requires_grad=True)
        y = fn(t)
        y.sum().backward()
        got = y.detach().numpy() if want is not sigmoid else t.grad.numpy()
        normal = np.abs(want) > 1e-30  # float32 keeps few digits below
        ulps = np.abs(got - want)[normal] / np.spacing(np.abs(want[normal]).astype(np.float32))
        assert ulps.max() < bound


@pytest.mark.parametrize("shape,dim", [((6, 40), -1), ((8, 3, 5), 0), ((4, 6, 7), 1)])
def test_glu_kernel_matches_the_numpy_path_and_torch(shape, dim):
    x = np.random.default_rng(3).standard_normal(shape).astype("float32") * 3
    weights = np.random.default_rng(4).standard_normal(shape).astype("float32")
    results = []
    for m, disabled in ((ember, False), (ember, True)):
        t = m.tensor(x, requires_grad=True)
        with jit.disabled() if disabled else contextlib.nullcontext():
            y = m.nn.functional.glu(t, dim)
            (y * m.tensor(weights[tuple(slice(0, n) for n in y.shape)])).sum().backward()
        results.append((y.detach().numpy(), t.grad.numpy()))
    torch = pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    y = torch.nn.functional.glu(t, dim)
    (y * torch.tensor(weights[tuple(slice(0, n) for n in y.shape)])).sum().backward()
    results.append((y.detach().numpy(), t.grad.numpy()))
    for got, want in zip(results[0], results[1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    for got, want in zip(results[0], results[2]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
