"""ember.func with nested arguments (dicts of parameters, as with functional_call)."""

import numpy as np
import pytest

import ember
from ember import func, nn
from ember.func import functional_call, grad, grad_and_value


def test_grad_of_a_dict_of_parameters_has_the_dict_structure():
    ember.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = ember.randn(4, 3), ember.randn(4, 2)
    params = {k: p.detach() for k, p in model.named_parameters()}
    loss_of = lambda p: nn.functional.mse_loss(functional_call(model, p, (x,)), y)
    grads = grad(loss_of)(params)
    assert sorted(grads) == ["bias", "weight"]
    nn.functional.mse_loss(model(x), y).backward()
    np.testing.assert_allclose(grads["weight"].numpy(), model.weight.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(grads["bias"].numpy(), model.bias.grad.numpy(), rtol=1e-6)


def test_grad_and_value_of_nested_lists_and_tuples():
    a, b, c = ember.tensor([1.0, 2.0]), ember.tensor(3.0), ember.tensor([4.0])
    f = lambda tree: (tree[0] ** 2).sum() + tree[1][0] * tree[1][1].sum()
    g, value = grad_and_value(f)([a, (b, c)])
    assert float(value) == 5.0 + 12.0
    assert isinstance(g, list) and isinstance(g[1], tuple)
    assert g[0].tolist() == [2.0, 4.0] and float(g[1][0]) == 4.0 and g[1][1].tolist() == [3.0]


def test_grad_matches_torch_func_on_a_dict(torch_mod):
    torch = torch_mod
    data = {"w": np.array([1.0, -2.0]), "b": np.array(0.5)}
    f = lambda m, p: (m.tanh(p["w"]) * p["b"]).sum()
    ours = grad(lambda p: f(ember, p))({k: ember.tensor(v) for k, v in data.items()})
    theirs = torch.func.grad(lambda p: f(torch, p))({k: torch.tensor(v) for k, v in data.items()})
    for k in data:
        np.testing.assert_allclose(ours[k].numpy(), theirs[k].numpy(), rtol=1e-12)


def test_hessian_result_carries_no_graph_like_torch_func():
    from ember.func import hessian

    h = hessian(lambda v: (v**3).sum())(ember.tensor([1.0, 2.0]))
    assert h.grad_fn is None and not h.requires_grad
    assert h.tolist() == [[6.0, 0.0], [0.0, 12.0]]


def test_jacrev_with_aux_returns_the_aux_as_torch(torch_mod):
    def f(m):
        return lambda x: (x.sin() * 2, x.cos().sum())

    e_jac, e_aux = ember.func.jacrev(f(ember), has_aux=True)(ember.tensor([1.0, 2.0]))
    t_jac, t_aux = torch_mod.func.jacrev(f(torch_mod), has_aux=True)(torch_mod.tensor([1.0, 2.0]))
    np.testing.assert_allclose(e_jac.numpy(), t_jac.numpy(), rtol=1e-6)
    assert e_aux.item() == pytest.approx(t_aux.item())


def test_transforms_nest_over_grad_as_torch_func():
    """grad inside grad, vjp, jvp, jacrev and jacfwd: the inner gradient keeps its graph when
    an outer transform tracks its input (for f = Σ w³: H = diag(6w))."""
    f = lambda w: (w * w * w).sum()  # noqa: E731
    w = ember.tensor([1.0, 2.0, 3.0])
    v = ember.tensor([1.0, 0.0, 1.0])
    hv = [6.0, 0.0, 18.0]
    assert func.jvp(func.grad(f), (w,), (v,))[1].tolist() == hv
    assert func.vjp(func.grad(f), w)[1](v)[0].tolist() == hv
    assert func.grad(lambda x: func.grad(f)(x).sum())(w).tolist() == [6.0, 12.0, 18.0]
    assert func.grad(lambda x: func.vjp(f, x)[1](ember.tensor(1.0))[0].sum())(w).tolist() == [
        6.0,
        12.0,
        18.0,
    ]
    for jac in (func.jacrev, func.jacfwd):
        np.testing.assert_array_equal(jac(func.grad(f))(w).numpy(), np.diag([6.0, 12.0, 18.0]))
    # the inner derivative counts only uses through its argument, not the outer closure's
    inner = lambda x: func.grad(lambda y: (x * y).sum())(x).sum()  # noqa: E731
    assert func.grad(inner)(w).tolist() == [1.0, 1.0, 1.0]


def test_grad_of_an_input_that_requires_grad_stays_differentiable():
    f = lambda w: (w * w * w).sum()  # noqa: E731
    plain = func.grad(f)(ember.tensor([1.0, 2.0]))
    assert not plain.requires_grad
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    g = func.grad(f)(w)
    assert g.requires_grad
    g.sum().backward()
    assert w.grad.tolist() == [6.0, 12.0]
