"""ember.autograd.functional and ember.func against torch.autograd.functional / torch.func."""

import numpy as np
import pytest

import ember


def _f(m):
    return lambda x, y: (x.sin() * y.exp()).sum() + (x * x * y).sum()


def _g(m):
    return lambda x: m.stack([x.exp().sum(), (x * x).prod(), x[0] * x[1]])


def _to(m, arrays):
    return tuple(m.tensor(a, dtype=m.float64) for a in arrays)


X, Y, V = np.array([0.3, -0.7, 1.1]), np.array([0.5, 0.2, -0.4]), np.array([1.0, -2.0, 0.5])


def _close(a, b):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for p, q in zip(a, b):
            _close(p, q)
    else:
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


CASES = {
    "jacobian": lambda m: m.autograd.functional.jacobian(_g(m), _to(m, [X])[0]),
    "jacobian_multi": lambda m: m.autograd.functional.jacobian(
        lambda x, y: x * y.sum(), _to(m, [X, Y])
    ),
    "hessian": lambda m: m.autograd.functional.hessian(_f(m), _to(m, [X, Y])),
    "hessian_single": lambda m: m.autograd.functional.hessian(
        lambda x: (x**3).sum() * x[0], _to(m, [X])[0]
    ),
    "vjp": lambda m: m.autograd.functional.vjp(_g(m), _to(m, [X])[0], _to(m, [V])[0]),
    "jvp": lambda m: m.autograd.functional.jvp(_g(m), _to(m, [X])[0], _to(m, [V])[0]),
    "hvp": lambda m: m.autograd.functional.hvp(_f(m), _to(m, [X, Y]), _to(m, [V, V])),
    "vhp": lambda m: m.autograd.functional.vhp(_f(m), _to(m, [X, Y]), _to(m, [V, Y])),
    "func_grad": lambda m: m.func.grad(_f(m), argnums=(0, 1))(*_to(m, [X, Y])),
    "func_grad_and_value": lambda m: m.func.grad_and_value(_f(m))(*_to(m, [X, Y])),
    "func_jacrev": lambda m: m.func.jacrev(_g(m))(_to(m, [X])[0]),
    "func_jacfwd": lambda m: m.func.jacfwd(_g(m))(_to(m, [X])[0]),
    "func_hessian": lambda m: m.func.hessian(lambda x: (x.sin() * x).sum())(_to(m, [X])[0]),
    "func_jvp": lambda m: m.func.jvp(lambda x: x.exp() * x, _to(m, [X]), _to(m, [V])),
    "func_vjp": lambda m: m.func.vjp(lambda x: x.exp() * x, _to(m, [X])[0])[1](_to(m, [V])[0]),
    "func_vmap": lambda m: m.func.vmap(lambda a, b: (a * b).sum())(
        *_to(m, [np.arange(6.0).reshape(3, 2), np.ones((3, 2))])
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_matches_torch(name, torch_mod):
    _close(CASES[name](ember), CASES[name](torch_mod))


@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_runs_without_torch(name):
    assert CASES[name](ember) is not None


def test_hessian_known_value():
    h = ember.autograd.functional.hessian(lambda x: (x**3).sum(), ember.tensor([1.0, 2.0]))
    np.testing.assert_allclose(h.numpy(), [[6.0, 0.0], [0.0, 12.0]])


def test_functional_call_swaps_parameters_and_restores_them(torch_mod):
    lin = ember.nn.Linear(2, 1)
    original = lin.weight
    out = ember.func.functional_call(
        lin, {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}, (ember.tensor([[2.0, 3.0]]),)
    )
    assert out.item() == 5.0 and lin.weight is original


def test_strict_mode_reports_independent_inputs():
    with pytest.raises(RuntimeError, match="independent of input 1"):
        ember.autograd.functional.jacobian(
            lambda x, y: x * 2, (ember.ones(2), ember.ones(2)), strict=True
        )
