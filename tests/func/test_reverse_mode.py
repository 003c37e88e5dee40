"""ember.func's reverse mode (grad, grad_and_value, vjp, jacrev) over pytrees of tensors:
dict and tuple arguments, tuple argnums, has_aux, nesting, and torch.func's errors."""

import numpy as np
import pytest

import ember
from ember import func, nn
from ember.func import functional_call, grad, grad_and_value
from tests.func.trees import assert_same_tree, raised

W = np.array([0.5, -1.0, 2.0])
X = np.array([1.0, 2.0, -0.5])


def _params(m):
    return {"w": m.tensor(W), "b": m.tensor(0.25, dtype=m.float64)}


def _loss(m):
    return lambda p, x: (m.tanh(p["w"] * x) * p["b"]).sum() + (p["w"] ** 2).sum()


# --- grad and grad_and_value ------------------------------------------------------------------


def test_grad_of_a_dict_of_parameters_has_the_dict_structure():
    ember.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = ember.randn(4, 3), ember.randn(4, 2)
    params = {k: p.detach() for k, p in model.named_parameters()}

    def loss_of(p):
        return nn.functional.mse_loss(functional_call(model, p, (x,)), y)

    grads = grad(loss_of)(params)
    assert list(grads) == ["weight", "bias"]
    nn.functional.mse_loss(model(x), y).backward()
    np.testing.assert_allclose(grads["weight"].numpy(), model.weight.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(grads["bias"].numpy(), model.bias.grad.numpy(), rtol=1e-6)


def test_grad_and_value_of_nested_lists_and_tuples():
    a, b, c = ember.tensor([1.0, 2.0]), ember.tensor(3.0), ember.tensor([4.0])

    def f(tree):
        return (tree[0] ** 2).sum() + tree[1][0] * tree[1][1].sum()

    g, value = grad_and_value(f)([a, (b, c)])
    assert float(value) == 5.0 + 12.0
    assert isinstance(g, list) and isinstance(g[1], tuple)
    assert g[0].tolist() == [2.0, 4.0] and float(g[1][0]) == 4.0 and g[1][1].tolist() == [3.0]


def test_grad_of_a_dict_matches_torch_func(torch_mod):
    assert_same_tree(
        grad(_loss(ember))(_params(ember), ember.tensor(X)),
        torch_mod.func.grad(_loss(torch_mod))(_params(torch_mod), torch_mod.tensor(X)),
        rtol=1e-12,
    )


def test_grad_with_tuple_argnums_returns_a_tuple_of_gradients_each_shaped_as_its_argument():
    def f(p, x, pair):
        return (p["w"] * x).sum() * pair[0] + pair[1].sum()

    p, x = _params(ember), ember.tensor(X)
    pair = (ember.tensor(2.0, dtype=ember.float64), ember.tensor([1.0, 1.0], dtype=ember.float64))
    g_p, g_pair = grad(f, argnums=(0, 2))(p, x, pair)
    assert g_p["w"].tolist() == (2.0 * X).tolist() and float(g_p["b"]) == 0.0
    assert isinstance(g_pair, tuple) and float(g_pair[0]) == float((W * X).sum())
    assert g_pair[1].tolist() == [1.0, 1.0]
    # a negative argnum counts from the end, as a Python index
    assert grad(f, argnums=-2)(p, x, pair).tolist() == (2.0 * W).tolist()


def test_grad_with_tuple_argnums_matches_torch(torch_mod):
    def run(m):
        return m.func.grad_and_value(_loss(m), argnums=(1, 0))(_params(m), m.tensor(X))

    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


def test_grad_has_aux_returns_the_aux_pytree_detached_like_torch(torch_mod):
    def run(m):
        def f(p, x):
            y = p["w"] * x
            return y.sum(), {"y": y, "pair": (y.max(), p["b"] * 2)}

        return m.func.grad(f, has_aux=True)(_params(m), m.tensor(X))

    (g, aux) = run(ember)
    assert aux["y"].tolist() == (W * X).tolist() and not aux["y"].requires_grad
    assert g["w"].tolist() == X.tolist()
    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


def test_grad_and_value_with_aux_returns_value_and_aux_together(torch_mod):
    def run(m):
        return m.func.grad_and_value(lambda x: ((x**2).sum(), x.exp()), has_aux=True)(m.tensor(X))

    g, (value, aux) = run(ember)
    assert float(value) == float((X**2).sum()) and g.tolist() == (2 * X).tolist()
    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


GRAD_ERRORS = {
    "vector output": lambda m: m.func.grad(lambda x: x * 2)(m.tensor(X)),
    "non-tensor output": lambda m: m.func.grad(lambda x: 3.0)(m.tensor(X)),
    "repeated argnums": lambda m: m.func.grad(lambda x: x.sum(), argnums=(0, 0))(m.tensor(X)),
    "empty argnums": lambda m: m.func.grad(lambda x: x.sum(), argnums=())(m.tensor(X)),
    "argnum out of range": lambda m: m.func.grad(lambda x: x.sum(), argnums=2)(m.tensor(X)),
    "argnums a list": lambda m: m.func.grad(lambda x: x.sum(), argnums=[0])(m.tensor(X)),
    "non-tensor in a dict": lambda m: m.func.grad(lambda p: p["a"].sum())(
        {"a": m.tensor(X), "n": 3}
    ),
    "aux not a pair": lambda m: m.func.grad(lambda x: x.sum(), has_aux=True)(m.tensor(X)),
    "aux not tensors": lambda m: m.func.grad(lambda x: (x.sum(), 3), has_aux=True)(m.tensor(X)),
}


@pytest.mark.parametrize("case", sorted(GRAD_ERRORS))
def test_grad_raises_torchs_error(case, torch_mod):
    assert raised(lambda: GRAD_ERRORS[case](ember)) == raised(lambda: GRAD_ERRORS[case](torch_mod))


def test_grad_vjp_and_jacrev_ignore_an_enclosing_no_grad_as_torch_func_does():
    x = ember.tensor(X)
    with ember.no_grad():
        g = grad(lambda x: (x**2).sum())(x)
        _, vjp_fn = func.vjp(lambda x: x**2, x)
        (v,) = vjp_fn(ember.ones(3, dtype=ember.float64))
        jacobian = func.jacrev(lambda x: x**2)(x)
    assert g.tolist() == v.tolist() == (2 * X).tolist()
    np.testing.assert_array_equal(jacobian.numpy(), np.diag(2 * X))


def test_grad_of_a_vector_output_says_to_use_vjp_or_jacrev():
    with pytest.raises(RuntimeError, match="got tensor with 1 dims. Maybe you wanted to use"):
        grad(lambda x: x * 2)(ember.tensor(X))
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor"):
        grad(lambda p: p["a"].sum())({"a": ember.tensor(X), "n": 3})


def test_grad_through_a_closure_that_requires_grad_stays_differentiable_like_torch(torch_mod):
    """The closure's w is tracked outside the transform: the gradient (= w) and the value keep
    their graph to it, as torch's levels keep them."""

    def run(m):
        w = m.tensor(W, requires_grad=True)
        g, value = m.func.grad_and_value(lambda x: (x * w).sum() ** 2)(m.tensor(X))
        (g.sum() + value).backward()
        return g, value, w.grad

    g, value, w_grad = run(ember)
    assert g.requires_grad and value.requires_grad
    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


def test_the_value_of_an_inner_grad_and_value_is_differentiated_by_an_outer_grad(torch_mod):
    def run(m):
        def inner_value(x):
            return m.func.grad_and_value(lambda y: (y**3).sum())(x)[1]

        return m.func.grad(inner_value)(m.tensor(X))

    assert run(ember).tolist() == (3 * X**2).tolist()
    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


def test_transforms_nest_over_grad_as_torch_func():
    """grad inside grad, vjp, jvp, jacrev and jacfwd: the inner gradient keeps its graph when
    an outer transform tracks its input (for f = Σ w³: H = diag(6w))."""

    def f(w):
        return (w * w * w).sum()

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
    def f(w):
        return (w * w * w).sum()

    plain = func.grad(f)(ember.tensor([1.0, 2.0]))
    assert not plain.requires_grad
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    g = func.grad(f)(w)
    assert g.requires_grad
    g.sum().backward()
    assert w.grad.tolist() == [6.0, 12.0]


# --- vjp -----------------------------------------------------------------------------------


def _two_outputs(m):
    def f(p, x):
        y = p["w"] * x
        return y.sin(), {"total": (y * p["b"]).sum()}

    return f


def test_vjp_of_a_dict_primal_and_a_tuple_output_returns_gradients_per_primal():
    out, vjp_fn = func.vjp(_two_outputs(ember), _params(ember), ember.tensor(X))
    assert isinstance(out, tuple) and list(out[1]) == ["total"]
    ones = ember.ones(3, dtype=ember.float64)
    g_p, g_x = vjp_fn((ones, {"total": ember.tensor(0.0, dtype=ember.float64)}))
    np.testing.assert_allclose(g_p["w"].numpy(), np.cos(W * X) * X, rtol=1e-12)
    np.testing.assert_allclose(g_x.numpy(), np.cos(W * X) * W, rtol=1e-12)
    assert float(g_p["b"]) == 0.0


def test_vjp_over_pytrees_matches_torch(torch_mod):
    def run(m):
        out, vjp_fn = m.func.vjp(_two_outputs(m), _params(m), m.tensor(X))
        cotangents = (m.tensor([1.0, -1.0, 0.5]), {"total": m.tensor(2.0, dtype=m.float64)})
        return out, vjp_fn(cotangents)

    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


def test_vjp_with_cotangents_of_another_structure_raises_torchs_error(torch_mod):
    def run(m):
        _, vjp_fn = m.func.vjp(_two_outputs(m), _params(m), m.tensor(X))
        return vjp_fn(m.ones(3, dtype=m.float64))

    assert raised(lambda: run(ember)) == raised(lambda: run(torch_mod))
    with pytest.raises(
        RuntimeError, match=r"cotangents: \*, primal output: \(\*, \{'total': \*\}\)"
    ):
        run(ember)


def test_vjp_has_aux(torch_mod):
    def run(m):
        out, vjp_fn, aux = m.func.vjp(lambda x: (x.exp(), {"sq": x * x}), m.tensor(X), has_aux=True)
        return out, vjp_fn(m.ones(3, dtype=m.float64)), aux

    out, (g,), aux = run(ember)
    np.testing.assert_allclose(g.numpy(), np.exp(X), rtol=1e-12)
    assert aux["sq"].tolist() == (X * X).tolist() and not aux["sq"].requires_grad
    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


# --- jacrev --------------------------------------------------------------------------------


def test_jacrev_of_a_dict_argument_has_output_shape_plus_parameter_shape():
    jac = func.jacrev(lambda p, x: p["w"] * x + p["b"])(_params(ember), ember.tensor(X))
    assert list(jac) == ["w", "b"]
    np.testing.assert_array_equal(jac["w"].numpy(), np.diag(X))
    assert jac["b"].shape == (3,) and jac["b"].tolist() == [1.0, 1.0, 1.0]


def test_jacrev_with_tuple_argnums_and_aux_matches_torch(torch_mod):
    def run(m):
        def f(p, x):
            y = m.tanh(p["w"] * x) * p["b"]
            return {"y": y, "s": y.sum()}, y.mean()

        return m.func.jacrev(f, argnums=(0, 1), has_aux=True)(_params(m), m.tensor(X))

    (jac, aux) = run(ember)
    assert jac["y"][1].shape == (3, 3) and jac["s"][0]["w"].shape == (3,)
    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


def test_jacrev_with_aux_returns_the_aux_as_torch(torch_mod):
    def f(m):
        return lambda x: (x.sin() * 2, x.cos().sum())

    e_jac, e_aux = func.jacrev(f(ember), has_aux=True)(ember.tensor([1.0, 2.0]))
    t_jac, t_aux = torch_mod.func.jacrev(f(torch_mod), has_aux=True)(torch_mod.tensor([1.0, 2.0]))
    np.testing.assert_allclose(e_jac.numpy(), t_jac.numpy(), rtol=1e-6)
    assert e_aux.item() == pytest.approx(t_aux.item())


def test_jacrev_chunk_size_is_checked_and_gives_the_same_jacobian():
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
        func.jacrev(lambda x: x, chunk_size=0)
    x = ember.tensor(X)
    np.testing.assert_array_equal(
        func.jacrev(lambda x: x.exp(), chunk_size=2)(x).numpy(), np.diag(np.exp(X))
    )


def test_jacrev_of_a_complex_input_raises_torchs_error(torch_mod):
    def run(m):
        return m.func.jacrev(lambda x: x.abs())(m.tensor([1 + 1j]))

    assert raised(lambda: run(ember)) == raised(lambda: run(torch_mod))
