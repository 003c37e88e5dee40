"""The compiled group norm (ember._kernels.groupnorm_jit): output, statistics and the input,
weight and bias gradients equal (to rounding) to the NumPy path's (``jit.disabled``) and to
torch's, with and without affine parameters, for a gradient array and for the one value a
``sum()`` hands down, in float32 and float64; the graph keeps NativeGroupNormBackward0."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._kernels import groupnorm_jit, jit

SHAPE = (8, 32, 32, 32)  # 2^18 elements: the kernel's sizes


def _run(a, groups, affine, reduce, w=None, b=None):
    x = ember.tensor(a, requires_grad=True)
    params = []
    if affine:
        params = [ember.tensor(w, requires_grad=True), ember.tensor(b, requires_grad=True)]
    out = F.group_norm(x, groups, *params, eps=1e-5)
    loss = out.sum() if reduce == "sum" else (out * ember.tensor(np.cos(a))).sum()
    grads = ember.autograd.grad(loss, [x, *params])
    return out, grads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "weighted"])
@pytest.mark.parametrize("groups", [1, 4, 32])
def test_kernel_path_matches_the_numpy_path(dtype, affine, reduce, groups):
    rng = np.random.default_rng(groups)
    a = (rng.standard_normal(SHAPE) * 3 + 1).astype(dtype)
    w = rng.standard_normal(SHAPE[1]).astype(dtype)
    b = rng.standard_normal(SHAPE[1]).astype(dtype)
    out, grads = _run(a, groups, affine, reduce, w, b)
    with jit.disabled():
        ref, ref_grads = _run(a, groups, affine, reduce, w, b)
    single = dtype == np.float32
    rtol, atol = (1e-4, 1e-4) if single else (1e-10, 1e-10)
    assert out.grad_fn.name() == ref.grad_fn.name() == "NativeGroupNormBackward0"
    assert out.dtype == ref.dtype
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=rtol, atol=atol)
    for g, r in zip(grads, ref_grads):
        assert g.dtype == r.dtype and g.shape == r.shape
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=rtol, atol=atol * 10)


def test_statistics_of_native_group_norm_match_the_numpy_path():
    a = np.random.default_rng(0).standard_normal(SHAPE)
    got = ember.native_group_norm(ember.tensor(a), None, None, 8, 32, 1024, 8, 1e-5)
    with jit.disabled():
        want = ember.native_group_norm(ember.tensor(a), None, None, 8, 32, 1024, 8, 1e-5)
    for g, r in zip(got, want):
        assert g.shape == r.shape
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-12, atol=1e-12)


def test_large_mean_does_not_cancel():
    a = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32) + 1e4
    out, _ = _run(a, 4, False, "sum")
    x = a.reshape(8, 4, -1).astype(np.float64)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.detach().numpy().reshape(want.shape), want, atol=2e-3)


def test_second_order_keeps_to_the_composite_formula():
    a = np.random.default_rng(2).standard_normal(SHAPE)
    x = ember.tensor(a, requires_grad=True)
    (g,) = ember.autograd.grad((F.group_norm(x, 4) ** 2).sum(), [x], create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), [x])
    with jit.disabled():
        y = ember.tensor(a, requires_grad=True)
        (h,) = ember.autograd.grad((F.group_norm(y, 4) ** 2).sum(), [y], create_graph=True)
        (hh,) = ember.autograd.grad(h.sum(), [y])
    np.testing.assert_allclose(gg.numpy(), hh.numpy(), rtol=1e-8, atol=1e-10)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="groups"):
        groupnorm_jit.group_norm_forward(np.zeros((2, 6, 4)), 4, None, None, 1e-5)
    with pytest.raises(ValueError, match="weight"):
        groupnorm_jit.group_norm_forward(np.zeros((2, 8, 4)), 4, np.ones(3), None, 1e-5)


def test_matches_torch(torch_mod):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(SHAPE).astype(np.float32)
    w, b = rng.standard_normal(32).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    out, grads = _run(a, 8, True, "weighted", w, b)
    tx = torch_mod.tensor(a, requires_grad=True)
    tw = torch_mod.tensor(w, requires_grad=True)
    tb = torch_mod.tensor(b, requires_grad=True)
    tout = torch_mod.nn.functional.group_norm(tx, 8, tw, tb, eps=1e-5)
    (tout * torch_mod.tensor(np.cos(a))).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-4)
    for g, t in zip(grads, (tx, tw, tb)):
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-3, atol=2e-3)
