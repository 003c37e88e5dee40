"""The compiled batch norm (``ember._kernels.normalization_jit``) against the NumPy path and
PyTorch: outputs, statistics, running statistics and gradients, training and evaluation."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember.autograd import gradcheck, gradgradcheck

pytest.importorskip("numba")

F = ember.nn.functional


# rows (S) of 16 and more take the kernel; shorter ones the NumPy path (SHORT_ROWS)
@pytest.fixture(autouse=True)
def kernels_for_small_arrays(monkeypatch):
    """The kernels for these small test arrays too (they start at jit.MIN_WORK elements)."""
    monkeypatch.setattr(jit, "MIN_WORK", 1)


SHAPES = [(5, 3), (4, 3, 17), (3, 5, 6, 7), (2, 3, 4, 3, 5), (2, 2, 4, 4), (1, 1, 16)]
DTYPES = ["float32", "float64"]


def _run(x_np, g_np, training, affine, dtype, permuted=False, disabled=False):
    """Forward and backward of F.batch_norm; every array that comes out, as NumPy."""
    channels = x_np.shape[1]
    rng = np.random.default_rng(7)
    x = ember.tensor(x_np.astype(dtype))
    if permuted:  # the same values, as a non-contiguous view
        x = ember.tensor(np.ascontiguousarray(np.swapaxes(x_np, 0, -1)).astype(dtype))
        x = x.transpose(0, -1)
    x.requires_grad_(True)
    w = ember.tensor(rng.uniform(0.5, 1.5, channels).astype(dtype), requires_grad=True)
    b = ember.tensor(rng.uniform(-0.5, 0.5, channels).astype(dtype), requires_grad=True)
    running_mean = ember.tensor(rng.standard_normal(channels).astype(dtype))
    running_var = ember.tensor(rng.uniform(0.5, 2.0, channels).astype(dtype))

    def go():
        out = F.batch_norm(
            x,
            running_mean,
            running_var,
            w if affine else None,
            b if affine else None,
            training=training,
            momentum=0.1,
            eps=1e-5,
        )
        out.backward(ember.tensor(g_np.astype(dtype)))
        return out

    if disabled:
        with jit.disabled():
            out = go()
    else:
        out = go()
    arrays = [out.detach().numpy(), x.grad.numpy(), running_mean.numpy(), running_var.numpy()]
    if affine:
        arrays += [w.grad.numpy(), b.grad.numpy()]
    return arrays


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("training", [True, False])
def test_kernel_matches_numpy_path(shape, dtype, training):
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal(shape) * 3 + 1, rng.standard_normal(shape)
    tol = 2e-5 if dtype == "float32" else 1e-12
    for affine, permuted in ((True, False), (False, True)):
        fast = _run(x, g, training, affine, dtype, permuted)
        slow = _run(x, g, training, affine, dtype, permuted, disabled=True)
        for a, b in zip(fast, slow):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("training", [True, False])
def test_kernel_matches_torch(training):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    shape = (6, 5, 9, 7)
    x, g = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape)
    ours = _run(x, g, training, True, "float32")
    channels = shape[1]
    rng = np.random.default_rng(7)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(rng.uniform(0.5, 1.5, channels).astype(np.float32), requires_grad=True)
    tb = torch.tensor(rng.uniform(-0.5, 0.5, channels).astype(np.float32), requires_grad=True)
    rm = torch.tensor(rng.standard_normal(channels).astype(np.float32))
    rv = torch.tensor(rng.uniform(0.5, 2.0, channels).astype(np.float32))
    out = torch.nn.functional.batch_norm(tx, rm, rv, tw, tb, training, 0.1, 1e-5)
    out.backward(torch.tensor(g.astype(np.float32)))
    theirs = [out.detach(), tx.grad, rm, rv, tw.grad, tb.grad]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-4, atol=1e-4)


def test_short_rows_take_the_numpy_path_and_long_ones_the_kernel(monkeypatch):
    from ember._kernels import normalization_jit

    calls = []
    original = normalization_jit.batch_norm_forward

    def counting(*args):
        calls.append(args[0].shape)
        return original(*args)

    monkeypatch.setattr(normalization_jit, "batch_norm_forward", counting)
    F.batch_norm(ember.randn(8, 3), None, None, training=True)
    F.batch_norm(ember.randn(2, 3, 16), None, None, training=True)
    assert calls == [(2, 3, 16)]


def test_small_batch_norms_keep_to_numpy(monkeypatch):
    from ember._kernels import normalization_jit

    monkeypatch.setattr(jit, "MIN_WORK", 1000)
    calls = []
    original = normalization_jit.batch_norm_forward

    def counting(*args):
        calls.append(args[0].shape)
        return original(*args)

    monkeypatch.setattr(normalization_jit, "batch_norm_forward", counting)
    F.batch_norm(ember.randn(2, 3, 16), None, None, training=True)  # 96 elements
    F.batch_norm(ember.randn(4, 10, 32), None, None, training=True)
    assert calls == [(4, 10, 32)]


def test_zero_size_batch_in_evaluation():
    x = ember.zeros(0, 3, 4)
    out = F.batch_norm(x, ember.zeros(3), ember.ones(3), training=False)
    assert tuple(out.shape) == (0, 3, 4)


@pytest.mark.parametrize("training", [True, False])
def test_gradcheck_and_gradgradcheck_float64(training):
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal((3, 2, 16)), requires_grad=True)
    w = ember.tensor(rng.uniform(0.5, 1.5, 2), requires_grad=True)
    b = ember.tensor(rng.uniform(-0.5, 0.5, 2), requires_grad=True)
    running_mean, running_var = (
        ember.zeros(2, dtype=ember.float64),
        ember.ones(2, dtype=ember.float64),
    )

    def fn(x, w, b):
        return F.batch_norm(x, running_mean, running_var, w, b, training=training, eps=1e-3)

    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


@pytest.mark.filterwarnings("ignore:ember.compile")  # the first call records again (no .grad)
def test_compiled_step_replays_the_kernels_equal_to_eager():
    rng = np.random.default_rng(4)
    x = ember.tensor(rng.standard_normal((4, 3, 20)).astype(np.float32))
    start = rng.uniform(0.5, 1.5, 3).astype(np.float32)

    def run(compiled: bool):
        bn = ember.nn.BatchNorm1d(3)
        with ember.no_grad():
            bn.weight.copy_(ember.tensor(start))
        opt = ember.optim.SGD(bn.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = (bn(x) * x).square().mean()
            loss.backward()
            opt.step()
            return loss

        fn = ember.compile(step) if compiled else step
        losses = [float(fn(x)) for _ in range(4)]
        return losses, bn.weight.detach().numpy().copy(), bn.running_var.numpy().copy(), fn

    eager, compiled = run(False), run(True)
    assert eager[0] == compiled[0]
    np.testing.assert_array_equal(eager[1], compiled[1])
    np.testing.assert_array_equal(eager[2], compiled[2])
    assert compiled[3].replays >= 2
