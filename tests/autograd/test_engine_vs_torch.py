"""Autograd behaviours run as the same code on ember and on real torch: the results agree."""

import numpy as np
import pytest

import ember


def hooks_and_retain_grad(m):
    calls = []
    x = m.tensor([1.0, -2.0, 3.0], dtype=m.float64, requires_grad=True)
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: calls.append(("h", g.tolist())) or g * 3)
    x.register_hook(lambda g: calls.append(("x", g.tolist())))
    (h.sin() * h).sum().backward()
    return calls, h.grad.tolist(), x.grad.tolist()


def third_order(m):
    x = m.tensor([0.5, 1.5], dtype=m.float64, requires_grad=True)
    y = (x.exp() * x.sin()).sum()
    (g1,) = m.autograd.grad(y, x, create_graph=True)
    (g2,) = m.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = m.autograd.grad(g2.sum(), x)
    return g1.tolist(), g2.tolist(), g3.tolist()


def accumulation_and_inputs(m):
    a = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    b = m.tensor([3.0, 4.0], dtype=m.float64, requires_grad=True)
    (a * b).sum().backward()
    (a * a * b).sum().backward(inputs=[b])
    return a.grad.tolist(), b.grad.tolist()


def grad_of_intermediate_and_diamond(m):
    x = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64, requires_grad=True)
    h = x.tanh()
    y = (h @ h.T).sum() + (h * x).mean()
    gh, gx = m.autograd.grad(y, [h, x], retain_graph=True)
    y.backward()
    return gh.tolist(), gx.tolist(), x.grad.tolist()


def broadcast_and_dtype(m):
    a = m.ones(3, 1, dtype=m.float32, requires_grad=True)
    b = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    (a * b).pow(2).sum().backward()
    return str(a.grad.dtype).split(".")[-1], a.grad.tolist(), b.grad.tolist()


def modifying_a_saved_view_is_refused(m):
    x = m.tensor([1.0, 2.0, 3.0, 4.0], dtype=m.float64, requires_grad=True)
    y = x.clone()
    y[1:3] = y[1:3] * y[0]  # saves the view y[0], then writes y
    try:
        y.sum().backward()
    except RuntimeError as exc:
        return "modified by an inplace operation" in str(exc)
    return False


def views_and_setitem(m):
    x = m.tensor([1.0, 2.0, 3.0, 4.0], dtype=m.float64, requires_grad=True)
    y = x.clone()
    y[1:3] = y[1:3] * 3.0
    y.view(2, 2)[1].mul_(x[0] * 2)
    y.sum().backward()
    return y.tolist(), x.grad.tolist()


def custom_function_and_no_grad(m):
    class Clip(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(-1, 1)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x.abs() <= 1)

    x = m.tensor([-2.0, 0.5, 3.0], dtype=m.float64, requires_grad=True)
    with m.no_grad():
        frozen = x * 10
    (Clip.apply(x) * frozen).sum().backward()
    return frozen.requires_grad, x.grad.tolist()


def batched_grad_outputs(m):
    x = m.tensor([1.0, -2.0, 3.0], dtype=m.float64, requires_grad=True)
    unused = m.tensor([1.0], dtype=m.float64, requires_grad=True)
    jac, none = m.autograd.grad(
        (x * x,), (x, unused), m.eye(3, dtype=m.float64), is_grads_batched=True, allow_unused=True
    )
    (rows,) = m.autograd.grad(x.sin().sum(), x, m.tensor([1.0, 2.0]), is_grads_batched=True)
    return none is None, rows.tolist(), jac.tolist()


SCENARIOS = [
    hooks_and_retain_grad,
    third_order,
    accumulation_and_inputs,
    grad_of_intermediate_and_diamond,
    broadcast_and_dtype,
    views_and_setitem,
    modifying_a_saved_view_is_refused,
    custom_function_and_no_grad,
    batched_grad_outputs,
]


def _close(a, b):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-9)
    else:
        assert a == b


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_autograd_behaviour_matches_torch(scenario, torch_mod):
    _close(scenario(ember), scenario(torch_mod))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_autograd_behaviour_runs_without_torch(scenario):
    out = scenario(ember)
    assert out is True or np.all(np.isfinite(np.asarray(out[-1], dtype=float)))
