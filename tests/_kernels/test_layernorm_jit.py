"""The compiled layer norm against the NumPy path and torch: values, statistics, gradients."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._kernels import jit

pytest.importorskip("numba")
from ember._kernels import layernorm_jit as kernels  # noqa: E402

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def _run(x, w, b, shape, g):
    xe = ember.tensor(x, requires_grad=True)
    params = [None if p is None else ember.tensor(p, requires_grad=True) for p in (w, b)]
    out, mean, rstd = ember.native_layer_norm(xe, shape, *params, 1e-5)
    leaves = [xe] + [p for p in params if p is not None]
    grads = ember.autograd.grad(out, leaves, ember.tensor(g))
    return [out, mean, rstd, *grads]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape,normalized,affine",
    [((4, 7), (7,), True), ((3, 5, 33), (5, 33), False), ((2, 300, 130), (130,), True)],
)
@pytest.mark.parametrize("strided", [False, True])
def test_layer_norm_kernel_matches_numpy_path(dtype, shape, normalized, affine, strided):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    if strided:  # a non-contiguous input (copied to rows by the kernel's caller)
        x = np.ascontiguousarray(x.swapaxes(0, -1)).swapaxes(0, -1)
    w = (1 + 0.1 * rng.standard_normal(normalized)).astype(dtype) if affine else None
    b = (0.1 * rng.standard_normal(normalized)).astype(dtype) if affine else None
    g = rng.standard_normal(shape).astype(dtype)
    fast = _run(x, w, b, normalized, g)
    assert fast[0].grad_fn.name() == "NativeLayerNormBackward0"
    with jit.disabled():
        slow = _run(x, w, b, normalized, g)
    for a, c in zip(fast, slow):
        assert a.dtype == c.dtype and a.shape == c.shape
        a, c = a.detach().numpy(), c.detach().numpy()
        # sums over many rows (the parameters' gradients): float32 rounding grows with them
        scale = max(1.0, float(np.abs(c).max()))
        np.testing.assert_allclose(a, c, rtol=TOL[dtype]["rtol"], atol=TOL[dtype]["atol"] * scale)


def test_layer_norm_zero_size_and_bad_arrays():
    x = ember.zeros(0, 6, requires_grad=True)
    out = F.layer_norm(x, (6,))
    assert out.shape == (0, 6)
    with pytest.raises(ValueError, match="C-contiguous"):
        kernels.layer_norm_forward(np.zeros((4, 6))[:, ::2], None, None, 1e-5)
    with pytest.raises(ValueError, match="parameter"):
        kernels.layer_norm_forward(np.zeros((4, 6)), np.ones(5), None, 1e-5)
    with pytest.raises(ValueError, match="gradient"):
        kernels.layer_norm_backward(np.zeros((4, 5)), np.zeros((4, 6)), 0, 1, None, True)


def test_layer_norm_gradcheck_first_and_second_order():
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = ember.tensor(1 + rng.standard_normal(4) * 0.1, requires_grad=True)
    b = ember.tensor(rng.standard_normal(4) * 0.1, requires_grad=True)
    fn = lambda x, w, b: F.layer_norm(x, (4,), w, b)  # noqa: E731
    assert ember.autograd.gradcheck(fn, (x, w, b))
    assert ember.autograd.gradgradcheck(fn, (x, w, b))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_kernel_matches_torch(dtype, torch_mod):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 9, 40)).astype(dtype)
    w = (1 + 0.1 * rng.standard_normal(40)).astype(dtype)
    b = (0.1 * rng.standard_normal(40)).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    ours = _run(x, w, b, (40,), g)
    xt, wt, bt = (torch_mod.tensor(a, requires_grad=True) for a in (x, w, b))
    out, mean, rstd = torch_mod.native_layer_norm(xt, (40,), wt, bt, 1e-5)
    theirs = [out, mean, rstd, *torch_mod.autograd.grad(out, (xt, wt, bt), torch_mod.tensor(g))]
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else TOL[dtype]
    for a, c in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), c.detach().numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(5, 7), (1, 1), (300, 130), (0, 4)])
@pytest.mark.parametrize("parallel", [True, False])
def test_residual_layer_norm_kernel_matches_numpy_path(dtype, shape, parallel):
    from ember.ops.normalization import layer_norm_rows

    rng = np.random.default_rng(1)
    x, residual = ((rng.standard_normal(shape) * 3 + 1).astype(dtype) for _ in range(2))
    bias, w, b = (rng.standard_normal(shape[1]).astype(dtype) for _ in range(3))
    total = (x + bias) + residual
    expected = layer_norm_rows(np, total.copy(), w, b, 1e-5)
    out = np.empty_like(x)
    got = kernels.residual_layer_norm_(x, bias, residual, w, b, 1e-5, out, parallel)
    assert got is out
    np.testing.assert_array_equal(x, total)  # the residual sum rounded as NumPy's two adds
    np.testing.assert_allclose(out, expected, **TOL[dtype])
    serial = kernels.layer_norm_forward(total, w, b, 1e-5, parallel=False)[0]
    np.testing.assert_array_equal(out, serial)


def test_residual_layer_norm_refuses_mismatched_or_shared_arrays():
    x = np.zeros((4, 6))
    with pytest.raises(ValueError, match="arrays"):
        kernels.residual_layer_norm_(x, None, np.zeros((4, 5)), None, None, 1e-5, np.zeros_like(x))
    with pytest.raises(ValueError, match="distinct"):
        kernels.residual_layer_norm_(x, None, x, None, None, 1e-5, np.zeros_like(x))
    with pytest.raises(ValueError, match="C-contiguous"):
        kernels.residual_layer_norm_(x, None, x.T.copy().T, None, None, 1e-5, np.zeros_like(x))
