"""LBFGS against PyTorch's: the same iterates with and without the strong-Wolfe search."""

import numpy as np
import pytest

import ember
from ember.optim.lbfgs import _cubic_interpolate


def _rosenbrock_run(m, steps=3, **kwargs):
    x = m.tensor([-1.5, 2.0, 0.5], dtype=m.float64, requires_grad=True)
    y = m.tensor([0.3], dtype=m.float64, requires_grad=True)
    opt = m.optim.LBFGS([x, y], **kwargs)
    losses = []

    def closure():
        opt.zero_grad()
        loss = (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum() + (
            (y - x[0]) ** 2
        ).sum()
        loss.backward()
        return loss

    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
    state = opt.state[x]
    return x.detach().numpy(), y.detach().numpy(), losses, state["func_evals"], state["n_iter"]


LBFGS_CASES = {
    # without a line search the Rosenbrock iterates are chaotic: rounding differences in
    # dot products grow, so the plain case runs fewer iterations
    "default": dict(max_iter=12),
    "strong_wolfe": dict(line_search_fn="strong_wolfe"),
    "short_history": dict(history_size=2, max_iter=7, lr=0.5),
    "wolfe_short_history": dict(line_search_fn="strong_wolfe", history_size=3, max_iter=10),
    "tolerances": dict(tolerance_grad=1e-3, tolerance_change=1e-4, max_eval=15),
}


@pytest.mark.parametrize("case", sorted(LBFGS_CASES))
def test_lbfgs_iterates_equal_torch(case, torch_mod):
    kwargs = LBFGS_CASES[case]
    xe, ye, le, fe, ne = _rosenbrock_run(ember, **kwargs)
    xt, yt, lt, ft, nt = _rosenbrock_run(torch_mod, **kwargs)
    np.testing.assert_allclose(xe, xt, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ye, yt, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(le, lt, rtol=1e-9, atol=1e-12)
    assert (fe, ne) == (ft, nt)


def test_lbfgs_with_strong_wolfe_solves_rosenbrock():
    x, y, losses, _, _ = _rosenbrock_run(ember, steps=5, line_search_fn="strong_wolfe")
    assert losses[-1] < 1e-8
    np.testing.assert_allclose(x, [1.0, 1.0, 1.0], atol=1e-5)
    np.testing.assert_allclose(y, [1.0], atol=1e-5)


def test_lbfgs_stops_at_once_when_the_gradient_is_tiny():
    p = ember.tensor([0.0], requires_grad=True)
    opt = ember.optim.LBFGS([p])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (p**2).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 0.0
    assert len(calls) == 1 and p.tolist() == [0.0]


def test_lbfgs_rejects_groups_and_unknown_line_search():
    a, b = ember.ones(1, requires_grad=True), ember.ones(1, requires_grad=True)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        ember.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    opt = ember.optim.LBFGS([a], line_search_fn="armijo")
    a.grad = ember.ones(1)
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(lambda: (a * 1).sum())


def test_cubic_interpolate_finds_the_cubic_minimum():
    # f(x) = x³ - 3x has its local minimum at x = 1
    f = lambda x: x**3 - 3 * x  # noqa: E731
    g = lambda x: 3 * x**2 - 3  # noqa: E731
    assert _cubic_interpolate(0.0, f(0.0), g(0.0), 2.0, f(2.0), g(2.0)) == pytest.approx(1.0)
    # no real minimiser: the midpoint of the bounds
    assert _cubic_interpolate(0.0, 0.0, 3.0, 1.0, 2.0, 3.0, bounds=(0.0, 4.0)) == 2.0


@pytest.mark.parametrize("lr", [1.0, "tensor"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_state_holds_tensors_where_torch_does(torch_mod, lr, dtype):
    # torch keeps ro, al, H_diag (and t for a tensor lr) as 0-d tensors of the params' dtype
    layouts, values = [], []
    for m in (ember, torch_mod):
        x = m.tensor([-1.5, 2.0, 0.5], dtype=getattr(m, dtype), requires_grad=True)
        opt = m.optim.LBFGS([x], lr=m.tensor(0.5) if lr == "tensor" else lr, max_iter=5)

        def closure():
            opt.zero_grad()
            loss = ((x[1:] - x[:-1] ** 2) ** 2).sum() + ((1 - x) ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        opt.step(closure)
        state = opt.state_dict()["state"][0]
        layout = {}
        for key, value in state.items():
            items = value if isinstance(value, list) else [value]
            layout[key] = [
                (type(v).__name__, str(v.dtype).split(".")[-1], tuple(v.shape))
                if hasattr(v, "dtype")
                else type(v).__name__
                for v in items
            ]
        layouts.append(layout)
        values.append(x.detach().double().numpy())
    assert layouts[0] == layouts[1]
    np.testing.assert_allclose(values[0], values[1], rtol=1e-4 if dtype == "float32" else 1e-9)
