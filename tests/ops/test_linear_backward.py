"""Linear's backward as one differentiable node under create_graph (ops/linear_backward.py):
the gradients and the second derivatives through it match torch, a third derivative passes
gradcheck, and the first pass records one node per linear instead of four."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from ..helpers import check_gradients


def _second_order(m, dtype, rows, bias, input_grad, layout):
    """Gradients of a linear's loss with create_graph, then the gradient of their dot product
    with fixed vectors (a Hessian-vector product), as NumPy arrays."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((rows, 5)).astype(dtype)
    w = rng.standard_normal((3, 5)).astype(dtype)
    if layout == "transposed":  # column-major operands
        x, w = np.asfortranarray(x), np.asfortranarray(w)
    xt = m.tensor(x, requires_grad=input_grad)
    if layout == "strided":
        xt = m.tensor(np.repeat(x, 2, axis=0), requires_grad=input_grad)[::2]
    wt = m.tensor(w, requires_grad=True)
    bt = m.tensor(rng.standard_normal(3).astype(dtype), requires_grad=True) if bias else None
    params = [p for p in (xt if input_grad else None, wt, bt) if p is not None]
    out = m.nn.functional.linear(xt, wt, bt)
    loss = (m.tanh(out) * m.tensor(rng.standard_normal((rows, 3)).astype(dtype))).sum()
    grads = m.autograd.grad(loss, params, create_graph=True)
    vectors = [m.tensor(rng.standard_normal(tuple(g.shape)).astype(dtype)) for g in grads]
    dot = sum((g * v).sum() for g, v in zip(grads, vectors))
    hv = m.autograd.grad(dot, params, allow_unused=True)
    return [g.detach().numpy() for g in grads] + [
        np.zeros(tuple(p.shape), dtype) if h is None else h.detach().numpy()
        for h, p in zip(hv, params)
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [7, 1, 0])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("input_grad", [True, False])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_hessian_vector_product_through_linear_matches_torch(
    torch_mod, dtype, rows, bias, input_grad, layout
):
    mine = _second_order(ember, dtype, rows, bias, input_grad, layout)
    theirs = _second_order(torch_mod, dtype, rows, bias, input_grad, layout)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_first_pass_records_one_node_for_the_three_gradients():
    x = ember.randn(4, 3, requires_grad=True)
    w = ember.randn(2, 3, requires_grad=True)
    b = ember.randn(2, requires_grad=True)
    gx, gw, gb = ember.autograd.grad(
        ember.tanh(ember.nn.functional.linear(x, w, b)).sum(), [x, w, b], create_graph=True
    )
    # the tanh backward's output feeds the one node whose three outputs these are; W's
    # gradient reaches it through the transposes of torch's addmm(b, x, W.t())
    node = gx.grad_fn
    assert node is gb.grad_fn
    assert node.name() == "LinearBackwardBackward0"
    w_path = gw.grad_fn.next_functions[0][0].next_functions[0]
    assert w_path == (node, 1)
    assert [gx._out_nr, gb._out_nr] == [0, 2]


def test_second_derivative_with_a_graph_equals_the_one_on_arrays():
    """The node's formula with ember ops (create_graph) and on arrays give the same values."""
    rng = np.random.default_rng(2)
    x = ember.tensor(rng.standard_normal((6, 4)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = ember.tensor(rng.standard_normal(3), requires_grad=True)
    upstream = ember.tensor(rng.standard_normal((6, 3)), requires_grad=True)

    def second(create_graph: bool):
        out = ember.nn.functional.linear(x, w, b)
        grads = ember.autograd.grad(out, [x, w, b], upstream, create_graph=True)
        dot = sum((g * g.detach().flip(0)).sum() for g in grads)
        return ember.autograd.grad(dot, [x, w, upstream], create_graph=create_graph)

    for raw, composed in zip(second(False), second(True)):
        np.testing.assert_allclose(raw.numpy(), composed.detach().numpy(), rtol=1e-13, atol=1e-13)


def test_linear_gradients_gradcheck_to_third_order():
    def gradients(m, x, w, b, g):
        with m.enable_grad():  # gradcheck's numerical pass runs without grad mode
            leaves = [t if t.requires_grad else t.detach().requires_grad_() for t in (x, w, b)]
            out = m.nn.functional.linear(*leaves)
            return m.autograd.grad(out, leaves, g, create_graph=True)

    check_gradients(
        gradients,
        [
            np.linspace(-1, 1, 12).reshape(4, 3),
            np.linspace(-0.5, 0.7, 6).reshape(2, 3),
            np.array([0.1, -0.2]),
            np.linspace(-1, 1, 8).reshape(4, 2),
        ],
    )
