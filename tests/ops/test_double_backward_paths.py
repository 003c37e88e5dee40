"""The shortcuts a Hessian-vector product takes through double backward: an outer product
(K = 1) as a broadcast multiply, tanh's second derivative on arrays when no graph is recorded,
and linear's weight gradient without a reshape of 2-D operands. Each gives the values of the
general path, and torch's."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.ops import linalg

from ..helpers import check_gradients


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n", [(128, 128), (7, 5), (0, 3), (3, 0), (1, 1)])
def test_an_outer_product_equals_blas_bit_for_bit(dtype, m, n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, 1)).astype(dtype)
    b = rng.standard_normal((1, n)).astype(dtype)
    for x, y in ((a, b), (np.ascontiguousarray(a.T).T, b[:, ::-1]), (a[::-1], b)):
        out = linalg.gemm(np, x, y)
        assert out.dtype == dtype and out.shape == (m, n) and out.flags.c_contiguous
        np.testing.assert_array_equal(out, np.matmul(x, y))


def test_integer_and_mixed_outer_products_keep_matmul():
    a, b = np.arange(3).reshape(3, 1), np.arange(4).reshape(1, 4)
    np.testing.assert_array_equal(linalg.gemm(np, a, b), np.matmul(a, b))
    out = ember.tensor([[1.0], [2.0]]) @ ember.tensor([[3.0, 4.0]])
    assert out.tolist() == [[3.0, 4.0], [6.0, 8.0]]


def _tanh_mlp_hvp(m, dtype, transposed_vector: bool):
    rng = np.random.default_rng(3)
    x = m.tensor(rng.standard_normal((9, 5)).astype(dtype))
    w1 = m.tensor(rng.standard_normal((7, 5)).astype(dtype), requires_grad=True)
    b1 = m.tensor(rng.standard_normal(7).astype(dtype), requires_grad=True)
    w2 = m.tensor(rng.standard_normal((1, 7)).astype(dtype), requires_grad=True)
    params = [w1, b1, w2]
    loss = (m.tanh(x @ w1.T + b1) @ w2.T).pow(2).mean()
    grads = m.autograd.grad(loss, params, create_graph=True)
    vectors = [m.tensor(rng.standard_normal(tuple(p.shape)).astype(dtype)) for p in params]
    if transposed_vector:  # a weight's vector in column-major layout
        vectors[0] = m.tensor(np.ascontiguousarray(vectors[0].numpy().T)).T
    dot = sum((g * v).sum() for g, v in zip(grads, vectors))
    return [h.detach().numpy() for h in m.autograd.grad(dot, params)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transposed_vector", [False, True])
def test_tanh_mlp_hessian_vector_product_matches_torch(torch_mod, dtype, transposed_vector):
    mine = _tanh_mlp_hvp(ember, dtype, transposed_vector)
    theirs = _tanh_mlp_hvp(torch_mod, dtype, transposed_vector)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_second_derivative_without_a_graph_equals_the_recorded_formula(dtype):
    rng = np.random.default_rng(5)
    x = ember.tensor(rng.standard_normal((6, 4)).astype(dtype), requires_grad=True)
    upstream = ember.tensor(rng.standard_normal((6, 4)).astype(dtype), requires_grad=True)
    vector = ember.tensor(np.ascontiguousarray(rng.standard_normal((4, 6)).astype(dtype)).T)

    def second(create_graph: bool):
        (g,) = ember.autograd.grad(ember.tanh(x), x, upstream, create_graph=True)
        return ember.autograd.grad((g * vector).sum(), [x, upstream], create_graph=create_graph)

    for raw, composed in zip(second(False), second(True)):
        np.testing.assert_array_equal(raw.numpy(), composed.detach().numpy())


def test_tanh_third_derivative_gradcheck():
    def fn(m, x, g):
        with m.enable_grad():  # gradcheck's numerical pass runs without grad mode
            x = x if x.requires_grad else x.detach().requires_grad_()
            (dx,) = m.autograd.grad(m.tanh(x), x, g, create_graph=True)
        return dx

    check_gradients(fn, [np.linspace(-2, 2, 12).reshape(3, 4), np.ones((3, 4))])


def test_linear_double_backward_of_2d_operands_records_no_reshape():
    x = ember.randn(5, 3)
    w = ember.randn(4, 3, requires_grad=True)
    b = ember.randn(4, requires_grad=True)
    out = ember.nn.functional.linear(x, w, b).sum()
    gw, gb = ember.autograd.grad(out, [w, b], create_graph=True)
    names, stack, seen = set(), [gw.grad_fn, gb.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.add(node.name())
        stack.extend(edge[0] for edge in node.next_functions if edge[0] is not None)
    assert not {"AliasBackward0", "ViewBackward0", "ReshapeAliasBackward0"} & names


def test_linear_gradients_of_3d_and_1d_inputs_gradcheck():
    check_gradients(
        lambda m, x, w, b: m.nn.functional.linear(x, w, b),
        [np.ones((2, 3, 4)) * 0.3, np.linspace(-1, 1, 20).reshape(5, 4), np.ones(5)],
    )
    check_gradients(
        lambda m, x, w: m.nn.functional.linear(x, w),
        [np.linspace(-1, 1, 4), np.linspace(-1, 1, 20).reshape(5, 4)],
    )


def _mse_second_order(m, dtype, reduction, target_grad, create_graph):
    rng = np.random.default_rng(9)
    x = m.tensor(rng.standard_normal((6, 3)).astype(dtype), requires_grad=True)
    t = m.tensor(rng.standard_normal((6, 3)).astype(dtype), requires_grad=target_grad)
    w = m.tensor(rng.standard_normal((6, 3)).astype(dtype), requires_grad=True)
    loss = m.nn.functional.mse_loss(x * w, t, reduction=reduction)
    if reduction == "none":
        loss = (loss * m.tensor(rng.standard_normal((6, 3)).astype(dtype))).sum()
    inputs = [x, w, t] if target_grad else [x, w]
    grads = m.autograd.grad(loss, inputs, create_graph=True)
    dot = sum((g * g.detach().flip(0)).sum() for g in grads)
    return [h.detach().numpy() for h in m.autograd.grad(dot, inputs, create_graph=create_graph)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("target_grad", [False, True])
def test_mse_loss_double_backward_matches_torch_and_its_recorded_form(
    torch_mod, dtype, reduction, target_grad
):
    raw = _mse_second_order(ember, dtype, reduction, target_grad, False)
    recorded = _mse_second_order(ember, dtype, reduction, target_grad, True)
    theirs = _mse_second_order(torch_mod, dtype, reduction, target_grad, False)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b, c in zip(raw, recorded, theirs):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=tol, atol=tol)


@pytest.mark.filterwarnings("ignore:Using a target size")
def test_mse_loss_gradients_gradcheck_to_second_order():
    check_gradients(
        lambda m, x, t: m.nn.functional.mse_loss(x * x, t), [np.linspace(-1, 1, 6), np.ones(6)]
    )
    check_gradients(
        lambda m, x, t: m.nn.functional.mse_loss(x, t, reduction="none"),
        [np.linspace(-1, 1, 6).reshape(2, 3), np.ones((1, 3))],  # a broadcast target
    )
