"""ember.func's forward mode (jvp, jacfwd, hessian) over pytrees of tensors, against
torch.func where torch is installed."""

import numpy as np
import pytest

import ember
from ember import func
from tests.func.trees import assert_same_tree, raised

W = np.array([0.5, -1.0, 2.0])
X = np.array([1.0, 2.0, -0.5])


def _params(m):
    return {"w": m.tensor(W), "b": m.tensor(0.25, dtype=m.float64)}


def _model(m):
    return lambda p, x: {"y": m.tanh(p["w"] * x) + p["b"], "s": (p["w"] ** 2).sum() * p["b"]}


# --- jvp -----------------------------------------------------------------------------------


def test_jvp_of_a_dict_primal_gives_the_outputs_structure():
    tangent = {"w": ember.ones(3, dtype=ember.float64), "b": ember.tensor(0.0, dtype=ember.float64)}
    out, jvp_out = func.jvp(lambda p: p["w"] ** 2 * p["b"], (_params(ember),), (tangent,))
    np.testing.assert_allclose(out.numpy(), W**2 * 0.25)
    np.testing.assert_allclose(jvp_out.numpy(), 2 * W * 0.25)


def test_jvp_over_pytrees_matches_torch(torch_mod):
    def run(m):
        tangents = ({"w": m.tensor([1.0, 0.0, -1.0]), "b": m.tensor(2.0, dtype=m.float64)},)
        return m.func.jvp(lambda p: _model(m)(p, m.tensor(X)), (_params(m),), tangents)

    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


def test_jvp_has_aux_returns_the_aux_primal(torch_mod):
    def run(m):
        def f(x):
            return x.sin(), {"c": x.cos()}

        return m.func.jvp(f, (m.tensor(X),), (m.ones(3, dtype=m.float64),), has_aux=True)

    out, jvp_out, aux = run(ember)
    np.testing.assert_allclose(jvp_out.numpy(), np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(aux["c"].numpy(), np.cos(X), rtol=1e-12)
    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


JVP_ERRORS = {
    "primals not a tuple": lambda m: m.func.jvp(lambda x: x, [m.tensor(X)], (m.tensor(X),)),
    "structures differ": lambda m: m.func.jvp(
        lambda p: p["w"], ({"w": m.tensor(X)},), (m.tensor(X),)
    ),
    "non-tensor primal": lambda m: m.func.jvp(lambda x: m.tensor(X), (1.0,), (1.0,)),
    "non-tensor output": lambda m: m.func.jvp(lambda x: 3, (m.tensor(X),), (m.tensor(X),)),
    "strict and independent": lambda m: m.func.jvp(
        lambda x: m.ones(2), (m.tensor(X),), (m.tensor(X),), strict=True
    ),
}


@pytest.mark.parametrize("case", sorted(JVP_ERRORS))
def test_jvp_raises_torchs_error(case, torch_mod):
    assert raised(lambda: JVP_ERRORS[case](ember)) == raised(lambda: JVP_ERRORS[case](torch_mod))


def test_jvp_and_jacfwd_ignore_an_enclosing_no_grad_as_torch_func_does():
    x, v = ember.tensor(X), ember.ones(3, dtype=ember.float64)
    with ember.no_grad():
        _, tangent = func.jvp(lambda x: x**2, (x,), (v,))
        jacobian = func.jacfwd(lambda x: x**2)(x)
    assert tangent.tolist() == (2 * X).tolist()
    np.testing.assert_array_equal(jacobian.numpy(), np.diag(2 * X))


def test_jvp_of_an_output_independent_of_the_primals_is_zero():
    out, jvp_out = func.jvp(lambda x: ember.ones(2), (ember.tensor(X),), (ember.tensor(X),))
    assert jvp_out.tolist() == [0.0, 0.0]


# --- jacfwd and hessian --------------------------------------------------------------------


def test_jacfwd_of_a_dict_argument_equals_jacrev():
    p, x = _params(ember), ember.tensor(X)
    fwd = func.jacfwd(_model(ember))(p, x)
    rev = func.jacrev(_model(ember))(p, x)
    for out in ("y", "s"):
        for name in ("w", "b"):
            np.testing.assert_allclose(fwd[out][name].numpy(), rev[out][name].numpy(), rtol=1e-12)
    assert fwd["y"]["w"].shape == (3, 3) and fwd["s"]["b"].shape == ()


def test_jacfwd_with_tuple_argnums_and_aux_matches_torch(torch_mod):
    def run(m):
        def f(p, x):
            out = _model(m)(p, x)
            return out, {"mean": out["y"].mean()}

        return m.func.jacfwd(f, argnums=(0, 1), has_aux=True)(_params(m), m.tensor(X))

    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


def test_jacfwd_raises_on_a_random_op_unless_randomness_allows_it(torch_mod):
    def run(m, randomness="error"):
        return m.func.jacfwd(lambda x: x * m.rand(3, dtype=m.float64), randomness=randomness)(
            m.tensor(X)
        )

    assert raised(lambda: run(ember)) == raised(lambda: run(torch_mod))
    ember.manual_seed(0)
    noise = ember.rand(3, dtype=ember.float64)
    ember.manual_seed(0)
    np.testing.assert_array_equal(run(ember, "same").numpy(), np.diag(noise.numpy()))
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        func.jacfwd(lambda x: x, randomness="sometimes")


def test_hessian_result_carries_no_graph_like_torch_func():
    h = func.hessian(lambda v: (v**3).sum())(ember.tensor([1.0, 2.0]))
    assert h.grad_fn is None and not h.requires_grad
    assert h.tolist() == [[6.0, 0.0], [0.0, 12.0]]


def test_hessian_with_tuple_argnums_matches_torch(torch_mod):
    def run(m):
        def f(x, y):
            return (x.sin() * y.exp()).sum() + (x * x * y).sum()

        return m.func.hessian(f, argnums=(0, 1))(m.tensor(X), m.tensor(W))

    ((hxx, hxy), (hyx, hyy)) = run(ember)
    np.testing.assert_allclose(hxy.numpy(), np.diag(np.cos(X) * np.exp(W) + 2 * X), rtol=1e-12)
    assert_same_tree(run(ember), run(torch_mod), rtol=1e-12)


def test_hessian_of_an_input_that_requires_grad_is_differentiable_further():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = func.hessian(lambda v: (v**3).sum())(x)
    assert h.requires_grad
    h.trace().backward()  # d/dx Σ 6 x_i
    assert x.grad.tolist() == [6.0, 6.0]
