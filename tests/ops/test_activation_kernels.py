"""The cache-blocked NumPy kernels of softmax, log-softmax, GELU (exact and tanh) and SiLU:
values, gradients and dtypes against PyTorch over small, large (several blocks and threads),
non-contiguous, zero-size and non-finite inputs; float64 gradcheck and gradgradcheck (the
second order goes through the ember-op formulas)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._kernels import blocked

from ..helpers import arrays_for, check_gradients, compare_with_torch

ACTIVATIONS = {
    "softmax_last": lambda m, x: m.nn.functional.softmax(x, -1),
    "softmax_dim1": lambda m, x: m.nn.functional.softmax(x, 1),
    "log_softmax_last": lambda m, x: m.nn.functional.log_softmax(x, -1),
    "log_softmax_dim0": lambda m, x: m.nn.functional.log_softmax(x, 0),
    "gelu": lambda m, x: m.nn.functional.gelu(x),
    "gelu_tanh": lambda m, x: m.nn.functional.gelu(x, approximate="tanh"),
    "silu": lambda m, x: m.nn.functional.silu(x),
}
NODE_NAMES = {
    "softmax": "SoftmaxBackward0",
    "log_softmax": "LogSoftmaxBackward0",
    "gelu": "GeluBackward0",
    "silu": "SiluBackward0",
}
# (300, 7, 40) holds 84,000 elements: split among threads, in many blocks here
SHAPES = [(3, 7, 5), (300, 7, 40), (0, 4, 3), (2, 3, 0)]


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_float32_matches_torch(monkeypatch, name, shape):
    monkeypatch.setattr(blocked, "_BLOCK", 4096)
    (x,) = arrays_for([shape], low=-6, high=6, seed=1)
    compare_with_torch(ACTIVATIONS[name], [x], dtype=np.float32, atol=2e-6, rtol=2e-5)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_float64_gradcheck_and_gradgradcheck(name):
    (x,) = arrays_for([(3, 4, 5)], seed=2)
    check_gradients(ACTIVATIONS[name], [x])
    check_gradients(ACTIVATIONS[name], [x], noncontiguous=True)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_non_contiguous_float32_matches_torch(torch_mod, name):
    (x,) = arrays_for([(40, 30, 9)], low=-5, high=5, seed=3)
    fn = ACTIVATIONS[name]
    e_in = ember.tensor(x.astype(np.float32)).transpose(0, 2).requires_grad_()
    t_in = torch_mod.tensor(x.astype(np.float32)).transpose(0, 2).requires_grad_()
    e_out, t_out = fn(ember, e_in), fn(torch_mod, t_in)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), atol=2e-6, rtol=2e-5)
    seed = np.random.default_rng(4).standard_normal(tuple(t_out.shape)).astype(np.float32)
    (e_grad,) = ember.autograd.grad(e_out, e_in, ember.tensor(seed).transpose(0, 1).transpose(0, 1))
    (t_grad,) = torch_mod.autograd.grad(t_out, t_in, torch_mod.tensor(seed))
    assert e_grad.dtype == ember.float32
    np.testing.assert_allclose(e_grad.numpy(), t_grad.numpy(), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_outputs_and_gradients_keep_float32(name):
    x = ember.randn(70, 1000, requires_grad=True)
    out = ACTIVATIONS[name](ember, x)
    out.backward(ember.ones_like(out))
    assert out.dtype == ember.float32 and x.grad.dtype == ember.float32
    prefix = name.split("_last")[0].split("_dim")[0].split("_tanh")[0]
    assert out.grad_fn.name() == NODE_NAMES[prefix]


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_matches_torch(torch_mod, name, dtype):
    (x,) = arrays_for([(6, 5, 7)], low=-4, high=4, seed=5)
    fn = ACTIVATIONS[name]
    e = fn(ember, ember.tensor(x).to(getattr(ember, dtype)))
    t = fn(torch_mod, torch_mod.tensor(x).to(getattr(torch_mod, dtype)))
    assert e.dtype.name == dtype
    tol = 2e-2 if dtype == "bfloat16" else 2e-3
    np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), atol=tol, rtol=tol)


def test_gelu_exact_float32_is_at_least_as_accurate_as_torch(torch_mod):
    """The float32 erf (a rational fit evaluated in float64) over a dense grid: within a few
    float32 ulps of erf near ±1 of torch's, and never further than torch from the exact value."""
    import scipy.special

    x = np.linspace(-12, 12, 240_001, dtype=np.float32)
    x64 = x.astype(np.float64)
    cdf = (1 + scipy.special.erf(x64 / np.sqrt(2))) / 2
    exact = [x64 * cdf, cdf + x64 * np.exp(-x64 * x64 / 2) / np.sqrt(2 * np.pi)]
    for fn, truth in zip(
        (
            lambda m, t: m.nn.functional.gelu(t),
            lambda m, t: m.autograd.grad(m.nn.functional.gelu(t).sum(), t)[0],
        ),
        exact,
    ):
        ours = fn(ember, ember.tensor(x, requires_grad=True)).detach().numpy()
        theirs = fn(torch_mod, torch_mod.tensor(x, requires_grad=True)).detach().numpy()
        np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1.5e-6)
        ulp = np.spacing(np.abs(truth).astype(np.float32)).astype(np.float64)
        assert np.all(np.abs(ours - truth) <= np.abs(theirs - truth) + 2 * ulp + 1e-7)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_non_finite_inputs_match_torch(torch_mod, name):
    inf, nan = float("inf"), float("nan")
    x = np.array(
        [[0.0, -inf, 1.0, 2.0], [-inf, -inf, -inf, -inf], [inf, 1.0, 0.0, -1.0], [nan, 0, 1, 2]],
        dtype=np.float32,
    )
    x = np.concatenate([x, np.array([[1e4, -1e4, 90.0, -90.0]], dtype=np.float32)])
    if name == "gelu":  # torch's float32 gelu(inf) is NaN, its float64 one and ember's inf
        x[2, 0] = 50.0
    fn = ACTIVATIONS[name]
    ours = fn(ember, ember.tensor(x)).numpy()
    theirs = fn(torch_mod, torch_mod.tensor(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7, equal_nan=True)


def test_cross_entropy_large_batch_matches_torch(torch_mod):
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((512, 300)).astype(np.float32) * 3
    target = rng.integers(0, 300, 512)
    target[::7] = -100
    weight = rng.uniform(0.5, 2, 300).astype(np.float32)
    results = []
    for m in (ember, torch_mod):
        x = m.tensor(logits, requires_grad=True)
        loss = m.nn.functional.cross_entropy(
            x, m.tensor(target), m.tensor(weight), label_smoothing=0.1
        )
        loss.backward()
        results.append((loss.item(), x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    np.testing.assert_allclose(results[0][1], results[1][1], atol=1e-7, rtol=1e-4)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "gelu", "silu"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_zero_dim_inputs_match_torch(torch_mod, name, dtype):
    results = []
    for m in (ember, torch_mod):
        x = m.tensor(0.7, dtype=getattr(m, dtype), requires_grad=True)
        f = getattr(m.nn.functional, name)
        y = f(x, 0) if "softmax" in name else f(x)
        y.backward()
        assert tuple(y.shape) == () and str(y.dtype).endswith(dtype)
        results.append((y.detach().float().numpy(), x.grad.float().numpy()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-3 if dtype == "float16" else 1e-6)
