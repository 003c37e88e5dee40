"""Shared checks for op tests: gradcheck in float64 and the same code run by ember and torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def arrays_for(shapes, low=-2.0, high=2.0, seed=0, avoid=None, gap=0.1):
    """Random float64 arrays; values within ``gap`` of any point in ``avoid`` are moved off."""
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        a = rng.uniform(low, high, size=shape)
        for point in avoid or ():
            close = np.abs(a - point) < gap
            # distinct new values: equal ones would make ties for max/min-like ops
            a[close] = point + np.sign(a[close] - point + 1e-12) * (
                gap * (1.1 + rng.uniform(0, 1, size=int(close.sum())))
            )
        out.append(a)
    return out


def to_ember(arrays, noncontiguous=False, requires_grad=True):
    result = []
    for a in arrays:
        if noncontiguous and a.ndim >= 2:
            t = ember.tensor(np.ascontiguousarray(a.swapaxes(0, 1)), requires_grad=requires_grad)
            t = t.detach().transpose(0, 1).requires_grad_(requires_grad)
            assert not t.is_contiguous()
        else:
            t = ember.tensor(a, requires_grad=requires_grad)
        result.append(t)
    return result


def check_gradients(fn, arrays, *, gradgrad=True, noncontiguous=False, atol=1e-5, rtol=1e-3):
    """float64 gradcheck (and gradgradcheck) of ``fn(ember, *tensors)``."""
    inputs = to_ember(arrays, noncontiguous)
    f = lambda *xs: fn(ember, *xs)
    assert ember.autograd.gradcheck(f, tuple(inputs), atol=atol, rtol=rtol)
    if gradgrad:
        assert ember.autograd.gradgradcheck(f, tuple(inputs), atol=atol, rtol=rtol)


def _outputs(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def compare_with_torch(fn, arrays, *, grad=True, atol=1e-7, rtol=1e-6, dtype=np.float64):
    """Run ``fn`` on ember and on torch over the same data: values, dtypes and gradients agree.

    Without torch the calling test is skipped here (after the checks it made before), so a
    comparison never passes without having run."""
    if torch is None:
        pytest.skip("torch is not installed: the comparison with torch did not run")
    e_in = [
        ember.tensor(a.astype(dtype), requires_grad=grad and a.dtype.kind == "f") for a in arrays
    ]
    t_in = [
        torch.tensor(a.astype(dtype), requires_grad=grad and a.dtype.kind == "f") for a in arrays
    ]
    e_out, t_out = _outputs(fn(ember, *e_in)), _outputs(fn(torch, *t_in))
    assert len(e_out) == len(t_out)
    for e, t in zip(e_out, t_out):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(
            e.detach().numpy(), t.detach().numpy(), atol=atol, rtol=rtol, equal_nan=True
        )
    if not grad:
        return
    pairs = [(e, t) for e, t in zip(e_out, t_out) if t.requires_grad]
    if not pairs:
        return
    rng = np.random.default_rng(1)
    seeds = [rng.standard_normal(tuple(t.shape)) for _, t in pairs]
    e_leaves = [x for x in e_in if x.requires_grad]
    t_leaves = [x for x in t_in if x.requires_grad]
    e_grads = ember.autograd.grad(
        [e for e, _ in pairs],
        e_leaves,
        [ember.tensor(s, dtype=e.dtype) for s, (e, _) in zip(seeds, pairs)],
        allow_unused=True,
    )
    t_grads = torch.autograd.grad(
        [t for _, t in pairs],
        t_leaves,
        [torch.tensor(s, dtype=t.dtype) for s, (_, t) in zip(seeds, pairs)],
        allow_unused=True,
    )
    for eg, tg in zip(e_grads, t_grads):
        if tg is None:
            assert eg is None or not np.any(eg.numpy())
            continue
        assert eg is not None
        np.testing.assert_allclose(
            eg.numpy(), tg.numpy(), atol=atol * 10, rtol=rtol * 10, equal_nan=True
        )
