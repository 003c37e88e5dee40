"""The compiled reflect / replicate / circular padding (ember._kernels.padding_jit): the
forward equal to NumPy's ``pad`` bit for bit, the backward to the NumPy path's fold
(``jit.disabled``) and to torch, over 1-d / 2-d amounts, odd sizes, amounts up to the limits,
non-contiguous inputs, a sum()'s broadcast gradient, integer dtypes, and the node names."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._kernels import jit, padding_jit

MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("amounts", [(2, 2, 2, 2), (0, 3, 1, 0), (4, 1, 0, 5), (0, 0, 3, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_forward_equals_numpy_pad(mode, amounts, dtype):
    top, bottom, left, right = amounts
    x = (np.random.default_rng(0).standard_normal((3, 4, 7, 6)) * 10).astype(dtype)
    out = padding_jit.pad(x, top, bottom, left, right, mode, True)
    want = np.pad(x, [(0, 0), (0, 0), (top, bottom), (left, right)], mode=MODES[mode])
    np.testing.assert_array_equal(out, want)
    assert out.dtype == x.dtype and out.flags.c_contiguous


@pytest.mark.parametrize("mode", sorted(MODES))
def test_one_dim_and_a_single_plane(mode):
    x = np.random.default_rng(1).standard_normal((5, 9))
    out = padding_jit.pad(x, 0, 0, 3, 2, mode, False)
    np.testing.assert_array_equal(out, np.pad(x, [(0, 0), (3, 2)], mode=MODES[mode]))
    g = np.random.default_rng(2).standard_normal(out.shape)
    folded = padding_jit.fold(g, 0, 0, 3, 2, mode, False)
    want = np.zeros_like(x)
    for c in range(out.shape[1]):  # the reference: every output column onto its source
        i = c - 3
        if mode == "reflect":
            i = -i if i < 0 else (2 * 8 - i if i > 8 else i)
        elif mode == "replicate":
            i = min(max(i, 0), 8)
        else:
            i %= 9
        want[:, i] += g[:, c]
    np.testing.assert_allclose(folded, want, rtol=1e-14, atol=1e-14)


def _ember_grad(module, a, weights):
    x = ember.tensor(a, requires_grad=True)
    y = module(x)
    if weights is None:
        y.sum().backward()
    else:
        (y * ember.tensor(weights)).sum().backward()
    return y, x.grad


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.nn.ReflectionPad2d((3, 1, 2, 4)),
        lambda m: m.nn.ReplicationPad2d(2),
        lambda m: m.nn.ReflectionPad1d((4, 2)),
        lambda m: m.nn.CircularPad2d((1, 3, 2, 0)),
    ],
)
@pytest.mark.parametrize("weighted", [True, False])
def test_module_path_matches_the_numpy_path_and_torch(make, weighted, torch_mod):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 64, 30, 33)).astype(np.float32)  # kernel sizes
    probe = make(ember)
    if isinstance(probe, ember.nn.ReflectionPad1d):
        a = a.reshape(8 * 64, 30, 33)
    shape = tuple(probe(ember.tensor(a)).shape)
    weights = rng.standard_normal(shape).astype(np.float32) if weighted else None
    y, g = _ember_grad(probe, a, weights)
    with jit.disabled():
        y0, g0 = _ember_grad(make(ember), a, weights)
    assert y.grad_fn.name() == y0.grad_fn.name()
    np.testing.assert_array_equal(y.detach().numpy(), y0.detach().numpy())
    np.testing.assert_allclose(g.numpy(), g0.numpy(), rtol=1e-5, atol=1e-5)
    t = torch_mod.tensor(a, requires_grad=True)
    ty = make(torch_mod)(t)
    (ty * torch_mod.tensor(weights) if weighted else ty).sum().backward()
    assert y.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_non_contiguous_input_and_double_backward():
    a = np.random.default_rng(4).standard_normal((4, 16, 40, 40))
    x = ember.tensor(a, requires_grad=True)
    xt = x.transpose(2, 3)  # not contiguous
    y = F.pad(xt, (2, 3, 1, 2), mode="reflect")
    np.testing.assert_array_equal(
        y.detach().numpy(),
        np.pad(a.transpose(0, 1, 3, 2), [(0, 0)] * 2 + [(1, 2), (2, 3)], "reflect"),
    )
    (g,) = ember.autograd.grad((y * y).sum(), [x], create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), [x])
    with jit.disabled():
        x0 = ember.tensor(a, requires_grad=True)
        y0 = F.pad(x0.transpose(2, 3), (2, 3, 1, 2), mode="reflect")
        (g0,) = ember.autograd.grad((y0 * y0).sum(), [x0], create_graph=True)
        (gg0,) = ember.autograd.grad(g0.sum(), [x0])
    np.testing.assert_allclose(g.detach().numpy(), g0.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gg.numpy(), gg0.numpy(), rtol=1e-12)


def test_three_dim_padding_keeps_numpy():
    a = np.random.default_rng(5).standard_normal((2, 3, 20, 20, 20))
    y = ember.nn.ReflectionPad3d(1)(ember.tensor(a))
    np.testing.assert_array_equal(y.numpy(), np.pad(a, [(0, 0)] * 2 + [(1, 1)] * 3, "reflect"))
