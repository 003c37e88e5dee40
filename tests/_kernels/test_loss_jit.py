"""The compiled losses (ember._kernels.loss_jit: smooth L1, BCE on logits, cross-entropy's
log-softmax): the values, gradients, dtypes and graphs of the NumPy paths (``jit.disabled``)
and of torch, for every reduction and option, at sizes that take the kernels (>= MIN_WORK)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._kernels import jit

SHAPE = (128, 1024)  # 2^17 elements: above jit.MIN_WORK, several threads' spans


def _data(dtype, seed=0, scale=2.0):
    return (np.random.default_rng(seed).standard_normal(SHAPE) * scale).astype(dtype)


def _run(fn, *arrays, grads=(0,), create_graph=False):
    """fn(*tensors) and the gradients of its sum in ``grads`` (indices of ``arrays``)."""
    tensors = [
        ember.tensor(a, requires_grad=i in grads) if a.dtype.kind == "f" else ember.tensor(a)
        for i, a in enumerate(arrays)
    ]
    out = fn(*tensors)
    found = ember.autograd.grad(out.sum(), [tensors[i] for i in grads], create_graph=create_graph)
    return out, found, tensors


def _compare(fn, *arrays, grads=(0,), rtol=None, atol=None):
    """The kernel path against the NumPy path: values, gradients, dtypes and node names."""
    out, found, _ = _run(fn, *arrays, grads=grads)
    with jit.disabled():
        ref, ref_found, _ = _run(fn, *arrays, grads=grads)
    single = arrays[0].dtype == np.float32
    rtol = rtol if rtol is not None else (2e-5 if single else 1e-12)
    atol = atol if atol is not None else (1e-6 if single else 1e-14)
    assert out.dtype == ref.dtype and tuple(out.shape) == tuple(ref.shape)
    assert out.grad_fn.name() == ref.grad_fn.name()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=rtol, atol=atol)
    for g, r in zip(found, ref_found):
        assert g.dtype == r.dtype
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=rtol, atol=atol)
    return out, found


# --- smooth L1 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("beta", [1.0, 0.25, 3.0])
def test_smooth_l1_matches_the_numpy_path(dtype, reduction, beta):
    x, t = _data(dtype), _data(dtype, seed=1)
    fn = lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=beta)
    _compare(fn, x, t, grads=(0, 1))


def test_smooth_l1_with_beta_zero_is_l1():
    x, t = _data(np.float32), _data(np.float32, seed=1)
    out, (g,) = _compare(lambda a, b: F.smooth_l1_loss(a, b, beta=0.0), x, t)
    assert out.grad_fn.name() == "MeanBackward0"
    np.testing.assert_allclose(out.item(), np.abs(x - t).mean(), rtol=1e-5)


def test_smooth_l1_propagates_nan_and_broadcasts_the_target():
    x = _data(np.float32)
    x[3, 5] = np.nan
    t = _data(np.float32, seed=1)[:1]  # one row, broadcast over the batch (torch warns)
    with pytest.warns(UserWarning, match="target size"):
        out, (g,) = _compare(lambda a, b: F.smooth_l1_loss(a, b, reduction="none"), x, t)
    assert np.isnan(out.detach().numpy()[3, 5]) and np.isnan(g.numpy()[3, 5])
    assert np.isfinite(np.delete(g.numpy().reshape(-1), 3 * 1024 + 5)).all()


def test_smooth_l1_double_backward_takes_the_formula():
    x, t = _data(np.float64), _data(np.float64, seed=1)
    fn = lambda a, b: F.smooth_l1_loss(a, b, beta=0.5)
    out, (g,), (xt, _) = _run(fn, x, t, create_graph=True)
    assert g.requires_grad
    (gg,) = ember.autograd.grad((g * g).sum(), [xt])
    with jit.disabled():
        _, (g_ref,), (x_ref, _) = _run(fn, x, t, create_graph=True)
        (gg_ref,) = ember.autograd.grad((g_ref * g_ref).sum(), [x_ref])
    np.testing.assert_allclose(gg.numpy(), gg_ref.numpy(), rtol=1e-12, atol=1e-18)


# --- binary cross-entropy on logits ------------------------------------------------------------


def _targets(dtype, seed=2, soft=False):
    rng = np.random.default_rng(seed)
    return (rng.random(SHAPE) if soft else (rng.random(SHAPE) > 0.5)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("soft", [False, True])
def test_bce_with_logits_matches_the_numpy_path(dtype, reduction, soft):
    x, t = _data(dtype, scale=6.0), _targets(dtype, soft=soft)
    x[0, :4] = [100.0, -100.0, 0.0, -0.0]  # saturated and zero logits
    fn = lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction)
    _compare(fn, x, t, grads=(0, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_bce_with_logits_weights_match_the_numpy_path(dtype, reduction):
    x, t = _data(dtype, scale=4.0), _targets(dtype)
    rng = np.random.default_rng(5)
    weight = ember.tensor(rng.random(SHAPE[1]).astype(dtype))  # broadcast over the rows
    pos_weight = ember.tensor((rng.random(SHAPE[1]) * 3).astype(dtype))
    for w, pw in ((weight, None), (None, pos_weight), (weight, pos_weight)):
        fn = lambda a, b, w=w, pw=pw: F.binary_cross_entropy_with_logits(
            a, b, weight=w, pos_weight=pw, reduction=reduction
        )
        _compare(fn, x, t)


def test_bce_with_logits_propagates_nan():
    x, t = _data(np.float32), _targets(np.float32)
    x[7, 9] = np.nan
    out, (g,) = _compare(
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction="none"), x, t
    )
    assert np.isnan(out.detach().numpy()[7, 9]) and np.isnan(g.numpy()[7, 9])


def test_bce_with_logits_double_backward_takes_the_formula():
    x, t = _data(np.float32), _targets(np.float32)
    fn = F.binary_cross_entropy_with_logits
    _, (g,), (xt, _) = _run(fn, x, t, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), [xt])
    with jit.disabled():
        _, (g_ref,), (x_ref, _) = _run(fn, x, t, create_graph=True)
        (gg_ref,) = ember.autograd.grad(g_ref.sum(), [x_ref])
    np.testing.assert_allclose(gg.numpy(), gg_ref.numpy(), rtol=1e-5, atol=1e-12)


# --- cross-entropy -----------------------------------------------------------------------------


def _labels(seed=3, classes=SHAPE[1]):
    return np.random.default_rng(seed).integers(0, classes, SHAPE[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 3, "present"])
def test_cross_entropy_matches_the_numpy_path(dtype, reduction, ignore_index):
    x, y = _data(dtype, scale=4.0), _labels()
    if ignore_index == "present":  # some targets are ignored
        ignore_index = int(y[0])
    fn = lambda a, b: F.cross_entropy(a, b, reduction=reduction, ignore_index=ignore_index)
    out, _ = _compare(fn, x, y)
    assert out.grad_fn.name() == "NllLossBackward0"
    assert out.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_options_match_the_numpy_path(dtype):
    x, y = _data(dtype, scale=4.0), _labels()
    weight = ember.tensor(np.random.default_rng(4).random(SHAPE[1]).astype(dtype))
    probs = np.random.default_rng(6).random(SHAPE).astype(dtype)
    probs /= probs.sum(1, keepdims=True)
    cases = [
        (lambda a, b: F.cross_entropy(a, b, weight=weight), y),
        (lambda a, b: F.cross_entropy(a, b, label_smoothing=0.1, ignore_index=int(y[0])), y),
        (lambda a, b: F.cross_entropy(a, b, weight=weight, label_smoothing=0.2), y),
        (lambda a, b: F.cross_entropy(a, b), probs),
        (lambda a, b: F.cross_entropy(a, b, label_smoothing=0.3, reduction="sum"), probs),
    ]
    for fn, target in cases:
        _compare(fn, x, target)


def test_cross_entropy_rows_of_infinities_take_the_general_path():
    x, y = _data(np.float32), _labels()
    x[2, 10] = -np.inf  # a finite maximum: the kernel, e^-inf = 0
    x[5, :] = -np.inf  # no finite maximum: NaN as torch, by the general path
    out, (g,) = _compare(lambda a, b: F.cross_entropy(a, b, reduction="none"), x, y)
    assert np.isnan(out.detach().numpy()[5]) and np.isfinite(out.detach().numpy()[2])
    assert g.numpy()[2, 10] == 0


def test_cross_entropy_double_backward_takes_the_formula():
    x, y = _data(np.float64), _labels()
    fn = lambda a, b: F.cross_entropy(a, b)
    _, (g,), (xt, _) = _run(fn, x, y, create_graph=True)
    (gg,) = ember.autograd.grad((g * g).sum(), [xt])
    with jit.disabled():
        _, (g_ref,), (x_ref, _) = _run(fn, x, y, create_graph=True)
        (gg_ref,) = ember.autograd.grad((g_ref * g_ref).sum(), [x_ref])
    np.testing.assert_allclose(gg.numpy(), gg_ref.numpy(), rtol=1e-10, atol=1e-20)


def test_cross_entropy_output_modified_in_place_raises():
    x, y = _data(np.float32), _labels()
    xt = ember.tensor(x, requires_grad=True)
    loss = F.cross_entropy(xt, ember.tensor(y), reduction="none")
    node = loss.grad_fn.next_functions[0][0]
    assert node.name() == "LogSoftmaxBackward0"
    node._saved_result.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.sum().backward()


# --- torch -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_losses_agree_with_torch(dtype):
    torch = pytest.importorskip("torch")
    x, t, y = _data(dtype, scale=4.0), _targets(dtype), _labels()
    cases = [
        ("smooth_l1_loss", lambda m, a: m.nn.functional.smooth_l1_loss(a, a.detach() * 0.5)),
        (
            "smooth_l1_loss",
            lambda m, a: m.nn.functional.smooth_l1_loss(a, m.tensor(t), beta=0.5, reduction="none"),
        ),
        (
            "bce",
            lambda m, a: m.nn.functional.binary_cross_entropy_with_logits(a, m.tensor(t)),
        ),
        ("ce", lambda m, a: m.nn.functional.cross_entropy(a, m.tensor(y), ignore_index=3)),
        (
            "ce",
            lambda m, a: m.nn.functional.cross_entropy(
                a, m.tensor(y), label_smoothing=0.1, reduction="sum"
            ),
        ),
    ]
    single = dtype == np.float32
    for _, fn in cases:
        got = []
        for m in (ember, torch):
            a = m.tensor(x, requires_grad=True)
            out = fn(m, a)
            out.sum().backward()
            got.append((out.detach().numpy(), a.grad.numpy(), str(out.dtype).split(".")[-1]))
        (e_out, e_grad, e_dtype), (t_out, t_grad, t_dtype) = got
        assert e_dtype == t_dtype
        np.testing.assert_allclose(e_out, t_out, rtol=1e-5 if single else 1e-12, atol=1e-6)
        np.testing.assert_allclose(e_grad, t_grad, rtol=1e-4 if single else 1e-10, atol=1e-8)
