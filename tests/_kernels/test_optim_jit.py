"""The compiled Adam/AdamW update against the NumPy ``adam_step`` and against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember.optim._fused import Scratch, adam_step

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="numba kernels are off")

# multiples of OpenBLAS's axpy blocks, others (whose last elements it rounds without a fused
# multiply-add: the kernel follows), 0, and a size split over two threads
SIZES = (0, 1, 7, 33, 128, 1000, 96 * 128, 140001)
CASES = [
    # weight_decay, decoupled, maximize, amsgrad, betas
    (0.0, False, False, False, (0.9, 0.999)),
    (0.01, False, False, False, (0.9, 0.999)),
    (0.01, True, False, False, (0.9, 0.999)),
    (0.1, True, True, True, (0.9, 0.99)),
    (0.05, False, True, True, (0.3, 0.5)),  # 1 - β1 >= 0.5: lerp's other branch
    (0.0, False, False, True, (0.0, 0.0)),
]


def _arrays(size, dtype, seed):
    rng = np.random.default_rng(seed)
    p = rng.standard_normal(size).astype(dtype)
    grads = [rng.standard_normal(size).astype(dtype) for _ in range(4)]
    return p, grads


def _numpy_steps(p, grads, lr, eps, case):
    """``adam_step`` (the NumPy path) with a state as ``Adam.step`` keeps it."""
    weight_decay, decoupled, maximize, amsgrad, betas = case
    param = ember.tensor(p.copy())
    state = {"exp_avg": ember.zeros_like(param), "exp_avg_sq": ember.zeros_like(param)}
    if amsgrad:
        state["max_exp_avg_sq"] = ember.zeros_like(param)
    group = {
        "betas": betas,
        "eps": eps,
        "weight_decay": weight_decay,
        "maximize": maximize,
        "amsgrad": amsgrad,
        "decoupled_weight_decay": decoupled,
    }
    scratch = Scratch()
    for step, g in enumerate(grads, 1):
        state["step"] = ember.tensor(float(step))
        assert adam_step(param, (param._data, g), state, group, lr, scratch)
    moments = [state["exp_avg"], state["exp_avg_sq"]] + (
        [state["max_exp_avg_sq"]] if amsgrad else []
    )
    return [param.numpy()] + [t.numpy() for t in moments]


def _kernel_steps(p, grads, lr, eps, case):
    weight_decay, decoupled, maximize, amsgrad, betas = case
    k = jit.module("optim_jit")
    p = p.copy()
    m, v = np.zeros_like(p), np.zeros_like(p)
    v_max = np.zeros_like(p) if amsgrad else None
    for step, g in enumerate(grads, 1):
        k.adam_update(
            p,
            g,
            m,
            v,
            v_max,
            lr=lr,
            beta1=betas[0],
            beta2=betas[1],
            eps=eps,
            weight_decay=weight_decay,
            decoupled=decoupled,
            maximize=maximize,
            step=float(step),
        )
    return [p, m, v] + ([v_max] if amsgrad else [])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_adam_update_equals_numpy_adam_step_to_the_bit(dtype, case):
    for size in SIZES:
        p, grads = _arrays(size, dtype, size)
        expected = _numpy_steps(p, grads, 1e-2, 1e-8, case)
        got = _kernel_steps(p, grads, 1e-2, 1e-8, case)
        for e, k in zip(expected, got):
            assert k.dtype == e.dtype and k.shape == e.shape
            np.testing.assert_array_equal(k, e)


def test_adam_update_rejects_mismatched_or_strided_arrays():
    k = jit.module("optim_jit")
    p = np.zeros(8, np.float32)
    options = dict(
        lr=1e-3,
        beta1=0.9,
        beta2=0.999,
        eps=1e-8,
        weight_decay=0.0,
        decoupled=False,
        maximize=False,
        step=1.0,
    )
    with pytest.raises(ValueError, match="C-contiguous 1-D"):
        k.adam_update(p, np.zeros(7, np.float32), p.copy(), p.copy(), None, **options)
    with pytest.raises(ValueError, match="C-contiguous 1-D"):
        k.adam_update(p, np.zeros(16, np.float32)[::2], p.copy(), p.copy(), None, **options)
    with pytest.raises(ValueError, match="C-contiguous 1-D"):
        k.adam_update(p, p.astype(np.float64), p.copy(), p.copy(), None, **options)


def test_adam_update_propagates_nan_like_numpy():
    p, grads = _arrays(64, np.float32, 3)
    grads[1][5] = np.nan
    grads[2][9] = np.inf
    case = (0.01, True, False, True, (0.9, 0.999))
    expected = _numpy_steps(p, grads, 1e-3, 1e-8, case)
    got = _kernel_steps(p, grads, 1e-3, 1e-8, case)
    for e, k in zip(expected, got):
        np.testing.assert_array_equal(k, e)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_update_matches_torch_adam(dtype, decoupled):
    torch = pytest.importorskip("torch")
    p, grads = _arrays(1003, dtype, 11)
    case = (0.01, decoupled, False, True, (0.9, 0.999))
    got = _kernel_steps(p, grads, 1e-2, 1e-8, case)
    param = torch.nn.Parameter(torch.from_numpy(p.copy()))
    kind = torch.optim.AdamW if decoupled else torch.optim.Adam
    optimizer = kind([param], lr=1e-2, weight_decay=0.01, amsgrad=True, foreach=False)
    for g in grads:
        param.grad = torch.from_numpy(g.copy())
        optimizer.step()
    state = optimizer.state[param]
    expected = [param.detach(), state["exp_avg"], state["exp_avg_sq"], state["max_exp_avg_sq"]]
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for e, k in zip(expected, got):
        np.testing.assert_allclose(k, e.numpy(), rtol=tolerance, atol=tolerance)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_compiled_adamw_step_replays_the_kernel_and_equals_eager(monkeypatch):
    if not jit.enabled():
        pytest.skip("compiled kernels are off (EMBER_JIT=0)")
    from ember.optim import _fused

    calls = []
    update = _fused._adam_update_into
    monkeypatch.setattr(
        _fused, "_adam_update_into", lambda *a, **k: calls.append(1) or update(*a, **k)
    )
    x, y = ember.randn(32, 8), ember.randn(32, 1)

    def trained(compiled: bool):
        ember.manual_seed(0)
        nn = ember.nn
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
        opt = ember.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)

        def step():
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        run = ember.compile(step) if compiled else step
        for _ in range(6):
            run()
        if compiled:  # the first steps record (the optimizer's state appears at step 1)
            assert run.replays >= 3 and run.fallbacks == 0
        return [p.detach().numpy().copy() for p in model.parameters()]

    eager = trained(False)
    eager_calls, calls[:] = len(calls), []
    compiled = trained(True)
    assert eager_calls == 6 * 4  # four parameters, six steps, one kernel call each
    assert len(calls) == 6 * 4  # every replay ran the recorded kernel call too
    for a, b in zip(eager, compiled):
        assert a.tobytes() == b.tobytes()
