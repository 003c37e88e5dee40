"""The engine's and the hot ops' fast paths give what their general paths give."""

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember.autograd import engine
from ember.autograd.node import Node

_rng = np.random.default_rng(0)


def _randn(*shape, dtype=ember.float32, requires_grad=False):
    # from NumPy: ember.randn may load the compiled random kernels, a cost these tests avoid
    data = _rng.standard_normal(shape)
    return ember.tensor(data, dtype=dtype, requires_grad=requires_grad)


def test_grad_wrt_inputs_when_one_root_feeds_another():
    # roots [b, a] with b computed from a: a must be settled before b is judged needed
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    a = (x * 3).sum()
    b = a * 2
    (gx,) = ember.autograd.grad([b, a], [x], retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), [9.0, 9.0])
    (gx,) = ember.autograd.grad([a, b], [x])
    np.testing.assert_allclose(gx.numpy(), [9.0, 9.0])


def test_needed_nodes_skips_branches_that_do_not_reach_the_inputs():
    x = ember.tensor([1.0], requires_grad=True)
    y = ember.tensor([2.0], requires_grad=True)
    out = (x * 2 + y.exp()).sum()
    capture = {x._accumulator()}
    needed = engine._needed_nodes([out.grad_fn], capture)
    names = {type(n).__name__ for n in needed}
    assert "ExpBackward0" not in names and x._accumulator() in needed
    assert y._accumulator() not in needed


class _TwoInputsOneGradient(Node):
    """A formula that leaves off the trailing None of an input without an edge."""

    def backward(self, g):
        return (g * 2,)


def _record_two_input_node(x):
    from ember.ops._dispatch import record

    return record(_TwoInputsOneGradient(), x._data * 2, (x, None))


def test_formula_may_leave_off_trailing_gradients_of_inputs_without_edges():
    x = ember.tensor([1.0, 3.0], requires_grad=True)
    _record_two_input_node(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_formula_missing_a_gradient_for_a_live_edge_raises():
    x = ember.tensor([1.0], requires_grad=True)
    from ember.ops._dispatch import record

    out = record(_TwoInputsOneGradient(), x._data * x._data, (x, x))
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        out.sum().backward()


def test_invalid_gradient_names_the_input_position():
    class WrongShape(Node):
        def backward(self, g):
            return None, ember.ones(5)

    from ember.ops._dispatch import record

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    out = record(WrongShape(), x._data + 1, (None, x))
    with pytest.raises(RuntimeError, match="invalid gradient at index 1"):
        out.sum().backward()


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize(
    ("shape", "dim", "keepdim"),
    [
        ((), None, False),
        ((3,), None, False),
        ((2, 3), 1, False),
        ((2, 3), 0, True),
        ((0, 3), 1, False),
        ((2, 1), 1, False),
    ],
)
def test_sum_and_mean_backward_without_a_graph_equal_the_recorded_one(shape, dim, keepdim, dtype):
    x = _randn(*shape, dtype=dtype, requires_grad=True)
    for op in (ember.sum, ember.mean):
        out = op(x, dim, keepdim=keepdim) if dim is not None else op(x)
        g = _randn(*out.shape, dtype=dtype)
        (plain,) = ember.autograd.grad(out, x, g, retain_graph=True)
        (recorded,) = ember.autograd.grad(out, x, g, create_graph=True)
        assert plain.shape == x.shape and plain.dtype == x.dtype
        np.testing.assert_array_equal(plain.numpy(), recorded.detach().numpy())


def test_sum_backward_into_a_leaf_gives_a_writable_grad_of_its_own():
    x = _randn(2, 3, requires_grad=True)
    x.sum().backward()
    x.grad.add_(1)  # a broadcast view would be read-only
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0, np.float32))
    ember.autograd.gradcheck(
        lambda t: t.sum(1).mean(), (_randn(3, 4, dtype=ember.float64, requires_grad=True),)
    )


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("size", [1, 7, 4095, 4096, 5000])
def test_tanh_and_sigmoid_backward_on_both_sides_of_the_in_place_size(size, dtype):
    # the NumPy paths (the compiled kernels have their own tests)
    with jit.disabled():
        x = _randn(size, dtype=dtype, requires_grad=True)
        g = _randn(size, dtype=dtype)
        npx, npg = x.detach().numpy(), g.numpy()
        y = np.tanh(npx)
        (gx,) = ember.autograd.grad(x.tanh(), x, g)
        np.testing.assert_array_equal(gx.numpy(), npg * (1 - y * y))
        s = x.sigmoid().detach().numpy()
        (gx,) = ember.autograd.grad(x.sigmoid(), x, g)
        np.testing.assert_array_equal(gx.numpy(), npg * ((1 - s) * s))


def test_tanh_and_sigmoid_backward_match_torch(torch_mod):
    torch = torch_mod
    for size in (3, 5000):
        for name in ("tanh", "sigmoid"):
            data = np.random.default_rng(size).standard_normal(size).astype(np.float32)
            x = ember.tensor(data, requires_grad=True)
            getattr(x, name)().sum().backward()
            tx = torch.tensor(data, requires_grad=True)
            getattr(tx, name)().sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_double_backward_of_tanh_and_sum_gradchecks():
    x = _randn(5, dtype=ember.float64, requires_grad=True)
    ember.autograd.gradgradcheck(lambda t: t.tanh().sum(), (x,))
    ember.autograd.gradgradcheck(lambda t: t.sigmoid().mean(), (x,))


def _hvp_graph():
    w1 = _randn(4, 3, dtype=ember.float64, requires_grad=True)
    w2 = _randn(1, 4, dtype=ember.float64, requires_grad=True)
    x = _randn(5, 3, dtype=ember.float64)
    hidden = (x @ w1.t()).tanh()
    loss = ((hidden @ w2.t()) ** 2).mean()
    grads = ember.autograd.grad(loss, [w1, w2], create_graph=True)
    dot = (grads[0] * grads[0]).sum() + (grads[1] * hidden.sum()).sum()
    return dot, hidden, (w1, w2)


def test_needed_nodes_and_dependencies_equal_the_separate_walks():
    dot, hidden, params = _hvp_graph()
    roots = [dot.grad_fn, hidden.grad_fn]
    for captures in (
        {p._accumulator() for p in params},
        {params[0]._accumulator()},
        {hidden.grad_fn},  # an intermediate node, whose own inputs are needed too
        {hidden.grad_fn, params[1]._accumulator()},
    ):
        needed, deps = engine._needed_and_dependencies(roots, captures)
        order = engine._graph_order(roots)
        expected = set()
        for node in reversed(order):
            edges = [e for e in node._edges if e is not None]
            if node in captures or any(e[0] in expected for e in edges):
                expected.add(node)
        assert needed == expected
        live_roots = [n for n in roots if n in needed]
        assert deps == engine._count_dependencies(live_roots, needed)


def test_hessian_vector_product_matches_torch(torch_mod):
    torch = torch_mod
    rng = np.random.default_rng(5)
    w, x, v = rng.standard_normal((3, 4)), rng.standard_normal((6, 4)), rng.standard_normal((3, 4))
    results = []
    for lib in (ember, torch):
        wt = lib.tensor(w, requires_grad=True)
        loss = (lib.tensor(x) @ wt.t()).tanh().pow(2).sum()
        (g,) = lib.autograd.grad(loss, [wt], create_graph=True)
        (hv,) = lib.autograd.grad((g * lib.tensor(v)).sum(), [wt])
        results.append(hv.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10, atol=1e-12)
